/**
 * The `faultline` bin end to end, in child processes (`node bin/faultline.js …` over the built dist/): exit codes,
 * help, output formats, on OTLP/JSON files written by the real OTel serializer.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, statSync, readdirSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { groundTruth } from '../../src/diagnosers/ground-truth';
import { TraceBuilder } from '../diagnosers/support/builder';
import { labelledSet } from '../diagnosers/support/labelled';
import { writeOtlpJson } from '../diagnosers/support/otlp-file';
import type { TraceRecord } from '../../src/traces/model';

const ROOT = join(__dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'faultline.js');

function newestMtime(dir: string): number {
  let m = 0;
  for (const f of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, f.name);
    m = Math.max(m, f.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return m;
}

/** Build dist/ when it is missing or older than the sources this test exercises (`npm test` builds first anyway). */
function ensureBuilt(): void {
  const out = join(ROOT, 'dist', 'src', 'cli', 'index.js');
  const srcs = ['src/cli', 'src/diagnosers', 'src/evaluation', 'src/report', 'src/traces'].map((d) =>
    newestMtime(join(ROOT, d)),
  );
  if (existsSync(out) && statSync(out).mtimeMs >= Math.max(...srcs)) return;
  try {
    execFileSync(
      process.execPath,
      [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'],
      { cwd: ROOT, stdio: 'ignore' },
    );
  } catch {
    /* type errors elsewhere in the tree still emit JavaScript */
  }
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      {
        cwd: ROOT,
        env: { ...process.env, CI: '1', NO_COLOR: '1', FAULTLINE_LLM_BASE_URL: '', ...env },
        maxBuffer: 64 << 20,
      },
      (err, stdout, stderr) => {
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
      },
    );
  });
}

let dir = '';
let labelled = '';
let set: TraceRecord[] = [];

beforeAll(() => {
  ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), 'faultline-cli-'));
  const b = new TraceBuilder();
  set = labelledSet(b, { seed: 5, perFault: 2, clean: 10, untriggered: 1 });
  labelled = join(dir, 'labelled.otlp.json');
  writeOtlpJson(labelled, b.finished);
}, 300_000);

