/**
 * An LLM multi-agent workflow written for this set: equity research over MessageChannel, where every agent decides
 * what it sends with a model call (the real openai client, through faultline's span layer, to a loopback
 * OpenAI-compatible model on 127.0.0.1) and the researcher also runs a tool, recorded as an application records one
 * (an `execute_tool` span with its arguments and result). Each agent decides values of its own under keys earlier
 * messages also carry (a confidence, figures it passes on rounded, new times): a clean run a receiver-side reading
 * must not take for a changed message.
 *
 * The agents post-process what their model said as applications do: they add envelope fields (request ids, times,
 * priorities), keep some of the model's fields and drop others, nest and rename (`url` → `source_url`), round
 * scores, and sometimes send a confidence as a percentage. Faults are made between sender and receiver by the same
 * channel step as the other channel workflows (support/workflows.ts); the model never sees a fault.
 */
import { createHash, randomUUID } from 'node:crypto';
import { SpanKind, trace } from '@opentelemetry/api';
import OpenAI from 'openai';
import { z } from 'zod';
import { MessageChannel } from '../../../instrumentation/agents/channel';
import { runAgent } from '../../../instrumentation/agents/invoke-agent';
import { runWorkflow } from '../../../instrumentation/agents/task';
import type { AgentMessage } from '../../../instrumentation/types';
import { startLlmServer, type LlmServer } from '../../support/llm-server';
import { int, pick, rng, type Json, type Rng } from './operators';
import { channelProxy, code, label, sleep, type ChannelRun, type Label, type Pool, type RunPlan } from './workflows';

const COMPANIES: readonly { name: string; ticker: string; currency: string }[] = [
  { name: 'Acme Robotics', ticker: 'ACMR', currency: 'USD' },
  { name: 'Nestlé', ticker: 'NESN', currency: 'CHF' },
  { name: 'Société Générale', ticker: 'GLE', currency: 'EUR' },
  { name: 'トヨタ自動車', ticker: '7203', currency: 'JPY' },
  { name: 'Vale S.A.', ticker: 'VALE3', currency: 'BRL' },
  { name: "O'Reilly Automotive", ticker: 'ORLY', currency: 'USD' },
];
const METRICS = { revenue: 'revenue', net_income: 'net income' } as const;
type Metric = keyof typeof METRICS;

// ------------------------------------------------------------------------------------------------ the model

/** A number in [0, 1) from a text: the model answers the same input the same way. */
function unit(text: string, salt: string): number {
  return createHash('sha256').update(salt).update(text).digest().readUInt32BE(0) / 2 ** 32;
}

/** The first JSON object in a text: the whole text, a fenced block, or the first balanced {...}. */
export function firstJson(text: string): Record<string, unknown> | undefined {
  const tryParse = (s: string): Record<string, unknown> | undefined => {
    try {
      const v: unknown = JSON.parse(s);
      return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
    } catch {
      return undefined;
    }
  };
  const fenced = /```(?:json)?\s*([\s\S]*?)```/.exec(text);
  const start = text.indexOf('{');
  return (
    tryParse(text) ??
    (fenced ? tryParse(fenced[1]!) : undefined) ??
    (start >= 0 ? tryParse(text.slice(start, text.lastIndexOf('}') + 1)) : undefined)
  );
}

/** How the model writes its answer: bare JSON, JSON in a fenced block after a sentence, or JSON then a remark. */
function written(answer: object, u: number): string {
  const json = JSON.stringify(answer, null, u < 0.2 ? 2 : undefined);
  if (u < 0.5) return json;
  if (u < 0.8) return `Here is the result:\n\`\`\`json\n${json}\n\`\`\``;
  return `${json}\n\nLet me know if you need anything else.`;
}

