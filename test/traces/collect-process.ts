/** `faultline collect` as a child process (the built bin), for the tests that signal it and watch its memory. */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { reaped } from '../support/reap';
import { ROOT, built } from './dist';

export interface CollectProcess {
  child: ChildProcess;
  stdout(): string;
  /** The OTLP/HTTP traces URL and the gRPC URL (when --grpc-port was given), from the start-up lines. */
  tracesUrl: string;
  grpcUrl: string | undefined;
  /** Resolves with the exit code (and the time it took from `signal`). */
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; ms: number }>;
  exited: Promise<number | null>;
  /** Peak resident memory so far (VmHWM, MiB), or undefined off Linux. */
  peakRssMb(): number | undefined;
}

export async function startCollect(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  timeoutMs = 20_000,
): Promise<CollectProcess> {
  built('src/cli/index');
  const child = reaped(
    spawn(process.execPath, [join(ROOT, 'bin', 'faultline.js'), 'collect', ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  let out = '';
  let err = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const deadline = Date.now() + timeoutMs;
  const wantGrpc = args.includes('--grpc-port');
  for (;;) {
    const http = /on (http:\/\/[^\s]+\/v1\/traces)/.exec(out)?.[1];
    const grpc = /OTLP\/gRPC traces on (http:\/\/\S+)/.exec(out)?.[1];
    if (http && (!wantGrpc || grpc) && out.includes('stop with Ctrl-C')) {
      return {
        child,
        stdout: () => out,
        tracesUrl: http,
        grpcUrl: grpc,
        exited,
        async stop(signal = 'SIGTERM') {
          const t0 = Date.now();
          child.kill(signal);
          const code = await exited;
          return { code, ms: Date.now() - t0 };
        },
        peakRssMb() {
          try {
            const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
            return m ? Number(m[1]) / 1024 : undefined;
          } catch {
            return undefined;
          }
        },
      };
    }
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`faultline collect did not start (exit ${child.exitCode}):\n${out}\n${err}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A port free right now (for instances that must come back on the same port). */
export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}
