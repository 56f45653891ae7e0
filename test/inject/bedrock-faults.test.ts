/**
 * Faults on Amazon Bedrock through the real AWS SDK's FetchHttpHandler (fetch, the undici layer): transport faults in
 * Bedrock's own error shape (the type in `x-amzn-errortype`, `{"message"}` as the body), a content fault rewriting a
 * Converse answer, a stream fault on a ConverseStream's frames; test/inject/bedrock-node-http.test.ts has the same
 * through the SDK's NodeHttpHandler and NodeHttp2Handler. On the
 * trace, the trigger report (what `faultline verify` prints) and the rule diagnoser (`faultline diagnose`) name the
 * fault's rule, its type and its step.
 */
import {
  BedrockRuntimeClient,
  ConverseCommand,
  ConverseStreamCommand,
  ServiceUnavailableException,
  ThrottlingException,
  type ConverseCommandInput,
} from '@aws-sdk/client-bedrock-runtime';
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

const INPUT: ConverseCommandInput = {
  modelId: MODEL,
  messages: [{ role: 'user', content: [{ text: 'What is the capital of France?' }] }],
};
const client = (maxAttempts = 1) =>
  new BedrockRuntimeClient({
    region: 'us-east-1',
    endpoint: server.url,
    credentials: FAKE_CREDENTIALS,
    requestHandler: new FetchHttpHandler(),
    maxAttempts,
  });
const plan = (fault: string, params: Record<string, unknown> = {}) => ({
  rules: [{ fault, params, match: { provider: 'aws.bedrock' } }],
});
const spansOf = async (n: number) => callSpans(await h.waitForSpans((s) => callSpans(s).length >= n));

describe('transport faults on Bedrock Converse (AWS SDK, FetchHttpHandler)', () => {
  it('http_429 reaches the SDK as ThrottlingException with Bedrock’s message; the request never left', async () => {
    const err = await h
      .task(plan('http_429', { retryAfterS: 0 }), () => client().send(new ConverseCommand(INPUT)))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ThrottlingException);
    const e = err as ThrottlingException;
    expect(e.$metadata.httpStatusCode).toBe(429);
    expect(e.message).toMatch(/exceeding the account quotas for Amazon Bedrock/);
    expect(e.$metadata.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(server.requests).toHaveLength(0);
    const [span] = await spansOf(1);
    expect(faultName(span!)).toBe('http_429');
    expect(span!.attributes).toMatchObject({
      [ATTR_HTTP_RESPONSE_STATUS_CODE]: 429,
      [ATTR_FL_FAULT_MODE]: 'transport',
      'gen_ai.provider.name': 'aws.bedrock',
    });
  });

  it('the SDK’s own retry gets past one 429: the second attempt reaches the server', async () => {
    const { result } = await h.task(plan('http_429', { retryAfterS: 0 }), () =>
      client(2).send(new ConverseCommand(INPUT)),
    );
    expect(result.output?.message?.content?.[0]?.text).toBe('The capital of France is Paris.');
    expect(server.requests).toHaveLength(1);
    const spans = await spansOf(2);
    expect(faultName(spans[0]!)).toBe('http_429');
    expect(faultName(spans[1]!)).toBeUndefined();
    expect(spans[1]!.attributes['faultline.request.retry_count']).toBe(1);
  });

  it('http_503 reaches the SDK as ServiceUnavailableException', async () => {
    const err = await h
      .task(plan('http_503'), () => client().send(new ConverseCommand(INPUT)))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceUnavailableException);
    expect((err as ServiceUnavailableException).$metadata.httpStatusCode).toBe(503);
  });

  it('llm_truncate_single on a Converse answer: the SDK reads the text cut to 30 % and stopReason max_tokens', async () => {
    const { result, taskId } = await h.task(plan('llm_truncate_single'), () =>
      client().send(new ConverseCommand(INPUT)),
    );
    const full = 'The capital of France is Paris.';
    expect(result.output?.message?.content?.[0]?.text).toBe(full.slice(0, Math.max(1, Math.floor(full.length * 0.3))));
    expect(result.stopReason).toBe('max_tokens');
    expect(result.usage).toEqual(CONVERSE_TEXT.usage);
    expect(h.injector.triggerReport(taskId).tasks[0]!.rules[0]).toMatchObject({ fires: 1, notApplicable: 0 });
    const [span] = await spansOf(1);
    expect(faultName(span!)).toBe('llm_truncate_single');
    expect(span!.attributes['gen_ai.response.finish_reasons']).toEqual(['length']);
    const gaps = planGaps(
      parsePlan({ rules: [{ fault: 'llm_truncate_single', match: { provider: 'aws.bedrock' } }] }),
    ).flatMap((g) => g.gaps.map((x) => x.format));
    expect(gaps.filter((f) => f.includes('Bedrock'))).toEqual([]);
  });

  it('stream_cut on a ConverseStream over fetch: the SDK’s stream ends after the 2nd event, no stop reason', async () => {
    server.respond(() => streamReply(textStream(['Paris', ' it is.'])));
    try {
      const { result, taskId } = await h.task(plan('stream_cut', { afterEvents: 2 }), async () => {
        const out = await client().send(new ConverseStreamCommand(INPUT));
        let text = '';
        let stop: string | undefined;
        for await (const e of out.stream ?? []) {
          text += e.contentBlockDelta?.delta?.text ?? '';
          stop ??= e.messageStop?.stopReason;
        }
        return { text, stop };
      });
      expect(result).toEqual({ text: 'Paris', stop: undefined });
      expect(h.injector.triggerReport(taskId).tasks[0]!.rules[0]).toMatchObject({ fires: 1, notApplicable: 0 });
      const [span] = await spansOf(1);
      expect(faultName(span!)).toBe('stream_cut');
      expect(span!.attributes['faultline.response.done']).toBe(false);
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
        const second = await c.send(new ConverseCommand(INPUT)).then(
          () => undefined,
          (e: unknown) => e,
        );
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
