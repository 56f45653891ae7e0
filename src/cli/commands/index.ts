/**
 * The command registry. Each command module is imported only when named (or for `--help`), so a missing or broken
 * module never breaks the others.
 */
import type { Command } from '../types';

export interface CommandEntry {
  name: string;
  /** Shown in `faultline --help` without loading the module. */
  summary: string;
  /** Whether the module is present in this build (resolved, not loaded). */
  available(): boolean;
  load(): Command;
}

function entry(name: string, summary: string, load: () => { command: Command }): CommandEntry {
  return {
    name,
    summary,
    available: () => {
      try {
        require.resolve(`./${name}`);
        return true;
      } catch {
        return false;
      }
    },
    load: () => load().command,
  };
}

export const COMMANDS: readonly CommandEntry[] = [
  entry('diagnose', 'name the fault, faulty step and evidence of each trace in trace files', () =>
    require('./diagnose'),
  ),
  entry('eval', 'score diagnosers against the injected ground truth of labelled traces (AgentChaos RQ3)', () =>
    require('./eval'),
  ),
  entry('verify', 'check which planned faults fired in a trace file (trigger verification)', () => require('./verify')),
  entry('collect', 'receive OTLP/HTTP traces and write them to a file', () => require('./collect')),
  entry('campaign', 'run a fault-injection campaign over a workflow and label its traces', () => require('./campaign')),
  entry('demo', 'run a small multi-agent workflow with and without faults, then diagnose it', () => require('./demo')),
  entry('monitor', 'run the workflow monitors over traces: MAST failure modes and ARCF types per trace', () =>
    require('./monitor'),
  ),
  entry(
    'reliability',
    "ARCF's reliability model from traces: success per agent and route, predicted against observed completion",
    () => require('./reliability'),
  ),
];

export function findCommand(name: string): CommandEntry | undefined {
  return COMMANDS.find((c) => c.name === name);
}

/** Load a command; undefined when its module is missing (not built yet, or not part of this build). */
export function tryLoad(e: CommandEntry): Command | undefined {
  try {
    return e.load();
  } catch (err) {
    if (
      (err as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND' &&
      String((err as Error).message).includes(`/${e.name}`)
    )
      return undefined;
    throw err;
  }
}
