/**
 * The request body of a dispatch as the span layer reads it, without ever holding it back.
 *
 * A body at hand (a string or bytes, as `undici.request` and the SDKs built on it pass) is read where it is. A streamed
 * body (what Node's fetch always passes: an async iterable, even for a string) of known length is pulled once, for its
 * first chunk: fetch hands over a string or buffer body as exactly one chunk, its `content-length` telling that chunk
 * is all of it. A body of unknown length is not waited for at all (its first chunk may come only once the response
 * has, as a duplex client does). Anything else flows on as the application produces it: a first result taken is
 * replayed and the rest passes through a tee that keeps a bounded copy. A body that finishes only after the response
 * starts, or a 512 MB upload, is never waited for nor kept whole.
 */
import type { Dispatcher } from 'undici';

/** The most of a streamed request body kept for reading; past it the copy is dropped and the body flows on. */
export const MAX_REQUEST_COPY_BYTES = 32 * 1024 * 1024;

export type RequestBody =
  /** No body, a string or bytes: read in place. */
  | { readonly kind: 'bytes'; readonly bytes: Buffer }
  /** An async iterable (fetch's body, a Readable): read as it flows. */
  | { readonly kind: 'stream'; readonly iterator: AsyncIterator<unknown> }
  /** FormData, a Blob, a sync iterable: never read, so never recognised. */
  | { readonly kind: 'opaque' };

const EMPTY = Buffer.alloc(0);

export function requestBody(body: unknown): RequestBody {
  if (body == null) return { kind: 'bytes', bytes: EMPTY };
  const bytes = asBytes(body);
  if (bytes !== undefined) return { kind: 'bytes', bytes };
  const iterate = (body as Partial<AsyncIterable<unknown>>)[Symbol.asyncIterator];
  if (typeof iterate === 'function') return { kind: 'stream', iterator: iterate.call(body) };
  return { kind: 'opaque' };
}

/** A chunk as bytes (a view, no copy); undefined when it is neither a string nor bytes. */
export function asBytes(chunk: unknown): Buffer | undefined {
  if (typeof chunk === 'string') return Buffer.from(chunk);
  if (Buffer.isBuffer(chunk)) return chunk;
  if (chunk instanceof Uint8Array) return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  return undefined;
}

/** What the first pull of a streamed body gave: a chunk, the end, or the stream's error. */
export type FirstPull =
  { readonly done: true } | { readonly done: false; readonly value: unknown } | { readonly error: unknown };

export function pullFirst(iterator: AsyncIterator<unknown>): Promise<FirstPull> {
  return iterator.next().then(
    (r): FirstPull => (r.done ? { done: true } : { done: false, value: r.value }),
    (error: unknown): FirstPull => ({ error }),
  );
}

/**
 * The whole body, when the first pull holds all of it: the stream ended, or its one chunk is as long as the
 * `content-length` the request declares (fetch's string and buffer bodies). Undefined for a body still flowing.
 */
export function completeAfterFirst(first: FirstPull, contentLength: string | undefined): Buffer | undefined {
  if ('error' in first) return undefined;
  if (first.done) return EMPTY;
  const bytes = asBytes(first.value);
  if (bytes === undefined || contentLength === undefined) return undefined;
  return Number(contentLength) === bytes.length ? bytes : undefined;
}

/** Let a stream whose whole body was taken from its first pull run to its end (fetch does its bookkeeping there). */
export function drain(iterator: AsyncIterator<unknown>): void {
  const step = (): void => {
    iterator.next().then(
      (r) => (r.done ? undefined : step()),
      () => undefined,
    );
  };
  step();
}

/** A bounded copy of a streamed body, kept while it flows; `onComplete` gets it once the stream ended. */
export class BodyCopy {
  #chunks: Buffer[] | undefined = [];
  #bytes = 0;

  constructor(
    private readonly onComplete: (body: Buffer) => void,
    private readonly max = MAX_REQUEST_COPY_BYTES,
  ) {}

