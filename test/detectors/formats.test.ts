/**
 * Detection on the recorded Responses API, Gemini and Ollama traffic, the way corpus.test.ts measures it for OpenAI
 * chat and Anthropic: observations built by the interceptor's own protocol modules from the recorded bytes,
 *  1. false positives of each detector on the clean records;
 *  2. detection of every applicable catalog fault injected in the record's own format (content faults through the
 *     format's chat view, stream faults on its events, transport faults with its error body).
 * The numbers are docs/compatibility.md's detection column (printed; FAULTLINE_PRINT_FORMATS=1 for the misses).
 */
import { describe, expect, test } from 'vitest';
import { defaultDetectors, runDetectors } from '../../detectors/index';
import type { DetectionContext, LlmObservation } from '../../detectors/types';
import { summarizeLlmRequest, summarizeLlmResponse, type LlmProtocol } from '../../detectors/wire';
import { JsonStreamSplitter } from '../../src/wire/json-stream';
import { SseParser } from '../../src/wire/sse';
import type { Exchange } from '../../instrumentation/types';
import { applySpecs } from '../../src/catalog/agentchaos/spec';
import { errorShapeOf, notApplicableReason, streamEvent, type StreamFraming } from '../../src/catalog/formats';
import { listFaults } from '../../src/catalog/index';
import type { FaultDefinition, StreamEvent } from '../../src/catalog/types';
import { fromChatView, toChatView } from '../../src/inject/bodies';
import { PyRandom } from '../../src/plan/rng';
import { loadCorpus, recordBody, type CorpusFile, type CorpusRecord } from '../support/corpus';

const DURATION_MS = 500;
const ctxFor = (obs: LlmObservation): DetectionContext => ({
  earlier: [],
  now: (obs.request?.time ?? Date.now()) + obs.response.durationMs,
  latency: { medianMs: DURATION_MS, madMs: 50 },
});

interface Rec {
  r: CorpusRecord;
  protocol: LlmProtocol;
  url: URL;
  stream: boolean;
}

function protocolOf(file: CorpusFile, r: CorpusRecord): LlmProtocol {
  if (file === 'openai-responses.jsonl') return 'openai.responses';
  if (file === 'gemini.jsonl') return 'gemini.generate_content';
  return r.endpoint.endsWith('/api/generate') ? 'ollama.generate' : 'ollama.chat';
}

const FILES: CorpusFile[] = ['openai-responses.jsonl', 'gemini.jsonl', 'ollama.jsonl'];
// Status 200 records with a request (the response-only fixtures have none); the vercel payload-line fixtures are
// not wire bytes.
const records: Rec[] = FILES.flatMap((file) =>
  loadCorpus(file)
    .filter((r) => r.status === 200 && r.request !== null && !r.tags.includes('sse_payloads_only'))
    .map((r) => ({
      r,
      protocol: protocolOf(file, r),
      url: new URL(r.endpoint),
      stream: r.sse !== undefined || r.stream !== undefined,
    })),
);

function contentType(rec: Rec): string {
  if (rec.r.sse !== undefined) return 'text/event-stream';
  return rec.r.framing === 'ndjson' ? 'application/x-ndjson' : 'application/json';
}

/** When the recorded request was sent: the answer's own creation time (Responses created_at, Ollama created_at). */
function sentAt(r: CorpusRecord): number {
  const body = recordBody(r);
  const epoch = /"created_at":\s*(\d{9,})/.exec(body)?.[1];
  if (epoch !== undefined) return Number(epoch) * 1000;
  const iso = /"created_at":\s*"([^"]+)"/.exec(body)?.[1];
  return iso !== undefined ? Date.parse(iso) : Date.UTC(2025, 0, 1);
}

function observe(
  rec: Rec,
  body: string = recordBody(rec.r),
  res: {
    status?: number;
    headers?: Record<string, string>;
    failure?: { errorType?: string };
    durationMs?: number;
  } = {},
): LlmObservation {
  const request = summarizeLlmRequest(rec.protocol, rec.r.request, rec.url, sentAt(rec.r));
  const exchange = { stream: rec.stream, url: rec.url, request: rec.r.request } as unknown as Exchange;
  const response = summarizeLlmResponse(
    rec.protocol,
    {
      status: res.status ?? 200,
      headers: res.headers ?? { 'content-type': contentType(rec) },
      chunks: body ? [body] : [],
      durationMs: res.durationMs ?? DURATION_MS,
      ...(res.failure ? { failure: res.failure } : {}),
    },
    exchange,
  );
  const obs: LlmObservation = { kind: 'llm', response, hasContent: true, spanId: rec.r.id };
  if (request) obs.request = request;
  return obs;
}

