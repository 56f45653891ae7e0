/**
 * Tell the user what is armed (issue 17 Build 4) and switches as users write them (issue 13 Build 10), in child
 * processes under `--import faultline/register`: one stderr line at start-up when a plan is active (its rules and the
 * seed), one at exit (rules fired, matched without firing, never matched), on a normal end and on process.exit;
 * FAULTLINE_DISABLE in any truthy spelling, anything else refused; NODE_ENV trimmed and case-folded.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runNode } from '../support/child';
import { CHAT_TEXT } from '../support/chat-exchanges';
import { DIST } from '../support/dist';
import { corpusReply, startLlmServer, type LlmServer } from '../support/llm-server';

vi.setConfig({ testTimeout: 120_000 });

const REGISTER = join(DIST, 'src/register.mjs');
const rec = CHAT_TEXT;
const original = (rec.response as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content;

const APP = `
const res = await fetch(process.env.LLM_URL + '/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: process.env.REQ });
const body = await res.json();
process.stdout.write(JSON.stringify({ content: body.choices[0].message.content }));
if (process.env.EXIT_CODE) process.exit(Number(process.env.EXIT_CODE));
`;

let server: LlmServer;
let dir: string;
let plan: string;

beforeAll(async () => {
  server = await startLlmServer(() => corpusReply(rec));
  dir = mkdtempSync(join(tmpdir(), 'faultline-armed-'));
  writeFileSync(join(dir, 'app.mjs'), APP);
  plan = join(dir, 'plan.yaml');
  writeFileSync(
    plan,
    [
      'seed: 7',
      'rules:',
      '  - fault: llm_truncate_single',
      '    match: { operation: chat }',
      '  - fault: stream_cut          # matches the call, but a JSON answer has no stream to cut',
      '    match: { operation: chat }',
      '  - fault: http_429',
      '    match: { agent: planner, position: 2 }',
      '',
    ].join('\n'),
  );
  writeFileSync(join(dir, 'strict.json'), JSON.stringify({ rules: [{ fault: 'http_503' }] }));
});
afterAll(async () => {
  await server?.close();
});

function run(env: Record<string, string>) {
  return runNode(['--import', REGISTER, join(dir, 'app.mjs')], {
    cwd: dir,
    env: { LLM_URL: server.url, REQ: JSON.stringify(rec.request), OTEL_TRACES_EXPORTER: 'none', ...env },
    timeoutMs: 60_000,
  });
}

const lines = (stderr: string) => stderr.split('\n').filter((l) => l.startsWith('faultline:'));

describe('what is armed', () => {
  it('one line at start-up with the rules and the seed, one at exit with what fired and what never matched', async () => {
    const r = await run({ FAULTLINE_PLAN: plan });
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as { content: string }).content).not.toBe(original);
    expect(lines(r.stderr)).toEqual([
      `faultline: fault plan ${plan} armed, seed 7, 3 rules: llm_truncate_single [operation=chat]; stream_cut [operation=chat]; http_429 [agent=planner, position=2]`,
      `faultline: fault plan ${plan}: 1 of 3 rules fired (llm_truncate_single ×1); matched but never fired: stream_cut (matched 1, 1 not applicable); never matched: http_429 (none of the 1 call seen had agent=planner: chat gpt-4.1-mini ×1)`,
    ]);
  });

  it('the exit summary is written on process.exit too, and the exit code is the app’s', async () => {
    const r = await run({ FAULTLINE_PLAN: plan, EXIT_CODE: '3' });
    expect(r.code).toBe(3);
    expect(lines(r.stderr).at(-1)).toMatch(/^faultline: fault plan .*: 1 of 3 rules fired \(llm_truncate_single ×1\)/);
  });

  it('says nothing without a plan', async () => {
    const r = await run({});
    expect(r.code, r.stderr).toBe(0);
    expect(lines(r.stderr)).toEqual([]);
  });
});

describe('switches as users write them', () => {
  it.each(['yes', ' On '])(
    'FAULTLINE_DISABLE=%j: nothing injected, and start-up says the plan is not armed',
    async (v) => {
      const r = await run({ FAULTLINE_PLAN: plan, FAULTLINE_DISABLE: v });
      expect(r.code, r.stderr).toBe(0);
      expect((JSON.parse(r.stdout) as { content: string }).content).toBe(original);
      expect(lines(r.stderr)).toEqual([
        `faultline: FAULTLINE_DISABLE is set: fault plan ${plan} is not armed, no fault is injected`,
      ]);
    },
  );

  it('FAULTLINE_DISABLE=maybe is refused before the app runs, with one line and exit 2', async () => {
    const r = await run({ FAULTLINE_PLAN: plan, FAULTLINE_DISABLE: 'maybe' });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim()).toBe(
      'faultline: ✖ FAULTLINE_DISABLE="maybe" is not a switch: use 1, true, yes or on (or 0, false, no, off)',
    );
  });

  it.each(['production ', 'Production', 'PRODUCTION'])(
    'NODE_ENV=%j refuses a plan without allowProduction',
    async (v) => {
      const r = await run({ FAULTLINE_PLAN: join(dir, 'strict.json'), NODE_ENV: v });
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain('refusing to inject faults with NODE_ENV=production');
      expect(r.stderr).not.toMatch(/\n\s+at /);
    },
  );
});
