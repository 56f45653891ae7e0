#!/usr/bin/env node
// Reading a chat request body as the span layer does (parseJsonBody, piecewise above 60 KB) against the one-string
// way (JSON.parse(buf.toString('utf8')), what the layer did before and what any HTTP-level reader does first), on
// long-history requests grown from corpus messages. Each parser runs in child processes of its own (garbage from one
// must not bill the other), rounds alternate between them; we report medians over rounds and their ratio.
// Needs `npm run build` (dist/).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median } from './stats.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const require = createRequire(join(root, 'package.json'));
const CORPUS = process.env.FAULTLINE_CORPUS_DIR ?? '/work/shared/corpus';
const DIST = process.env.FAULTLINE_DIST ?? join(root, 'dist');
const SIZES_KB = [16, 64, 128, 256];
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const CALLS = Number(process.env.BENCH_CALLS ?? 400);

/** The first chat record with a system prompt, its history grown from corpus messages to at least `kb` KB. */
function body(kb) {
  const lines = (f) =>
    readFileSync(join(CORPUS, f), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  const chat = lines('openai-chat.jsonl');
  const all = chat.flatMap((r) => r.request.messages ?? []);
  const base = chat.find((r) => r.status === 200 && r.tags.includes('system_prompt')).request;
  const messages = [...base.messages];
  let size = Buffer.byteLength(JSON.stringify(base));
  for (let i = 0; size < kb * 1024; i++) {
    messages.push(all[i % all.length]);
    size += Buffer.byteLength(JSON.stringify(all[i % all.length])) + 1;
  }
  return Buffer.from(JSON.stringify({ ...base, messages }));
}

function child(method, kb) {
  const { parseJsonBody } = require(join(DIST, 'instrumentation', 'json-body.js'));
  const buf = body(kb);
  const parse = method === 'piecewise' ? () => parseJsonBody(buf) : () => JSON.parse(buf.toString('utf8'));
  for (let i = 0; i < 100; i++) parse();
  const t0 = performance.now();
  for (let i = 0; i < CALLS; i++) parse();
  process.stdout.write(
    JSON.stringify({
      us: ((performance.now() - t0) * 1000) / CALLS,
      bytes: buf.length,
      messages: parse().messages.length,
    }),
  );
}

function parent() {
  const run = (method, kb) =>
    JSON.parse(
      execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--child', method, String(kb)], {
        encoding: 'utf8',
      }),
    );
  const lines = [
    '## Reading a request body (request-body.bench.mjs)',
    '',
    'What the span layer pays to read a chat request before it goes out, as the history grows: `parseJsonBody` (piecewise',
    'from 60 KB: the top-level members and each element of a top-level array decoded and parsed on their own) against',
    '`JSON.parse(buf.toString())` (one string of the whole body, which V8 puts in large-object space past 128 KB, i.e. past',
    '64K characters once one is outside Latin-1, at a garbage-collection cost on every call). Bodies: a corpus chat request',
    `with its history grown from corpus messages. ${ROUNDS} rounds alternating the two, ${CALLS} parses per round, each in a fresh`,
    'process; medians over rounds.',
    '',
    '| body | messages | one string (µs) | parseJsonBody (µs) | parseJsonBody ÷ one string |',
    '|---|---:|---:|---:|---:|',
  ];
  for (const kb of SIZES_KB) {
    const whole = [];
    const piecewise = [];
    let info;
    for (let r = 0; r < ROUNDS; r++) {
      for (const method of r % 2 ? ['piecewise', 'whole'] : ['whole', 'piecewise']) {
        const res = run(method, kb);
        (method === 'whole' ? whole : piecewise).push(res.us);
        info = res;
      }
    }
    const w = median(whole);
    const p = median(piecewise);
    lines.push(
      `| ${(info.bytes / 1024).toFixed(0)} KB | ${info.messages} | ${w.toFixed(0)} | ${p.toFixed(0)} | ${(p / w).toFixed(2)} |`,
    );
    process.stderr.write(`bench request-body: ${kb} KB done\n`);
  }
  process.stdout.write(lines.join('\n') + '\n');
}

if (process.argv[2] === '--child') child(process.argv[3], Number(process.argv[4]));
else parent();