const NATURAL = /^(length|content_filter|error)$/;
const clean = records.map((rec) => ({ rec, obs: observe(rec) }));
const fpPool = clean.filter((c) => !c.obs.response.finishReasons.some((f) => NATURAL.test(f)));
const quiet = clean.filter((c) => runDetectors(c.obs, ctxFor(c.obs)).length === 0);

// ------------------------------------------------------------------------------------ injected faults

interface Trial {
  format: LlmProtocol;
  family: 'content' | 'stream' | 'transport';
  fault: string;
  detected: boolean;
  id: string;
}
const trials: Trial[] = [];

/** The events of a recorded stream, as the fault step reads them. */
function events(rec: Rec): StreamEvent[] {
  const out: StreamEvent[] = [];
  const framing: StreamFraming = rec.r.sse !== undefined ? 'sse' : (rec.r.framing as StreamFraming);
  if (framing === 'sse') {
    const p = new SseParser(() => {}, {
      onBlock: (b) => out.push(streamEvent(rec.protocol, 'sse', b.raw, b.event?.data, b.event?.event)),
    });
    p.push(Buffer.from(rec.r.sse!));
  } else {
    const s = new JsonStreamSplitter(framing, (u) =>
      out.push(streamEvent(rec.protocol, framing, u.raw.toString('utf8'), u.json)),
    );
    s.push(Buffer.from(rec.r.stream!));
    s.end();
  }
  return out;
}

const faults = listFaults().filter(
  (f) =>
    f.mode !== 'message' &&
    !/^(persistent|intermittent|burst)$/.test(f.strategy.kind) &&
    f.name !== 'compound_stale_cache',
);

function runContent(fault: FaultDefinition & { mode: 'content' }, c: { rec: Rec; obs: LlmObservation }): void {
  if (c.rec.stream) return; // AgentChaos faults act on JSON answers
  const view = toChatView(c.rec.protocol, c.rec.r.response);
  if (view === undefined) return;
  const res = applySpecs(fault.specs, view, { counts: [] }, { rng: new PyRandom(42) });
  if (res.fired.length === 0) return; // the guard kept it from this record
  if (JSON.stringify(res.body) === JSON.stringify(view) && res.delayMs === 0) return; // a no-op here
  const faulted = observe(c.rec, JSON.stringify(fromChatView(c.rec.protocol, c.rec.r.response, res.body)), {
    durationMs: DURATION_MS + res.delayMs,
  });
  trials.push({
    format: c.rec.protocol,
    family: 'content',
    fault: fault.name,
    detected: runDetectors(faulted, ctxFor(faulted)).length > 0,
    id: c.rec.r.id,
  });
}

function runStream(fault: FaultDefinition & { mode: 'stream' }, c: { rec: Rec }): void {
  if (!c.rec.stream) return;
  const t = fault.transform(fault.params.parse({}));
  const out: string[] = [];
  let failure: { errorType?: string } | undefined;
  let index = 0;
  for (const e of events(c.rec)) {
    const r = t.onEvent(e, index);
    if (e.isData) index++;
    out.push(...r.emit);
    if ('then' in r) {
      if (r.then === 'reset') failure = { errorType: 'ECONNRESET' };
      if (r.then === 'stall') failure = { errorType: 'timeout' };
      break;
    }
  }
  if (!t.changed()) return;
  const faulted = observe(c.rec, out.join(''), failure ? { failure } : {});
  trials.push({
    format: c.rec.protocol,
    family: 'stream',
    fault: fault.name,
    detected: runDetectors(faulted, ctxFor(faulted)).length > 0,
    id: c.rec.r.id,
  });
}

function runTransport(fault: FaultDefinition & { mode: 'transport' }, c: { rec: Rec; obs: LlmObservation }): void {
  const e = fault.effect(fault.params.parse({}), errorShapeOf(c.rec.protocol));
  let faulted: LlmObservation;
  if (e.kind === 'respond') faulted = observe(c.rec, e.body, { status: e.status, headers: e.headers, durationMs: 50 });
  else if (e.kind === 'error')
    faulted = observe(c.rec, '', { status: 0, failure: { errorType: e.code }, durationMs: e.afterMs });
  else if (e.kind === 'hang')
    faulted = observe(c.rec, '', { status: 0, failure: { errorType: 'timeout' }, durationMs: 600_000 });
  else faulted = observe(c.rec, undefined, { durationMs: DURATION_MS + e.delayMs });
  trials.push({
    format: c.rec.protocol,
    family: 'transport',
    fault: fault.name,
    detected: runDetectors(faulted, ctxFor(faulted)).length > 0,
    id: c.rec.r.id,
  });
}

