/**
 * Every fault of the catalog × every LLM wire format, through the real fault step against a loopback server that
 * answers with recorded bodies of that format: each cell either applies (its effect is seen in the bytes the
 * application gets, in the format's own shape) or is not applicable — the fault step reports it so, the body passes
 * byte for byte, and the plan's start-up message (`planGapsMessage`) names the format for a rule that can meet it.
 * The expected table below is the one docs/fault-catalog.md states; a cell that neither applies nor is reported
 * fails. All cells run at once (each its own task, each rule selecting only its cell's URLs) under a deadline.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Protocol } from '../../instrumentation/types';
import { listFaults } from '../../src/catalog/index';
import { planGaps, wireFormat } from '../../src/catalog/formats';
import type { FaultDefinition } from '../../src/catalog/types';
import { toChatView } from '../../src/inject/bodies';
import { parsePlan } from '../../src/plan/load';
import { loadCorpus, recordBody, type CorpusRecord } from '../support/corpus';
import { corpusReply, startLlmServer, type LlmServer } from '../support/llm-server';
import { setupHarness, type Harness } from './harness';

const records = new Map<string, CorpusRecord>();
for (const f of [
  'openai-chat.jsonl',
  'openai-chat-stream.jsonl',
  'anthropic-messages.jsonl',
  'openai-responses.jsonl',
  'gemini.jsonl',
  'ollama.jsonl',
  'embeddings.jsonl',
] as const) {
  for (const r of loadCorpus(f)) records.set(r.id, r);
}
const rec = (id: string): CorpusRecord => records.get(id)!;

interface Format {
  name: string;
  protocol: Protocol;
  /** A text answer (with non-ASCII text where the corpus has one), a tool-call answer, and streams. */
  text: CorpusRecord;
  tools?: CorpusRecord;
  /** Another answer (where there is no tool-call one): a stale cache shows only when the next answer differs. */
  other?: CorpusRecord;
  streams: CorpusRecord[];
}

const FORMATS: Format[] = [
  {
    name: 'chat',
    protocol: 'openai.chat',
    text: rec('0ded9f263815'),
    tools: rec('0fe46379d82b'),
    streams: [rec('68715d67ef39')],
  },
  {
    name: 'anthropic',
    protocol: 'anthropic.messages',
    text: rec('152cca5fe868'),
    tools: rec('06faa7dfeefb'),
    streams: [rec('04876445d395')],
  },
  {
    name: 'responses',
    protocol: 'openai.responses',
    text: rec('182a460c8401'),
    tools: rec('7c83bc57fd31'),
    streams: [rec('61b63d72ebea')],
  },
  {
    name: 'gemini',
    protocol: 'gemini.generate_content',
    text: rec('bf76414dc843'),
    tools: rec('812d52948328'),
    streams: [rec('545eaeea40bb'), rec('3f6854fe0cab')],
  },
  {
    name: 'ollama chat',
    protocol: 'ollama.chat',
    text: rec('0aa407206666'),
    tools: rec('cd6ec1c33252'),
    streams: [rec('491eb5f299c5')],
  },
  // The corpus has no /api/generate answer with non-ASCII text: llm_corrupt (mojibake) is a no-op there, as on any ASCII text.
  {
    name: 'ollama generate',
    protocol: 'ollama.generate',
    text: rec('6e3b222f1baa'),
    other: rec('cb2a1d1e3073'),
    streams: [rec('671c984e8ed5')],
  },
  { name: 'openai embeddings', protocol: 'openai.embeddings', text: rec('c75be307014d'), streams: [] },
  { name: 'gemini embeddings', protocol: 'gemini.embeddings', text: rec('09ef026f18c0'), streams: [] },
  { name: 'ollama embeddings', protocol: 'ollama.embeddings', text: rec('9df0d2737e43'), streams: [] },
];

const EMBEDDINGS = new Set(['openai embeddings', 'gemini embeddings', 'ollama embeddings']);

