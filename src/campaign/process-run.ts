/**
 * One child process of a command campaign (a run of the user's program, or a command oracle): no shell, its own
 * process group, output kept (in files, and the first bytes in memory), and a deadline after which the whole group
 * gets SIGTERM — which faultline/register answers by flushing its spans — then SIGKILL. Every path ends: the promise
 * settles when the process is gone, even when it could not be started.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';

export interface ProcessResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** Killed at the deadline. */
  timedOut: boolean;
  /** Could not be started (ENOENT, EACCES…): the message. */
  spawnError?: string;
  stdout: string;
  stderr: string;
  /** stdout or stderr was longer than kept in memory. */
  truncated: boolean;
  startedAt: number;
  endedAt: number;
}

export interface ProcessOptions {
  argv: string[];
  env: NodeJS.ProcessEnv;
  cwd?: string;
  timeoutMs: number;
  /** Written to stdin, which is then closed (default: stdin is empty). */
  input?: string;
  /** Files the output is also written to. */
  stdoutFile?: string;
  stderrFile?: string;
  /** Bytes of each stream kept in memory (default 8 MiB). */
  keepBytes?: number;
  /** Grace between SIGTERM and SIGKILL (default 5 s). */
  graceMs?: number;
}

/** Processes running now, so an interrupted campaign can stop them (see stopAll). */
const running = new Set<ChildProcess>();

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      /* already gone */
    }
  }
}

/** SIGTERM every running child's process group (then SIGKILL after `graceMs`); resolves when all are gone. */
export async function stopAll(graceMs = 5000): Promise<void> {
  const children = [...running];
  if (children.length === 0) return;
  const gone = Promise.all(
    children.map(
      (c) =>
        new Promise<void>((r) => (c.exitCode !== null || c.signalCode !== null ? r() : c.once('close', () => r()))),
    ),
  );
  for (const c of children) killGroup(c, 'SIGTERM');
  const timer = setTimeout(() => children.forEach((c) => killGroup(c, 'SIGKILL')), graceMs);
  await gone;
  clearTimeout(timer);
}

export function runProcess(o: ProcessOptions): Promise<ProcessResult> {
  const keep = o.keepBytes ?? 8 << 20;
  const startedAt = Date.now();
  return new Promise((resolve) => {
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let outBytes = 0;
    let errBytes = 0;
    let truncated = false;
    let timedOut = false;
    let spawnError: string | undefined;
    const files: WriteStream[] = [];
    const sink = (path: string | undefined): WriteStream | undefined => {
      if (path === undefined) return undefined;
      const w = createWriteStream(path);
      w.on('error', () => {}); // the output copy is a convenience; its failure must not kill the campaign
      files.push(w);
      return w;
    };
    const outFile = sink(o.stdoutFile);
    const errFile = sink(o.stderrFile);
    let child: ChildProcess;
    try {
      child = spawn(o.argv[0]!, o.argv.slice(1), {
        env: o.env,
        ...(o.cwd !== undefined ? { cwd: o.cwd } : {}),
        stdio: ['pipe', 'pipe', 'pipe'],
        detached: true,
      });
    } catch (e) {
      for (const f of files) f.end();
      resolve({
        exitCode: null,
        signal: null,
        timedOut: false,
        spawnError: (e as Error).message,
        stdout: '',
        stderr: '',
        truncated: false,
        startedAt,
        endedAt: Date.now(),
      });
      return;
    }
    running.add(child);
    const take = (chunk: Buffer, parts: Buffer[], size: number): number => {
      if (size < keep) parts.push(size + chunk.length > keep ? chunk.subarray(0, keep - size) : chunk);
      else truncated = true;
      if (size + chunk.length > keep) truncated = true;
      return size + chunk.length;
    };
    child.stdout!.on('data', (c: Buffer) => {
      outBytes = take(c, out, outBytes);
      outFile?.write(c);
    });
    child.stderr!.on('data', (c: Buffer) => {
      errBytes = take(c, err, errBytes);
      errFile?.write(c);
    });
    child.stdin!.on('error', () => {}); // a program that exits without reading its stdin
    child.stdin!.end(o.input ?? '');
    let killTimer: NodeJS.Timeout | undefined;
    const deadline = setTimeout(() => {
      timedOut = true;
      killGroup(child, 'SIGTERM');
      killTimer = setTimeout(() => killGroup(child, 'SIGKILL'), o.graceMs ?? 5000);
    }, o.timeoutMs);
    child.on('error', (e) => {
      spawnError = e.message;
    });
    // What the program left running in its group does not outlive the run (nor hold its output open).
    child.on('exit', () => killGroup(child, 'SIGKILL'));
    child.on('close', (code, signal) => {
      clearTimeout(deadline);
      clearTimeout(killTimer);
      running.delete(child);
      for (const f of files) f.end();
      resolve({
        exitCode: code,
        signal,
        timedOut,
        ...(spawnError !== undefined ? { spawnError } : {}),
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
        truncated,
        startedAt,
        endedAt: Date.now(),
      });
    });
  });
}
