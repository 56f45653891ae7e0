/**
 * Checkpoint-based state recovery (ARCF §4.5, ../shared/papers/arcf-reliability-control.txt) for workflows run
 * through `runWorkflow(name, fn, { checkpoints: checkpoints({ store }) })`:
 *
 *  - each `checkpoint(name, state)` saves the step's state in the store the user chose (memory, or a JSON file);
 *  - when the workflow fails severely (an error escapes `fn`, or a step fails its verification), the guard weighs a
 *    rollback by ARCF's cost criterion, `reCost ≤ θ · remVal`: reCost is the work lost since the last checkpoint
 *    (what resuming redoes), remVal the work the workflow has cost so far (what giving up throws away), unless the
 *    user prices them; a rollback that cannot finish before the workflow's deadline is refused;
 *  - on a rollback it resumes: `fn` runs again in the same workflow span and task, and every checkpoint already saved
 *    returns its saved state without running its step — the work before it is not redone. A step whose verification
 *    names an earlier checkpoint (`rollbackTo`) discards the checkpoints after it;
 *  - rollbacks are bounded (`maxRollbacks`, default 2) and every path ends: the last error is rethrown unchanged;
 *  - a file store survives the process: a workflow run again with the same task id resumes where it failed; the
 *    checkpoints of a workflow that completed are deleted.
 *
 * Every action is a `faultline.checkpoint` event on the workflow span (saved, restored, rollback, no_rollback,
 * resumed, verify_failed).
 */
import { closeSync, openSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import {
  checkpointDone,
  checkpointEvent,
  runStep,
  VerificationFailedError,
  WorkflowDeadlineError,
  type CheckpointOptions,
  type CheckpointSession,
  type WorkflowRecovery,
  type WorkflowState,
} from '../../instrumentation/agents/declarations';
import { logger } from '../../src/diag';
import { FaultlineInputError, isFaultlineError } from '../../src/errors';
import { checkWritable } from '../../src/report/output';

const log = logger('checkpoints');

export interface SavedCheckpoint {
  name: string;
  /** The step's state (JSON for the file store). Absent when the state was undefined. */
  state?: unknown;
  /** Epoch ms when it was saved, and how long the step took. */
  at: number;
  durationMs: number;
}

export interface CheckpointRecord {
  workflow: string;
  taskId?: string;
  checkpoints: SavedCheckpoint[];
  updatedAt: number;
}

/** Where checkpoints are kept: by workflow key. */
export interface CheckpointStore {
  load(key: string): Promise<CheckpointRecord | undefined>;
  save(key: string, record: CheckpointRecord): Promise<void>;
  delete(key: string): Promise<void>;
}

/** Checkpoints in this process's memory (states are structured clones: later changes to an object don't leak in). */
export function memoryStore(): CheckpointStore {
  const records = new Map<string, CheckpointRecord>();
  return {
    load: async (key) => (records.has(key) ? structuredClone(records.get(key)) : undefined),
    save: async (key, record) => void records.set(key, structuredClone(record)),
    delete: async (key) => void records.delete(key),
  };
}

/**
 * Checkpoints in one JSON file (`{ "version": 1, "workflows": { key: record } }`), rewritten atomically (a temporary
 * file renamed over it) after each save, writes serialised. The path is checked writable when the store is made.
 */
export function fileStore(path: string): CheckpointStore {
  if (typeof path !== 'string' || path === '')
    throw new FaultlineInputError('FAULTLINE_USAGE', 'fileStore(path): path must be a non-empty string');
  const file = checkWritable(path, 'the checkpoint file');
  let queue: Promise<unknown> = Promise.resolve();
  const read = (): Record<string, CheckpointRecord> => {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      return {};
    }
    if (text.trim() === '') return {};
    try {
      const doc = JSON.parse(text) as { version?: unknown; workflows?: Record<string, CheckpointRecord> };
      return doc.workflows ?? {};
    } catch (err) {
      throw new FaultlineInputError(
        'FAULTLINE_TRACE_MALFORMED',
        `the checkpoint file ${path} is not valid JSON: ${(err as Error).message}`,
        { cause: err },
      );
    }
  };
  const write = (all: Record<string, CheckpointRecord>): void => {
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, `${JSON.stringify({ version: 1, workflows: all })}\n`);
    renameSync(tmp, file);
  };
  const serial = <T>(fn: () => T): Promise<T> => {
    const next = queue.then(fn, fn);
    queue = next.catch(() => undefined);
    return next;
  };
  // Touch it now so an unwritable path fails at start-up, not at the first checkpoint.
  closeSync(openSync(file, 'a'));
  return {
    load: (key) => serial(() => read()[key]),
    save: (key, record) =>
      serial(() => {
        const all = read();
        all[key] = JSON.parse(JSON.stringify(record)) as CheckpointRecord;
        write(all);
      }),
    delete: (key) =>
      serial(() => {
        const all = read();
        if (!(key in all)) return;
        delete all[key];
        write(all);
      }),
  };
}

