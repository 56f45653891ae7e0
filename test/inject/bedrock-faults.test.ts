/**
 * Transport faults on Amazon Bedrock, in Bedrock's own error shape (the type in `x-amzn-errortype`, `{"message"}` as
 * the body), through the real AWS SDK. The fault step sits in the undici layer, so these calls go through the SDK's
 * FetchHttpHandler (fetch); the SDK's default NodeHttpHandler (node:http) is seen but not faulted yet
 * (docs/compatibility.md). A content or stream fault meeting a Converse call is reported not applicable. On the
 * trace, the trigger report (what `faultline verify` prints) and the rule diagnoser (`faultline diagnose`) name the
 * fault's rule, its type and its step.
 */
import { BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand, ServiceUnavailableException, ThrottlingException, type ConverseCommandInput } from '@aws-sdk/client-bedrock-runtime';
import { trace } from '@opentelemetry/api';
import { FetchHttpHandler } from '@smithy/fetch-http-handler';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ATTR_FL_FAULT_MODE, ATTR_HTTP_RESPONSE_STATUS_CODE } from '../../instrumentation/semconv';
import { planGaps } from '../../src/catalog/formats';
import { diagnoseByRules, stripGroundTruth } from '../../src/diagnosers';
import { triggerReportFromSpans } from '../../src/inject/verify';
import { parsePlan } from '../../src/plan/load';
import { CONVERSE_TEXT, FAKE_CREDENTIALS, jsonReply, MODEL, streamReply, textStream } from '../support/bedrock';
import { startLlmServer, type LlmServer } from '../support/llm-server';
import { toTraces } from '../support/to-traces';
import { callSpans, faultName, setupHarness, type Harness } from './harness';

let h: Harness;
let server: LlmServer;

beforeAll(async () => {
  h = setupHarness();
  server = await startLlmServer(() => jsonReply(CONVERSE_TEXT));
});
afterAll(async () => {
  await server.close();
  await h.shutdown();
});
beforeEach(() => {
  h.exporter.reset();
  server.requests.length = 0;
});

const INPUT: ConverseCommandInput = { modelId: MODEL, messages: [{ role: 'user', content: [{ text: 'What is the capital of France?' }] }] };
const client = (maxAttempts = 1) =>
  new BedrockRuntimeClient({ region: 'us-east-1', endpoint: server.url, credentials: FAKE_CREDENTIALS, requestHandler: new FetchHttpHandler(), maxAttempts });
const plan = (fault: string, params: Record<string, unknown> = {}) => ({ rules: [{ fault, params, match: { provider: 'aws.bedrock' } }] });
const spansOf = async (n: number) => callSpans(await h.waitForSpans((s) => callSpans(s).length >= n));