for (const fault of faults) {
  for (const c of quiet) {
    if (notApplicableReason(fault, c.rec.protocol) !== undefined) continue;
    if (fault.mode === 'content') runContent(fault, c);
    else if (fault.mode === 'stream') runStream(fault, c);
    else if (fault.mode === 'transport') runTransport(fault, c);
  }
}

// ------------------------------------------------------------------------------------ tables

const pct = (a: number, b: number) => (b === 0 ? '–' : `${((100 * a) / b).toFixed(1)} %`);

describe('detection on the Responses, Gemini and Ollama corpus', () => {
  test('prints the false-positive and detection tables', () => {
    const protocols = [...new Set(records.map((r) => r.protocol))];
    const fpLines = ['| format | clean records | records with any finding | by detector |', '|---|---:|---:|---|'];
    for (const p of protocols) {
      const pool = fpPool.filter((c) => c.rec.protocol === p);
      const hits = new Map<string, number>();
      let any = 0;
      for (const c of pool) {
        const findings = runDetectors(c.obs, ctxFor(c.obs));
        if (findings.length > 0) any++;
        for (const d of new Set(findings.map((f) => f.detector))) hits.set(d, (hits.get(d) ?? 0) + 1);
        if (findings.length > 0 && process.env.FAULTLINE_PRINT_FORMATS)
          console.log(
            p,
            c.rec.r.id,
            findings.map((f) => `${f.detector}: ${f.evidence}`),
          );
      }
      const gaps = pool.filter((c) => c.rec.r.tags.some((t) => ['reasoning', 'background'].includes(t)));
      const gapHits = gaps.filter((c) => runDetectors(c.obs, ctxFor(c.obs)).length > 0).length;
      fpLines.push(
        `| ${p} | ${pool.length} | ${any} (${pct(any, pool.length)}); without reasoning / background answers: ${any - gapHits} of ${pool.length - gaps.length} (${pct(any - gapHits, pool.length - gaps.length)}) | ${[...hits].map(([d, n]) => `${d} ${n}`).join(', ') || '—'} |`,
      );
    }
    const detLines = [
      '| format | fault family | injections that changed the answer | detected | rate |',
      '|---|---|---:|---:|---:|',
    ];
    for (const p of protocols) {
      for (const family of ['content', 'stream', 'transport'] as const) {
        const ts = trials.filter((t) => t.format === p && t.family === family);
        if (ts.length === 0) continue;
        const d = ts.filter((t) => t.detected).length;
        detLines.push(`| ${p} | ${family} | ${ts.length} | ${d} | ${pct(d, ts.length)} |`);
        if (process.env.FAULTLINE_PRINT_FORMATS)
          console.log(
            p,
            family,
            'missed:',
            [...new Set(ts.filter((t) => !t.detected).map((t) => `${t.fault}@${t.id}`))].join(' '),
          );
      }
    }
    console.log(`${fpLines.join('\n')}\n\n${detLines.join('\n')}`);
    expect(fpPool.length).toBeGreaterThan(100);
    expect(trials.length).toBeGreaterThan(1000);
  });

  /**
   * Known false positives, printed above and excluded here (docs/compatibility.md lists them): answers of reasoning
   * models, whose output tokens can exceed the visible text plus the reasoning tokens they report (Ollama reports no
   * reasoning count at all), so the visible-text-per-token check misjudges them; and a background-mode submission
   * (`background: true`), which is queued, not an answer yet.
   */
  const KNOWN_GAP_TAGS = ['reasoning', 'background'];

  test.each([...new Set(records.map((r) => r.protocol))])(
    '%s: at most 2 %% of clean records get a finding, and every fault family is detected at least 90 %% of the time',
    (p) => {
      const pool = fpPool.filter((c) => c.rec.protocol === p && !c.rec.r.tags.some((t) => KNOWN_GAP_TAGS.includes(t)));
      const flagged = pool.filter((c) => runDetectors(c.obs, ctxFor(c.obs)).length > 0);
      expect(flagged.length / pool.length, flagged.map((c) => c.rec.r.id).join(' ')).toBeLessThanOrEqual(0.02);
      for (const family of ['content', 'stream', 'transport'] as const) {
        const ts = trials.filter((t) => t.format === p && t.family === family);
        if (ts.length === 0) continue;
        const missed = ts.filter((t) => !t.detected);
        expect(
          1 - missed.length / ts.length,
          `${family}: ${[...new Set(missed.map((t) => t.fault))].join(', ')}`,
        ).toBeGreaterThanOrEqual(0.9);
      }
    },
  );

  test('every detector is exercised on these formats', () => {
    expect(defaultDetectors.length).toBeGreaterThan(5);
  });
});