/** What each role's model answers, from what it was asked. */
function answer(role: string, user: string): object {
  const u = (salt: string): number => unit(user, salt);
  const asked = firstJson(user);
  switch (role) {
    case 'Coordinator': {
      // "What was <company>'s <metric> in fiscal <year>? Report in <currency> by <date>."
      const m =
        /What was (.+?)'s (revenue|net income) in fiscal (\d{4})\? Report in ([A-Z]{3}) by (\d{4}-\d{2}-\d{2})/.exec(
          user,
        );
      const company = COMPANIES.find((c) => c.name === m?.[1]) ?? COMPANIES[0]!;
      return {
        company: company.name,
        ticker: company.ticker,
        fiscal_year: Number(m?.[3] ?? 2025),
        metric: m?.[2] === 'net income' ? 'net_income' : 'revenue',
        currency: m?.[4] ?? company.currency,
        deadline: m?.[5] ?? '2027-01-31',
        steps: ['fetch the annual filing', 'extract the figure', 'cross-check the totals'],
      };
    }
    case 'Researcher': {
      const f = (asked ?? {}) as { revenue?: number; net_income?: number; ticker?: string; fiscal_year?: number };
      const caveats =
        u('c') < 0.4
          ? []
          : [
              pick(rngOf(u('k')), [
                'restated prior-year figures',
                'currency translation effects',
                '[unaudited] segment data',
              ]),
            ];
      return {
        summary: `${f.ticker ?? '?'} FY${f.fiscal_year ?? '?'}: revenue ${f.revenue}, net income ${f.net_income} (millions).`,
        key_figures: { revenue: f.revenue ?? null, net_income: f.net_income ?? null },
        confidence: Math.round((0.7 + u('q') * 0.28) * 10_000) / 10_000,
        caveats,
      };
    }
    case 'Analyst': {
      const o = (asked ?? {}) as {
        figures?: Record<string, number | string>;
        filing_id?: string;
        ticker?: string;
        fiscal_year?: number;
      };
      const metric = (/metric: (revenue|net_income)/.exec(user)?.[1] ?? 'revenue') as Metric;
      const value = o.figures?.[metric];
      const currency = o.figures?.currency ?? 'USD';
      return {
        finding: `${o.ticker ?? 'The company'} reported ${METRICS[metric]} of ${String(value)} ${String(currency)} m in FY${o.fiscal_year ?? '?'}.`,
        metric,
        value: typeof value === 'number' ? value : null,
        unit: `${String(currency)} m`,
        confidence: Math.round((0.6 + u('a') * 0.35) * 100) / 100,
        cited_filing: o.filing_id ?? null,
        rows: [
          { line: 'Revenue', amount: o.figures?.revenue ?? null },
          { line: 'Net income', amount: o.figures?.net_income ?? null },
        ],
      };
    }
    case 'Reviewer': {
      const e = (asked ?? {}) as { value?: number; metric?: string; rows?: { line: string; amount: number }[] };
      const row = e.rows?.find((x) => x.line.toLowerCase().replace(' ', '_') === e.metric);
      const ok = row !== undefined && row.amount === e.value;
      return {
        verdict: ok ? 'approved' : 'rejected',
        reasons: ok ? [] : ['the value does not match the cited rows'],
        checked_rows: e.rows?.length ?? 0,
      };
    }
    default:
      return { error: `no such role ${role}` };
  }
}

const rngOf = (u: number): Rng => rng(Math.floor(u * 2 ** 31) + 1);

export interface ResearchDesk {
  openai: OpenAI;
  close(): Promise<void>;
}

