/**
 * The response side of a call: `ExchangeTap` reads what the application receives (decoded by the one bounded
 * decoder, batched so a stream is not read a chunk per event-loop turn), follows a redirect to its follow-up, and
 * ends the span with the protocol module's reading; the taps with work left, which `flushExchanges` drains before a
 * provider's flush; how an error is named (`errorTypeOf`) and told from a cancel (`isAbort`).
 */
import { SpanStatusCode } from '@opentelemetry/api';
import type { IncomingHttpHeaders } from 'node:http';
import { performance } from 'node:perf_hooks';
import { logger, safely } from '../src/diag';
import { BodyDecoder, isIdentity } from '../src/wire/decompress';
import { spanTime } from '../src/clock';
import { FollowUps, followUpKey } from './follow-ups';
import { type ResponseReader } from './internal-types';
import { headerValue, MAX_PARSE_BYTES } from './providers/response-body';
import {
  ATTR_ERROR_TYPE,
  ATTR_FL_RESPONSE_BODY_BYTES,
  ATTR_GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK,
  ATTR_HTTP_REQUEST_RESEND_COUNT,
} from './semconv';
import type { ExchangeOutcome } from './types';

import { LiveExchange, unreadRequests } from './exchange-state';
import type { GenAiInterceptorOptions } from './layer-options';

const log = logger('interceptor');

/** The most of a response's chunks held unread before they are read (the rest of the time they wait for its end). */
const READ_BATCH_BYTES = 64 * 1024;

// ------------------------------------------------------------------------------------------------ response side

export function errorTypeOf(err: unknown): string {
  if (err && typeof err === 'object') {
    const e = err as { code?: unknown; name?: unknown; cause?: { code?: unknown } };
    if (typeof e.code === 'string' && e.code) return e.code;
    if (typeof e.cause?.code === 'string' && e.cause.code) return e.cause.code;
    if (typeof e.name === 'string' && e.name && e.name !== 'Error') return e.name;
  }
  return 'Error';
}

/**
 * Whether a call's error is a cancel (recorded as `faultline.response.aborted`, not an error of the call) or a failure
 * (ERROR with its `error.type`), judged by the error alone: when the application aborts, undici reports the abort's
 * reason as the call's error, so a plain `abort()` is an AbortError (a cancel) and `AbortSignal.timeout` a
 * TimeoutError (the client's timeout), an `abort(err)` that error. A step that holds the call (an injected hang, a
 * stall, a back-off) reports the same reason through its proxy controller, which is aborted by then whatever the
 * reason: so the controller's state is not asked, and a call the application gave up on is recorded the same way
 * whether a real server or a fault held it.
 */
export function isAbort(err: unknown): boolean {
  if (err && typeof err === 'object') {
    const e = err as { name?: unknown; code?: unknown };
    return e.name === 'AbortError' || e.code === 'UND_ERR_ABORTED' || e.code === 'ABORT_ERR';
  }
  return false;
}

export type Failure = { errorType?: string; aborted?: boolean } | undefined;

/** Taps with response work still to do: drained at once by `flushExchanges`. */
const pendingTaps = new Set<ExchangeTap>();
/** Taps whose call has ended (or waits for a redirect's follow-up) and whose span has not ended yet. */
const endingTaps = new Set<ExchangeTap>();

/** For tests: how many calls the layer still holds (pending reads, ending spans), to show nothing of a call leaks. */
export function heldExchangeCount(): number {
  return pendingTaps.size + endingTaps.size + unreadRequests.size;
}

/**
 * Do now the reading deferred to after the application had its callbacks, for every call (the request bodies read at
 * their span's end, the responses), so the spans of calls that have ended do end now, and those still open have what
 * their request says: for a process about to exit (`process.exit()` runs no more timers) and before a flush. An
 * encoded body's decoder cannot be drained synchronously: see `settleExchanges`.
 */
