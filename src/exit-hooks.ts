/**
 * Lose no data, whatever way the process ends, without changing how it ends.
 *
 *  - Normal end (`beforeExit`): flush; the loop then drains and the process exits as it would have. When our OTLP
 *    export still holds the loop EXIT_FLUSH_TIMEOUT_MS after the app's end (an endpoint that never answers, or one
 *    that keeps refusing while the exporter retries), we stop waiting: `process.exit()` with the app's exit code.
 *    Every path ends with one stderr line counting the spans the endpoint did not take and naming where they are
 *    instead: the trace file (the configured one, by default ./faultline-traces.jsonl), written synchronously.
 *  - `process.exit(n)`, an uncaught exception, an unhandled rejection: only synchronous code runs (the `exit` event).
 *    The spans still open are ended as interrupted, the batch processors hand their buffers to the exporters (the
 *    file exporter writes synchronously) and what OTLP still holds is sent from a child process the exiting one
 *    waits for (sdk.ts, exporters/exit-safe.ts), at most EXIT_FLUSH_TIMEOUT_MS. Which of the three it was comes from
 *    `uncaughtExceptionMonitor`, which observes without handling (an `uncaughtException` or `unhandledRejection`
 *    listener would keep the process alive or change what Node prints).
 *  - SIGTERM / SIGINT: when the app has its own listener, it decides what happens: we flush what has ended and leave
 *    the rest to the `exit` path if it exits. When it has none (the default is to die by the signal), we end the
 *    open spans as interrupted, flush, and re-raise the signal, so the exit status is the signal's.
 *
 * Nothing here throws into the app or sets an exit code.
 */
import { logger } from './diag';
import type { Undelivered } from './exporters/exit-safe';
import type { SdkHandle } from './sdk';

const log = logger('exit');

/** How long a signal's flush, or the exit path's OTLP send, may hold the process. */
export const EXIT_FLUSH_TIMEOUT_MS = 5000;

export interface ExitHookOptions {
  sdk: SdkHandle;
  /** A line for stderr when the process ends (the plan's summary), computed then. */
  summary?: () => string | undefined;
  /**
   * The span layer's calls whose span has not ended yet (it ends a moment after the app had its answer): `flush` ends
   * them now, synchronously; `settle` also waits for their decoders. Called before every flush below.
   */
  pending?: { flush(): void; settle(): Promise<void> };
}

/**
 * `faultline: 12 spans were not delivered to the OTLP endpoint (…); written to /x/faultline-traces.jsonl instead`:
 * what the endpoint did not take, why, and where those spans are.
 */
function lostLine(
  failed: number,
  unsent: number,
  abandoned: boolean,
  u: Undelivered,
  tracesFile: string | undefined,
): string {
  const why = [
    failed > 0 ? `${failed} refused or timed out` : '',
    unsent > 0
      ? abandoned
        ? `${unsent} unanswered ${EXIT_FLUSH_TIMEOUT_MS / 1000} s after the app's end`
        : `${unsent} not sent at exit`
      : '',
  ].filter(Boolean);
  const lost = failed + unsent;
  let where = '';
  if (tracesFile) where = `; the trace file ${tracesFile} has them`;
  else if (u.file && u.kept >= lost) where = `; written to ${u.file} instead`;
  else if (u.file && u.kept > 0) where = `; ${u.kept} of them written to ${u.file} instead`;
  else if (u.file) where = `; they could not be written to ${u.file} either`;
  return `faultline: ${lost} spans were not delivered to the OTLP endpoint (${why.join(', ')})${where}\n`;
}

export function installExitHooks({ sdk, summary, pending }: ExitHookOptions): () => void {
  /** The SDK's flush after the span layer's pending calls have ended their spans; never rejects. */
  const flush = (what: string): Promise<void> =>
    (pending ? pending.settle().catch(() => undefined) : Promise.resolve())
      .then(() => sdk.forceFlush())
      .catch((err: unknown) => log.warn(`${what} failed:`, err));
  const flushPending = (): void => {
    try {
      pending?.flush();
    } catch (err) {
      log.error("ending the pending calls' spans failed:", err);
    }
  };

  let origin: string | undefined;
  let signalled: NodeJS.Signals | undefined;
  let ended = false;

  const say = (): void => {
    try {
      const line = summary?.();
      if (line) process.stderr.write(line + '\n');
    } catch (err) {
      log.error('could not write the exit summary:', err);
    }
  };

  // beforeExit fires again when our flush made the loop alive (an export); spans ended in between are flushed on the
  // next round. A flush with nothing to send does no I/O, so the loop ends; the cap guards exporters that always send.
  let rounds = 0;
  let deadline: NodeJS.Timeout | undefined;
  let abandoned = false;
  // Unref'd: it fires only while something else holds the loop, and it acts only when that is our own export.
  const giveUp = (): void => {
    if (sdk.undelivered().pending === 0) return;
    abandoned = true;
    process.exit();
  };
  const onBeforeExit = (): void => {
    if (++rounds > 3) return;
    if (!deadline) {
      deadline = setTimeout(giveUp, EXIT_FLUSH_TIMEOUT_MS);
      deadline.unref();
    }
    void flush('flush at exit');
  };

  const onCrash = (_err: unknown, how: string): void => {
    origin = how; // 'uncaughtException' or 'unhandledRejection'
  };

  const onExit = (): void => {
    if (ended) return;
    ended = true;
    try {
      const reason = origin ?? signalled ?? 'exit';
      flushPending();
      const interrupted = sdk.endOpenSpans(reason);
      // Past the deadline the export had its time: what it still holds goes to the trace file, not sent again.
      const r = sdk.flushSync(EXIT_FLUSH_TIMEOUT_MS, !abandoned);
      if (interrupted > 0 || r.otlp)
        log.debug(`at exit (${reason}): ${interrupted} spans ended as interrupted`, r.otlp ?? '');
      const u = sdk.undelivered();
      if (u.failed + r.unsent > 0) process.stderr.write(lostLine(u.failed, r.unsent, abandoned, u, sdk.tracesFile));
    } catch (err) {
      log.error('flush at exit failed:', err);
    }
    say();
  };

  const onSignal = (signal: NodeJS.Signals): void => {
    signalled = signal;
    if (process.listenerCount(signal) > 1) {
      // The app handles it: it may keep running, so nothing is ended for it; what has ended is flushed.
      void flush(`flush on ${signal}`);
      return;
    }
    let done = false;
    const die = (): void => {
      if (done) return;
      done = true;
      ended = true;
      say();
      process.removeListener(signal, onSignal);
      process.kill(process.pid, signal);
    };
    const timer = setTimeout(die, EXIT_FLUSH_TIMEOUT_MS);
    timer.unref();
    flushPending();
    try {
      sdk.endOpenSpans(signal);
    } catch (err) {
      log.error(`ending the open spans on ${signal} failed:`, err);
    }
    void flush(`flush on ${signal}`).finally(() => {
      clearTimeout(timer);
      die();
    });
  };

  process.on('beforeExit', onBeforeExit);
  process.on('uncaughtExceptionMonitor', onCrash);
  process.on('exit', onExit);
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  return () => {
    process.removeListener('beforeExit', onBeforeExit);
    process.removeListener('uncaughtExceptionMonitor', onCrash);
    process.removeListener('exit', onExit);
    process.removeListener('SIGTERM', onSignal);
    process.removeListener('SIGINT', onSignal);
  };
}