/** The table docs/fault-catalog.md states: where a fault has no meaning. */
function expectedNotApplicable(fault: FaultDefinition, f: Format): boolean {
  switch (fault.mode) {
    case 'transport':
      return false;
    case 'message':
      return true; // message faults act on agent messages (A2A, MCP, channels), never on an LLM answer
    case 'stream':
      return EMBEDDINGS.has(f.name) || (fault.base === 'stream_drop_done' && f.protocol === 'gemini.generate_content');
    case 'content':
      return EMBEDDINGS.has(f.name) || (fault.target === 'tool_calls' && f.protocol === 'ollama.generate');
  }
}

/** Small parameters so the stalls and delays of the table end quickly. */
const PARAMS: Record<string, Record<string, unknown>> = {
  stream_cut: { afterEvents: 2 },
  stream_stall: { afterEvents: 2, stallMs: 60 },
  stream_corrupt_chunk: { eventIndex: 2 },
  timeout_hang: { stallMs: 60 },
  slow_first_byte: { delayMs: 60 },
  conn_reset: { afterMs: 0 },
};

/** Delays of the AgentChaos faults that only wait (their body is unchanged or also rewritten). */
const CONTENT_DELAY_MS: Record<string, number> = { compound_slow_response: 5000, compound_api_degradation: 3000 };

interface Call {
  url: string;
  served: string;
  status?: number;
  delivered?: string;
  error?: { name: string; code?: string };
  ms: number;
}

interface Cell {
  index: number;
  fault: FaultDefinition;
  format: Format;
  /** The records served, one per call (the stream record for stream faults). */
  plan: CorpusRecord[];
  calls: Call[];
  taskId?: string;
}

const CALLS_FOR: Record<string, number> = { intermittent: 12, pos_early: 1, pos_mid: 2, pos_late: 3 };

const cells: Cell[] = [];
for (const fault of listFaults()) {
  for (const format of FORMATS) {
    if (fault.mode === 'stream') {
      // Stream faults act on each stream framing the format has; a format that never streams gets its JSON answer.
      for (const s of format.streams.length > 0 ? format.streams : [format.text])
        cells.push({ index: cells.length, fault, format, plan: [s], calls: [] });
      continue;
    }
    let answer = fault.mode === 'content' && fault.target === 'tool_calls' && format.tools ? format.tools : format.text;
    // A stale cache shows only when the next answer differs from the one before.
    if (fault.base === 'compound_stale_cache') {
      cells.push({
        index: cells.length,
        fault,
        format,
        plan: [format.text, format.tools ?? format.other ?? format.text, format.text],
        calls: [],
      });
      continue;
    }
    if (fault.mode !== 'content') answer = format.text;
    const n = fault.mode === 'content' ? (CALLS_FOR[fault.strategy.kind] ?? 1) : 1;
    cells.push({ index: cells.length, fault, format, plan: Array.from({ length: n }, () => answer), calls: [] });
  }
}

let h: Harness;
let server: LlmServer;

beforeAll(async () => {
  server = await startLlmServer((req) => corpusReply(rec(new URL(req.url, 'http://x').searchParams.get('rec')!)));
  h = setupHarness();
  // A few cells at a time (the waits first): all at once, a loaded machine queues them past their deadline.
  const queue = [...cells].sort(
    (a, b) => Number(b.fault.name in CONTENT_DELAY_MS) - Number(a.fault.name in CONTENT_DELAY_MS),
  );
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      for (let c = queue.shift(); c !== undefined; c = queue.shift()) await runCell(c);
    }),
  );
}, 60_000);

afterAll(async () => {
  await server?.close();
  await h?.shutdown();
});

function urlOf(r: CorpusRecord, cell: number): string {
  const u = new URL(r.endpoint);
  u.searchParams.set('rec', r.id);
  return `${server.url}${u.pathname}${u.search}&cell=${cell}`;
}

