/**
 * All 65 AgentChaos configurations through the real openai client against a loopback server replaying corpus
 * bodies: which calls are hit (strategy, guard, position), what the application receives, and what the span records.
 */
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  ATTR_FL_FAULT_CALL_INDEX,
  ATTR_FL_FAULT_CATEGORY,
  ATTR_FL_FAULT_MODE,
  ATTR_FL_FAULT_NOOP,
  ATTR_FL_FAULT_STRATEGY,
  ATTR_FL_FAULT_TYPE,
} from '../../instrumentation/semconv';
import {
  CONTENT_FILTERED_TEXT,
  LLM_ERROR_TEXT,
  LLM_SCHEMA_TEXT,
  LLM_TIMEOUT_TEXT,
  PROXY_HTML_TEXT,
  SERVICE_UNAVAILABLE_TEXT,
} from '../../src/catalog/agentchaos/experiments';
import { FAULT_NAMES, getFault } from '../../src/catalog/index';
import { loadCorpus, type CorpusRecord } from '../support/corpus';
import { corpusReply, startLlmServer, type LlmServer } from '../support/llm-server';
import { callSpans, faultName, injectedEvents, setupHarness, type Harness } from './harness';

type Msg = { content: string | null; tool_calls?: Array<{ function: { name: string; arguments: string } }> };
type Resp = { choices: Array<{ message: Msg; finish_reason: string }> };

const chat = loadCorpus('openai-chat.jsonl');
const byId = (id: string): CorpusRecord => chat.find((r) => r.id === id)!;
// A text answer with non-ASCII characters (so mojibake changes it), a second text answer, a single tool call.
const TEXT = byId('55dae6f503a5');
const TEXT2 = byId('bd79943fa346');
const TOOL = byId('b92e767b702a');
const textOf = (r: CorpusRecord) => (r.response as Resp).choices[0].message.content!;
const argsOf = (r: CorpusRecord) => (r.response as Resp).choices[0].message.tool_calls![0].function.arguments;

let h: Harness;
let server: LlmServer;
let client: OpenAI;
let queue: CorpusRecord[] = [];

beforeAll(async () => {
  h = setupHarness();
  server = await startLlmServer(() => corpusReply(queue.shift()!));
  client = new OpenAI({ apiKey: 'sk-test', baseURL: `${server.url}/v1`, maxRetries: 0 });
});
afterAll(async () => {
  await server.close();
  await h.shutdown();
});
beforeEach(() => h.exporter.reset());

async function runCalls(
  fault: string,
  records: CorpusRecord[],
): Promise<{ responses: Resp[]; spans: ReadableSpan[]; taskId: string; ms: number[] }> {
  queue = [...records];
  h.exporter.reset();
  const ms: number[] = [];
  const { result, taskId } = await h.task({ seed: 42, rules: [{ fault, match: { operation: 'chat' } }] }, async () => {
    const out: Resp[] = [];
    for (const r of records) {
      const t0 = Date.now();
      out.push((await client.chat.completions.create(r.request as never)) as unknown as Resp);
      ms.push(Date.now() - t0);
    }
    return out;
  });
  const spans = callSpans(await h.waitForSpans((s) => callSpans(s).length >= records.length));
  expect(spans).toHaveLength(records.length);
  return { responses: result, spans, taskId, ms };
}

const STRATEGY_FIRES: Record<string, number[]> = {
  single: [1],
  persistent: [1, 2, 3, 4],
  intermittent: [2, 3, 4], // Random(42): 0.639 > 0.3, then 0.025, 0.275, 0.223 ≤ 0.3
  burst: [1, 2, 3],
  pos_early: [1],
  pos_mid: [2],
  pos_late: [3],
};