export function flushExchanges(): void {
  for (const exchange of [...unreadRequests]) exchange.readNow();
  for (const tap of [...pendingTaps]) tap.drain();
}

/**
 * Resolves once every call that has ended has its span ended too (the reading a span waits for, after the application
 * had its answer, is done; a decoder drained; a redirect hop's wait for its follow-up over), or after `timeoutMs`.
 * Call it before flushing the SDK: a span ends a moment after the application got its answer.
 */
export async function settleExchanges(timeoutMs = 1000): Promise<void> {
  flushExchanges();
  const deadline = performance.now() + timeoutMs;
  while (endingTaps.size > 0 && performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, 1));
    flushExchanges();
  }
}

/**
 * What the span layer does with a response, whichever handler API delivers it: feed the reader (through the decoder
 * when the body is encoded), and at the end set the span's outcome, hand it to `onExchangeEnd`, end the span at the
 * time the application had its last callback, and record the metrics. None of that runs between the network and the
 * application: a callback only notes what arrived and when, and the reading runs after the application has had it
 * (setImmediate: after the microtasks and ticks in which the application takes the chunk). Every step is guarded: an
 * error of ours is logged, never thrown into the application.
 */
export class ExchangeTap {
  /** This hop had its last callback (or was abandoned): later ones are ignored. */
  #closed = false;
  #reader: ResponseReader;
  #decoder: BodyDecoder | undefined;
  /**
   * Bytes of an encoded body as they came off the wire (what faultline.response.body_bytes counts). Set iff the body
   * is encoded: it then reaches the reader only through the decoder (none of it, for a coding we cannot decode).
   */
  #wireBytes: number | undefined;
  /** When this hop answered with a redirect: the follow-up request it expects. */
  #followUp: string | undefined;
  /** When the first body byte reached the application (the time to first chunk is the app's, not the reader's). */
  #firstChunkAt: number | undefined;
  // What arrived and is not read yet.
  #start: [number, IncomingHttpHeaders] | undefined;
  #chunks: Buffer[] = [];
  /** Bytes in `#chunks`. */
  #heldBytes = 0;
  #end: { failure: Failure; err: unknown; endTime: number } | undefined;
  #scheduled = false;
  readonly #drain = (): void => this.drain();

  constructor(
    readonly exchange: LiveExchange,
    private readonly options: GenAiInterceptorOptions,
    private readonly followUps: FollowUps<ExchangeTap>,
  ) {
    this.#reader = this.#newReader();
  }

