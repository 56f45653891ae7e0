/**
 * The package a user installs (issue 17 Build 6): `npm pack` carries the docs its error messages point to, the
 * schemas, a repository URL, and no tests; and the README's commands run as written from the packed tarball in a
 * scratch app. The scratch app is offline: the tarball is unpacked into its node_modules and faultline's dependencies
 * (and the app's own openai) are linked from this checkout's, where `npm install faultline @opentelemetry/api`
 * would fetch them.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CHAT_TEXT } from '../support/chat-exchanges';
import { ROOT } from '../support/dist';
import { corpusReply, startLlmServer, type LlmServer } from '../support/llm-server';

vi.setConfig({ testTimeout: 180_000, hookTimeout: 180_000 });

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  repository?: { url?: string };
  exports: Record<string, unknown>;
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
};
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

describe('npm pack contents', () => {
  let files: string[];
  beforeAll(() => {
    const out = execFileSync(npm, ['pack', '--dry-run', '--json', '--ignore-scripts'], {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    files = (JSON.parse(out) as Array<{ files: Array<{ path: string }> }>)[0]!.files.map((f) => f.path);
  });

  it('carries every doc, the schemas, the entry points and the exit sender; no tests, benches or sources', () => {
    for (const doc of readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')))
      expect(files, doc).toContain(`docs/${doc}`);
    for (const f of [
      'README.md',
      'package.json',
      'bin/faultline.js',
      'src/plan/plan.schema.json',
      'src/config.schema.json',
      'dist/src/index.js',
      'dist/src/index.d.ts',
      'dist/src/register.js',
      'dist/src/register.mjs',
      'dist/src/exporters/otlp-exit-send.js',
    ]) {
      expect(files, f).toContain(f);
    }
    const stray = files.filter(
      (f) =>
        /(^|\/)(test|tests|bench|coverage|\.ci)\//.test(f) ||
        /\.test\.|\.spec\./.test(f) ||
        /^src\/.*\.ts$/.test(f) ||
        f.startsWith('node_modules/'),
    );
    expect(stray).toEqual([]);
  });

  it('every docs/*.md the built code points users to is in the package', () => {
    const pointed = new Set<string>();
    const walk = (d: string): void => {
      for (const e of readdirSync(d, { withFileTypes: true })) {
        const p = join(d, e.name);
        if (e.isDirectory()) walk(p);
        else if (e.name.endsWith('.js'))
          for (const m of readFileSync(p, 'utf8').matchAll(/docs\/[a-z-]+\.md/g)) pointed.add(m[0]);
      }
    };
    walk(join(ROOT, 'dist'));
    expect(pointed.size).toBeGreaterThan(0);
    for (const doc of pointed) expect(files, doc).toContain(doc);
  });

  it('package.json: a repository URL, the config schema exported, openai an optional peer and not a dependency', () => {
    expect(pkg.repository?.url).toMatch(/^git\+https:\/\/github\.com\/[^/]+\/[^/]+\.git$/);
    expect(pkg.exports['./config.schema.json']).toBe('./src/config.schema.json');
    expect(pkg.dependencies.openai).toBeUndefined();
    expect(pkg.peerDependencies.openai).toBeDefined();
    expect(pkg.peerDependenciesMeta?.openai?.optional).toBe(true);
  });
});

describe('the README, run from the packed tarball in a scratch app', () => {
  let server: LlmServer;
  let app: string;
  const rec = CHAT_TEXT;

  // The user's program: the openai SDK, nothing of faultline's.
  const PROGRAM = `
const OpenAI = require('openai');
const client = new OpenAI({ baseURL: process.env.LLM_URL + '/v1', apiKey: 'sk-scratch', maxRetries: 0 });
client.chat.completions.create(JSON.parse(process.env.REQ)).then((r) => process.stdout.write(r.choices[0].message.content));
`;

  beforeAll(async () => {
    server = await startLlmServer(() => corpusReply(rec));
    const scratch = mkdtempSync(join(tmpdir(), 'faultline-pack-'));
    execFileSync(npm, ['pack', '--ignore-scripts', '--pack-destination', scratch], { cwd: ROOT, stdio: 'ignore' });
    const tarball = readdirSync(scratch).find((f) => f.endsWith('.tgz'))!;
    app = join(scratch, 'app');
    const installed = join(app, 'node_modules/faultline');
    mkdirSync(installed, { recursive: true });
    execFileSync('tar', ['-xzf', join(scratch, tarball), '-C', installed, '--strip-components=1']);
    for (const dep of [...Object.keys(pkg.dependencies), ...Object.keys(pkg.peerDependencies)]) {
      const link = join(app, 'node_modules', dep);
      mkdirSync(dirname(link), { recursive: true });
      symlinkSync(join(ROOT, 'node_modules', dep), link, 'dir');
    }
    mkdirSync(join(app, 'node_modules/.bin'));
    symlinkSync('../faultline/bin/faultline.js', join(app, 'node_modules/.bin/faultline'));
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'scratch-app', private: true }));
    writeFileSync(join(app, 'app.js'), PROGRAM);
    writeFileSync(
      join(app, 'app.mjs'),
      `import { createRequire } from 'node:module';\nconst require = createRequire(import.meta.url);\n${PROGRAM}`,
    );
    // The README's plan, as written.
    writeFileSync(join(app, 'plan.yaml'), /```yaml\n(# plan\.yaml\n[\s\S]*?)```/.exec(README)![1]!);
  });
  afterAll(async () => {
    await server?.close();
  });

  /** A README command line, run by the shell in the scratch app. */
  function sh(command: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
    expect(README, 'the README still shows this command').toContain(command);
    return new Promise((resolve, reject) => {
      const child = spawn('sh', ['-c', command], {
        cwd: app,
        env: {
          PATH: process.env.PATH,
          HOME: app,
          npm_config_update_notifier: 'false',
          npm_config_offline: 'true',
          LLM_URL: server.url,
          REQ: JSON.stringify(rec.request),
        },
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`timed out: ${command}\n${stderr}`));
      }, 60_000);
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
    });
  }

  const original = (rec.response as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content;

  it('node --import / --require faultline/register, then a plan, then verify and diagnose', async () => {
    const esm = await sh('node --import faultline/register app.mjs');
    expect(esm.code, esm.stderr).toBe(0);
    expect(esm.stdout).toBe(original);
    expect(esm.stderr).toContain(`faultline: writing traces to ${join(app, 'faultline-traces.jsonl')}`);
    const cjs = await sh('node --require faultline/register app.js');
    expect(cjs.code, cjs.stderr).toBe(0);
    expect(cjs.stdout).toBe(original);

    const planned = await sh('FAULTLINE_PLAN=plan.yaml node --import faultline/register app.js');
    expect(planned.code, planned.stderr).toBe(0);
    expect(planned.stderr).toMatch(
      /^faultline: fault plan plan\.yaml armed, seed 42, 4 rules: llm_truncate_single \[operation=model\]/m,
    );
    expect(planned.stdout).toBe(original.slice(0, Math.max(1, Math.floor(original.length * 0.3))));

    const verify = await sh('npx faultline verify faultline-traces.jsonl');
    expect(verify.code, verify.stderr).toBe(0);
    expect(verify.stdout).toContain('llm_truncate_single');
    // The README diagnoses what `faultline collect --out traces.jsonl` wrote; the register file is the same format.
    writeFileSync(join(app, 'traces.jsonl'), readFileSync(join(app, 'faultline-traces.jsonl')));
    const diagnose = await sh('npx faultline diagnose traces.jsonl');
    expect(diagnose.stderr).not.toContain('This is a bug');
    expect(diagnose.stdout).toContain('truncate');
  });

  it('the API the README imports is there', async () => {
    writeFileSync(
      join(app, 'api.mjs'),
      `import { runWorkflow, runAgent, MessageChannel, createGuards, guard, guardPreset, start } from 'faultline';
for (const f of [runWorkflow, runAgent, createGuards, guard, guardPreset, start]) if (typeof f !== 'function') throw new Error('missing export');
const channel = new MessageChannel();
const got = await runWorkflow('shopping', () => runAgent('planner', () => channel.send({ source: 'planner', target: 'worker', boundary: 'I2', taskId: 't1', payload: { plan: 'buy' } })), { taskId: 't1' });
process.stdout.write(JSON.stringify(got.map((m) => m.payload)));`,
    );
    const r = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, ['api.mjs'], {
        cwd: app,
        env: { PATH: process.env.PATH, OTEL_SDK_DISABLED: 'true' },
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([{ plan: 'buy' }]);
  });
});