function checkContent(base: string, got: Resp, original: CorpusRecord): void {
  const c = got.choices[0];
  const orig = textOf(original);
  switch (base) {
    case 'llm_error':
      return expect(c.message.content).toBe(LLM_ERROR_TEXT);
    case 'llm_timeout':
      return expect(c.message.content).toBe(LLM_TIMEOUT_TEXT);
    case 'llm_empty':
      return expect(c.message.content).toBe('');
    case 'llm_schema':
      return expect(c.message.content).toBe(LLM_SCHEMA_TEXT);
    case 'llm_truncate': {
      const cps = Array.from(orig);
      expect(c.message.content).toBe(cps.slice(0, Math.floor(cps.length * 0.3)).join(''));
      return expect(c.finish_reason).toBe('length');
    }
    case 'llm_corrupt':
      return expect(c.message.content).toBe(Buffer.from(orig, 'utf8').toString('latin1'));
  }
  throw new Error(`no oracle for ${base}`);
}

function checkTool(base: string, got: Resp, original: CorpusRecord): void {
  const m = got.choices[0].message;
  const orig = JSON.parse(argsOf(original)) as Record<string, string>;
  switch (base) {
    case 'tool_error':
      return expect(m.tool_calls![0].function.arguments).toBe('{}');
    case 'tool_schema':
      return expect(m.tool_calls![0].function.arguments).toBe('{"wrong_param": "unexpected_value"}');
    case 'tool_empty':
      return expect(m.tool_calls).toEqual([]);
    case 'tool_timeout':
      expect(m.content).toBe('[TIMEOUT] Connection dropped. The server did not respond.');
      return expect(m.tool_calls).toEqual([]);
    case 'tool_truncate': {
      const args = JSON.parse(m.tool_calls![0].function.arguments) as Record<string, string>;
      expect(Object.keys(args)).toEqual(Object.keys(orig));
      for (const k of Object.keys(orig)) {
        const cps = Array.from(orig[k]);
        expect(args[k]).toBe(cps.slice(0, Math.max(1, Math.floor(cps.length * 0.3))).join(''));
      }
      return expect(m.tool_calls![0].function.arguments).toContain('", "'); // Python json.dumps spacing
    }
    case 'tool_corrupt': {
      const args = JSON.parse(m.tool_calls![0].function.arguments) as Record<string, string>;
      let changed = 0;
      for (const k of Object.keys(orig)) {
        const a = Array.from(args[k]);
        const o = Array.from(orig[k]);
        expect(a).toHaveLength(o.length);
        a.forEach((ch, i) => {
          if (ch !== o[i]) {
            changed++;
            expect(ch.codePointAt(0)).toBeGreaterThanOrEqual(0x2600);
            expect(ch.codePointAt(0)).toBeLessThanOrEqual(0x26ff);
          }
        });
      }
      return expect(changed).toBeGreaterThan(0);
    }
  }
  throw new Error(`no oracle for ${base}`);
}

const STRATEGY_NAMES = FAULT_NAMES.filter((n) => getFault(n)?.mode === 'content' && !n.startsWith('compound_'));

describe('the 60 base × strategy and positional configurations, through the openai SDK', () => {
  it('covers 48 + 9 + (8 compound below) = 65', () => {
    expect(STRATEGY_NAMES).toHaveLength(57);
  });

  it.each(STRATEGY_NAMES)('%s', async (name) => {
    const f = getFault(name)!;
    const isTool = f.base.startsWith('tool_');
    const rec = isTool ? TOOL : TEXT;
    const { responses, spans, taskId } = await runCalls(name, [rec, rec, rec, rec]);
    // The RNG is shared by the probability draw and the corruption (as in AgentChaos): after the corruption draws of
    // call 2, no later draw is ≤ 0.3 (checked against CPython's random.Random(42) with this record's arguments).
    const expected = name === 'tool_corrupt_intermittent' ? [2] : STRATEGY_FIRES[f.strategy.kind];
    responses.forEach((got, i) => {
      const call = i + 1;
      const span = spans[i];
      if (expected.includes(call)) {
        if (isTool) checkTool(f.base, got, rec);
        else checkContent(f.base, got, rec);
        expect(faultName(span)).toBe(name);
        expect(span.attributes).toMatchObject({
          [ATTR_FL_FAULT_TYPE]: f.type,
          [ATTR_FL_FAULT_CATEGORY]: f.category,
          [ATTR_FL_FAULT_MODE]: 'content',
          [ATTR_FL_FAULT_STRATEGY]: f.strategy.kind,
          [ATTR_FL_FAULT_CALL_INDEX]: call,
          [ATTR_FL_FAULT_NOOP]: false,
        });
        const [ev] = injectedEvents(span);
        expect(ev.attributes?.['faultline.fault.original.hash']).not.toBe(
          ev.attributes?.['faultline.fault.delivered.hash'],
        );
        expect(ev.attributes?.['faultline.fault.original.body']).toBeUndefined(); // content capture is off
      } else {
        // Not hit: the application gets the provider's answer unchanged.
        expect(got.choices[0].message).toEqual((rec.response as Resp).choices[0].message);
        expect(faultName(span)).toBeUndefined();
      }
    });
    const report = h.injector.triggerReport(taskId);
    expect(report.tasks[0].rules[0]).toMatchObject({
      rule: name,
      matched: 4,
      fires: expected.length,
      noops: 0,
      triggered: true,
    });
  });
});

