/**
 * No test leaves a process behind, even when it fails. Loaded in every test file (vitest.config.mts setupFiles): after
 * the file's tests, and when its worker exits, every process it started and their descendants are killed — found in /proc
 * on Linux, so a `spawn` anywhere in a test counts, and else the children registered with `reaped()` (runNode,
 * startCollect). Vitest runs each file in a forked worker (pool: forks), so a child lives at most as long as its file,
 * whether the test that started it stopped it or threw first.
 */
import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { afterAll } from 'vitest';

const live = new Set<ChildProcess>();

/** The pids of every live descendant of `root`, from /proc (empty off Linux). */
function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    try {
      // pid (comm) state ppid …; comm may hold spaces and parentheses: read after the last ')'.
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const list = children.get(ppid) ?? [];
      list.push(Number(e));
      children.set(ppid, list);
    } catch {
      // gone meanwhile
    }
  }
  const out: number[] = [];
  const walk = (pid: number) => {
    for (const c of children.get(pid) ?? []) {
      out.push(c);
      walk(c);
    }
  };
  walk(root);
  return out;
}

function kill(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

function reapAll(): void {
  for (const pid of descendants(process.pid)) kill(pid);
  for (const child of live) if (child.pid !== undefined) kill(child.pid);
}

// After the file's last test (failed or not), and again if the worker exits another way.
afterAll(reapAll);
process.once('exit', reapAll);

/** Track `child` until it exits (where /proc cannot be read); returns it. */
export function reaped<T extends ChildProcess>(child: T): T {
  if (child.exitCode === null && child.signalCode === null) {
    live.add(child);
    child.once('exit', () => live.delete(child));
  }
  return child;
}