/** The loopback model (an OpenAI-compatible chat completions endpoint) and a real openai client for it. */
export async function startResearchModel(): Promise<ResearchDesk> {
  const server: LlmServer = await startLlmServer((req) => {
    const body = JSON.parse(req.body.toString('utf8')) as {
      model: string;
      messages: { role: string; content: string }[];
    };
    const system = body.messages.find((m) => m.role === 'system')?.content ?? '';
    const user = body.messages
      .filter((m) => m.role === 'user')
      .map((m) => m.content)
      .join('\n');
    const role = /You are the (\w+)/.exec(system)?.[1] ?? '';
    const content = written(answer(role, user), unit(user, 'format'));
    const completion = {
      id: `chatcmpl-${randomUUID().replace(/-/g, '').slice(0, 24)}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: body.model,
      choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
      usage: {
        prompt_tokens: Math.ceil(user.length / 4),
        completion_tokens: Math.ceil(content.length / 4),
        total_tokens: Math.ceil((user.length + content.length) / 4),
      },
    };
    return { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(completion) };
  });
  return {
    openai: new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'sk-test', maxRetries: 0 }),
    close: () => server.close(),
  };
}

async function ask(desk: ResearchDesk, role: string, user: string): Promise<Record<string, unknown>> {
  const res = await desk.openai.chat.completions.create({
    model: 'gpt-4o-mini',
    messages: [
      { role: 'system', content: `You are the ${role} of an equity research desk. Answer in JSON.` },
      { role: 'user', content: user },
    ],
  });
  return firstJson(res.choices[0]?.message.content ?? '') ?? {};
}

/** The filings database the researcher's tool reads. */
function filing(ticker: string, year: number): Record<string, Json> {
  const r = rng(Number.parseInt(createHash('sha256').update(`${ticker}:${year}`).digest('hex').slice(0, 8), 16) + 1);
  const revenue = Math.round((500 + r() * 90_000) * 10) / 10;
  return {
    filing_id: `10K-${ticker}-${year}`,
    ticker,
    fiscal_year: year,
    revenue,
    net_income: Math.round(revenue * (0.02 + r() * 0.2) * 100) / 100,
    operating_margin: Math.round(r() * 0.3 * 1000) / 1000,
    filed_on: `${year + 1}-0${int(r, 1, 4)}-${String(int(r, 10, 28))}`,
    url: `https://filings.example.com/${encodeURIComponent(ticker)}/${year}/annual`,
  };
}

/** A tool the application runs itself, recorded as applications record one (semconv execute_tool, content opt-in). */
async function runTool<T extends Json>(name: string, args: Record<string, Json>, fn: () => T | Promise<T>): Promise<T> {
  return trace.getTracer('research-desk').startActiveSpan(
    `execute_tool ${name}`,
    {
      kind: SpanKind.INTERNAL,
      attributes: {
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': name,
        'gen_ai.tool.call.id': `call_${randomUUID().slice(0, 8)}`,
        'gen_ai.tool.call.arguments': JSON.stringify(args),
      },
    },
    async (span) => {
      try {
        const out = await fn();
        span.setAttribute('gen_ai.tool.call.result', JSON.stringify(out));
        return out;
      } finally {
        span.end();
      }
    },
  );
}

const PLAN_CONTRACT = z.strictObject({
  request_id: z.string(),
  company: z.string(),
  ticker: z.string(),
  fiscal_year: z.number().int(),
  metric: z.enum(['revenue', 'net_income']),
  currency: z.string().length(3),
  deadline: z.string().optional(),
  priority: z.enum(['normal', 'high']),
});
const OBSERVATION_CONTRACT = z.strictObject({
  request_id: z.string(),
  filing_id: z.string(),
  ticker: z.string(),
  fiscal_year: z.number().int(),
  figures: z.strictObject({ revenue: z.number(), net_income: z.number(), currency: z.string().length(3) }),
  filed_on: z.string().regex(/^\d{4}-\d{2}-\d{2}$/),
  source_url: z.url(),
  summary: z.string(),
  confidence: z.number(),
});
const EVIDENCE_CONTRACT = z.strictObject({
  request_id: z.string(),
  finding: z.string(),
  metric: z.string(),
  value: z.number().nullable(),
  unit: z.string(),
  confidence: z.number(),
  cited_filing: z.string().nullable(),
  rows: z.array(z.strictObject({ line: z.string(), amount: z.number().nullable() })),
});

/** Equity research: Coordinator → Researcher → Analyst → Reviewer → Coordinator, each message decided by a model. */
export async function researchRun(desk: ResearchDesk, plan: RunPlan, pool: Pool): Promise<Label> {
  const r = rng(plan.seed);
  const run: ChannelRun = { sent: 0, applied: false, note: '', delivered: [] };
  const channel = new MessageChannel({ name: 'research', steps: [channelProxy('research', plan, run, pool)] });
  const company = pick(r, COMPANIES);
  const metric: Metric = r() < 0.5 ? 'revenue' : 'net_income';
  const year = int(r, 2019, 2026);
  const deadline = `2027-${String(int(r, 1, 12)).padStart(2, '0')}-${String(int(r, 1, 28)).padStart(2, '0')}`;
  const requestId = code(r, 'RQ', 8);
  const sessionId = `desk-${plan.seed}`;
  const percent = r() < 0.3;
  const keepDeadline = r() < 0.6;
  const flaky = plan.recovered === true;
  let analystFailed = false;
  let version = 0;
  const msg = (source: string, target: string, boundary: string, payload: Json): Omit<AgentMessage, 'id'> => ({
    source,
    target,
    boundary,
    sessionId,
    version: ++version,
    payload,
  });
  const contracts = r() < 0.7;

  channel.on(
    'Researcher',
    (m) =>
      runAgent('Researcher', async () => {
        const p = m.payload as { request_id?: string; ticker?: string; fiscal_year?: number };
        const found = await runTool('fetch_filing', { ticker: p.ticker ?? '', fiscal_year: p.fiscal_year ?? 0 }, () =>
          filing(p.ticker ?? '', p.fiscal_year ?? 0),
        );
        const said = await ask(desk, 'Researcher', `Summarise this filing for the analyst:\n${JSON.stringify(found)}`);
        await sleep(int(r, 0, 3));
        const figures = (said.key_figures ?? {}) as { revenue?: number; net_income?: number };
        const observation = {
          id: randomUUID(),
          ...msg('Researcher', 'Analyst', 'observation', {
            request_id: p.request_id ?? requestId,
            filing_id: found.filing_id as string,
            ticker: found.ticker as string,
            fiscal_year: found.fiscal_year as number,
            figures: {
              revenue: figures.revenue ?? (found.revenue as number),
              net_income: figures.net_income ?? (found.net_income as number),
              currency: company.currency,
            },
            filed_on: found.filed_on as string,
            source_url: found.url as string,
            summary: String(said.summary ?? ''),
            confidence: Math.round(Number(said.confidence ?? 0) * 100) / 100,
          }),
        };
        try {
          await channel.send(observation);
        } catch {
          // The Analyst failed on it: send the same message again.
          await sleep(int(r, 2, 10));
          await channel.send(observation);
        }
      }),
    contracts ? { contract: PLAN_CONTRACT } : {},
  );
  channel.on(
    'Analyst',
    (m) =>
      runAgent('Analyst', async () => {
        if (flaky && !analystFailed) {
          analystFailed = true;
          throw new Error('analyst worker restarting');
        }
        const p = m.payload as { request_id?: string };
        const said = await ask(desk, 'Analyst', `metric: ${metric}\nObservation:\n${JSON.stringify(m.payload)}`);
        const confidence = Number(said.confidence ?? 0);
        await channel.send(
          msg('Analyst', 'Reviewer', 'evidence', {
            request_id: p.request_id ?? requestId,
            ...(said as Record<string, Json>),
            confidence: percent ? Math.round(confidence * 100) : confidence,
          }),
        );
      }),
    contracts ? { contract: OBSERVATION_CONTRACT } : {},
  );
  channel.on(
    'Reviewer',
    (m) =>
      runAgent('Reviewer', async () => {
        const p = m.payload as { request_id?: string };
        const said = await ask(
          desk,
          'Reviewer',
          `Check this evidence before it is reported:\n${JSON.stringify(m.payload)}`,
        );
        await channel.send(
          msg('Reviewer', 'Coordinator', 'verdict', {
            request_id: p.request_id ?? requestId,
            verdict: String(said.verdict ?? 'rejected'),
            reasons: (said.reasons ?? []) as Json,
            reviewed_at: new Date().toISOString(),
          }),
        );
      }),
    contracts ? { contract: EVIDENCE_CONTRACT } : {},
  );
  channel.on('Coordinator', () => runAgent('Coordinator', async () => undefined));

  const traceId = await runWorkflow('equity-research', async (span) => {
    await runAgent('Coordinator', async () => {
      const said = await ask(
        desk,
        'Coordinator',
        `What was ${company.name}'s ${METRICS[metric]} in fiscal ${year}? Report in ${company.currency} by ${deadline}.`,
      );
      const { steps: _steps, deadline: due, ...rest } = said as Record<string, Json>;
      const payload = {
        request_id: requestId,
        ...rest,
        ...(keepDeadline && due !== undefined ? { deadline: due } : {}),
        priority: r() < 0.3 ? 'high' : 'normal',
      };
      const id = randomUUID();
      try {
        await channel.send({ ...msg('Coordinator', 'Researcher', 'plan', payload), id });
      } catch {
        await channel.send({ ...msg('Coordinator', 'Researcher', 'plan', payload), id });
      }
    }).catch(() => undefined);
    return span.spanContext().traceId;
  });
  return label(traceId, 'channel', 'equity-research', plan, run);
}
