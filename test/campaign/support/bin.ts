/**
 * The `faultline` bin in child processes, over the built dist/ (built here when missing or older than the sources),
 * with a deadline on every run.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

export const ROOT = join(__dirname, '..', '..', '..');
export const BIN = join(ROOT, 'bin', 'faultline.js');

function newestMtime(dir: string): number {
  let m = 0;
  for (const f of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, f.name);
    m = Math.max(m, f.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return m;
}

export function ensureBuilt(): void {
  const out = join(ROOT, 'dist', 'src', 'campaign', 'run-context.js');
  const srcs = ['src', 'instrumentation', 'detectors'].map((d) => newestMtime(join(ROOT, d)));
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

export interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

export interface Started {
  child: ChildProcess;
  done: Promise<Run>;
}

/** Start `faultline ARGS`; `done` settles when it exits, or rejects at the deadline (after killing it). */
export function start(args: string[], env: NodeJS.ProcessEnv = {}, deadlineMs = 60_000, cwd = ROOT): Started {
  const t0 = Date.now();
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd,
    env: { ...process.env, CI: '1', NO_COLOR: '1', FAULTLINE_LLM_BASE_URL: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const done = new Promise<Run>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`faultline ${args.join(' ')} did not end within ${deadlineMs} ms\n${stderr}`));
    }, deadlineMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, ms: Date.now() - t0 });
    });
  });
  return { child, done };
}

export function cli(args: string[], env: NodeJS.ProcessEnv = {}, deadlineMs = 60_000, cwd = ROOT): Promise<Run> {
  return start(args, env, deadlineMs, cwd).done;
}
