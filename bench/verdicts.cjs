#!/usr/bin/env node
// The content-free verdicts' own cost per answer (instrumentation/providers/verdicts.ts), and their parts, on the
// one-process bench's answers (llm-loopback.mjs's corpus records): µs per call over 20,000 calls after 2,000 warm-up
// calls. Needs `npm run build` (dist/) and the corpus (FAULTLINE_CORPUS_DIR, default /work/shared/corpus).
'use strict';
const { readFileSync } = require('node:fs');
const { join } = require('node:path');
const DIST = process.env.FAULTLINE_DIST ?? join(__dirname, '..', 'dist');
const { answerVerdicts } = require(join(DIST, 'instrumentation', 'providers', 'verdicts'));
const { sha256Hex16 } = require(join(DIST, 'src', 'hash'));
const { mojibakeRuns } = require(join(DIST, 'src', 'wire', 'mojibake'));

const CORPUS = process.env.FAULTLINE_CORPUS_DIR ?? '/work/shared/corpus';
const rec = readFileSync(join(CORPUS, 'openai-chat.jsonl'), 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => JSON.parse(l))
  .find((r) => r.status === 200 && r.tags.includes('text') && r.tags.includes('system_prompt'));
const text = rec.response.choices[0].message.content;
const tools = [
  {
    name: 'secret_retrieval_tool',
    parameters: {
      properties: { password: { title: 'Password', type: 'string' } },
      required: ['password'],
      additionalProperties: false,
      type: 'object',
    },
  },
];
const calls = [
  { name: 'secret_retrieval_tool', arguments: '{"password":"mellon"}' },
  { name: 'secret_retrieval_tool', arguments: '{"password":"radiance"}' },
];

function time(label, f, n = 20_000) {
  for (let i = 0; i < 2_000; i++) f();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) f();
  console.log(`${label}: ${(Number(process.hrtime.bigint() - t0) / n / 1000).toFixed(2)} µs`);
}
console.log(`answer text: ${text.length} characters`);
time('verdicts of the text answer', () => answerVerdicts(text, [], { tools: undefined }));
time('  its mojibake scan', () => mojibakeRuns(text));
time('  its content hash', () => sha256Hex16(text));
time('verdicts of two tool calls (schema object new each call)', () =>
  answerVerdicts('', calls, { tools: JSON.parse(JSON.stringify(tools)) }),
);