async function runCell(c: Cell): Promise<void> {
  const plan = {
    seed: 42,
    rules: [{ name: `cell${c.index}`, fault: c.fault.name, params: PARAMS[c.fault.name] ?? {} }],
  };
  const { taskId } = await h.task(plan, async (taskId) => {
    for (const r of c.plan) {
      const call: Call = { url: urlOf(r, c.index), served: recordBody(r), ms: 0 };
      c.calls.push(call);
      const t0 = performance.now();
      try {
        const res = await fetch(call.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(r.request),
          signal: AbortSignal.timeout(10_000),
        });
        call.status = res.status;
        call.delivered = await res.text();
      } catch (err) {
        const e = err as Error & { cause?: { code?: string } };
        call.error = { name: e.name, code: e.cause?.code };
      }
      call.ms = performance.now() - t0;
      // Once the fault showed, or the step reported it not applicable, the cell has what it needs (a strategy that
      // fires late needs the calls before).
      if (
        call.error ||
        call.status !== 200 ||
        call.delivered !== call.served ||
        (ledgerOf(taskId, c)?.notApplicable ?? 0) > 0
      )
        break;
    }
  });
  c.taskId = taskId;
}

const ledgerOf = (taskId: string | undefined, c: Cell) =>
  h.injector.triggerReport(taskId).tasks[0]?.rules.find((r) => r.rule === `cell${c.index}`);
const ledger = (c: Cell) => ledgerOf(c.taskId, c);

/** What the rule's start-up message says about the cell's format, for a rule that can meet only that format. */
function gapFor(c: Cell) {
  const wf = wireFormat(c.format.protocol)!;
  return planGaps(
    parsePlan({ rules: [{ fault: c.fault.name, match: { operation: wf.operation, url: wf.url } }] }),
  )[0]?.gaps.find((g) => g.format === wf.label);
}

const view = (protocol: Protocol, body: string | undefined) => {
  const v = toChatView(protocol, JSON.parse(body ?? 'null')) as
    | { choices: [{ message: { content: string | null; tool_calls?: unknown[] }; finish_reason: string | null }] }
    | undefined;
  return v?.choices[0];
};

const ERROR_SHAPES: Record<string, (b: Record<string, unknown>) => boolean> = {
  openai: (b) => typeof (b.error as { message?: unknown })?.message === 'string' && 'type' in (b.error as object),
  anthropic: (b) => b.type === 'error' && typeof (b.error as { type?: unknown })?.type === 'string',
  gemini: (b) =>
    typeof (b.error as { status?: unknown })?.status === 'string' &&
    typeof (b.error as { code?: unknown })?.code === 'number',
  ollama: (b) => typeof b.error === 'string',
};
const FAMILY: Record<Protocol, string> = {
  'openai.chat': 'openai',
  'openai.responses': 'openai',
  'openai.embeddings': 'openai',
  'anthropic.messages': 'anthropic',
  'gemini.generate_content': 'gemini',
  'gemini.embeddings': 'gemini',
  'ollama.chat': 'ollama',
  'ollama.generate': 'ollama',
  'ollama.embeddings': 'ollama',
} as Record<Protocol, string>;

