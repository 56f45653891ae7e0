/**
 * ARCF's verification pipeline (§4.7, ../shared/papers/arcf-reliability-control.txt): every output an agent hands
 * on passes three tiers, in order, and the first that fails names the failure —
 *
 *  1. schema: the output has the structure it must have (a JSON Schema, a zod / Standard Schema, or required fields
 *     with their types);
 *  2. safety: rule-based checks (secrets, prompt-injection phrasing, destructive commands by default; your own
 *     rules) and, optionally, principle-based checks by an LLM judge at any OpenAI-compatible endpoint, its answer
 *     locked to a JSON Schema (`llmJudge`);
 *  3. logical consistency: the output agrees with the task's earlier outcomes — the identity fields it shares with
 *     what the task already accepted keep their values — or your own check against them.
 *
 * A failed output launches a retry, a fallback or a rollback, whichever guard runs it: `checkpoint(name, step,
 * { verify: pipeline.step })` re-runs the step and then rolls back; `guard(fn, { verify: pipeline })` retries and
 * falls back. Every verdict on an active span is a `faultline.guard` event (`verify_pass` / `verify_fail`).
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { trace, context as otelContext } from '@opentelemetry/api';
import { resolveTaskId } from '../../instrumentation/agents/task';
import { logger } from '../../src/diag';
import { FaultlineInputError } from '../../src/errors';
import { validateAgainst } from '../contracts';
import { validateJsonSchema } from '../json-schema';
import type { Finding } from '../types';
import { monitorFinding } from '../monitors/common';
import { recordGuard } from './record';

const log = logger('verification');

export type Tier = 'schema' | 'safety' | 'consistency';

export interface TierResult {
  tier: Tier;
  ok: boolean;
  /** What failed and where (field names, rule names), never the content. */
  reason?: string;
  /** The safety tier's judge could not answer (unreachable, invalid answer): `judgeErrors` decided the result. */
  unavailable?: boolean;
}

export interface Verdict {
  ok: boolean;
  /** The tier that failed, when one did. */
  tier?: Tier;
  reason?: string;
  tiers: TierResult[];
}

export interface SafetyRule {
  name: string;
  /** The reason the text breaks the rule, or undefined. */
  check(text: string): string | undefined;
}

/** Rules every output is checked against by default: patterns that are unsafe wherever they appear. */
export const DEFAULT_SAFETY_RULES: readonly SafetyRule[] = [
  rule(
    'secret',
    /\b(sk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{30,}|xox[abpr]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35})\b|-----BEGIN (?:RSA |EC |OPENSSH )?PRIVATE KEY-----/,
    'a credential-like string',
  ),
  rule(
    'prompt_injection',
    /\b(ignore|disregard|forget) (all |any )?(the |your )?(previous|prior|above|earlier) (instructions|prompts?|rules)\b|\byou are now (?:in )?(?:developer|DAN|jailbreak)\b|\breveal (?:your|the) system prompt\b/i,
    'instruction-override phrasing',
  ),
  rule(
    'destructive_command',
    /\brm\s+-[a-z]*r[a-z]*f?\s+(?:\/|~|\*)(?:\s|$)|\bmkfs(?:\.\w+)?\s+\/dev\/|\bdd\s+if=\/dev\/(?:zero|random)\s+of=\/dev\/|:\(\)\s*\{\s*:\|:&\s*\};:|\bDROP\s+(?:TABLE|DATABASE)\b|\bformat\s+c:/i,
    'a destructive command',
  ),
];

function rule(name: string, re: RegExp, what: string): SafetyRule {
  return { name, check: (text) => (re.test(text) ? `${what} (rule ${name})` : undefined) };
}

export type RequiredKind = 'string' | 'number' | 'integer' | 'boolean' | 'object' | 'array';

export interface VerificationOptions {
  /** Tier 1: a JSON Schema, a zod schema or a Standard Schema the output must satisfy. */
  schema?: unknown;
  /** Tier 1: fields the output must have, non-empty, with these types. */
  required?: Record<string, RequiredKind>;
  /** Tier 2: rules (default DEFAULT_SAFETY_RULES; `false` for none) and an optional principle-based judge. */
  safety?: { rules?: readonly SafetyRule[] | false; judge?: Judge } | false;
  /** Tier 3: identity fields that must keep the value the task's earlier accepted outputs gave them, and/or a check
   * of your own against those outputs (the reason it fails, or undefined). */
  consistency?:
    { keys?: readonly string[]; check?: (value: unknown, earlier: readonly unknown[]) => string | undefined } | false;
  /** Earlier outputs kept per task for tier 3 (default 32). */
  historySize?: number;
}

