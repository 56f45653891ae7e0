/**
 * SSE events whose `data:` is not JSON (a garbled stream) are counted: `response.stream.malformedEvents` in the outcome
 * and `faultline.response.malformed_events` on the span (only when > 0), which the offline observation maps back so
 * the finish_reason detector reports a corrupt stream. The application still gets the bytes exactly as sent.
 */
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { finishReasonDetector } from '../../detectors/finish-reason';
import { llmObservationFromSpan } from '../../detectors/from-span';
import { FaultlineInstrumentation } from '../../instrumentation';
import type { ExchangeOutcome } from '../../instrumentation/types';
import { sseEvents } from '../support/wire-record';
import { ANTHROPIC_TEXT_SSE, CHAT_STREAM, CHAT_STREAM_PLAIN } from '../support/chat-exchanges';
import { startLlmServer, type LlmServer } from '../support/llm-server';
import { ours, setupOtel, type TestOtel } from '../support/otel';
import { spanRecord } from '../support/to-traces';

let otel: TestOtel;
let server: LlmServer;
let inst: FaultlineInstrumentation;
const outcomes: ExchangeOutcome[] = [];

beforeAll(async () => {
  otel = setupOtel();
  inst = new FaultlineInstrumentation({ onExchangeEnd: (_ex, outcome) => outcomes.push(outcome) });
  inst.enable();
  server = await startLlmServer();
});

afterAll(async () => {
  inst.disable();
  await server.close();
  await otel.shutdown();
});

beforeEach(() => {
  otel.exporter.reset();
  outcomes.length = 0;
});

/** Cut the JSON of the `data:` line of the given events in half (what a corrupting proxy or a bad byte does). */
function garble(events: string[], which: number[]): string[] {
  return events.map((e, i) =>
    which.includes(i)
      ? e.replace(/^data: (.*)$/m, (_m, json: string) => `data: ${json.slice(0, json.length >> 1)}`)
      : e,
  );
}

async function fetchStream(path: string, request: unknown, events: string[]): Promise<string> {
  server.respond(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: events }));
  const res = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(request),
  });
  return res.text();
}

describe('malformed SSE events', () => {
  it('counts OpenAI chunks that do not parse, on the outcome and the span, and detectors see it offline', async () => {
    const rec = CHAT_STREAM;
    expect(sseEvents(rec.sse as string).length).toBeGreaterThan(6);
    const events = sseEvents(rec.sse as string);
    const garbled = garble(events, [1, 3]);
    expect(garbled.join('')).not.toBe(rec.sse);
    expect(await fetchStream('/v1/chat/completions', rec.request, garbled)).toBe(garbled.join(''));

    const spans = await otel.waitForSpans((s) => ours(s).length === 1);
    const span = ours(spans)[0] as ReadableSpan;
    expect(span.attributes['faultline.response.malformed_events']).toBe(2);
    expect(span.attributes['faultline.response.done']).toBe(true);
    expect(outcomes).toHaveLength(1);
    expect(outcomes[0]?.response?.stream?.malformedEvents).toBe(2);

    const obs = llmObservationFromSpan(spanRecord(span));
    expect(obs.response.stream?.malformedEvents).toBe(2);
    const findings = finishReasonDetector.detect(obs, { earlier: [], now: Date.now() });
    expect(findings.some((f) => f.faultType === 'corrupt')).toBe(true);
  });

  it('counts Anthropic events that do not parse', async () => {
    const rec = ANTHROPIC_TEXT_SSE;
    expect(sseEvents(rec.sse as string).length).toBeGreaterThan(6);
    const events = sseEvents(rec.sse as string);
    // The third event is a content block delta or start: cutting it leaves the rest of the stream readable.
    const garbled = garble(events, [2]);
    expect(await fetchStream('/v1/messages', rec.request, garbled)).toBe(garbled.join(''));
    const spans = await otel.waitForSpans((s) => ours(s).length === 1);
    expect(ours(spans)[0]?.attributes['faultline.response.malformed_events']).toBe(1);
    expect(outcomes[0]?.response?.stream?.malformedEvents).toBe(1);
  });

  it('records nothing for a clean stream', async () => {
    const rec = CHAT_STREAM_PLAIN;
    expect(await fetchStream('/v1/chat/completions', rec.request, sseEvents(rec.sse as string))).toBe(rec.sse);
    const spans = await otel.waitForSpans((s) => ours(s).length === 1);
    expect(ours(spans)[0]?.attributes).not.toHaveProperty('faultline.response.malformed_events');
    expect(outcomes[0]?.response?.stream).not.toHaveProperty('malformedEvents');
  });
});