/** Why a cell that should apply does not show it (undefined: it does). */
function effectMissing(c: Cell): string | undefined {
  const last = c.calls.at(-1)!;
  const fault = c.fault;
  const l = ledger(c);
  if (!l || l.fires === 0) return `never fired (${JSON.stringify(l)})`;
  if (l.notApplicable > 0) return `reported not applicable ${l.notApplicable}×`;
  switch (fault.mode) {
    case 'transport': {
      if (fault.name.startsWith('http_')) {
        const status = Number(fault.name.slice(5));
        if (last.status !== status) return `status ${last.status}`;
        const body = JSON.parse(last.delivered ?? 'null') as Record<string, unknown>;
        return ERROR_SHAPES[FAMILY[c.format.protocol]](body)
          ? undefined
          : `not a ${FAMILY[c.format.protocol]} error body: ${last.delivered}`;
      }
      if (fault.name === 'slow_first_byte')
        return last.delivered === last.served && last.ms >= 55 ? undefined : `${last.ms} ms`;
      const code = fault.name === 'conn_refused' ? 'ECONNREFUSED' : 'ECONNRESET';
      return last.error?.code === code ? undefined : `error ${JSON.stringify(last.error)}`;
    }
    case 'stream': {
      if (last.error) return `error ${JSON.stringify(last.error)}`;
      if (fault.base === 'stream_stall')
        return last.delivered === last.served && last.ms >= 55 && l.triggered
          ? undefined
          : `${last.ms} ms, triggered ${l.triggered}`;
      if (fault.base === 'stream_corrupt_chunk' && !last.delivered?.includes('\uFFFD')) return 'no garbled event';
      return last.delivered !== last.served && last.served.startsWith(last.delivered!.slice(0, 20))
        ? undefined
        : 'stream unchanged';
    }
    case 'content': {
      const delay = CONTENT_DELAY_MS[fault.name];
      if (delay !== undefined && Math.max(...c.calls.map((x) => x.ms)) < delay - 50)
        return `answered within ${Math.max(...c.calls.map((x) => x.ms))} ms`;
      if (fault.name === 'compound_slow_response') return last.delivered === last.served ? undefined : 'body changed';
      const changed = c.calls.find((x) => x.delivered !== x.served);
      if (!l.triggered) {
        // Mojibake leaves ASCII text as it is: a recorded no-op, not a gap.
        const text = view(c.format.protocol, last.served)?.message.content ?? '';
        return fault.base === 'llm_corrupt' && ![...text].some((ch) => ch.charCodeAt(0) > 127) && changed === undefined
          ? undefined
          : 'only no-op fires';
      }
      if (changed === undefined) return 'no answer changed';
      const before = view(c.format.protocol, changed.served)!;
      const after = view(c.format.protocol, changed.delivered);
      if (after === undefined)
        return `the rewritten body is no longer a ${c.format.protocol} answer: ${changed.delivered?.slice(0, 200)}`;
      if (fault.target === 'response') {
        const previous = c.calls[c.calls.indexOf(changed) - 1];
        return previous !== undefined &&
          JSON.stringify(after) === JSON.stringify(view(c.format.protocol, previous.delivered))
          ? undefined
          : 'not the previous answer';
      }
      const field = (v: typeof before) =>
        fault.target === 'tool_calls'
          ? JSON.stringify([v.message.tool_calls ?? [], v.message.content])
          : JSON.stringify([v.message.content, v.finish_reason]);
      return field(after) !== field(before) ? undefined : `${fault.target} unchanged in the view`;
    }
    case 'message':
      return 'a message fault on an LLM answer';
  }
}

/** Why a cell that should be not applicable is not reported so, or changed the body (undefined: all is well). */
function notReported(c: Cell): string | undefined {
  const l = ledger(c);
  if (!l || l.notApplicable === 0) return `the fault step did not report it (${JSON.stringify(l)})`;
  if (l.fires > 0) return `fired ${l.fires}×`;
  const call = c.calls[0]!;
  if (call.delivered !== call.served) return 'the body changed';
  if (gapFor(c) === undefined) return 'planGaps does not name the format';
  return undefined;
}

function outcome(c: Cell): string {
  const na = expectedNotApplicable(c.fault, c.format);
  const problem = na ? notReported(c) : effectMissing(c);
  const applies = !na && gapFor(c) === undefined;
  return `${na ? 'n/a' : 'applies'}${problem ? ` BUT ${problem}` : ''}${!na && !applies ? ' BUT planGaps names it' : ''}`;
}

const key = (c: Cell) =>
  c.fault.mode === 'stream' && c.format.streams.length > 1 ? `${c.format.name} (${c.plan[0]!.framing})` : c.format.name;

describe('every catalog fault × every wire format: applies, or is reported not applicable', () => {
  const faults = listFaults();
  it('the table covers the whole catalog and every format', () => {
    expect(faults).toHaveLength(89);
    expect(new Set(cells.map((c) => c.fault.name)).size).toBe(89);
    expect(new Set(cells.map((c) => c.format.name)).size).toBe(FORMATS.length);
  });

  it.each(faults.map((f) => [f.name, f] as const))('%s', (_name, fault) => {
    const row = cells.filter((c) => c.fault === fault);
    const got = Object.fromEntries(row.map((c) => [key(c), outcome(c)]));
    const want = Object.fromEntries(
      row.map((c) => [key(c), expectedNotApplicable(fault, c.format) ? 'n/a' : 'applies']),
    );
    expect(got).toEqual(want);
  });
});
