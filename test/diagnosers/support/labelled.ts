/**
 * A labelled set of multi-agent traces shaped like faultline's: 2–4 agents, 3–6 LLM calls, handoff messages, one
 * fault per faulty trace at a random step, recorded the way the injector records it (faultline.fault.* on the hit
 * span), with the online detectors' events where a detector would fire on the injected content. Clean traces
 * include benign noise (tool calls with no text, weak detector hints, latency jitter). Used for the strip
 * invariance test and the evaluation mechanics, NOT for accuracy claims (those come from real campaign traces).
 */
import type { FaultType } from '../../../src/taxonomy';
import type { TraceRecord } from '../../../src/traces/model';
import type { ChatSpec, MessageSpec, TraceBuilder, Truth } from './builder';

function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
}

type LlmFault = { name: string; type: FaultType; spec: (r: () => number) => ChatSpec };
type MsgFault = { name: string; type: FaultType; spec: () => Partial<MessageSpec> };

export const LLM_FAULTS: LlmFault[] = [
  { name: 'llm_truncate_single', type: 'truncate', spec: () => ({ finishReasons: ['length'], outputChars: 70 }) },
  { name: 'compound_max_tokens', type: 'truncate', spec: () => ({ finishReasons: ['length'], outputChars: 120 }) },
  { name: 'http_503', type: 'error', spec: () => ({ http: 503 }) },
  { name: 'http_429', type: 'error', spec: () => ({ http: 429 }) },
  { name: 'timeout', type: 'timeout', spec: () => ({ errorType: 'UND_ERR_HEADERS_TIMEOUT', durationMs: 30_000 }) },
  { name: 'llm_empty_single', type: 'empty', spec: () => ({ outputChars: 0 }) },
  {
    name: 'tool_empty_single',
    type: 'empty',
    spec: () => ({ finishReasons: ['tool_calls'], outputChars: 0, toolCalls: 0 }),
  },
  {
    name: 'compound_content_filter',
    type: 'empty',
    spec: () => ({
      finishReasons: ['content_filter'],
      outputChars: 79,
      detections: [
        { detector: 'in_band_error', faultType: 'error', confidence: 0.9, evidence: 'content-filter template' },
      ],
    }),
  },
  {
    name: 'llm_error_single',
    type: 'error',
    spec: () => ({
      outputChars: 93,
      detections: [
        { detector: 'in_band_error', faultType: 'error', confidence: 0.95, evidence: '[API ERROR] template' },
      ],
    }),
  },
  {
    name: 'llm_timeout_single',
    type: 'timeout',
    spec: () => ({
      outputChars: 86,
      detections: [
        { detector: 'in_band_error', faultType: 'timeout', confidence: 0.95, evidence: '[TIMEOUT] template' },
      ],
    }),
  },
  {
    name: 'llm_corrupt_single',
    type: 'corrupt',
    spec: () => ({
      detections: [{ detector: 'encoding', faultType: 'corrupt', confidence: 0.97, evidence: 'mojibake' }],
    }),
  },
  {
    name: 'tool_corrupt_single',
    type: 'corrupt',
    spec: () => ({
      finishReasons: ['tool_calls'],
      toolCalls: 1,
      outputChars: 0,
      detections: [
        { detector: 'encoding', faultType: 'corrupt', confidence: 0.9, evidence: 'U+26xx symbols in arguments' },
      ],
    }),
  },
  {
    name: 'tool_schema_single',
    type: 'schema',
    spec: () => ({
      finishReasons: ['tool_calls'],
      toolCalls: 1,
      outputChars: 0,
      detections: [
        { detector: 'schema_contract', faultType: 'schema', confidence: 0.95, evidence: 'unexpected key wrong_param' },
      ],
    }),
  },
  { name: 'compound_slow_response', type: 'delay', spec: (r) => ({ durationMs: 5000 + Math.round(r() * 900) }) },
  { name: 'stream_cut', type: 'truncate', spec: () => ({ stream: { chunks: 3, done: false }, finishReasons: [] }) },
];

export const MSG_FAULTS: MsgFault[] = [
  { name: 'non_delivery_step4', type: 'non_delivery', spec: () => ({ delivered: 0 }) },
  { name: 'duplicate_delivery', type: 'duplicate', spec: () => ({ delivered: 2 }) },
  {
    name: 'valid_partial_message_step4',
    type: 'partial',
    spec: () => ({
      deliveredHashes: ['x'],
      detections: [
        {
          detector: 'evidence_completeness',
          faultType: 'partial',
          confidence: 0.9,
          evidence: 'missing required evidence',
        },
      ],
    }),
  },
];

export function labelledSet(
  b: TraceBuilder,
  options: { seed: number; perFault: number; clean?: number; untriggered?: number },
): TraceRecord[] {
  const r = rng(options.seed);
  const out: TraceRecord[] = [];
  const agents = ['planner', 'researcher', 'coder', 'reviewer'];
  const build = (fault: { llm?: LlmFault; msg?: MsgFault } | undefined, condition?: string): TraceRecord => {
    const nAgents = 2 + Math.floor(r() * 3);
    const calls = Array.from({ length: nAgents }, () => 1 + Math.floor(r() * 2));
    const totalCalls = calls.reduce((a, c) => a + c, 0);
    const faultCall = fault?.llm ? Math.floor(r() * totalCalls) : -1;
    const faultMsg = fault?.msg ? Math.floor(r() * (nAgents - 1)) : -1;
    let k = 0;
    return b.trace(
      (w) => {
        for (let i = 0; i < nAgents; i++) {
          w.agent(agents[i]!, (a) => {
            for (let j = 0; j < calls[i]!; j++, k++) {
              const base: ChatSpec = { durationMs: 500 + Math.round(r() * 900) };
              if (r() < 0.3) Object.assign(base, { finishReasons: ['tool_calls'], toolCalls: 1, outputChars: 0 });
              if (!fault && r() < 0.15)
                base.detections = [
                  {
                    detector: 'structural_truncation',
                    faultType: 'truncate',
                    confidence: 0.35,
                    evidence: 'unclosed sentence (weak)',
                  },
                ];
              if (k === faultCall) {
                const truth: Truth = { type: fault!.llm!.type, name: fault!.llm!.name };
                a.chat({ ...base, ...fault!.llm!.spec(r), truth });
                // An agent often retries or carries on after a fault: the symptom must not win.
                if (r() < 0.5) a.chat({ durationMs: 600 });
              } else a.chat(base);
            }
          });
          if (i < nAgents - 1) {
            const m: MessageSpec = { source: agents[i]!, target: agents[i + 1]!, boundary: `I${Math.min(4, i + 2)}` };
            if (i === faultMsg)
              Object.assign(m, fault!.msg!.spec(), { truth: { type: fault!.msg!.type, name: fault!.msg!.name } });
            w.message(m);
          }
        }
      },
      { taskId: `task-${out.length}`, ...(condition ? { condition } : {}) },
    );
  };
  for (const f of LLM_FAULTS) for (let i = 0; i < options.perFault; i++) out.push(build({ llm: f }, f.name));
  for (const f of MSG_FAULTS) for (let i = 0; i < options.perFault; i++) out.push(build({ msg: f }, f.name));
  for (let i = 0; i < (options.clean ?? options.perFault * 4); i++) out.push(build(undefined));
  for (let i = 0; i < (options.untriggered ?? 1); i++) out.push(build(undefined, 'tool_schema_single'));
  return out;
}