export interface Verifier {
  /** Run the tiers on an output of the current (or the given) task; an accepted output joins the task's outcomes. */
  verify(value: unknown, options?: { taskId?: string; label?: string }): Promise<Verdict>;
  /** For `checkpoint(name, step, { verify: verifier.step })`. */
  readonly step: (value: unknown) => Promise<{ ok: boolean; reason?: string }>;
}

/** A verdict as detector findings (what the guards act on and record). */
export function verdictFindings(v: Verdict): Finding[] {
  if (v.ok || v.tier === undefined) return [];
  const failure =
    v.tier === 'schema' ? 'schema_violation' : v.tier === 'consistency' ? 'output_conflict' : 'quality_degradation';
  const faultType = v.tier === 'schema' ? 'schema' : 'semantic';
  return [monitorFinding('verification', failure, faultType, 'error', 0.9, `${v.tier} tier: ${v.reason ?? 'failed'}`)];
}

function kindOk(v: unknown, kind: RequiredKind): boolean {
  switch (kind) {
    case 'string':
      return typeof v === 'string' && v.trim() !== '';
    case 'number':
      return typeof v === 'number' && Number.isFinite(v);
    case 'integer':
      return typeof v === 'number' && Number.isInteger(v);
    case 'boolean':
      return typeof v === 'boolean';
    case 'array':
      return Array.isArray(v) && v.length > 0;
    case 'object':
      return typeof v === 'object' && v !== null && !Array.isArray(v);
  }
}

function textOf(value: unknown): string {
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value) ?? '';
  } catch {
    return String(value);
  }
}

export function verificationPipeline(options: VerificationOptions = {}): Verifier {
  const rules =
    options.safety === false
      ? []
      : options.safety?.rules === false
        ? []
        : (options.safety?.rules ?? DEFAULT_SAFETY_RULES);
  const judge = options.safety === false ? undefined : options.safety?.judge;
  const consistency = options.consistency === false ? undefined : options.consistency;
  const keep = options.historySize ?? 32;
  const outcomes = new Map<string, unknown[]>();

  const schemaTier = (value: unknown): TierResult => {
    if (options.schema !== undefined) {
      const issues = validateAgainst(options.schema, value);
      if (issues.length > 0)
        return {
          tier: 'schema',
          ok: false,
          reason: issues
            .slice(0, 3)
            .map((i) => `${i.path}: ${i.message}`)
            .join('; '),
        };
    }
    if (options.required) {
      if (typeof value !== 'object' || value === null || Array.isArray(value))
        return {
          tier: 'schema',
          ok: false,
          reason: value === undefined || value === null ? 'no output' : 'the output is not an object',
        };
      const o = value as Record<string, unknown>;
      const bad = Object.entries(options.required)
        .filter(([k, kind]) => !kindOk(o[k], kind))
        .map(([k, kind]) => `${k} (${o[k] === undefined ? 'missing' : `not a ${kind}`})`);
      if (bad.length > 0)
        return { tier: 'schema', ok: false, reason: `required fields: ${bad.slice(0, 6).join(', ')}` };
    }
    return { tier: 'schema', ok: true };
  };

  const safetyTier = async (value: unknown): Promise<TierResult> => {
    const text = textOf(value);
    for (const r of rules) {
      const why = r.check(text);
      if (why !== undefined) return { tier: 'safety', ok: false, reason: why };
    }
    if (judge) {
      const j = await judge.judge(text);
      if (!j.ok)
        return { tier: 'safety', ok: false, reason: j.reason, ...(j.unavailable ? { unavailable: true } : {}) };
      if (j.unavailable) return { tier: 'safety', ok: true, unavailable: true, reason: j.reason };
    }
    return { tier: 'safety', ok: true };
  };

  const consistencyTier = (value: unknown, earlier: readonly unknown[]): TierResult => {
    if (!consistency) return { tier: 'consistency', ok: true };
    if (consistency.keys && typeof value === 'object' && value !== null) {
      const o = value as Record<string, unknown>;
      for (const k of consistency.keys) {
        if (o[k] === undefined) continue;
        const prior = earlier.find(
          (e) => typeof e === 'object' && e !== null && (e as Record<string, unknown>)[k] !== undefined,
        ) as Record<string, unknown> | undefined;
        if (prior && JSON.stringify(prior[k]) !== JSON.stringify(o[k]))
          return { tier: 'consistency', ok: false, reason: `${k} differs from the task's earlier outcome` };
      }
    }
    const why = consistency.check?.(value, earlier);
    if (why !== undefined) return { tier: 'consistency', ok: false, reason: why };
    return { tier: 'consistency', ok: true };
  };

  const verify = async (value: unknown, o: { taskId?: string; label?: string } = {}): Promise<Verdict> => {
    const task = o.taskId ?? resolveTaskId(otelContext.active());
    const earlier = outcomes.get(task) ?? [];
    const tiers: TierResult[] = [];
    const run = async (): Promise<Verdict> => {
      for (const tier of [() => schemaTier(value), () => safetyTier(value), () => consistencyTier(value, earlier)]) {
        const r = await tier();
        tiers.push(r);
        if (!r.ok) return { ok: false, tier: r.tier, ...(r.reason !== undefined ? { reason: r.reason } : {}), tiers };
      }
      return { ok: true, tiers };
    };
    let verdict: Verdict;
    try {
      verdict = await run();
    } catch (err) {
      // A check of the user's that throws is a failed verification, said why; never an unhandled error.
      log.warn('a verification check threw (the output counts as failed):', err);
      verdict = {
        ok: false,
        tier: tiers.length === 0 ? 'schema' : tiers.length === 1 ? 'safety' : 'consistency',
        reason: `a check threw: ${(err as Error)?.message ?? String(err)}`,
        tiers,
      };
    }
    if (verdict.ok) {
      earlier.unshift(value);
      if (earlier.length > keep) earlier.pop();
      outcomes.set(task, earlier);
      if (outcomes.size > 1000) outcomes.delete(outcomes.keys().next().value as string);
    }
    const span = trace.getSpan(otelContext.active());
    const route = `verification${o.label !== undefined ? `:${o.label}` : ''}`;
    recordGuard(
      span,
      verdict.ok ? 'verify_pass' : 'verify_fail',
      route,
      verdict.ok ? 'all tiers passed' : `${verdict.tier} tier: ${verdict.reason ?? ''}`,
    );
    return verdict;
  };

  return {
    verify,
    step: async (value) => {
      const v = await verify(value);
      return v.ok ? { ok: true } : { ok: false, reason: `${v.tier} tier: ${v.reason ?? ''}` };
    },
  };
}

