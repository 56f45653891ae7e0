/**
 * The handlers the span layer puts in front of the application's, one per undici handler API: undici 7's
 * (`ExchangeHandler`), the legacy one Node 20/22's fetch speaks (`LegacyExchangeHandler`), and both at once. Each
 * forwards every callback to the application first, then feeds the call's tap.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import { SPEAKS_LEGACY, toUndici7Handler, type LegacyHandler } from './handler-api';

import { isAbort, type ExchangeTap } from './response-tap';

type Handler = Dispatcher.DispatchHandler;
type Controller = Dispatcher.DispatchController;

/** The handler the layer puts in front of the application's: it forwards every callback first, then taps it. */
export interface TappingHandler {
  /** A callback reached the application's handler: falling back to a fresh call is no longer possible. */
  readonly touched: boolean;
  /** Report a failure of the call (a step threw after the application was reached). */
  fail(err: Error): void;
}

/**
 * Wraps an application handler of undici 7's handler API (Node 24's fetch; Node 20/22's when steps run, adapted).
 * Callbacks are own properties so steps may spread and override it.
 */
export class ExchangeHandler implements Handler, TappingHandler {
  touched = false;

  readonly onRequestStart: NonNullable<Handler['onRequestStart']>;
  readonly onRequestUpgrade: NonNullable<Handler['onRequestUpgrade']>;
  readonly onResponseStart: NonNullable<Handler['onResponseStart']>;
  readonly onResponseData: NonNullable<Handler['onResponseData']>;
  readonly onResponseEnd: NonNullable<Handler['onResponseEnd']>;
  readonly onResponseError: NonNullable<Handler['onResponseError']>;

  constructor(handler: Handler, tap: ExchangeTap) {
    this.onRequestStart = (controller, ctx) => {
      this.touched = true;
      return handler.onRequestStart?.(controller, ctx);
    };
    this.onRequestUpgrade = (controller, statusCode, headers, socket) => {
      this.touched = true;
      return handler.onRequestUpgrade?.(controller, statusCode, headers, socket);
    };
    this.onResponseStart = (controller, statusCode, headers, statusMessage) => {
      this.touched = true;
      tap.start(statusCode, headers as IncomingHttpHeaders);
      return handler.onResponseStart?.(controller, statusCode, headers, statusMessage);
    };
    this.onResponseData = (controller, chunk) => {
      const r = handler.onResponseData?.(controller, chunk);
      tap.data(chunk);
      return r;
    };
    this.onResponseEnd = (controller, trailers) => {
      this.touched = true;
      try {
        return handler.onResponseEnd?.(controller, trailers);
      } finally {
        tap.complete();
      }
    };
    this.onResponseError = (controller, err) => {
      this.touched = true;
      try {
        return handler.onResponseError?.(controller, err);
      } finally {
        tap.fail(err, isAbort(err));
      }
    };
  }

  fail(err: Error): void {
    this.onResponseError(null as unknown as Controller, err);
  }
}

/**
 * Wraps a legacy application handler and is itself one, for a downstream that takes legacy handlers (every undici
 * dispatcher does): with no steps, a call from Node 20/22's fetch crosses no handler adapter, and the raw response
 * headers reach the application exactly as the server sent them.
 */
export class LegacyExchangeHandler implements LegacyHandler, TappingHandler {
  touched = false;

  constructor(
    protected readonly handler: LegacyHandler,
    protected readonly tap: ExchangeTap,
  ) {}

  onConnect(abort: (err?: Error) => void, context?: unknown): void {
    this.touched = true;
    this.handler.onConnect?.(abort, context);
  }

  onResponseStarted(): void {
    this.handler.onResponseStarted?.();
  }

  onBodySent(chunkSize: number, totalBytesSent: number): void {
    this.handler.onBodySent?.(chunkSize, totalBytesSent);
  }

  onRequestSent(): void {
    this.handler.onRequestSent?.();
  }

  onUpgrade(statusCode: number, headers: Buffer[] | string[] | null, socket: unknown): void {
    this.touched = true;
    this.handler.onUpgrade?.(statusCode, headers, socket);
  }

