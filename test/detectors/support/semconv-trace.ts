/**
 * A small builder of plain GenAI-semconv traces for the monitor tests: an `invoke_workflow` root, `invoke_agent`
 * turns, `chat` calls, `execute_tool` executions and messaging waits, on a moving clock, as any producer of the
 * latest semantic conventions writes them — no faultline declaration or fact.
 */
import { monitorTrace, type MonitorFinding } from '../../../detectors/monitors/offline';
import type { Attributes, SpanRecord, TraceRecord } from '../../../src/traces/model';
import { sortSpans } from '../../../src/traces/model';

const TRACE = 'a'.repeat(32);
let nextId = 0;
const T0 = 1_700_000_000_000;

export interface SpanSpec {
  name: string;
  parent?: SpanRecord;
  attrs?: Attributes;
  start: number;
  end: number;
  error?: { type?: string; message?: string; exception?: { type: string; message: string } };
}

export function span(p: SpanSpec): SpanRecord {
  const s: SpanRecord = {
    traceId: TRACE,
    spanId: (++nextId).toString(16).padStart(16, '0'),
    name: p.name,
    kind: 'INTERNAL',
    start: T0 + p.start,
    end: T0 + p.end,
    attributes: { ...(p.attrs ?? {}) },
    events: [],
    links: [],
    status: { code: 'UNSET' },
    resource: { 'service.name': 'app' },
    scope: { name: 'app' },
  };
  if (p.parent) s.parentSpanId = p.parent.spanId;
  if (p.error) {
    s.status = { code: 'ERROR', ...(p.error.message !== undefined ? { message: p.error.message } : {}) };
    if (p.error.type !== undefined) s.attributes['error.type'] = p.error.type;
    if (p.error.exception)
      s.events.push({
        name: 'exception',
        time: s.end,
        attributes: { 'exception.type': p.error.exception.type, 'exception.message': p.error.exception.message },
      });
  }
  return s;
}

/** A tiny builder of one workflow: agents, their chat calls and tool executions, in time order. */
export class Run {
  spans: SpanRecord[] = [];
  t = 0;
  root: SpanRecord;
  constructor(name = 'trip') {
    this.root = span({
      name: `invoke_workflow ${name}`,
      attrs: { 'gen_ai.operation.name': 'invoke_workflow', 'gen_ai.workflow.name': name },
      start: 0,
      end: 0,
    });
    this.spans.push(this.root);
  }
  agent(name: string, parent?: SpanRecord): SpanRecord {
    const s = span({
      name: `invoke_agent ${name}`,
      parent: parent ?? this.root,
      attrs: { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': name },
      start: this.t,
      end: this.t,
    });
    this.spans.push(s);
    return s;
  }
  chat(agent: SpanRecord, attrs: Attributes, opts: { ms?: number; error?: SpanSpec['error'] } = {}): SpanRecord {
    const attributes = {
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4o',
      ...attrs,
    };
    return this.step(agent, { name: 'chat gpt-4o', parent: agent, attrs: attributes }, opts.ms ?? 100, opts.error);
  }
  tool(
    agent: SpanRecord,
    name: string,
    attrs: Attributes = {},
    opts: { ms?: number; error?: SpanSpec['error']; parent?: SpanRecord } = {},
  ): SpanRecord {
    const attributes = { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': name, ...attrs };
    return this.step(
      agent,
      { name: `execute_tool ${name}`, parent: opts.parent ?? agent, attrs: attributes },
      opts.ms ?? 20,
      opts.error,
    );
  }
  /** A span of `ms` starting now under `agent`'s work; the clock moves past its end and the agent's span covers it. */
  private step(
    agent: SpanRecord,
    spec: Pick<SpanSpec, 'name' | 'parent' | 'attrs'>,
    ms: number,
    error?: SpanSpec['error'],
  ): SpanRecord {
    const s = span({ ...spec, start: this.t, end: this.t + ms, ...(error ? { error } : {}) });
    this.t += ms + 1;
    this.spans.push(s);
    this.extend(agent, s.end);
    return s;
  }
  /** A messaging receive under `agent`, waiting `ms` on `destination` from `at` (default: now); the clock moves to its end. */
  wait(
    agent: SpanRecord,
    destination: string,
    ms: number,
    opts: { at?: number; error?: SpanSpec['error'] } = {},
  ): SpanRecord {
    const start = opts.at ?? this.t;
    const s = span({
      name: `receive ${destination}`,
      parent: agent,
      attrs: {
        'messaging.system': 'rabbitmq',
        'messaging.operation.type': 'receive',
        'messaging.destination.name': destination,
      },
      start,
      end: start + ms,
      ...(opts.error ? { error: opts.error } : {}),
    });
    s.kind = 'CONSUMER';
    this.t = Math.max(this.t, start + ms + 1);
    this.spans.push(s);
    this.extend(agent, s.end);
    return s;
  }
  extend(s: SpanRecord, end: number): void {
    for (let p: SpanRecord | undefined = s; p; p = this.spans.find((x) => x.spanId === p!.parentSpanId))
      p.end = Math.max(p.end, end);
  }
  fail(s: SpanRecord, type: string): void {
    s.status = { code: 'ERROR' };
    s.attributes['error.type'] = type;
  }
  trace(): TraceRecord {
    return { traceId: TRACE, spans: sortSpans(this.spans.map((s) => ({ ...s }))) };
  }
  findings(): MonitorFinding[] {
    return monitorTrace(this.trace()).flatMap((w) => w.findings);
  }
}

export const modes = (fs: MonitorFinding[]): string[] => [...new Set(fs.map((f) => `${f.detector}/${f.mast}`))].sort();
export const usage = (input: number, output: number, finish = 'stop'): Attributes => ({
  'gen_ai.usage.input_tokens': input,
  'gen_ai.usage.output_tokens': output,
  'gen_ai.response.finish_reasons': [finish],
});
export const defs = (...names: string[]): string =>
  JSON.stringify(names.map((name) => ({ type: 'function', name, parameters: { type: 'object' } })));
