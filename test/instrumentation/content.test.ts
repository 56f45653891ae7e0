/**
 * Message content capture (opt-in): the env switch, the off default (no content attributes, the facts still
 * recorded) and the content hash. That captured content validates against the GenAI semconv JSON Schemas, on every
 * corpus record: content-corpus.test.ts (conformance tier).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { captureContentFromEnv, FaultlineInstrumentation } from '../../instrumentation';
import { contentHash } from '../../instrumentation/providers/content';
import { CHAT_PLAIN } from '../support/chat-exchanges';
import { corpusReply, startLlmServer, type LlmServer } from '../support/llm-server';
import { ours, setupOtel, type TestOtel } from '../support/otel';

let otel: TestOtel;
let server: LlmServer;
let inst: FaultlineInstrumentation;
const saved = process.env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT;

beforeAll(async () => {
  process.env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT = 'SPAN_ONLY';
  otel = setupOtel();
  inst = new FaultlineInstrumentation();
  inst.enable();
  server = await startLlmServer();
});

afterAll(async () => {
  if (saved === undefined) delete process.env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT;
  else process.env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT = saved;
  inst.disable();
  await server.close();
  await otel.shutdown();
});

describe('capture switch', () => {
  it('reads the env the contrib and Python ways', () => {
    for (const [v, want] of [
      ['true', true],
      ['SPAN_ONLY', true],
      ['span_and_event', true],
      ['false', false],
      ['NO_CONTENT', false],
      ['EVENT_ONLY', false],
      ['', undefined],
      ['maybe', undefined],
    ] as const) {
      expect(captureContentFromEnv({ OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: v }), v).toBe(want);
    }
  });

  it('is off by default: no content attributes, facts still recorded', async () => {
    const off = new FaultlineInstrumentation({ captureMessageContent: false });
    inst.disable();
    off.enable();
    try {
      const rec = CHAT_PLAIN;
      otel.exporter.reset();
      server.respond(() => corpusReply(rec));
      await (
        await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify(rec.request) })
      ).text();
      const a = ours(await otel.waitForSpans((s) => ours(s).length === 1))[0]?.attributes ?? {};
      for (const k of [
        'gen_ai.input.messages',
        'gen_ai.output.messages',
        'gen_ai.system_instructions',
        'gen_ai.tool.definitions',
      ]) {
        expect(a[k], k).toBeUndefined();
      }
      expect(a['faultline.response.output_chars']).toBeGreaterThan(0);
      expect(a['faultline.response.content_hash']).toMatch(/^[0-9a-f]{16}$/);
      expect(a['faultline.request.message_count']).toBe(
        (rec.request.messages as unknown[]).filter(
          (m) => !['system', 'developer'].includes((m as { role: string }).role),
        ).length,
      );
    } finally {
      off.disable();
      inst.enable();
    }
  });
});

describe('content hash', () => {
  it('is a 16-hex fingerprint that tells apart text, tool names, arguments and where the text ends', () => {
    const call = { name: 'search', arguments: '{"q":"tea"}' };
    const base = contentHash('hello', [call]);
    expect(base).toMatch(/^[0-9a-f]{16}$/);
    expect(contentHash('hello', [{ ...call }])).toBe(base);
    const variants = [
      contentHash('hello', []),
      contentHash('hellp', [call]),
      contentHash('hello', [{ ...call, name: 'searcH' }]),
      contentHash('hello', [{ ...call, arguments: '{"q":"tee"}' }]),
      contentHash('hello\u0000search', [{ name: '', arguments: '{"q":"tea"}' }]),
      contentHash('', []),
    ];
    expect(new Set([base, ...variants]).size).toBe(variants.length + 1);
  });
});
