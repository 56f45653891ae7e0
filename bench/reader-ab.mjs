#!/usr/bin/env node
// The OpenAI chat stream reader of two builds, A (FAULTLINE_DIST_A) and B (FAULTLINE_DIST, default dist/), batch by
// batch in one process (alternating which goes first), over two corpus streams: CPU per stream read, B − A, median of
// the rounds' differences with its 95% bootstrap interval. For an A/B of a reader change, e.g. against a build of the
// commit before it (`git worktree add /tmp/old HEAD~1`, build there, copy its dist/ inside this repository so it finds
// node_modules): FAULTLINE_DIST_A=bench/out/dist-before node bench/reader-ab.mjs
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { bootstrapMedian } from './stats.mjs';
import { DIST, require } from './paths.mjs';

if (!process.env.FAULTLINE_DIST_A) throw new Error('reader-ab: set FAULTLINE_DIST_A to the build to compare against');
const reader = (dist) => require(join(resolve(dist), 'instrumentation', 'providers', 'openai-chat.js')).openaiChat;
const A = reader(process.env.FAULTLINE_DIST_A);
const B = reader(DIST);
const CORPUS = process.env.FAULTLINE_CORPUS_DIR ?? '/work/shared/corpus';
const recs = readFileSync(join(CORPUS, 'openai-chat-stream.jsonl'), 'utf8')
  .split('\n')
  .filter(Boolean)
  .map(JSON.parse)
  .filter((r) => r.status === 200 && r.sse);
const pick = (pred) => recs.find(pred);
const streams = {
  'tool calls (bench record)': pick((r) => r.tags.includes('tool_calls') && r.tags.includes('usage_chunk')),
  text:
    pick((r) => r.tags.includes('text') && !r.tags.includes('tool_calls') && r.sse.split('\n\n').length > 30) ??
    pick((r) => r.tags.includes('text')),
};
const run = (mod, events) => {
  const r = mod.reader({}, false);
  r.onStart(200, { 'content-type': 'text/event-stream' });
  for (const e of events) r.onData(e);
  r.onEnd();
  return r.finish({}, undefined, 1);
};
for (const [name, rec] of Object.entries(streams)) {
  const events = rec.sse.split(/(?<=\n\n)/).map((e) => Buffer.from(e));
  const N = 200,
    ROUNDS = 200;
  const d = [];
  for (let round = 0; round < ROUNDS + 20; round++) {
    const t = {};
    for (const [k, m] of round % 2
      ? [
          ['A', A],
          ['B', B],
        ]
      : [
          ['B', B],
          ['A', A],
        ]) {
      const t0 = process.cpuUsage();
      for (let i = 0; i < N; i++) run(m, events);
      const u = process.cpuUsage(t0);
      t[k] = (u.user + u.system) / N;
    }
    if (round >= 20) d.push(t.B - t.A);
  }
  const b = bootstrapMedian(d);
  console.log(
    `${name}: ${events.length} events; B − A ${b.median.toFixed(1)} µs per stream (${b.lo.toFixed(1)} … ${b.hi.toFixed(1)})`,
  );
}