describe('transport faults on Bedrock Converse (AWS SDK, FetchHttpHandler)', () => {
  it('http_429 reaches the SDK as ThrottlingException with Bedrock’s message; the request never left', async () => {
    const err = await h.task(plan('http_429', { retryAfterS: 0 }), () => client().send(new ConverseCommand(INPUT))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ThrottlingException);
    const e = err as ThrottlingException;
    expect(e.$metadata.httpStatusCode).toBe(429);
    expect(e.message).toMatch(/exceeding the account quotas for Amazon Bedrock/);
    expect(e.$metadata.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(server.requests).toHaveLength(0);
    const [span] = await spansOf(1);
    expect(faultName(span!)).toBe('http_429');
    expect(span!.attributes).toMatchObject({ [ATTR_HTTP_RESPONSE_STATUS_CODE]: 429, [ATTR_FL_FAULT_MODE]: 'transport', 'gen_ai.provider.name': 'aws.bedrock' });
  });

  it('the SDK’s own retry gets past one 429: the second attempt reaches the server', async () => {
    const { result } = await h.task(plan('http_429', { retryAfterS: 0 }), () => client(2).send(new ConverseCommand(INPUT)));
    expect(result.output?.message?.content?.[0]?.text).toBe('The capital of France is Paris.');
    expect(server.requests).toHaveLength(1);
    const spans = await spansOf(2);
    expect(faultName(spans[0]!)).toBe('http_429');
    expect(faultName(spans[1]!)).toBeUndefined();
    expect(spans[1]!.attributes['faultline.request.retry_count']).toBe(1);
  });

  it('http_503 reaches the SDK as ServiceUnavailableException', async () => {
    const err = await h.task(plan('http_503'), () => client().send(new ConverseCommand(INPUT))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceUnavailableException);
    expect((err as ServiceUnavailableException).$metadata.httpStatusCode).toBe(503);
  });

  it('a content fault meets a Converse call: not applied, the answer untouched, and named at start-up', async () => {
    const { result, taskId } = await h.task(plan('llm_truncate_single'), () => client().send(new ConverseCommand(INPUT)));
    expect(result.output?.message?.content?.[0]?.text).toBe('The capital of France is Paris.');
    expect(h.injector.triggerReport(taskId).tasks[0]!.rules[0]).toMatchObject({ fires: 0, notApplicable: 1 });
    expect(server.requests).toHaveLength(1);
    const [gaps] = planGaps(parsePlan({ rules: [{ fault: 'llm_truncate_single', match: { provider: 'aws.bedrock' } }] }));
    expect(gaps!.gaps).toContainEqual({ format: 'Amazon Bedrock Converse', reason: 'faultline does not rewrite Converse answers yet (transport faults apply)' });
  });

  it('stream_cut meets a ConverseStream over fetch: not applied, every event reaches the SDK, the span reads the frames', async () => {
    server.respond(() => streamReply(textStream(['Paris', ' it is.'])));
    try {
      const { result, taskId } = await h.task(plan('stream_cut', { afterEvents: 1 }), async () => {
        const out = await client().send(new ConverseStreamCommand(INPUT));
        let text = '';
        for await (const e of out.stream ?? []) text += e.contentBlockDelta?.delta?.text ?? '';
        return text;
      });
      expect(result).toBe('Paris it is.');
      expect(h.injector.triggerReport(taskId).tasks[0]!.rules[0]).toMatchObject({ fires: 0, notApplicable: 1 });
      const [span] = await spansOf(1);
      expect(span!.attributes).toMatchObject({ 'faultline.response.done': true, 'gen_ai.response.finish_reasons': ['stop'], 'faultline.response.output_chars': 'Paris it is.'.length });
    } finally {
      server.respond(() => jsonReply(CONVERSE_TEXT));
    }
  });

  it('verify and diagnose on the trace: the 429 on the 2nd Bedrock call is the triggered rule, diagnosed as an error at step 2', async () => {
    const rules = [{ fault: 'http_429', match: { provider: 'aws.bedrock', position: 2 }, params: { retryAfterS: 0 } }];
    // The application's own root span: both calls in one trace, as an agent run has them.
    const { result } = await h.task({ rules }, () =>
      trace.getTracer('app').startActiveSpan('run', async (root) => {
        const c = client();
        await c.send(new ConverseCommand(INPUT));
        const second = await c.send(new ConverseCommand(INPUT)).then(() => undefined, (e: unknown) => e);
        root.end();
        return second;
      }),
    );
    expect(result).toBeInstanceOf(ThrottlingException);
    const spans = await spansOf(2);
    const all = await h.waitForSpans((s) => s.some((x) => x.name === 'run'));
    const traces = toTraces(all.filter((x) => x.spanContext().traceId === spans[0]!.spanContext().traceId));
    expect(traces).toHaveLength(1);
    const trace0 = traces[0]!;
    const report = triggerReportFromSpans(trace0.spans);
    expect(report.tasks[0]!.rules).toEqual([expect.objectContaining({ rule: 'http_429', fires: 1, triggered: true })]);
    const diagnosis = diagnoseByRules(stripGroundTruth(trace0));
    expect(diagnosis).toMatchObject({ faultType: 'error', step: 2, spanId: spans[1]!.spanContext().spanId });
  });
});