/** What a rollback would cost and save, for ARCF's criterion. */
export interface RollbackCost {
  /** ms of work since the last checkpoint: lost, and redone by resuming. */
  sinceCheckpointMs: number;
  /** ms since the workflow started. */
  elapsedMs: number;
  /** ms of work the saved checkpoints hold (not redone). */
  savedMs: number;
  /** The checkpoint the workflow would resume after. */
  checkpoint: string;
  error: unknown;
}

export interface CheckpointPolicy {
  /** `memory` (default), a file path (a JSON file store), or a store of your own. */
  store?: CheckpointStore | 'memory' | string;
  /** ARCF's cost-ratio threshold θ (default 1). */
  theta?: number;
  /** The estimated re-execution cost (default: `sinceCheckpointMs`). */
  cost?: (c: RollbackCost) => number;
  /** The workflow's remaining value (default: `elapsedMs`, what abandoning it throws away). */
  value?: (c: RollbackCost) => number;
  /** Rollbacks per workflow run (default 2). */
  maxRollbacks?: number;
  /** Which failures are severe enough to roll back (default: every error except a deadline and a usage error). */
  severe?: (err: unknown) => boolean;
  /** The store key of a workflow run (default `name:taskId`). */
  key?: (workflow: WorkflowState) => string;
  /** Keep the checkpoints of a workflow that completed (default: delete them). */
  keepOnSuccess?: boolean;
}

export interface Checkpoints extends WorkflowRecovery {
  readonly store: CheckpointStore;
}

function defaultSevere(err: unknown): boolean {
  if (err instanceof WorkflowDeadlineError) return false;
  return !(err instanceof FaultlineInputError);
}

/** A rollback target named by a verification verdict or thrown by the application. */
export class RollbackRequest extends VerificationFailedError {
  readonly rollbackTo: string;
  constructor(step: string, reason: string, rollbackTo: string) {
    super(step, reason);
    this.name = 'RollbackRequest';
    this.rollbackTo = rollbackTo;
  }
}

/**
 * The checkpoint recovery guard. `runWorkflow(name, fn, { checkpoints: checkpoints({ store: 'runs/ckpt.json' }) })`.
 */
export function checkpoints(policy: CheckpointPolicy = {}): Checkpoints {
  const theta = policy.theta ?? 1;
  const maxRollbacks = policy.maxRollbacks ?? 2;
  if (!(theta >= 0) || !Number.isFinite(theta))
    throw new FaultlineInputError(
      'FAULTLINE_USAGE',
      `checkpoints({ theta }): θ must be a finite number ≥ 0, got ${String(policy.theta)}`,
    );
  if (!Number.isInteger(maxRollbacks) || maxRollbacks < 0)
    throw new FaultlineInputError(
      'FAULTLINE_USAGE',
      `checkpoints({ maxRollbacks }): expected an integer ≥ 0, got ${String(policy.maxRollbacks)}`,
    );
  const store =
    policy.store === undefined || policy.store === 'memory'
      ? memoryStore()
      : typeof policy.store === 'string'
        ? fileStore(resolve(policy.store))
        : policy.store;
  const severe = policy.severe ?? defaultSevere;

  return {
    store,
    async run<T>(wf: WorkflowState, body: () => Promise<T>): Promise<T> {
      const key = policy.key?.(wf) ?? `${wf.name}:${wf.taskId ?? wf.span.spanContext().traceId}`;
      const loaded = await safeLoad(store, key);
      const record: CheckpointRecord = loaded ?? {
        workflow: wf.name,
        ...(wf.taskId !== undefined ? { taskId: wf.taskId } : {}),
        checkpoints: [],
        updatedAt: Date.now(),
      };
      if (loaded && loaded.checkpoints.length > 0)
        checkpointEvent(
          wf,
          loaded.checkpoints[loaded.checkpoints.length - 1]!.name,
          'resumed',
          `${loaded.checkpoints.length} checkpoint(s) from an earlier run`,
        );
      for (let rollbacks = 0; ;) {
        const session = new Session(wf, store, key, record);
        wf.session = session;
        try {
          const value = await body();
          wf.session = undefined;
          if (!policy.keepOnSuccess) await safely(() => store.delete(key));
          return value;
        } catch (err) {
          wf.session = undefined;
          const decision = decide(err, rollbacks);
          if (decision.rollback === false) {
            if (decision.reason !== undefined)
              checkpointEvent(wf, record.checkpoints.at(-1)?.name ?? '', 'no_rollback', decision.reason);
            throw err;
          }
          rollbacks++;
          if (decision.to !== undefined) record.checkpoints.splice(decision.to + 1);
          const to = record.checkpoints.at(-1)!.name;
          checkpointEvent(wf, to, 'rollback', `${describe(err)}; resuming after checkpoint ${to}`, rollbacks);
          await safely(() => store.save(key, { ...record, updatedAt: Date.now() }));
        }
      }

      function decide(
        err: unknown,
        rollbacks: number,
      ): { rollback: false; reason?: string } | { rollback: true; to?: number } {
        if (!severe(err)) return { rollback: false };
        if (wf.signal.aborted) return { rollback: false, reason: 'the workflow was aborted' };
        let upTo: number | undefined;
        if (err instanceof RollbackRequest) {
          const i = record.checkpoints.map((c) => c.name).lastIndexOf(err.rollbackTo);
          if (i >= 0) upTo = i;
        }
        const kept = upTo !== undefined ? record.checkpoints.slice(0, upTo + 1) : record.checkpoints;
        const last = kept.at(-1);
        if (!last) return { rollback: false, reason: `${describe(err)}; no checkpoint saved yet` };
        if (rollbacks >= maxRollbacks)
          return { rollback: false, reason: `${describe(err)}; ${maxRollbacks} rollback(s) already made` };
        const now = Date.now();
        const c: RollbackCost = {
          sinceCheckpointMs: Math.max(0, now - last.at),
          elapsedMs: Math.max(0, now - wf.startedAt),
          savedMs: kept.reduce((n, k) => n + k.durationMs, 0),
          checkpoint: last.name,
          error: err,
        };
        const reCost = policy.cost ? policy.cost(c) : c.sinceCheckpointMs;
        const remVal = policy.value ? policy.value(c) : c.elapsedMs;
        const deadline = wf.declaration.deadlineMs;
        if (deadline !== undefined && c.elapsedMs + reCost > deadline) {
          return {
            rollback: false,
            reason: `${describe(err)}; resuming (~${Math.round(reCost)} ms) would miss the deadline of ${deadline} ms`,
          };
        }
        if (!(reCost <= theta * remVal))
          return {
            rollback: false,
            reason: `${describe(err)}; re-execution cost ${Math.round(reCost)} > θ·value ${Math.round(theta * remVal)}`,
          };
        return upTo !== undefined ? { rollback: true, to: upTo } : { rollback: true };
      }
    },
  };
}

