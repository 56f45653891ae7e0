// Bench-only: where the benches' processes run. Interleaving rounds cancels drift over time, but not where a process
// runs: a client that lands on a CPU shared with a busy neighbour stays slow for the whole run. With taskset
// (util-linux) on a machine of two CPUs or more, this process (the servers) moves to CPU 0 and every measured client
// goes to the last CPU, so the configurations share their placement too. BENCH_PIN=0 turns it off.
import { execFileSync } from 'node:child_process';
import os from 'node:os';

/** The CPUs chosen ({ server, client }, as taskset's lists), or undefined when processes are not pinned. */
export function pinning() {
  if (process.env.BENCH_PIN === '0' || os.cpus().length < 2) return undefined;
  try {
    execFileSync('taskset', ['-a', '-pc', '0', String(process.pid)], { stdio: 'ignore' });
    return { server: '0', client: String(os.cpus().length - 1) };
  } catch {
    return undefined;
  }
}
