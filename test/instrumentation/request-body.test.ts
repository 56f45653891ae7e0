/**
 * The request-body pieces on their own: the one withContentLength keeps every shape undici takes headers in (the
 * twins it replaced disagreed: one dropped a repeated content-length's place, the other did not add a missing one to
 * a list), and the tee's copy stops at its bound instead of keeping a large upload whole.
 */
import { describe, expect, it } from 'vitest';
import { BodyCopy, resumeStream, withContentLength, withHeaders } from '../../instrumentation/request-body';

describe('withContentLength', () => {
  it('sets content-length in each header shape, keeping every other header in its place', () => {
    expect(withContentLength(undefined, 5)).toEqual({ 'content-length': '5' });
    expect(withContentLength({ a: '1', 'Content-Length': '9', b: ['x', 'y'] }, 5)).toEqual({
      a: '1',
      'Content-Length': '5',
      b: ['x', 'y'],
    });
    expect(withContentLength({ a: '1' }, 5)).toEqual({ a: '1', 'content-length': '5' });
    expect(withContentLength(['a', '1', 'content-length', '9', 'b', '2'], 5)).toEqual([
      'a',
      '1',
      'content-length',
      '5',
      'b',
      '2',
    ]);
    expect(withContentLength(['a', '1'], 5)).toEqual(['a', '1', 'content-length', '5']);
    const pairs = [
      ['a', '1'],
      ['CONTENT-LENGTH', '9'],
      ['content-length', '9'],
    ] as unknown as string[];
    expect(withContentLength(pairs, 5)).toEqual([
      ['a', '1'],
      ['CONTENT-LENGTH', '5'],
    ]);
    const map = new Map([
      ['a', '1'],
      ['content-length', '9'],
    ]) as unknown as Record<string, string>;
    expect(withContentLength(map, 5)).toEqual({ a: '1', 'content-length': '5' });
  });
});

describe('withHeaders, absent', () => {
  const trace = { traceparent: '00-aa-bb-01', tracestate: 'x=1' };

  it('adds the headers after the others in each shape, in the same order, unless one of them is there in any case', () => {
    const object = withHeaders({ b: '2', a: ['x', 'y'], '1': 'n' }, trace, 'absent');
    // The object shape (fetch's) has a path of its own: the same members, in the same order, as the list shapes give.
    expect(Object.entries(object as Record<string, unknown>)).toEqual([
      ['1', 'n'],
      ['b', '2'],
      ['a', ['x', 'y']],
      ['traceparent', '00-aa-bb-01'],
      ['tracestate', 'x=1'],
    ]);
    expect(withHeaders(['b', '2', 'a', 'x'], trace, 'absent')).toEqual([
      'b',
      '2',
      'a',
      'x',
      'traceparent',
      '00-aa-bb-01',
      'tracestate',
      'x=1',
    ]);
    const own = { a: '1', TraceState: 'app=1' };
    expect(withHeaders(own, trace, 'absent')).toBe(own);
    const list = ['TRACEPARENT', '00-cc-dd-01'];
    expect(withHeaders(list, trace, 'absent')).toBe(list);
    expect(withHeaders(undefined, trace, 'absent')).toEqual(trace);
  });
});

describe('the tee of a streamed body', () => {
  async function* chunks(n: number, size: number) {
    for (let i = 0; i < n; i++) yield Buffer.alloc(size, i);
  }

  it('passes every chunk on and hands over the whole copy at the end', async () => {
    let copy: Buffer | undefined;
    const body = resumeStream(
      undefined,
      chunks(4, 10)[Symbol.asyncIterator](),
      new BodyCopy((b) => (copy = b)),
    ) as unknown as AsyncIterable<Buffer>;
    const seen: Buffer[] = [];
    for await (const c of body) seen.push(c);
    expect(Buffer.concat(seen)).toEqual(Buffer.concat([0, 1, 2, 3].map((i) => Buffer.alloc(10, i))));
    expect(copy).toEqual(Buffer.concat(seen));
  });

  it('stops copying past its bound but still passes everything on', async () => {
    let copy: Buffer | undefined;
    const body = resumeStream(
      undefined,
      chunks(100, 1024)[Symbol.asyncIterator](),
      new BodyCopy((b) => (copy = b), 10 * 1024),
    ) as unknown as AsyncIterable<Buffer>;
    let bytes = 0;
    for await (const c of body) bytes += c.length;
    expect(bytes).toBe(100 * 1024);
    expect(copy).toBeUndefined();
  });

  it('replays a first pull, and the error of a stream that failed on it', async () => {
    const it = chunks(2, 3)[Symbol.asyncIterator]();
    const first = await it.next();
    const seen: Buffer[] = [];
    for await (const c of resumeStream({ done: false, value: first.value }, it) as unknown as AsyncIterable<Buffer>)
      seen.push(c);
    expect(seen).toEqual([Buffer.alloc(3, 0), Buffer.alloc(3, 1)]);
    const boom = new Error('app stream failed');
    const failed = resumeStream(
      { error: boom },
      chunks(1, 1)[Symbol.asyncIterator](),
    ) as unknown as AsyncIterable<Buffer>;
    await expect(
      (async () => {
        for await (const _c of failed);
      })(),
    ).rejects.toBe(boom);
  });

  it("cancelling it returns the application's iterator", async () => {
    let returned = false;
    const source: AsyncIterator<Buffer> = {
      next: async () => ({ done: false, value: Buffer.from('x') }),
      return: async () => {
        returned = true;
        return { done: true, value: undefined };
      },
    };
    for await (const _c of resumeStream(undefined, source) as unknown as AsyncIterable<Buffer>) break;
    expect(returned).toBe(true);
  });
});