  onHeaders(statusCode: number, headers: Buffer[], resume: () => void, statusText: string): boolean {
    this.touched = true;
    this.tap.start(statusCode, bodyHeaders(headers, statusCode));
    return this.handler.onHeaders?.(statusCode, headers, resume, statusText) ?? true;
  }

  onData(chunk: Buffer): boolean {
    const r = this.handler.onData?.(chunk) ?? true;
    this.tap.data(chunk);
    return r;
  }

  onComplete(trailers: string[] | null): void {
    this.touched = true;
    try {
      this.handler.onComplete?.(trailers);
    } finally {
      this.tap.complete();
    }
  }

  onError(err: Error): void {
    this.touched = true;
    try {
      if (!this.handler.onError) throw err;
      this.handler.onError(err);
    } finally {
      this.tap.fail(err, isAbort(err));
    }
  }

  fail(err: Error): void {
    this.onError(err);
  }
}

/**
 * A legacy application handler behind steps: it speaks both handler APIs. The steps see undici 7's (adapted on first
 * use, as ExchangeHandler over `toUndici7Handler`); a step that does not act on the call hands it on, and a legacy
 * dispatcher below (Node 20/22's) then calls its legacy methods directly, so the call crosses no adapter in either
 * direction (`toLegacyHandler` passes it as it is). The tap hears whichever API delivers the response.
 */
export class BothApisExchangeHandler extends LegacyExchangeHandler implements Handler {
  // On the prototype, not the instance: a step's copy of the handler (`{ ...handler, onResponseData }`) has only the
  // undici 7 callbacks, and must be adapted.
  get [SPEAKS_LEGACY](): boolean {
    return true;
  }

  #adapted: ExchangeHandler | undefined;

  #modern(): ExchangeHandler {
    return (this.#adapted ??= new ExchangeHandler(toUndici7Handler(this.handler as unknown as Handler), this.tap));
  }

  // As ExchangeHandler's: every callback but the data one marks the call touched.
  readonly onRequestStart: NonNullable<Handler['onRequestStart']> = (controller, ctx) => {
    this.touched = true;
    return this.#modern().onRequestStart(controller, ctx);
  };
  readonly onRequestUpgrade: NonNullable<Handler['onRequestUpgrade']> = (controller, statusCode, headers, socket) => {
    this.touched = true;
    return this.#modern().onRequestUpgrade(controller, statusCode, headers, socket);
  };
  readonly onResponseStart: NonNullable<Handler['onResponseStart']> = (
    controller,
    statusCode,
    headers,
    statusMessage,
  ) => {
    this.touched = true;
    return this.#modern().onResponseStart(controller, statusCode, headers, statusMessage);
  };
  readonly onResponseData: NonNullable<Handler['onResponseData']> = (controller, chunk) =>
    this.#modern().onResponseData(controller, chunk);
  readonly onResponseEnd: NonNullable<Handler['onResponseEnd']> = (controller, trailers) => {
    this.touched = true;
    return this.#modern().onResponseEnd(controller, trailers);
  };
  readonly onResponseError: NonNullable<Handler['onResponseError']> = (controller, err) => {
    this.touched = true;
    return this.#modern().onResponseError(controller, err);
  };

  override fail(err: Error): void {
    if (this.#adapted !== undefined) this.#adapted.fail(err);
    else super.fail(err);
  }
}

/**
 * The headers the tap needs (content-type, content-encoding, and a redirect's location), read from undici's raw
 * name/value list.
 */
export function bodyHeaders(
  raw: readonly (Buffer | string)[] | null | undefined,
  statusCode: number,
): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {};
  if (!raw) return out;
  const redirect = statusCode >= 300 && statusCode < 400;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] as Buffer | string;
    // Cheap length check first: most headers are none of them.
    if (name.length !== 12 && name.length !== 16 && !(redirect && name.length === 8)) continue;
    const key = name.toString().toLowerCase();
    if ((key === 'content-type' || key === 'content-encoding' || key === 'location') && out[key] === undefined)
      out[key] = String(raw[i + 1]);
  }
  return out;
}
