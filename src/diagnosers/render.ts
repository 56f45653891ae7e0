/**
 * A compact, content-light rendering of a trace for the LLM diagnoser: one line per LLM call and message span
 * (step, agent, model, finish reason, tokens, status, timings, signals, short excerpts of content when captured),
 * plus one line per other failed span. Far smaller than a raw dump, and the same facts the rules read.
 */
import { ATTR_FL_MESSAGE_BOUNDARY, ATTR_FL_MESSAGE_DELIVERED_COUNT, ATTR_FL_MESSAGE_SOURCE, ATTR_FL_MESSAGE_TARGET, ATTR_FL_MESSAGE_PAYLOAD } from '../../instrumentation/semconv';
import { num, str, type TraceRecord } from '../traces/model';
import { agentName, durationMs, errorType, finishReasons, httpStatus, inputTokens, messageText, model, outputFacts, outputTokens } from './span-facts';
import { spanVerdicts, type RuleDiagnoserOptions } from './rules';

export interface RenderOptions extends RuleDiagnoserOptions {
  /** Characters of content excerpt per span. Default 160. */
  excerptChars?: number;
  /** At most this many span lines (the rest summarised). Default 200. */
  maxLines?: number;
}

/** One-line, printable excerpt: control characters and newlines escaped, so data cannot fake the line structure. */
export function excerpt(text: string, max: number): string {
  const flat = JSON.stringify(text.length > max ? text.slice(0, max) : text).slice(1, -1);
  return text.length > max ? `${flat}…(+${text.length - max} chars)` : flat;
}

export interface RenderedTrace {
  text: string;
  llmSteps: number;
  messageSteps: number;
}

export function renderTrace(trace: TraceRecord, options: RenderOptions = {}): RenderedTrace {
  const max = options.excerptChars ?? 160;
  const maxLines = options.maxLines ?? 200;
  const byId = new Map(trace.spans.map((s) => [s.spanId, s]));
  const t0 = trace.spans[0]?.start ?? 0;
  const lines: string[] = [];
  let llmSteps = 0;
  let messageSteps = 0;
  for (const v of spanVerdicts(trace, options)) {
    const s = v.span;
    if (v.stepKind === null && v.signals.length === 0) continue;
    const f: string[] = [];
    const at = `t=+${Math.round(s.start - t0)}ms dur=${Math.round(durationMs(s))}ms`;
    if (v.stepKind === 'llm') {
      llmSteps++;
      f.push(`LLM step ${v.step}`, `span=${s.spanId}`, `agent=${agentName(s, byId) ?? '?'}`, `model=${model(s) ?? '?'}`, at);
      const reasons = finishReasons(s);
      f.push(`finish=${reasons.length > 0 ? reasons.join(',') : '?'}`);
      f.push(`tokens in=${inputTokens(s) ?? '?'} out=${outputTokens(s) ?? '?'}`);
      const o = outputFacts(s);
      f.push(`output chars=${o.chars ?? '?'} tool_calls=${o.toolCalls ?? '?'}`);
      if (o.text !== undefined && o.text !== '') f.push(`output="${excerpt(o.text, max)}"`);
    } else if (v.stepKind === 'message') {
      messageSteps++;
      const a = s.attributes;
      f.push(
        `MESSAGE step ${v.step}`,
        `span=${s.spanId}`,
        `${str(a, ATTR_FL_MESSAGE_SOURCE) ?? '?'}->${str(a, ATTR_FL_MESSAGE_TARGET) ?? '?'}`,
        `boundary=${str(a, ATTR_FL_MESSAGE_BOUNDARY) ?? '?'}`,
        at,
        `delivered=${num(a, ATTR_FL_MESSAGE_DELIVERED_COUNT) ?? '?'}`,
      );
      const payload = str(a, ATTR_FL_MESSAGE_PAYLOAD);
      if (payload !== undefined) f.push(`payload="${excerpt(payload, max)}"`);
    } else {
      f.push(`SPAN ${s.name}`, `span=${s.spanId}`, at);
    }
    const http = httpStatus(s);
    const et = errorType(s);
    f.push(`status=${s.status.code}${http !== undefined ? ` http=${http}` : ''}${et !== undefined ? ` error.type=${et}` : ''}`);
    if (s.status.message) f.push(`status_message="${excerpt(s.status.message, 80)}"`);
    if (v.signals.length > 0) {
      f.push(`signals=[${v.signals.map((x) => `${x.faultType} ${x.confidence.toFixed(2)} (${excerpt(x.evidence, 100)})`).join('; ')}]`);
    }
    lines.push(f.join(' | '));
  }
  // The user's request, briefly: what the first LLM call was asked.
  let header = `trace ${trace.traceId}: ${trace.spans.length} spans, ${llmSteps} LLM calls, ${messageSteps} messages`;
  const firstLlm = trace.spans.find((s) => v0(s));
  if (firstLlm) {
    const inMsgs = parseInput(firstLlm.attributes['gen_ai.input.messages']);
    if (inMsgs !== undefined) header += `\nfirst request (excerpt): "${excerpt(inMsgs, max)}"`;
  }
  const shown = lines.length > maxLines ? [...lines.slice(0, maxLines), `… ${lines.length - maxLines} more spans not shown`] : lines;
  return { text: [header, ...shown].join('\n'), llmSteps, messageSteps };

  function v0(s: (typeof trace.spans)[number]): boolean {
    return s.attributes['gen_ai.operation.name'] !== undefined && s.attributes['gen_ai.input.messages'] !== undefined;
  }
}

function parseInput(v: unknown): string | undefined {
  if (typeof v !== 'string') return undefined;
  try {
    const msgs: unknown = JSON.parse(v);
    if (!Array.isArray(msgs)) return undefined;
    const users = msgs.filter((m): m is { role?: unknown } => typeof m === 'object' && m !== null && (m as { role?: unknown }).role === 'user');
    const last = users[users.length - 1];
    return last ? messageText(last as Parameters<typeof messageText>[0]) : undefined;
  } catch {
    return undefined;
  }
}
