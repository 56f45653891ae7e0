import { SpanKind, SpanStatusCode, context, trace } from '@opentelemetry/api';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { getAgentName, runAgent } from '../../instrumentation/agents/invoke-agent';
import { getTaskId, runWorkflow, withTask } from '../../instrumentation/agents/task';
import { FaultlineInputError } from '../../src/errors';
import { attrs, byName, parentOf, setupOtel } from './otel';

const otel = setupOtel();
afterEach(() => otel.exporter.reset());
afterAll(() => otel.shutdown());

describe('runAgent', () => {
  it('wraps a sync turn in an INTERNAL invoke_agent span with the agent attributes', () => {
    const out = runAgent('planner', () => 42, { id: 'agent-1', description: 'plans', provider: 'openai' });
    expect(out).toBe(42);
    const span = byName(otel.spans(), 'invoke_agent planner');
    expect(span.kind).toBe(SpanKind.INTERNAL);
    expect(attrs(span)).toEqual({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'planner',
      'gen_ai.agent.id': 'agent-1',
      'gen_ai.agent.description': 'plans',
      'gen_ai.provider.name': 'openai',
    });
    expect(span.status.code).toBe(SpanStatusCode.UNSET);
  });

  it('nests spans made inside the turn, across awaits, and exposes the agent name', async () => {
    const seen: Array<string | undefined> = [];
    const tracer = trace.getTracer('test');
    await runAgent('planner', async () => {
      await new Promise((r) => setTimeout(r, 5));
      seen.push(getAgentName());
      tracer.startActiveSpan('chat gpt-4o', (s) => s.end());
      await runAgent('worker', async () => {
        await Promise.resolve();
        seen.push(getAgentName());
      });
      seen.push(getAgentName());
    });
    seen.push(getAgentName());
    expect(seen).toEqual(['planner', 'worker', 'planner', undefined]);
    const spans = otel.spans();
    const planner = byName(spans, 'invoke_agent planner');
    expect(parentOf(byName(spans, 'chat gpt-4o'))).toBe(planner.spanContext().spanId);
    expect(parentOf(byName(spans, 'invoke_agent worker'))).toBe(planner.spanContext().spanId);
    // The span ends when the async turn ends, not when runAgent returns its promise.
    expect(planner.endTime[0] * 1e3 + planner.endTime[1] / 1e6).toBeGreaterThanOrEqual(
      planner.startTime[0] * 1e3 + planner.startTime[1] / 1e6 + 4,
    );
  });

  it('returns the very promise the turn returned', () => {
    const p = Promise.resolve('x');
    expect(runAgent('a', () => p)).toBe(p);
  });

  it('records a sync error and rethrows the same error object', () => {
    const boom = new RangeError('bad range');
    let caught: unknown;
    try {
      runAgent('critic', () => {
        throw boom;
      });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBe(boom);
    const span = byName(otel.spans(), 'invoke_agent critic');
    expect(span.status).toEqual({ code: SpanStatusCode.ERROR, message: 'bad range' });
    expect(span.attributes['error.type']).toBe('RangeError');
    expect(span.events.map((e) => e.name)).toEqual(['exception']);
  });

  it('records an async rejection with the error code as error.type and rejects with the same error', async () => {
    const boom = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    await expect(runAgent('worker', async () => Promise.reject(boom))).rejects.toBe(boom);
    const span = await otel.waitForSpans((s) => s.some((x) => x.name === 'invoke_agent worker'));
    expect(byName(span, 'invoke_agent worker').attributes['error.type']).toBe('ECONNRESET');
  });

  it('rejects bad arguments with a coded input error', () => {
    // @ts-expect-error deliberate misuse
    expect(() => runAgent(7, () => 1)).toThrow(FaultlineInputError);
    // @ts-expect-error deliberate misuse
    expect(() => runAgent('a', 'nope')).toThrow(/fn must be a function/);
    expect(otel.spans()).toHaveLength(0);
  });

  it('names an unnamed agent span "invoke_agent"', () => {
    runAgent('', () => undefined);
    expect(otel.spans().map((s) => s.name)).toEqual(['invoke_agent']);
  });
});

describe('withTask / runWorkflow', () => {
  it('withTask carries the task id in the context, innermost scope wins', async () => {
    expect(getTaskId()).toBeUndefined();
    const seen = await withTask('task-1', async () => {
      const outer = getTaskId();
      await new Promise((r) => setTimeout(r, 1));
      const inner = withTask('task-2', () => getTaskId(context.active()));
      return [outer, inner, getTaskId()];
    });
    expect(seen).toEqual(['task-1', 'task-2', 'task-1']);
    expect(otel.spans()).toHaveLength(0);
  });

  it('runWorkflow starts a new trace rooted at invoke_workflow with the task id', async () => {
    const tracer = trace.getTracer('test');
    const outer = tracer.startSpan('outer');
    await context.with(trace.setSpan(context.active(), outer), () =>
      runWorkflow(
        'triage',
        async () => {
          expect(getTaskId()).toBe('case-7');
          await runAgent('planner', async () => undefined);
        },
        { taskId: 'case-7' },
      ),
    );
    outer.end();
    const spans = otel.spans();
    const wf = byName(spans, 'invoke_workflow triage');
    expect(wf.kind).toBe(SpanKind.INTERNAL);
    expect(parentOf(wf)).toBeUndefined();
    expect(wf.spanContext().traceId).not.toBe(outer.spanContext().traceId);
    expect(attrs(wf)).toEqual({ 'gen_ai.operation.name': 'invoke_workflow', 'faultline.task.id': 'case-7' });
    expect(parentOf(byName(spans, 'invoke_agent planner'))).toBe(wf.spanContext().spanId);
  });

  it('runWorkflow falls back to the trace id as task id', () => {
    const seen = runWorkflow('w', () => getTaskId());
    const wf = byName(otel.spans(), 'invoke_workflow w');
    expect(seen).toBe(wf.spanContext().traceId);
    expect(wf.attributes['faultline.task.id']).toBe(wf.spanContext().traceId);
  });

  it('rejects an empty task id', () => {
    expect(() => withTask('', () => 1)).toThrow(/taskId must be a non-empty string/);
    expect(() => runWorkflow('w', () => 1, { taskId: '' })).toThrow(FaultlineInputError);
  });
});
