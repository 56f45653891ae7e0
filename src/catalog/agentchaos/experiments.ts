/**
 * The 65 AgentChaos configurations, built from the 12 base faults: 12 bases × 4 strategies, 9 positional
 * experiments and 8 compound scenarios (floritange/AgentChaos fault_config.py; docs/fault-catalog.md). Strings are
 * byte-for-byte the SDK's.
 */
import { z } from 'zod';
import type { FaultCategory, FaultType } from '../../taxonomy';
import type { ContentFault, FaultTarget, Strategy } from '../types';
import { CONTENT_PATH, FINISH_REASON_PATH, TOOL_ARGS_PATH, TOOL_CALLS_PATH, type FaultSpec } from './spec';

const MAXSIZE = Number.MAX_SAFE_INTEGER; // Python's sys.maxsize: "unlimited, but counted"

export const LLM_ERROR_TEXT =
  '[API ERROR] HTTP 500: Internal Server Error. The server encountered an unexpected condition.';
export const LLM_TIMEOUT_TEXT = '[TIMEOUT] The request timed out. The server did not respond within the expected time.';
export const LLM_SCHEMA_TEXT = '{"error": "content_policy_violation", "message": "This response has been filtered."}';
export const SERVICE_UNAVAILABLE_TEXT =
  '[SERVICE UNAVAILABLE] HTTP 503: The server is temporarily unable to handle the request.';
export const CONTENT_FILTERED_TEXT = '[CONTENT FILTERED] This response has been blocked by the content safety filter.';
export const PROXY_HTML_TEXT =
  '<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>\n<body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx/1.24.0</center></body></html>';

interface BaseDef {
  id: string;
  type: FaultType;
  category: FaultCategory;
  target: FaultTarget;
  description: string;
  spec: Pick<FaultSpec, 'action' | 'target' | 'value'>;
}

const crash: FaultCategory = 'crash';
const omission: FaultCategory = 'omission';
const value: FaultCategory = 'value';

export const BASES: readonly BaseDef[] = [
  {
    id: 'llm_error',
    type: 'error',
    category: crash,
    target: 'content',
    description: 'content := the API-error text',
    spec: { action: 'set', target: CONTENT_PATH, value: LLM_ERROR_TEXT },
  },
  {
    id: 'llm_timeout',
    type: 'timeout',
    category: crash,
    target: 'content',
    description: 'content := the timeout text',
    spec: { action: 'set', target: CONTENT_PATH, value: LLM_TIMEOUT_TEXT },
  },
  {
    id: 'llm_empty',
    type: 'empty',
    category: omission,
    target: 'content',
    description: 'content := ""',
    spec: { action: 'set', target: CONTENT_PATH, value: '' },
  },
  {
    id: 'llm_truncate',
    type: 'truncate',
    category: omission,
    target: 'content',
    description: 'content cut to 30% (≥1 char), finish_reason "length"',
    spec: { action: 'truncate', target: CONTENT_PATH, value: 0.3 },
  },
  {
    id: 'llm_corrupt',
    type: 'corrupt',
    category: value,
    target: 'content',
    description: 'content mojibake (UTF-8 read as Latin-1; a no-op on ASCII)',
    spec: { action: 'corrupt', target: CONTENT_PATH, value: 'mojibake' },
  },
  {
    id: 'llm_schema',
    type: 'schema',
    category: value,
    target: 'content',
    description: 'content := a content-policy JSON object',
    spec: { action: 'set', target: CONTENT_PATH, value: LLM_SCHEMA_TEXT },
  },
  {
    id: 'tool_error',
    type: 'error',
    category: crash,
    target: 'tool_calls',
    description: 'tool_calls[0] arguments := "{}"',
    spec: { action: 'set', target: TOOL_ARGS_PATH, value: '{}' },
  },
  {
    id: 'tool_timeout',
    type: 'timeout',
    category: crash,
    target: 'tool_calls',
    description: 'content := the connection-dropped text, tool_calls := []',
    spec: { action: 'drop', target: `${TOOL_CALLS_PATH}[0]` },
  },
  {
    id: 'tool_empty',
    type: 'empty',
    category: omission,
    target: 'tool_calls',
    description: 'tool_calls := []',
    spec: { action: 'set', target: TOOL_CALLS_PATH, value: [] },
  },
  {
    id: 'tool_truncate',
    type: 'truncate',
    category: omission,
    target: 'tool_calls',
    description: 'every string in tool_calls[0] arguments cut to 30%, JSON kept valid',
    spec: { action: 'truncate', target: TOOL_ARGS_PATH, value: 0.3 },
  },
  {
    id: 'tool_corrupt',
    type: 'corrupt',
    category: value,
    target: 'tool_calls',
    description: '~20% of the characters of each argument string → random U+2600–U+26FF',
    spec: { action: 'corrupt', target: TOOL_ARGS_PATH, value: 'unicode' },
  },
  {
    id: 'tool_schema',
    type: 'schema',
    category: value,
    target: 'tool_calls',
    description: 'tool_calls[0] arguments := {"wrong_param": "unexpected_value"}',
    spec: { action: 'set', target: TOOL_ARGS_PATH, value: '{"wrong_param": "unexpected_value"}' },
  },
];

export const STRATEGIES: Record<'single' | 'persistent' | 'intermittent' | 'burst', Strategy> = {
  single: { kind: 'single', maxCount: 1, minCount: 0, probability: 1 },
  persistent: { kind: 'persistent', maxCount: MAXSIZE, minCount: 0, probability: 1 },
  intermittent: { kind: 'intermittent', maxCount: MAXSIZE, minCount: 0, probability: 0.3 },
  burst: { kind: 'burst', maxCount: 3, minCount: 0, probability: 1 },
};

