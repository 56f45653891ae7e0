/**
 * Diagnosis of traces made by the real fault-injection stack: the real openai client, faultline's instrumentation and
 * injector (FaultInjectionSpanProcessor + HTTP fault step), the real OTel SDK, and a loopback server replaying
 * recorded corpus bodies. Each task is a small multi-agent workflow (planner → worker with a tool call → reviewer);
 * a plan per task injects one catalog fault at a random position. The spans are normalised, and `evaluate` scores the
 * rule diagnoser against the ground truth the injector recorded (stripped before diagnosis).
 */
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import OpenAI from 'openai';
import { runAgent } from '../../../instrumentation/agents/invoke-agent';
import { runWorkflow } from '../../../instrumentation/agents/task';
import { createDiagnoser } from '../../../src/diagnosers/index';
import { evaluate, type EvalReport } from '../../../src/evaluation/evaluate';
import { evalText } from '../../../src/report/eval-text';
import { loadCorpus, type CorpusRecord } from '../../support/corpus';
import { corpusReply, startLlmServer, type LlmServer } from '../../support/llm-server';
import { setupStack, type Stack } from './stack';
import { toTraces } from '../../support/to-traces';

const chat = loadCorpus('openai-chat.jsonl');
const byId = (id: string): CorpusRecord => chat.find((r) => r.id === id)!;
const TEXT = byId('55dae6f503a5'); // text with non-ASCII characters (mojibake changes it)
const TEXT2 = byId('bd79943fa346');
const TEXT3 = byId('6df2da4a197c');
const TOOL = byId('b92e767b702a'); // one tool call

/** Faults by catalog name; AgentChaos names carry their strategy. Each runs `reps` tasks at random positions. */
export const FAULTS = [
  'llm_error_single', 'llm_timeout_single', 'llm_empty_single', 'llm_truncate_single', 'llm_corrupt_single', 'llm_schema_single',
  'tool_error_single', 'tool_timeout_single', 'tool_empty_single', 'tool_truncate_single', 'tool_corrupt_single', 'tool_schema_single',
  'llm_truncate_burst', 'llm_error_pos_mid', 'llm_schema_pos_late',
  'compound_content_filter', 'compound_max_tokens', 'compound_proxy_html', 'compound_stale_cache',
  'http_503', 'http_429',
];
export const REPS = 3;
export const CLEAN = 20;

let h: Stack;
let server: LlmServer;
let client: OpenAI;
let queue: CorpusRecord[] = [];

function rand(seed: number): () => number {
  let s = seed;
  return () => ((s = (s * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
}

async function workflow(name: string, condition?: string): Promise<void> {
  // planner: text; worker: tool call, then text; reviewer: text. Errors are swallowed the way agents carry on.
  queue = [TEXT3, TOOL, TEXT, TEXT2];
  const call = async (r: CorpusRecord) => {
    try {
      await client.chat.completions.create(r.request as never);
    } catch {
      /* the agent carries on */
    }
  };
  await runWorkflow(name, async () => {
    await runAgent('planner', () => call(TEXT3));
    await runAgent('worker', async () => {
      await call(TOOL);
      await call(TEXT);
    });
    await runAgent('reviewer', () => call(TEXT2));
  }, condition ? { attributes: { 'faultline.fault.condition': condition } } : {});
}

/**
 * Run the fault matrix and the clean tasks through the real stack and evaluate the rule diagnoser.
 * `online`: the production default (no content; online detection events); `content`: captured content read by the
 * offline detectors.
 */
export async function runInjected(MODE: 'online' | 'content'): Promise<EvalReport> {
  h = setupStack(MODE === 'content' ? { captureMessageContent: true, onlineDetection: false } : { captureMessageContent: false, onlineDetection: true });
  // Served as a live provider would: the recorded body with a fresh `created` time and response id (the recording's
  // 2023–2025 timestamps would otherwise read, correctly, as stale replays).
  let n = 0;
  server = await startLlmServer(() => {
    const r = queue.shift()!;
    const live = { ...(r.response as Record<string, unknown>), id: `chatcmpl-live${++n}`, created: Math.floor(Date.now() / 1000) };
    return corpusReply({ ...r, response: live });
  });
  client = new OpenAI({ apiKey: 'sk-test', baseURL: `${server.url}/v1`, maxRetries: 0 });
  const r = rand(20261129);
  for (const fault of FAULTS) {
    for (let i = 0; i < REPS; i++) {
      const position = 1 + Math.floor(r() * 4);
      const fixed = fault.includes('_pos_') || fault.startsWith('compound_') || fault.endsWith('_burst');
      h.plan = { seed: 42, rules: [{ fault, match: fixed ? { operation: 'chat' } : { operation: 'chat', position } }] };
      await workflow(fault, fault);
    }
  }
  h.plan = undefined;
  for (let i = 0; i < CLEAN; i++) await workflow('clean');
  const spans: ReadableSpan[] = await h.waitForSpans((s) => s.filter((x) => x.name.startsWith('invoke_workflow')).length >= FAULTS.length * REPS + CLEAN, 10_000);
  const report = await evaluate(toTraces(spans), [createDiagnoser('rule')]);
  process.stdout.write(evalText(report));
  if (process.env.FAULTLINE_TEST_DEBUG) {
    for (const row of report.rows) {
      const p = row.predictions.rule;
      if (p && (p.faultType !== row.truth.faultType || p.spanId !== row.truth.spanId)) {
        process.stdout.write(`${row.truth.name ?? row.truth.condition ?? 'clean'} ${row.truth.faultType}@${row.truth.step} -> ${p.faultType}@${p.step}: ${p.evidence.join(' | ')}\n`);
      }
    }
  }
  await server.close();
  await h.shutdown();
  return report;
}

