/**
 * undici speaks two handler APIs: the legacy one (onConnect, onHeaders, onData, onComplete, onError), which Node
 * 20/22's fetch (bundled undici 6) hands its dispatcher, and undici 7's (onRequestStart, onResponseStart, …), which
 * our steps are written in. undici has no public export for its adapters between the two; the package has no
 * `exports` map, so the files are reachable. Each is resolved once: a require() per call costs a module-path lookup
 * on every request.
 */
import type { Dispatcher } from 'undici';

type Handler = Dispatcher.DispatchHandler;

/** undici's legacy handler API. */
export interface LegacyHandler {
  onConnect?(abort: (err?: Error) => void, context?: unknown): void;
  onError?(err: Error): void;
  onUpgrade?(statusCode: number, headers: Buffer[] | string[] | null, socket: unknown): void;
  onResponseStarted?(): void;
  onHeaders?(statusCode: number, headers: Buffer[], resume: () => void, statusText: string): boolean;
  onData?(chunk: Buffer): boolean;
  onComplete?(trailers: string[] | null): void;
  onBodySent?(chunkSize: number, totalBytesSent: number): void;
  onRequestSent?(): void;
}

export function isLegacyHandler(handler: object): boolean {
  return (
    typeof (handler as Handler).onRequestStart !== 'function' &&
    typeof (handler as LegacyHandler).onHeaders === 'function'
  );
}

let WrapHandler: { wrap(h: unknown): Handler } | undefined;
let UnwrapHandler: { unwrap(h: unknown): Handler } | undefined;

/** A legacy handler seen through undici 7's API (what `Dispatcher#compose` applies); others as they are. */
export function toUndici7Handler(handler: Handler): Handler {
  WrapHandler ??= require('undici/lib/handler/wrap-handler') as { wrap(h: unknown): Handler };
  return WrapHandler.wrap(handler);
}

/** Marks a handler that speaks both APIs in full: a legacy dispatcher may call its legacy methods directly. */
export const SPEAKS_LEGACY = Symbol('faultline.speaksLegacy');

/** An undici 7 handler seen through the legacy API (for undici 6's dispatchers); legacy ones as they are. */
export function toLegacyHandler(handler: Handler): Handler {
  if ((handler as { [SPEAKS_LEGACY]?: boolean })[SPEAKS_LEGACY] === true) return handler;
  UnwrapHandler ??= require('undici/lib/handler/unwrap-handler') as { unwrap(h: unknown): Handler };
  return UnwrapHandler.unwrap(handler);
}
