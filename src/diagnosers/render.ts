/**
 * A compact, content-light rendering of a trace for the LLM diagnoser: one line per LLM call and message step
 * (step, agent, model, finish reason, tokens, status, timings, signals, short excerpts of content when captured),
 * plus one line per other failed span. Far smaller than a raw dump, and the same reading the rules use.
 */
import { viewTrace, messageText } from '../traces/view';
import type { TraceRecord } from '../traces/model';
import { durationMs } from './signals';
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
  const view = viewTrace(trace);
  const t0 = trace.spans[0]?.start ?? 0;
  const lines: string[] = [];
  for (const v of spanVerdicts(trace, options)) {
    const s = v.span;
    if (v.step === null && v.signals.length === 0) continue;
    const f: string[] = [];
    const at = `t=+${Math.round(s.start - t0)}ms dur=${Math.round(durationMs(s))}ms`;
    const agent = (v.step?.agent ?? view.agentOf(s))?.name ?? '?';
    if (v.step?.kind === 'llm') {
      const c = v.step;
      f.push(
        `LLM step ${c.step}`,
        `span=${s.spanId}`,
        `agent=${agent}`,
        `model=${c.responseModel ?? c.requestModel ?? '?'}`,
        at,
      );
      f.push(`finish=${c.finishReasons.length > 0 ? c.finishReasons.join(',') : '?'}`);
      f.push(`tokens in=${c.usage.inputTokens ?? '?'} out=${c.usage.outputTokens ?? '?'}`);
      f.push(`output chars=${c.outputChars ?? '?'} tool_calls=${c.toolCallCount ?? '?'}`);
      if (c.hasContent && c.text !== '') f.push(`output="${excerpt(c.text, max)}"`);
      if (c.hasContent && c.toolCalls.length > 0)
        f.push(`tool_calls="${excerpt(c.toolCalls.map((t) => `${t.name}(${t.arguments})`).join('; '), max)}"`);
    } else if (v.step?.kind === 'message') {
      const m = v.step.facts;
      const delivered = m.side === 'receive' ? 'received' : `delivered=${m.delivered?.count ?? '?'}`;
      f.push(
        `MESSAGE step ${v.step.step}`,
        `span=${s.spanId}`,
        `${m.source ?? '?'}->${m.target ?? m.agent ?? m.tool ?? '?'}`,
        `boundary=${m.boundary ?? '?'}`,
        at,
        delivered,
      );
      if (m.payload?.content !== undefined) f.push(`payload="${excerpt(m.payload.content.text, max)}"`);
    } else {
      f.push(`SPAN ${s.name}`, `span=${s.spanId}`, `agent=${agent}`, at);
    }
    const failure = view.failureOf(s);
    f.push(
      `status=${s.status.code}${failure?.httpStatus !== undefined ? ` http=${failure.httpStatus}` : ''}${failure?.errorType !== undefined ? ` error.type=${failure.errorType}` : ''}`,
    );
    if (s.status.message) f.push(`status_message="${excerpt(s.status.message, 80)}"`);
    if (v.signals.length > 0) {
      f.push(
        `signals=[${v.signals.map((x) => `${x.faultType} ${x.confidence.toFixed(2)} (${excerpt(x.evidence, 100)})`).join('; ')}]`,
      );
    }
    lines.push(f.join(' | '));
  }
  // The user's request, briefly: what the first LLM call was asked.
  let header = `trace ${trace.traceId}: ${trace.spans.length} spans, ${view.llm.length} LLM calls, ${view.messages.length} messages`;
  const firstAsked = view.llm.find((c) => c.input !== undefined);
  const users = firstAsked?.input?.filter((m) => m.role === 'user') ?? [];
  const last = users[users.length - 1];
  if (last) header += `\nfirst request (excerpt): "${excerpt(messageText(last), max)}"`;
  const shown =
    lines.length > maxLines
      ? [...lines.slice(0, maxLines), `… ${lines.length - maxLines} more spans not shown`]
      : lines;
  return { text: [header, ...shown].join('\n'), llmSteps: view.llm.length, messageSteps: view.messages.length };
}