  #newReader(): ResponseReader {
    const exchange = this.exchange;
    try {
      return exchange.module.reader(exchange, exchange.capture);
    } catch (err) {
      log.error('internal error in response reader (ignored, the application is unaffected):', err);
      return NO_READER;
    }
  }

  start(statusCode: number, headers: IncomingHttpHeaders): void {
    // Known now (not at the drain): the follow-up request may be sent before the drain runs.
    if (statusCode >= 300 && statusCode < 400) {
      const { exchange } = this;
      this.#followUp = safely(
        log,
        'redirect',
        () => followUpKey(exchange.method, exchange.url, statusCode, headerValue(headers, 'location')),
        undefined,
      );
    }
    // Read with the first batch of chunks or at the end, in the same turn of the event loop (flushExchanges reads it
    // at once): nothing needs it sooner.
    this.#start = [statusCode, headers];
    pendingTaps.add(this);
  }

  /**
   * The hot path: note the chunk, read it later. A stream's chunks are read in batches (at its end, or once
   * READ_BATCH_BYTES are held): one turn of the event loop per chunk cost more than the reading it deferred, and
   * nothing before the span's end needs them read. They stay pending, so `flushExchanges` reads them at once.
   */
  data(chunk: Buffer): void {
    if (this.#closed) return;
    this.#firstChunkAt ??= performance.now();
    this.#chunks.push(chunk);
    this.#heldBytes += chunk.length;
    if (this.#heldBytes >= READ_BATCH_BYTES) this.#schedule();
    else pendingTaps.add(this);
  }

  complete(): void {
    this.#close(undefined);
  }

  fail(err: unknown, aborted: boolean): void {
    this.#close(aborted ? { aborted: true } : { errorType: errorTypeOf(err) }, aborted ? undefined : err);
  }

  /** End the span without an outcome (we are handing the call back untouched). */
  abandon(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#start = undefined;
    this.#chunks = [];
    pendingTaps.delete(this);
    endingTaps.delete(this);
    this.exchange.closed = true;
    this.exchange.dropRead();
    this.#decoder?.destroy();
    this.exchange.span.end(spanTime(performance.now()));
  }

  /** The follow-up request of this call's redirect is being sent: its response is the call's answer. */
  follow(): void {
    this.drain();
    endingTaps.delete(this);
    this.#decoder?.destroy();
    this.exchange.redirects++;
    this.#closed = false;
    this.#followUp = undefined;
    this.#wireBytes = undefined;
    this.#decoder = undefined;
    this.#firstChunkAt = undefined;
    this.#reader = this.#newReader();
  }

  #close(failure: Failure, err?: unknown): void {
    if (this.#closed) return;
    this.#closed = true;
    // The application has had its last callback: that is when the call ended, whatever we still do.
    const endTime = performance.now();
    endingTaps.add(this);
    const followUp = this.#followUp;
    if (failure === undefined && followUp !== undefined) {
      // Parked now, not at the drain: the client sends the follow-up request within a few ticks.
      this.followUps.park(followUp, this, () => {
        this.drain();
        this.#settle(undefined, undefined, endTime);
      });
      return;
    }
    this.#end = { failure, err, endTime };
    this.#schedule();
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    pendingTaps.add(this);
    setImmediate(this.#drain);
  }

  /** Read what arrived: the response start, the chunks, and at the end the outcome. */
  drain(): void {
    this.#scheduled = false;
    pendingTaps.delete(this);
    const start = this.#start;
    if (start !== undefined) {
      this.#start = undefined;
      this.#readStart(start[0], start[1]);
    }
    if (this.#chunks.length > 0) {
      const chunks = this.#chunks;
      this.#chunks = [];
      this.#heldBytes = 0;
      for (const chunk of chunks) this.#readChunk(chunk);
    }
    const end = this.#end;
    if (end !== undefined) {
      this.#end = undefined;
      this.#settle(end.failure, end.err, end.endTime);
    }
  }

  #readStart(statusCode: number, headers: IncomingHttpHeaders): void {
    try {
      let seen = headers;
      const encoding = headerValue(headers, 'content-encoding');
      if (encoding !== undefined && !isIdentity(encoding)) {
        seen = { ...headers };
        delete seen['content-encoding'];
        // One byte past what a reader parses, so it can tell the body was too big.
        this.#decoder = BodyDecoder.create(encoding, (b) => this.#read(b), { maxOutputBytes: MAX_PARSE_BYTES + 1 });
        this.#wireBytes = 0;
      }
      this.#reader.onStart(statusCode, seen);
    } catch (err) {
      log.error('internal error in response start (ignored, the application is unaffected):', err);
    }
  }

  #readChunk(chunk: Buffer): void {
    if (this.#wireBytes === undefined) return this.#read(chunk);
    this.#wireBytes += chunk.length;
    this.#decoder?.write(chunk);
  }

  #read(chunk: Buffer): void {
    try {
      this.#reader.onData(chunk);
    } catch (err) {
      log.error('internal error in response data (ignored, the application is unaffected):', err);
    }
  }

  #settle(failure: Failure, err: unknown, endTime: number): void {
    const decoder = this.#decoder;
    this.#decoder = undefined;
    if (decoder === undefined) return this.#finish(failure, err, endTime);
    // The decoder drains on zlib's thread pool; the span ends after it (the application is not waiting).
    void decoder.end().then(() => this.#finish(failure, err, endTime));
  }

  #finish(failure: Failure, err: unknown, endTime: number): void {
    const { exchange, options } = this;
    const reader = this.#reader;
    exchange.readNow();
    exchange.closed = true;
    const span = exchange.span;
    const durationMs = endTime - exchange.t0;
    if (failure === undefined) {
      try {
        reader.onEnd();
      } catch (e) {
        log.error('internal error in response end (ignored, the application is unaffected):', e);
      }
    }
    let result: ReturnType<ResponseReader['finish']> | undefined;
    try {
      result = reader.finish(exchange, failure, durationMs);
    } catch (e) {
      log.error('internal error in response finish (ignored, the application is unaffected):', e);
    }
    if (result) this.#realTimes(result);
    try {
      if (result) span.setAttributes(result.attributes);
      const resends = exchange.redirects + exchange.attempt;
      if (resends > 0) span.setAttribute(ATTR_HTTP_REQUEST_RESEND_COUNT, resends);
      if (failure?.errorType !== undefined) {
        if (!result?.attributes[ATTR_ERROR_TYPE]) span.setAttribute(ATTR_ERROR_TYPE, failure.errorType);
        if (err instanceof Error) span.recordException(err, spanTime(endTime));
        span.setStatus({ code: SpanStatusCode.ERROR, message: failure.errorType });
      } else if (result?.error !== undefined) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: result.error });
      }
    } catch (e) {
      log.error('internal error in span status (ignored, the application is unaffected):', e);
    }
    const outcome: ExchangeOutcome = result?.outcome ?? fallbackOutcome(failure, durationMs);
    // Before span.end(): online detectors record their findings as events on this span. A redirect the client did
    // not follow is no answer of a model: there is nothing to detect in it.
    const onEnd = options.onExchangeEnd;
    if (onEnd && this.#followUp === undefined) {
      try {
        onEnd(exchange, outcome);
      } catch (e) {
        log.error('internal error in onExchangeEnd (ignored, the application is unaffected):', e);
      }
    }
    try {
      span.end(spanTime(endTime));
    } catch (e) {
      log.error('internal error in span end (ignored, the application is unaffected):', e);
    }
    endingTaps.delete(this);
    if (options.metrics) {
      try {
        const head = exchange.llmHead();
        if (head) options.metrics.record(exchange.url, exchange.port, head, outcome.response);
      } catch (e) {
        log.error('internal error in metrics (ignored, the application is unaffected):', e);
      }
    }
  }

  /**
   * What the reader measured when it read, replaced by what the application saw: the wire size of an encoded body,
   * and the time its first chunk reached the application (the reader reads later).
   */
  #realTimes(result: ReturnType<ResponseReader['finish']>): void {
    const { attributes } = result;
    const response = result.outcome.response;
    if (this.#wireBytes !== undefined) {
      attributes[ATTR_FL_RESPONSE_BODY_BYTES] = this.#wireBytes;
      if (response) response.bodyBytes = this.#wireBytes;
    }
    if (this.#firstChunkAt !== undefined) {
      const ms = this.#firstChunkAt - this.exchange.t0;
      if (attributes[ATTR_GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] !== undefined)
        attributes[ATTR_GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] = ms / 1000;
      if (response?.stream?.timeToFirstChunkMs !== undefined) response.stream.timeToFirstChunkMs = ms;
    }
  }
}

/** Stands in for a reader that failed to build: the span still ends, with what the request said. */
const NO_READER: ResponseReader = {
  onStart() {},
  onData() {},
  onEnd() {},
  finish: (_exchange, failure, durationMs) => ({ attributes: {}, outcome: fallbackOutcome(failure, durationMs) }),
};

export function fallbackOutcome(failure: Failure, durationMs: number): ExchangeOutcome {
  return failure?.errorType !== undefined ? { errorType: failure.errorType, durationMs } : { durationMs };
}