describe('the 8 compound scenarios, through the openai SDK', () => {
  it('compound_api_degradation: 3 s delay on the 1st call, the 503 text on the 1st call without tool calls', async () => {
    const { responses, ms } = await runCalls('compound_api_degradation', [TOOL, TEXT]);
    expect(ms[0]).toBeGreaterThanOrEqual(2900);
    expect(responses[0].choices[0].message.tool_calls?.[0].function.arguments).toBe(argsOf(TOOL));
    expect(responses[1].choices[0].message.content).toBe(SERVICE_UNAVAILABLE_TEXT);
  });

  it('compound_content_filter: tool calls stripped, filtered text, finish_reason content_filter', async () => {
    const { responses } = await runCalls('compound_content_filter', [TOOL, TEXT]);
    expect(responses[0].choices[0]).toMatchObject({
      message: { content: CONTENT_FILTERED_TEXT, tool_calls: [] },
      finish_reason: 'content_filter',
    });
    expect(responses[1].choices[0].message.content).toBe(textOf(TEXT));
  });

  it('compound_max_tokens: finish_reason length on a tool call, the next text cut to 50%', async () => {
    const { responses } = await runCalls('compound_max_tokens', [TOOL, TEXT]);
    expect(responses[0].choices[0].finish_reason).toBe('length');
    expect(responses[0].choices[0].message.tool_calls).toHaveLength(1);
    const cps = Array.from(textOf(TEXT));
    expect(responses[1].choices[0].message.content).toBe(cps.slice(0, Math.floor(cps.length / 2)).join(''));
  });

  it('compound_proxy_html: an nginx 502 page as content', async () => {
    const { responses } = await runCalls('compound_proxy_html', [TEXT]);
    expect(responses[0].choices[0].message.content).toBe(PROXY_HTML_TEXT);
  });

  it('compound_stale_cache: the 2nd call gets the 1st call’s body', async () => {
    const { responses, spans } = await runCalls('compound_stale_cache', [TEXT, TEXT2, TEXT2]);
    expect(responses[1].choices[0].message.content).toBe(textOf(TEXT));
    expect(responses[2].choices[0].message.content).toBe(textOf(TEXT2));
    expect(spans.map(faultName)).toEqual([undefined, 'compound_stale_cache', undefined]);
  });

  it('compound_stale_data and compound_wrong_entity: the first tool call’s arguments replaced', async () => {
    const a = await runCalls('compound_stale_data', [TEXT, TOOL]);
    expect(a.responses[1].choices[0].message.tool_calls![0].function.arguments).toBe('{"city": "Pyongyang"}');
    const b = await runCalls('compound_wrong_entity', [TOOL]);
    expect(b.responses[0].choices[0].message.tool_calls![0].function.arguments).toBe('{"city": "Springfield"}');
  });

  it('compound_slow_response: 5 s delay, body unchanged', async () => {
    const { responses, ms, spans } = await runCalls('compound_slow_response', [TEXT]);
    expect(ms[0]).toBeGreaterThanOrEqual(4900);
    expect(responses[0].choices[0].message).toEqual((TEXT.response as Resp).choices[0].message);
    expect(injectedEvents(spans[0])[0].attributes?.['faultline.fault.delay_ms']).toBe(5000);
  });
});
