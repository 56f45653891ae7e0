/**
 * The judge of a command campaign's runs: whether the task succeeded, independently of what the program claims.
 *
 * - none given: the exit code (0 = success);
 * - `--oracle ./check.mjs` (a .js/.mjs/.cjs file): a module exporting `check({ task, stdout, stderr, exitCode,
 *   signal })` (`task` as written in the tasks file) → boolean or `{ success, reason? }` (or a promise of one);
 * - `--oracle "CMD"`: a command (placeholders as in --cmd) that reads the run's stdout on its stdin, with the task as
 *   JSON in FAULTLINE_CAMPAIGN_TASK and the run's exit code in FAULTLINE_RUN_EXIT_CODE; it exits 0 for success, and
 *   the first line it prints is the reason.
 *
 * A run that timed out failed, whatever the oracle would say. An oracle that throws or cannot run fails the run and
 * says why.
 */
import { existsSync } from 'node:fs';
import { extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { FaultlineInputError } from '../errors';
import { fillCommand, splitCommand } from './command-line';
import { runProcess } from './process-run';
import type { CampaignTask } from './tasks';

export interface OracleInput {
  task: CampaignTask;
  stdout: string;
  stderr: string;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
}

export interface Verdict {
  success: boolean;
  reason: string;
}

export interface Oracle {
  /** For the report: `exit code`, the module, or the command. */
  describe: string;
  judge(input: OracleInput): Promise<Verdict>;
}

const ORACLE_TIMEOUT_MS = 60_000;

function exitReason(i: Pick<OracleInput, 'exitCode' | 'signal'>): string {
  return i.signal ? `killed by ${i.signal}` : `exit code ${String(i.exitCode)}`;
}

type CheckFn = (input: Omit<OracleInput, 'task'> & { task: Record<string, unknown> }) => unknown;

function verdictOf(v: unknown, where: string): Verdict {
  if (typeof v === 'boolean') return { success: v, reason: v ? 'oracle: success' : 'oracle: failure' };
  if (v !== null && typeof v === 'object' && typeof (v as { success?: unknown }).success === 'boolean') {
    const o = v as { success: boolean; reason?: unknown };
    return {
      success: o.success,
      reason:
        typeof o.reason === 'string' && o.reason !== '' ? o.reason : o.success ? 'oracle: success' : 'oracle: failure',
    };
  }
  return {
    success: false,
    reason: `${where} returned ${JSON.stringify(v) ?? String(v)}, not a boolean or { success }`,
  };
}

export async function loadOracle(spec: string | undefined, env: NodeJS.ProcessEnv): Promise<Oracle> {
  if (spec === undefined || spec.trim() === '') {
    return {
      describe: 'exit code 0',
      judge: async (i) => ({ success: i.exitCode === 0 && i.signal === null, reason: exitReason(i) }),
    };
  }
  const ext = extname(spec).toLowerCase();
  if (['.js', '.mjs', '.cjs'].includes(ext) && !/\s/.test(spec.trim())) {
    const file = resolve(spec);
    if (!existsSync(file)) throw new FaultlineInputError('FAULTLINE_FILE_NOT_FOUND', `--oracle ${spec}: no such file`);
    let mod: Record<string, unknown>;
    try {
      mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
    } catch (err) {
      throw new FaultlineInputError('FAULTLINE_USAGE', `--oracle ${spec}: cannot load it: ${(err as Error).message}`, {
        cause: err,
      });
    }
    const def = mod.default as Record<string, unknown> | CheckFn | undefined;
    const check = (
      typeof mod.check === 'function'
        ? mod.check
        : typeof def === 'function'
          ? def
          : typeof def?.check === 'function'
            ? def.check
            : undefined
    ) as CheckFn | undefined;
    if (check === undefined)
      throw new FaultlineInputError(
        'FAULTLINE_USAGE',
        `--oracle ${spec}: exports no check function (export function check({ task, stdout, exitCode }) { … })`,
      );
    return {
      describe: spec,
      async judge(i) {
        try {
          return verdictOf(await check({ ...i, task: i.task.fields }), `--oracle ${spec}`);
        } catch (err) {
          return { success: false, reason: `oracle threw: ${err instanceof Error ? err.message : String(err)}` };
        }
      },
    };
  }
  const template = splitCommand(spec, '--oracle');
  return {
    describe: spec,
    async judge(i) {
      const argv = fillCommand(template, i.task, '--oracle');
      const r = await runProcess({
        argv,
        env: {
          ...env,
          FAULTLINE_CAMPAIGN_TASK: JSON.stringify(i.task.fields),
          FAULTLINE_RUN_EXIT_CODE: i.exitCode === null ? '' : String(i.exitCode),
        },
        input: i.stdout,
        timeoutMs: ORACLE_TIMEOUT_MS,
        keepBytes: 64 << 10,
      });
      if (r.spawnError !== undefined) return { success: false, reason: `oracle could not run: ${r.spawnError}` };
      if (r.timedOut) return { success: false, reason: `oracle gave no verdict within ${ORACLE_TIMEOUT_MS / 1000} s` };
      const said = r.stdout
        .split('\n')
        .map((l) => l.trim())
        .find((l) => l !== '');
      return { success: r.exitCode === 0, reason: said ?? `oracle ${exitReason(r)}` };
    },
  };
}