// ------------------------------------------------------------------------------------------------ the LLM judge

export interface JudgeResult {
  ok: boolean;
  reason?: string;
  /** Principles the judge says were broken. */
  violated?: string[];
  /** The judge could not answer; `onError` decided `ok`. */
  unavailable?: boolean;
}

export interface Judge {
  judge(text: string): Promise<JudgeResult>;
}

export interface LlmJudgeOptions {
  /** An OpenAI-compatible base URL, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:11434/v1`. */
  baseURL: string;
  model: string;
  apiKey?: string;
  /** The constitution the output is judged against (default: DEFAULT_PRINCIPLES). */
  principles?: readonly string[];
  /** Per attempt (default 10 s); the judge is asked at most twice. */
  timeoutMs?: number;
  /** When the judge cannot answer: let the output `pass` (default) or `fail`. */
  onError?: 'pass' | 'fail';
  /** Characters of the output sent to the judge (default 8000). */
  maxChars?: number;
}

export const DEFAULT_PRINCIPLES: readonly string[] = [
  'It does not help anyone cause physical, financial or digital harm.',
  'It reveals no credentials, secrets or personal data about people that the task did not give it.',
  'It does not try to change the instructions or the role of another agent.',
  'It states facts only as confidently as the task gives reason to, and does not invent results of actions it did not take.',
];

/** The JSON Schema the judge's answer is locked to (sent as `response_format`, checked again on arrival). */
export const JUDGE_SCHEMA = {
  type: 'object',
  properties: {
    verdict: { type: 'string', enum: ['pass', 'fail'] },
    violated: { type: 'array', items: { type: 'integer', minimum: 1 } },
    reason: { type: 'string', maxLength: 500 },
  },
  required: ['verdict', 'violated', 'reason'],
  additionalProperties: false,
} as const;

/**
 * A principle-based judge (Constitutional AI style) at any OpenAI-compatible chat completions endpoint. The request
 * asks for structured output locked to JUDGE_SCHEMA; the answer is validated against it again (servers that ignore
 * `response_format` are caught), and an answer that does not fit is asked again once. It speaks plain node:http, not
 * fetch, so the judge's own calls are neither traced as the application's nor hit by its fault plan.
 */
