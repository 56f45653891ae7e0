/**
 * What the scan-versus-parse tests of the OpenAI chat stream reader share (sse-plain-deltas.test.ts on project-written
 * streams, sse-plain-deltas-corpus.test.ts on every recorded one): an instrumented loopback server, a stream's events
 * re-serialised with whitespace (which no scan accepts), and the span and outcome of one streamed call.
 */
import { afterAll, beforeAll, beforeEach, expect } from 'vitest';
import { FaultlineInstrumentation } from '../../../instrumentation';
import type { ExchangeOutcome } from '../../../instrumentation/types';
import type { CorpusRecord } from '../../support/wire-record';
import { startLlmServer, type LlmServer } from '../../support/llm-server';
import { ours, setupOtel, type TestOtel } from '../../support/otel';

export interface ScanVsParse {
  /** Each event's JSON data re-serialised with whitespace, one `data:` line per line (SSE joins them with LF). */
  spaced(events: string[]): string[];
  /** The span's attributes and the outcome's stream summary for one streamed call answered with `events`. */
  read(rec: CorpusRecord, events: string[]): Promise<{ attributes: Record<string, unknown>; outcome: unknown }>;
}

/** Registers the file's hooks (OTel, the instrumentation with content capture, the server) and returns the helpers. */
export function useScanVsParse(): ScanVsParse {
  let otel: TestOtel;
  let server: LlmServer;
  let inst: FaultlineInstrumentation;
  const outcomes: ExchangeOutcome[] = [];

  beforeAll(async () => {
    otel = setupOtel();
    inst = new FaultlineInstrumentation({
      captureMessageContent: true,
      onExchangeEnd: (_ex, outcome) => outcomes.push(outcome),
    });
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

  /** Each event's JSON data re-serialised with whitespace, one `data:` line per line (SSE joins them with LF). */
  const spaced = function spaced(events: string[]): string[] {
    return events.map((e) => {
      const m = /^data: (\{.*\})\n\n$/s.exec(e);
      if (!m) return e;
      let value: unknown;
      try {
        value = JSON.parse(m[1] as string);
      } catch {
        return e;
      }
      return `${JSON.stringify(value, null, 1)
        .split('\n')
        .map((l) => `data: ${l}`)
        .join('\n')}\n\n`;
    });
  };

  /** The span's attributes and the outcome's stream summary for one streamed call answered with `events`. */
  const read = async function read(
    rec: CorpusRecord,
    events: string[],
  ): Promise<{ attributes: Record<string, unknown>; outcome: unknown }> {
    otel.exporter.reset();
    outcomes.length = 0;
    server.respond(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: events }));
    const res = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(rec.request),
    });
    expect(await res.text()).toBe(events.join(''));
    const spans = await otel.waitForSpans((s) => ours(s).length === 1);
    // What depends on the bytes and the clock, not on what the chunks say, is left out.
    const timing = /bytes|size|duration|time|Ms$|chunks/i;
    const strip = (v: unknown): unknown =>
      Array.isArray(v)
        ? v.map(strip)
        : v !== null && typeof v === 'object'
          ? Object.fromEntries(
              Object.entries(v)
                .filter(([k]) => !timing.test(k))
                .map(([k, x]) => [k, strip(x)]),
            )
          : v;
    return {
      attributes: strip({ ...ours(spans)[0]?.attributes }) as Record<string, unknown>,
      outcome: strip(outcomes[0]?.response ?? null),
    };
  };
  return { spaced, read };
}
