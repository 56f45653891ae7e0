/** ANSI colours only for a TTY, honouring NO_COLOR / FORCE_COLOR, off on CI unless forced. */
import { processEnv } from '../env';

export interface Colors {
  red(s: string): string;
  green(s: string): string;
  yellow(s: string): string;
  dim(s: string): string;
  bold(s: string): string;
}

export function useColors(
  stream: { isTTY?: boolean } = process.stdout,
  env: NodeJS.ProcessEnv = processEnv(),
): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '0') return true;
  return stream.isTTY === true && !env.CI;
}

export function colors(enabled: boolean): Colors {
  const wrap = (open: number, close: number) => (s: string) => (enabled ? `\u001b[${open}m${s}\u001b[${close}m` : s);
  return { red: wrap(31, 39), green: wrap(32, 39), yellow: wrap(33, 39), dim: wrap(2, 22), bold: wrap(1, 22) };
}

/** Visible width (ANSI escapes excluded). */
export function width(s: string): number {
  // eslint-disable-next-line no-control-regex
  return [...s.replace(/\u001b\[[0-9;]*m/g, '')].length;
}

/** A plain left-aligned text table; `right` lists columns to right-align (numbers). */
export function table(header: string[], rows: string[][], right: ReadonlySet<number> = new Set()): string {
  const all = [header, ...rows];
  const w = header.map((_, i) => Math.max(...all.map((r) => width(r[i] ?? ''))));
  const line = (r: string[]): string =>
    r
      .map((c, i) => {
        const pad = ' '.repeat(Math.max(0, w[i]! - width(c)));
        return right.has(i) ? pad + c : c + pad;
      })
      .join('  ')
      .trimEnd();
  return [line(header), w.map((n) => '─'.repeat(n)).join('  '), ...rows.map(line)].join('\n');
}