const POSITIONS: Record<'early' | 'mid' | 'late', Strategy> = {
  early: { kind: 'pos_early', maxCount: 1, minCount: 0, probability: 1 },
  mid: { kind: 'pos_mid', maxCount: 2, minCount: 1, probability: 1 },
  late: { kind: 'pos_late', maxCount: 3, minCount: 2, probability: 1 },
};

const NO_PARAMS = z.strictObject({}) as unknown as z.ZodType<Record<string, unknown>>;
const COMPOUND: Strategy = { kind: 'compound', maxCount: 1, minCount: 0, probability: 1 };

function once(spec: Pick<FaultSpec, 'action' | 'target' | 'value'>, extra: Partial<FaultSpec> = {}): FaultSpec {
  return { ...spec, maxCount: 1, minCount: 0, probability: 1, ...extra };
}

interface CompoundDef {
  id: string;
  type: FaultType;
  category: FaultCategory;
  target: FaultTarget;
  description: string;
  specs: FaultSpec[];
}

export const COMPOUNDS: readonly CompoundDef[] = [
  {
    id: 'compound_api_degradation',
    type: 'error',
    category: crash,
    target: 'content',
    description: '3 s delay + the 503 service-unavailable text',
    specs: [
      once({ action: 'delay', target: '$', value: 3000 }),
      once({ action: 'set', target: CONTENT_PATH, value: SERVICE_UNAVAILABLE_TEXT }),
    ],
  },
  {
    id: 'compound_content_filter',
    type: 'empty',
    category: omission,
    target: 'content',
    description: 'tool_calls stripped, content-filtered text, finish_reason "content_filter"',
    specs: [
      once({ action: 'set', target: TOOL_CALLS_PATH, value: [] }),
      once({ action: 'set', target: CONTENT_PATH, value: CONTENT_FILTERED_TEXT }),
      once({ action: 'set', target: FINISH_REASON_PATH, value: 'content_filter' }),
    ],
  },
  {
    id: 'compound_max_tokens',
    type: 'truncate',
    category: omission,
    target: 'content',
    description: 'content cut to 50% + finish_reason "length"',
    specs: [
      once({ action: 'truncate', target: CONTENT_PATH, value: 0.5 }),
      once({ action: 'set', target: FINISH_REASON_PATH, value: 'length' }),
    ],
  },
  {
    id: 'compound_proxy_html',
    type: 'error',
    category: crash,
    target: 'content',
    description: 'content := an nginx 502 Bad Gateway HTML page',
    specs: [once({ action: 'set', target: CONTENT_PATH, value: PROXY_HTML_TEXT })],
  },
  {
    id: 'compound_stale_cache',
    type: 'stale',
    category: value,
    target: 'response',
    description: '2nd call gets the previous delivered body',
    specs: [once({ action: 'duplicate', target: '$' }, { minCount: 1, maxCount: 2 })],
  },
  {
    id: 'compound_stale_data',
    type: 'semantic',
    category: value,
    target: 'tool_calls',
    description: 'tool_calls[0] arguments := {"city": "Pyongyang"}',
    specs: [once({ action: 'set', target: TOOL_ARGS_PATH, value: '{"city": "Pyongyang"}' })],
  },
  {
    id: 'compound_wrong_entity',
    type: 'semantic',
    category: value,
    target: 'tool_calls',
    description: 'tool_calls[0] arguments := {"city": "Springfield"}',
    specs: [once({ action: 'set', target: TOOL_ARGS_PATH, value: '{"city": "Springfield"}' })],
  },
  {
    id: 'compound_slow_response',
    type: 'delay',
    category: omission,
    target: 'response',
    description: '5 s delay, body unchanged',
    specs: [once({ action: 'delay', target: '$', value: 5000 })],
  },
];

/** All 65 AgentChaos experiments, in AgentChaos's order: base × strategy, compound, positional. */
export function agentChaosFaults(): ContentFault[] {
  const out: ContentFault[] = [];
  for (const b of BASES) {
    for (const [sname, st] of Object.entries(STRATEGIES)) {
      out.push(
        contentFault(`${b.id}_${sname}`, b, st, [
          { ...b.spec, maxCount: st.maxCount, minCount: st.minCount, probability: st.probability },
        ]),
      );
    }
  }
  for (const c of COMPOUNDS) {
    out.push({
      name: c.id,
      base: c.id,
      type: c.type,
      category: c.category,
      mode: 'content',
      target: c.target,
      strategy: COMPOUND,
      fixedStrategy: true,
      description: c.description,
      params: NO_PARAMS,
      specs: c.specs,
    });
  }
  for (const id of ['llm_error', 'llm_timeout', 'llm_schema']) {
    const b = BASES.find((x) => x.id === id)!;
    for (const [pos, st] of Object.entries(POSITIONS)) {
      const spec: FaultSpec = {
        ...b.spec,
        maxCount: st.maxCount,
        minCount: st.minCount,
        probability: 1,
        skipGuard: true,
      };
      out.push(
        contentFault(
          `${id}_pos_${pos}`,
          b,
          st,
          [spec],
          `${b.description}, on exactly the ${pos === 'early' ? '1st' : pos === 'mid' ? '2nd' : '3rd'} matched call (guard off)`,
        ),
      );
    }
  }
  return out;
}

function contentFault(
  name: string,
  b: BaseDef,
  strategy: Strategy,
  specs: FaultSpec[],
  description?: string,
): ContentFault {
  return {
    name,
    base: b.id,
    type: b.type,
    category: b.category,
    mode: 'content',
    target: b.target,
    strategy,
    fixedStrategy: true,
    description: description ?? `${b.description} (${strategy.kind})`,
    params: NO_PARAMS,
    specs,
  };
}
