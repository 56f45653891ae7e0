/**
 * The shape a document has across the traces of one input (src/diagnosers/shape-memory.ts). From real producers
 * around the real openai client (fixtures/repeated-workflow.cjs: one support workflow run twelve times, no
 * response_format and, under instrumentation-openai, no tool definitions recorded): a handoff lacking a field, a
 * tool call with an undeclared argument or a value of another type is `schema` at its call once other runs agree,
 * through `faultline diagnose` on one thread and on workers alike; an early run waits for later ones and is judged
 * against them, and one odd instance does not hide a later fault. On project-written traces: optional keys, keys that
 * are data and null are not breaches, a key left out more than once becomes optional, three other instances are
 * needed; a fault found in the trace stands; the memory is bounded. */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createDiagnoser, diagnoseEach } from '../../src/diagnosers/index';
import { inInputOrder, ShapeMemory } from '../../src/diagnosers/shape-memory';
import { FLEET_MAX_SHAPES } from '../../src/diagnosers/thresholds';
import type { Diagnosis } from '../../src/diagnosers/types';
import type { TraceRecord } from '../../src/traces/model';
import { TraceBuilder } from './support/builder';

const ROOT = join(__dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'faultline.js');

interface Line {
  faultType: string;
  step: number | null;
  evidence: string[];
}

/** The workflow's twelve runs under `producer`, as files: the traces (JSON lines) and, for instrumentation-openai, logs. */
function runWorkflow(producer: string, faults: string): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'faultline-memory-'));
  const traces = join(dir, 'traces.jsonl');
  const logs = join(dir, 'logs.json');
  execFileSync(
    process.execPath,
    [join(__dirname, 'fixtures', 'repeated-workflow.cjs'), traces, producer, logs, faults],
    { stdio: ['ignore', 'ignore', 'inherit'], timeout: 60_000 },
  );
  return producer === 'genai' ? [traces, logs] : [traces];
}

/** The CLI's JSON lines over `files`: `faultType@step` per run, and the raw output. */
function diagnose(files: string[], extra: string[] = []): { got: string[]; stdout: string } {
  const r = spawnSync(process.execPath, [BIN, 'diagnose', ...files, '--format', 'jsonl', ...extra], {
    cwd: ROOT,
    env: { ...process.env, CI: '1', NO_COLOR: '1' },
    encoding: 'utf8',
  });
  expect(r.stderr).toBe('');
  const lines = r.stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Line);
  expect(lines).toHaveLength(12);
  return { got: lines.map((d) => `${d.faultType}@${d.step ?? '-'}`), stdout: r.stdout };
}