/** One attempt of a workflow run: restores what the record holds, saves what it adds. */
class Session implements CheckpointSession {
  /** Occurrences of each checkpoint name in this attempt (a step run in a loop saves one per pass). */
  readonly #seen = new Map<string, number>();

  constructor(
    private readonly wf: WorkflowState,
    private readonly store: CheckpointStore,
    private readonly key: string,
    private readonly record: CheckpointRecord,
  ) {}

  async checkpoint<T>(name: string, state: T | (() => T | Promise<T>), options: CheckpointOptions<T>): Promise<T> {
    const nth = (this.#seen.get(name) ?? 0) + 1;
    this.#seen.set(name, nth);
    const saved = this.record.checkpoints.filter((c) => c.name === name)[nth - 1];
    if (saved) {
      const value = ('state' in saved ? structuredClone(saved.state) : undefined) as T;
      checkpointEvent(this.wf, name, 'restored');
      checkpointDone(this.wf, name, 0);
      if (options.restore) options.restore(value);
      return value;
    }
    const started = Date.now();
    let value: T;
    try {
      value = await runStep(state, options, this.wf, name);
    } catch (err) {
      const to = (err as { rollbackTo?: unknown }).rollbackTo;
      if (err instanceof VerificationFailedError && typeof options.rollbackTo === 'string' && to === undefined)
        throw new RollbackRequest(name, err.message, options.rollbackTo);
      throw err;
    }
    const entry: SavedCheckpoint = { name, at: Date.now(), durationMs: Date.now() - started };
    const copy = value === undefined ? { ok: true as const } : cloneable(value, name);
    if (copy.ok) {
      if ('state' in copy) entry.state = copy.state;
      this.record.checkpoints.push(entry);
      this.record.updatedAt = Date.now();
      await safely(() => this.store.save(this.key, this.record));
      checkpointEvent(this.wf, name, 'saved');
    }
    checkpointDone(this.wf, name, entry.durationMs);
    return value;
  }
}

/** The state as it will be stored: a structured clone. One that cannot be copied is not saved (and said so): a
 * resumed workflow runs that step again. */
function cloneable(value: unknown, name: string): { ok: true; state: unknown } | { ok: false } {
  try {
    return { ok: true, state: structuredClone(value) };
  } catch (err) {
    log.warn(
      `checkpoint "${name}": its state cannot be copied (${(err as Error).message}); it is not saved and runs again on resume`,
    );
    return { ok: false };
  }
}

function describe(err: unknown): string {
  if (isFaultlineError(err)) return err.message;
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  return String(err);
}

async function safeLoad(store: CheckpointStore, key: string): Promise<CheckpointRecord | undefined> {
  try {
    const r = await store.load(key);
    return r && Array.isArray(r.checkpoints) ? r : undefined;
  } catch (err) {
    if (err instanceof FaultlineInputError) throw err;
    log.error(`checkpoint store: cannot load ${key} (starting without checkpoints):`, err);
    return undefined;
  }
}

/** A store that fails does not fail the workflow: its checkpoints are simply not kept. */
async function safely(fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (err) {
    log.error('checkpoint store: write failed (the workflow goes on without it):', err);
  }
}
