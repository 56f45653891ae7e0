/**
 * Progress for long runs: a throttled single line redrawn on stderr when stderr is a TTY outside CI; otherwise
 * nothing until `done()`, which prints one plain summary line (pipes, CI logs and agents stay clean).
 */
import { processEnv } from '../env';

export interface Progress {
  update(done: number, detail?: string): void;
  done(summary?: string): void;
}

export interface ProgressOptions {
  stream?: NodeJS.WriteStream | { isTTY?: boolean; write(s: string): boolean };
  env?: NodeJS.ProcessEnv;
  /** Minimum ms between redraws. Default 100. */
  intervalMs?: number;
  label?: string;
  total?: number;
}

export function isInteractive(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = processEnv()): boolean {
  return stream.isTTY === true && !env.CI && env.TERM !== 'dumb';
}

export function createProgress(options: ProgressOptions = {}): Progress {
  const stream = options.stream ?? process.stderr;
  const live = isInteractive(stream, options.env ?? processEnv());
  const interval = options.intervalMs ?? 100;
  const label = options.label ?? 'progress';
  const started = Date.now();
  let last = 0;
  let drawn = false;
  let count = 0;
  const text = (detail?: string): string => {
    const secs = (Date.now() - started) / 1000;
    const of = options.total !== undefined ? `/${options.total}` : '';
    const rate = secs > 0 ? ` (${Math.round(count / secs)}/s)` : '';
    return `${label}: ${count}${of}${rate}${detail ? ` ${detail}` : ''}`;
  };
  return {
    update(done, detail) {
      count = done;
      if (!live) return;
      const now = Date.now();
      if (now - last < interval) return;
      last = now;
      drawn = true;
      stream.write(`\r\u001b[2K${text(detail).slice(0, 200)}`);
    },
    done(summary) {
      if (live && drawn) stream.write('\r\u001b[2K');
      if (summary !== undefined) stream.write(`${summary}\n`);
    },
  };
}