describe('a document its trace holds once, judged against the other runs of the workflow', () => {
  it('instrumentation-openai (content as log records): missing field, undeclared argument, retyped value', () => {
    // Run 2's handoff lacks its field too: it waits for later runs (one earlier instance is no agreement) and is
    // judged against them; among five or more instances that odd one does not hide run 7's.
    const faults = '2:missing,7:missing,8:extra,10:retyped';
    const files = runWorkflow('genai', faults);
    const one = diagnose(files, ['--workers', '0']);
    const want = Array.from({ length: 12 }, () => 'none@-');
    want[1] = 'schema@1';
    want[6] = 'schema@1';
    want[7] = 'schema@2';
    want[9] = 'schema@2';
    expect(one.got).toEqual(want);
    const evidence = one.stdout
      .split('\n')
      .filter((l) => l.includes('"schema"'))
      .map((l) => (JSON.parse(l) as Line).evidence[0]);
    expect(evidence[0]).toMatch(
      /structured answer lacks queue, which the other instances carry \(3 instances in the other/,
    );
    expect(evidence[1]).toMatch(
      /structured answer lacks queue, which the other instances carry \(6 instances in the other/,
    );
    expect(evidence[2]).toMatch(/find_order\) carries note, which the other instances do not have/);
    expect(evidence[3]).toMatch(/gives order_id \(str elsewhere, num here\)/);
    // Worker threads judge in input order too: the same lines.
    expect(diagnose(files, ['--workers', '2']).stdout).toBe(one.stdout);
  }, 120_000);

  it('OpenLLMetry current: the handoff lacking a field; clean runs stay clean; on workers alike', () => {
    const files = runWorkflow('traceloop', '7:missing');
    const one = diagnose(files, ['--workers', '0']);
    const want = Array.from({ length: 12 }, () => 'none@-');
    want[6] = 'schema@1';
    expect(one.got).toEqual(want);
    // Spans only (no logs file): the worker threads read and diagnose them, and the judgement stays in input order.
    expect(diagnose(files, ['--workers', '2']).stdout).toBe(one.stdout);
  }, 120_000);
});

// ------------------------------------------------------------------------------------------ project-written traces

const builder = new TraceBuilder();

/** A trace (the real OTel SDK) of one agent answering one structured document, no schema recorded. */
function run(i: number, doc: unknown): TraceRecord {
  const text = JSON.stringify(doc);
  return builder.trace((t) =>
    t.agent('triage', (a) => {
      a.chat({ input: `Ticket ${i}`, text, outputTokens: Math.ceil(text.length / 4), foreign: true });
    }),
  );
}

async function judged(traces: TraceRecord[]): Promise<string[]> {
  const out: string[] = [];
  for await (const r of diagnoseEach(createDiagnoser('rule'), traces))
    out.push(r.ok ? `${r.diagnosis.faultType}@${r.diagnosis.step ?? '-'}` : 'failed');
  return out;
}

const handoff = (i: number) => ({
  queue: ['billing', 'returns'][i % 2],
  customer_id: `C-${i}`,
  summary: `Ticket ${i}.`,
});

describe('what is and is not a breach of the other runs', () => {
  it('a key some runs set and others not is optional, whichever comes last', async () => {
    const docs = Array.from({ length: 10 }, (_, i) => ({ ...handoff(i), ...(i % 3 === 0 ? { note: 'vip' } : {}) }));
    docs.push(handoff(10)); // without the optional key
    docs.push({ ...handoff(11), note: 'vip' });
    expect(await judged(docs.map((d, i) => run(i + 1, d)))).toEqual(docs.map(() => 'none@-'));
  });

  it('a key left out now and then becomes optional: named the first times (a rare fault looks the same), then not', async () => {
    const docs = Array.from({ length: 21 }, (_, i) => {
      const { queue: _q, ...rest } = handoff(i);
      return i === 4 || i === 11 || i === 20 ? rest : handoff(i);
    });
    const want = docs.map(() => 'none@-');
    want[4] = 'schema@1'; // after four that all carried it
    want[11] = 'schema@1'; // one odd instance among eleven is tolerated
    expect(await judged(docs.map((d, i) => run(i + 1, d)))).toEqual(want); // the third: two without it, optional
  });

  it('keys that are data (a name per run) are never judged', async () => {
    const docs = Array.from({ length: 8 }, (_, i) => ({ [`city_${i}`]: i, total: i }));
    expect(await judged(docs.map((d, i) => run(i + 1, d)))).toEqual(docs.map(() => 'none@-'));
  });

  it('null is as good as absent, integers and decimals are one type', async () => {
    const docs: unknown[] = Array.from({ length: 6 }, (_, i) => ({ ...handoff(i), score: 3 }));
    docs.push({ ...handoff(6), queue: null, score: 2.5 });
    expect(await judged(docs.map((d, i) => run(i + 1, d)))).toEqual(docs.map(() => 'none@-'));
  });

  it('a new trace breaking the agreement is named; the runs before it were not', async () => {
    const docs: unknown[] = Array.from({ length: 6 }, (_, i) => handoff(i));
    const { queue: _q, ...lacking } = handoff(6);
    docs.push(lacking);
    const got = await judged(docs.map((d, i) => run(i + 1, d)));
    expect(got).toEqual([...docs.slice(0, 6).map(() => 'none@-'), 'schema@1']);
  });

  it('three other instances are needed, before or after', async () => {
    const { queue: _q, ...lacking } = handoff(3);
    expect(await judged([run(1, handoff(1)), run(2, handoff(2)), run(3, lacking)])).toEqual([
      'none@-',
      'none@-',
      'none@-',
    ]);
  });
});

describe('ShapeMemory itself', () => {
  // Judged at once (wait 0), against the traces before it: one outcome in, one out.
  const judge = (m: ShapeMemory<Diagnosis>, d: Diagnosis, docs: ReturnType<typeof doc>[]): Diagnosis =>
    m.add(d, docs, undefined)[0]!.result;
  const none = (traceId: string): Diagnosis => ({
    traceId,
    faultType: 'none',
    spanId: null,
    step: null,
    stepKind: null,
    confidence: 0.9,
    evidence: ['no span shows a fault signal'],
    diagnoser: 'rule',
  });
  const doc = (entries: Array<[string, string]>, spanId = 's1') => ({
    kind: 'answer\u0000triage\u0000x',
    label: 'the structured answer',
    shape: entries.map(([path, type]) => `${path}\u0000${type}`).join('\u0001'),
    unjudged: true,
    spanId,
    step: 1,
    spanName: 'chat',
    agent: 'triage',
    operation: 'chat',
  });
  const usual: Array<[string, string]> = [
    ['queue', 'str'],
    ['customer_id', 'str'],
  ];

  it('a fault found in the trace stands, and its faulty call is not remembered', () => {
    const m = new ShapeMemory<Diagnosis>(0);
    for (let i = 0; i < 4; i++) judge(m, none(`t${i}`), [doc(usual)]);
    const faulty: Diagnosis = { ...none('f'), faultType: 'error', spanId: 's1', step: 1, stepKind: 'llm' };
    expect(judge(m, faulty, [doc([['customer_id', 'str']])])).toBe(faulty);
    // Not remembered: the agreement still holds for the next one.
    expect(judge(m, none('n'), [doc([['customer_id', 'str']])]).faultType).toBe('schema');
  });

  it('the LLM diagnoser is not revisited', () => {
    const m = new ShapeMemory<Diagnosis>(0);
    for (let i = 0; i < 4; i++) judge(m, none(`t${i}`), [doc(usual)]);
    const llm = { ...none('l'), diagnoser: 'llm' };
    expect(judge(m, llm, [doc([['customer_id', 'str']])])).toBe(llm);
  });

  it('a trace waits for later ones at most `wait` traces, and the outcomes keep their order', () => {
    const m = new ShapeMemory<Diagnosis, number>(2);
    const lacking = doc([['customer_id', 'str']], 'early');
    expect(m.add(none('t0'), [lacking], 0)).toEqual([]); // too few other instances yet: it waits
    expect(m.add(none('t1'), [doc(usual)], 1)).toEqual([]); // behind it, in order
    // The wait is over for t0: judged with what there is (two others: too few, left as it is); t1 and t2 wait on.
    expect(m.add(none('t2'), [doc(usual)], 2).map((o) => [o.tag, o.result.faultType])).toEqual([[0, 'none']]);
    expect(m.end().map((o) => [o.tag, o.result.faultType])).toEqual([
      [1, 'none'],
      [2, 'none'],
    ]);
    // With room to wait, the early one is judged once three others are there, before or after it.
    const m2 = new ShapeMemory<Diagnosis, number>();
    const out = [m2.add(none('t0'), [lacking], 0)];
    for (let i = 1; i <= 3; i++) out.push(m2.add(none(`t${i}`), [doc(usual)], i));
    out.push(m2.end());
    expect(out.map((batch) => batch.map((o) => [o.tag, o.result.faultType]))).toEqual([
      [],
      [],
      [],
      [
        [0, 'schema'],
        [1, 'none'],
        [2, 'none'],
        [3, 'none'],
      ],
      [],
    ]);
  });

  it('an error of the source comes after the outcomes still waiting (nothing diagnosed is lost with it)', async () => {
    async function* source(): AsyncGenerator<Diagnosis> {
      yield none('t0'); // waits: too few other instances
      yield none('t1');
      throw new Error('the backend went away');
    }
    const got: string[] = [];
    await expect(
      (async () => {
        for await (const o of inInputOrder(source(), (d) => ({ result: d, documents: [doc(usual)], tag: undefined })))
          got.push(o.result.traceId);
      })(),
    ).rejects.toThrow('the backend went away');
    expect(got).toEqual(['t0', 't1']);
  });

  it('a kind whose documents come in more than FLEET_MAX_SHAPES shapes is data, never judged', () => {
    const m = new ShapeMemory<Diagnosis>(0);
    for (let i = 0; i <= FLEET_MAX_SHAPES; i++)
      judge(m, none(`t${i}`), [
        doc([
          ['queue', 'str'],
          [`k${i}`, 'num'],
        ]),
      ]);
    expect(judge(m, none('n'), [doc([['other', 'str']])]).faultType).toBe('none');
    // Below the bound the same documents are judged: a document without the key all the others carry is named.
    const m2 = new ShapeMemory<Diagnosis>(0);
    for (let i = 0; i < 8; i++)
      judge(m2, none(`t${i}`), [
        doc([
          ['queue', 'str'],
          [`k${i}`, 'num'],
        ]),
      ]);
    expect(judge(m2, none('n'), [doc([['other', 'str']])]).faultType).toBe('schema');
  });
});