  push(chunk: unknown): void {
    if (this.#chunks === undefined) return;
    const bytes = asBytes(chunk);
    if (bytes === undefined || this.#bytes + bytes.length > this.max) {
      this.#chunks = undefined;
      return;
    }
    this.#chunks.push(bytes);
    this.#bytes += bytes.length;
  }

  end(): void {
    const chunks = this.#chunks;
    this.#chunks = undefined;
    if (chunks !== undefined)
      this.onComplete(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, this.#bytes));
  }

  /** The stream failed or was cancelled: nothing to read. */
  abandon(): void {
    this.#chunks = undefined;
  }
}

/**
 * The stream again for the dispatcher below: the first pull's result if one was taken, or is being taken (a chunk, or
 * the error the application's stream threw, so the call fails as it would have), then the rest, pulled only when the dispatcher asks
 * for it, each chunk also handed to `copy`. Cancelling it (an aborted request) cancels the application's stream.
 */
export function resumeStream(
  first: FirstPull | Promise<FirstPull> | undefined,
  iterator: AsyncIterator<unknown>,
  copy?: BodyCopy,
): Dispatcher.DispatchOptions['body'] {
  // undici sends any async iterable body (its types name only Readable).
  return resumed(first, iterator, copy) as unknown as Dispatcher.DispatchOptions['body'];
}

async function* resumed(
  pulled: FirstPull | Promise<FirstPull> | undefined,
  iterator: AsyncIterator<unknown>,
  copy: BodyCopy | undefined,
): AsyncGenerator<unknown, void, undefined> {
  let finished = false;
  // A first pull still under way (taken while the request was being sent) is awaited here, when the dispatcher asks.
  const first = pulled instanceof Promise ? await pulled : pulled;
  try {
    if (first !== undefined && 'error' in first) {
      finished = true;
      throw first.error;
    }
    if (first === undefined || !first.done) {
      if (first !== undefined) {
        copy?.push(first.value);
        yield first.value;
      }
      for (;;) {
        let r: IteratorResult<unknown>;
        try {
          r = await iterator.next();
        } catch (err) {
          finished = true;
          throw err;
        }
        if (r.done) break;
        copy?.push(r.value);
        yield r.value;
      }
    }
    finished = true;
    copy?.end();
  } finally {
    if (!finished) {
      copy?.abandon();
      void Promise.resolve(iterator.return?.()).catch(() => undefined);
    } else if (copy !== undefined) {
      copy.abandon();
    }
  }
}

type Headers = Dispatcher.DispatchOptions['headers'];

/**
 * `headers` with `content-length` set to `length` (a rewritten body), in the caller's shape (an object, a flat
 * name/value list, a list of pairs, or an iterable of pairs), every other header kept in its place. A repeated
 * `content-length` is collapsed into one; a missing one is added.
 */
export function withContentLength(headers: Headers, length: number): Headers {
  return withHeaders(headers, { 'content-length': String(length) }, 'replace');
}

/**
 * `headers` with `values` (lower-case names), in the caller's shape, every other header kept in its place.
 * `replace`: a header already there takes the new value (its repeats collapsed into one), a missing one is added.
 * `absent`: the headers are added only when none of them is there (the application's own trace context wins).
 */
export function withHeaders(
  headers: Headers,
  values: Readonly<Record<string, string>>,
  mode: 'replace' | 'absent',
): Headers {
  const names = Object.keys(values);
  const given = (k: unknown): string | undefined => {
    const name = String(k).toLowerCase();
    return Object.prototype.hasOwnProperty.call(values, name) ? name : undefined;
  };
  // An object (what fetch passes) taking headers it does not have, as every traced call does: the same result as the
  // general path below (its members in order, the new ones after), without its lists. Only a name as long as one of
  // ours can be one of ours, whatever its case.
  if (mode === 'absent' && isHeaderObject(headers)) {
    for (const k of Object.keys(headers)) {
      for (const name of names) if (name.length === k.length && given(k) !== undefined) return headers;
    }
    return Object.assign({}, headers, values) as Headers; // (an object spread measured several times slower)
  }
  const entries = headerEntries(headers);
  if (mode === 'absent' && entries.some(([k]) => given(k) !== undefined)) return headers;
  const out: [unknown, unknown][] = [];
  const set = new Set<string>();
  for (const [k, v] of entries) {
    const name = given(k);
    if (name === undefined) out.push([k, v]);
    else if (!set.has(name)) {
      out.push([k, values[name]]);
      set.add(name);
    }
  }
  for (const name of names) if (!set.has(name)) out.push([name, values[name]]);
  if (Array.isArray(headers) && !(headers.length > 0 && Array.isArray(headers[0]))) return out.flat() as Headers;
  if (Array.isArray(headers)) return out as unknown as Headers;
  const object: Record<string, unknown> = {};
  for (const [k, v] of out) object[String(k)] = v;
  return object as Headers;
}

function isHeaderObject(headers: Headers): headers is Record<string, string | string[] | undefined> {
  return (
    headers != null &&
    !Array.isArray(headers) &&
    typeof (headers as Partial<Iterable<unknown>>)[Symbol.iterator] !== 'function'
  );
}

/** The name/value pairs of every header shape undici takes. */
function headerEntries(headers: Headers): [unknown, unknown][] {
  if (headers == null) return [];
  if (Array.isArray(headers)) {
    if (headers.length > 0 && Array.isArray(headers[0]))
      return (headers as unknown as [unknown, unknown][]).map(([k, v]) => [k, v]);
    const pairs: [unknown, unknown][] = [];
    for (let i = 0; i + 1 < headers.length; i += 2) pairs.push([headers[i], headers[i + 1]]);
    return pairs;
  }
  if (typeof (headers as Partial<Iterable<unknown>>)[Symbol.iterator] === 'function')
    return [...(headers as Iterable<[unknown, unknown]>)];
  return Object.entries(headers as Record<string, unknown>);
}
