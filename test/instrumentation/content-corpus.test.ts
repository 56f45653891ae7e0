/**
 * Message content capture (opt-in): every corpus record, JSON and SSE, OpenAI and Anthropic, produces
 * gen_ai.input.messages / gen_ai.output.messages / gen_ai.system_instructions that validate against the GenAI
 * semconv JSON Schemas (../shared/reference/semconv-schemas), and every recorded answer gets its own content hash.
 * The conformance tier of content.test.ts (the env switch, the off default, the hash).
 */
import Ajv2020 from 'ajv/dist/2020';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultlineInstrumentation } from '../../instrumentation';
import { contentHash } from '../../instrumentation/providers/content';
import { loadCorpus } from '../support/corpus';
import { corpusReply, startLlmServer, type LlmServer } from '../support/llm-server';
import { ours, setupOtel, type TestOtel } from '../support/otel';
import { SEMCONV_SCHEMAS } from '../support/shared';

const SCHEMAS = process.env.FAULTLINE_SEMCONV_SCHEMAS ?? SEMCONV_SCHEMAS;
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
const validator = (file: string) => ajv.compile(JSON.parse(readFileSync(join(SCHEMAS, file), 'utf8')) as object);
const validate = {
  input: validator('gen-ai-input-messages.json'),
  output: validator('gen-ai-output-messages.json'),
  system: validator('gen-ai-system-instructions.json'),
};

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

function check(kind: keyof typeof validate, json: unknown, where: string): void {
  if (json === undefined) return;
  const doc = JSON.parse(json as string) as unknown;
  const ok = validate[kind](doc);
  expect(ok, `${where} ${kind}: ${ajv.errorsText(validate[kind].errors)}`).toBe(true);
}

describe.each([
  ['openai-chat.jsonl', '/v1/chat/completions'],
  ['openai-chat-stream.jsonl', '/v1/chat/completions'],
  ['anthropic-messages.jsonl', '/v1/messages'],
] as const)('%s with content capture', (file, path) => {
  it('every record validates against the semconv message schemas', async () => {
    const records = loadCorpus(file);
    let outputs = 0;
    let toolCalls = 0;
    for (const rec of records) {
      otel.exporter.reset();
      server.respond(() => corpusReply(rec));
      const res = await fetch(`${server.url}${path}`, { method: 'POST', body: JSON.stringify(rec.request) });
      await res.text();
      const span = ours(await otel.waitForSpans((s) => ours(s).length === 1))[0];
      const a = span?.attributes ?? {};
      expect(a['gen_ai.input.messages'], rec.id).toBeDefined();
      check('input', a['gen_ai.input.messages'], rec.id);
      check('system', a['gen_ai.system_instructions'], rec.id);
      check('output', a['gen_ai.output.messages'], rec.id);
      if (rec.status === 200) {
        expect(a['gen_ai.output.messages'], rec.id).toBeDefined();
        outputs++;
        const out = JSON.parse(a['gen_ai.output.messages'] as string) as Array<{ parts: Array<{ type: string }> }>;
        const calls = out[0]?.parts.filter((p) => p.type === 'tool_call').length ?? 0;
        expect(calls, `${rec.id} tool calls in output = tool_call_count`).toBe(a['faultline.response.tool_call_count']);
        toolCalls += calls;
      }
      if (Array.isArray(rec.request.tools) && rec.request.tools.length > 0) {
        const defs = JSON.parse(a['gen_ai.tool.definitions'] as string) as Array<{ name: string }>;
        expect(defs.length).toBe(rec.request.tools.length);
      }
    }
    expect(outputs).toBeGreaterThan(0);
    expect(toolCalls).toBeGreaterThan(0);
  });
});

describe('content hash on the corpus', () => {
  it('gives every recorded answer its own fingerprint', () => {
    const texts = new Set(loadCorpus('openai-chat.jsonl').map((r) => JSON.stringify(r.response)));
    expect(new Set([...texts].map((t) => contentHash(t, []))).size).toBe(texts.size);
  });
});