describe('faultline bin: help, version, usage errors', () => {
  it('--help and --version', async () => {
    const h = await cli(['--help']);
    expect(h.code).toBe(0);
    expect(h.stdout).toContain('Usage: faultline <command> [options]');
    for (const c of ['diagnose', 'eval', 'verify']) expect(h.stdout).toMatch(new RegExp(`^  ${c}\\s`, 'm'));
    const v = await cli(['--version']);
    expect(v.stdout.trim()).toBe(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version);
    const none = await cli([]);
    expect(none.code).toBe(2);
    expect(none.stdout).toContain('Commands:');
  });

  it('<command> --help is generated from the option table', async () => {
    const d = await cli(['diagnose', '--help']);
    expect(d.code).toBe(0);
    expect(d.stdout).toContain('Usage: faultline diagnose FILE...');
    expect(d.stdout).toMatch(/-d, --diagnoser <rule\|llm\|hybrid>\s+which diagnoser to use \(default: rule\)/);
    expect(d.stdout).toMatch(/-f, --format <table\|json\|jsonl>/);
    const e = await cli(['eval', '--help']);
    expect(e.stdout).toMatch(/--html <file>/);
    expect(e.stdout).toContain('repeatable');
    expect((await cli(['help', 'verify'])).stdout).toContain('Usage: faultline verify FILE...');
  });

  it('bad input: exit 2, one ✖ line, no stack', async () => {
    for (const args of [
      ['bogus'],
      ['diagnose', '--bogus', 'x'],
      ['diagnose'],
      ['diagnose', labelled, '--concurrency', '0'],
      ['diagnose', labelled, '--format', 'xml'],
      ['eval', labelled, '-d', 'oracle'],
      ['diagnose', labelled, '-d', 'llm'],
    ]) {
      const r = await cli(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(/^✖ /);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
    const llm = await cli(['diagnose', labelled, '-d', 'llm']);
    expect(llm.stderr).toContain('FAULTLINE_LLM_BASE_URL');
    const missing = await cli(['diagnose', join(dir, 'nope.json')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('nope.json');
  });
});

describe('faultline diagnose', () => {
  it('--format jsonl: exactly one JSON object per trace per line, ground truth never consulted', async () => {
    const r = await cli(['diagnose', labelled, '--format', 'jsonl']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(set.length);
    const byTrace = new Map(
      lines.map((l) => {
        const o = JSON.parse(l) as { traceId: string; faultType: string; spanId: string | null; step: number | null };
        expect(Object.keys(o)).toEqual(expect.arrayContaining(['traceId', 'faultType', 'spanId', 'step']));
        return [o.traceId, o];
      }),
    );
    let right = 0;
    let faulty = 0;
    for (const t of set) {
      const truth = groundTruth(t);
      if (truth.status !== 'faulty') continue;
      faulty++;
      const d = byTrace.get(t.traceId)!;
      if (d.faultType === truth.faultType && d.spanId === truth.spanId) right++;
    }
    expect(right / faulty).toBeGreaterThanOrEqual(0.9);
  });

  it('--format json and table', async () => {
    const j = await cli(['diagnose', labelled, '-f', 'json']);
    expect(j.code).toBe(0);
    expect(JSON.parse(j.stdout)).toHaveLength(set.length);
    const t = await cli(['diagnose', labelled]);
    expect(t.code).toBe(0);
    expect(t.stdout).toMatch(/^trace\s+fault\s+step\s+span\s+conf\s+evidence/m);
    expect(t.stdout).toMatch(new RegExp(`${set.length} traces: \\d+ faulty, \\d+ clean`));
    expect(t.stdout).not.toContain('\u001b['); // no colours when not a TTY
  });

  it('--fail-on-fault exits 1 when a fault is found', async () => {
    expect((await cli(['diagnose', labelled, '--fail-on-fault', '-f', 'jsonl'])).code).toBe(1);
  });
});

describe('faultline eval and verify', () => {
  it('prints accuracy, per-type table, confusion, FP, AgentChaos labelled as another dataset; writes the HTML report', async () => {
    const html = join(dir, 'eval.html');
    const r = await cli(['eval', labelled, '--html', html]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/rule\s+(\d+\.\d+)\s+(\d+\.\d+)/);
    const [, type, step] = /rule\s+(\d+\.\d+)\s+(\d+\.\d+)/.exec(r.stdout)!;
    expect(Number(type)).toBeGreaterThanOrEqual(90);
    expect(Number(step)).toBeGreaterThanOrEqual(90);
    expect(r.stdout).toContain('1 untriggered (excluded)');
    expect(r.stdout).toContain('Confusion — rule');
    expect(r.stdout).toMatch(/Published elsewhere, not comparable row for row[^\n]*another dataset[^]*AgentChaos rule/);
    const page = readFileSync(html, 'utf8');
    expect(page).toContain('<svg');
    expect(page).not.toMatch(/<script|src=|href=/i);
  });

  it("two diagnosers (rule + hybrid against a scripted OpenAI-compatible server) give Cohen's kappa", async () => {
    // The scripted model answers "none" to everything: hybrid keeps the rules' structural answers and says none
    // wherever it asked the model, so the two diagnosers agree only partly.
    const llm = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            choices: [
              {
                index: 0,
                message: {
                  role: 'assistant',
                  content: JSON.stringify({
                    faultType: 'none',
                    kind: 'none',
                    step: null,
                    confidence: 0.8,
                    evidence: 'nothing',
                  }),
                },
                finish_reason: 'stop',
              },
            ],
          }),
        );
      });
    });
    await new Promise<void>((r) => llm.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(llm.address() as AddressInfo).port}/v1`;
      const r = await cli(['eval', labelled, '-d', 'rule,hybrid', '-f', 'json'], { FAULTLINE_LLM_BASE_URL: url });
      expect(r.code).toBe(0);
      const report = JSON.parse(r.stdout) as {
        diagnosers: { diagnoser: string }[];
        kappa: { a: string; b: string; type: number; step: number }[];
      };
      expect(report.diagnosers.map((d) => d.diagnoser)).toEqual(['rule', 'hybrid']);
      expect(report.kappa).toHaveLength(1);
      expect(report.kappa[0]).toMatchObject({ a: 'rule', b: 'hybrid' });
      expect(report.kappa[0]!.type).toBeGreaterThan(0);
      expect(report.kappa[0]!.type).toBeLessThan(1);
    } finally {
      await new Promise<void>((r) => llm.close(() => r()));
    }
  });

  it('--format json and thresholds set the exit code', async () => {
    const j = await cli(['eval', labelled, '-f', 'json', '--min-type-accuracy', '100']);
    const report = JSON.parse(j.stdout) as { faulty: number; diagnosers: { accuracy: { typeAccuracy: number } }[] };
    expect(report.faulty).toBe(set.filter((t) => groundTruth(t).status === 'faulty').length);
    expect(j.code).toBe(report.diagnosers[0]!.accuracy.typeAccuracy < 100 ? 1 : 0);
    expect((await cli(['eval', labelled, '--min-step-accuracy', '150'])).code).toBe(2);
  });

  it('verify reports which planned faults fired', async () => {
    const r = await cli(['verify', labelled]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^\d+\/\d+ tasks triggered/);
    expect(r.stdout).toContain('llm_truncate_single');
  });
});