export function llmJudge(options: LlmJudgeOptions): Judge {
  let base: URL;
  try {
    base = new URL(options.baseURL.endsWith('/') ? options.baseURL : `${options.baseURL}/`);
  } catch {
    throw new FaultlineInputError(
      'FAULTLINE_USAGE',
      `llmJudge({ baseURL }): not a URL: ${JSON.stringify(options.baseURL)}`,
    );
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:')
    throw new FaultlineInputError('FAULTLINE_USAGE', `llmJudge({ baseURL }): expected http(s), got ${base.protocol}`);
  if (typeof options.model !== 'string' || options.model === '')
    throw new FaultlineInputError('FAULTLINE_USAGE', 'llmJudge({ model }): a model name is required');
  const principles = options.principles ?? DEFAULT_PRINCIPLES;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const maxChars = options.maxChars ?? 8000;
  const url = new URL('chat/completions', base);
  const system =
    'You check one output of an AI agent against these principles:\n' +
    principles.map((p, i) => `${i + 1}. ${p}`).join('\n') +
    '\nAnswer with JSON only: {"verdict":"pass"|"fail","violated":[numbers of the principles broken],"reason":"<one sentence>"}.';

  const unavailable = (why: string): JudgeResult => ({
    ok: options.onError === 'fail' ? false : true,
    unavailable: true,
    reason: `judge unavailable: ${why}`,
  });

  return {
    async judge(text) {
      const body = JSON.stringify({
        model: options.model,
        temperature: 0,
        messages: [
          { role: 'system', content: system },
          { role: 'user', content: `Output to check:\n"""\n${text.slice(0, maxChars)}\n"""` },
        ],
        response_format: { type: 'json_schema', json_schema: { name: 'verdict', strict: true, schema: JUDGE_SCHEMA } },
      });
      let last = 'no answer';
      for (let attempt = 0; attempt < 2; attempt++) {
        let res: { status: number; body: string };
        try {
          res = await post(url, body, options.apiKey, timeoutMs);
        } catch (err) {
          last = (err as Error).message;
          continue;
        }
        if (res.status >= 400) {
          last = `HTTP ${res.status}`;
          if (res.status < 500 && res.status !== 429) break;
          continue;
        }
        const answer = parseAnswer(res.body);
        if (typeof answer === 'string') {
          last = answer;
          continue;
        }
        const violated = answer.violated.map((n) => principles[n - 1] ?? `principle ${n}`);
        return answer.verdict === 'pass'
          ? { ok: true, violated: [] }
          : { ok: false, violated, reason: `the judge found principle(s) ${answer.violated.join(', ') || '?'} broken` };
      }
      return unavailable(last);
    },
  };
}

/** The judge's verdict from a chat completion body, or why it is not one. */
function parseAnswer(raw: string): { verdict: 'pass' | 'fail'; violated: number[]; reason: string } | string {
  let content: unknown;
  try {
    content = (JSON.parse(raw) as { choices?: Array<{ message?: { content?: unknown } }> }).choices?.[0]?.message
      ?.content;
  } catch {
    return 'the answer is not a chat completion';
  }
  if (typeof content !== 'string') return 'the answer has no content';
  let parsed: unknown;
  try {
    parsed = JSON.parse(content.trim().replace(/^```(?:json)?\s*|\s*```$/g, ''));
  } catch {
    return 'the verdict is not JSON';
  }
  const issues = validateJsonSchema(JUDGE_SCHEMA, parsed);
  if (issues.length > 0) return `the verdict does not fit its schema (${issues[0]!.path}: ${issues[0]!.message})`;
  return parsed as { verdict: 'pass' | 'fail'; violated: number[]; reason: string };
}

function post(
  url: URL,
  body: string,
  apiKey: string | undefined,
  timeoutMs: number,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
    };
    if (apiKey) headers.authorization = `Bearer ${apiKey}`;
    let settled = false;
    const done = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      fn();
    };
    const req = send(url, { method: 'POST', headers }, (res: IncomingMessage) => {
      const parts: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > 1_000_000) req.destroy(new Error('the answer is over 1 MB'));
        else parts.push(c);
      });
      res.on('end', () =>
        done(() => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString('utf8') })),
      );
      res.on('error', (err) => done(() => reject(err)));
    });
    // One deadline for the whole exchange (connect, send, answer): a judge that never answers ends here.
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    timer.unref();
    req.on('error', (err) => done(() => reject(err)));
    req.end(body);
  });
}
