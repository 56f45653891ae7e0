/**
 * The spans started and not yet ended, so that the exit paths can end them as interrupted instead of losing them: a
 * call in flight when the process exits, crashes or is killed politely still reaches the trace file and the OTLP
 * endpoint, marked with why it ended early. Cost per span: one Set insertion and one deletion.
 */
import { SpanStatusCode, type Context } from '@opentelemetry/api';
import type { ReadableSpan, Span, SpanProcessor } from '@opentelemetry/sdk-trace-base';

/** Why a span was ended for the process: `exit`, `uncaughtException`, `unhandledRejection`, `SIGTERM`, `SIGINT`. */
export const ATTR_FL_INTERRUPTED = 'faultline.interrupted' as const;

export class OpenSpansProcessor implements SpanProcessor {
  readonly #open = new Set<Span>();

  onStart(span: Span, _parentContext: Context): void {
    this.#open.add(span);
  }

  onEnd(span: ReadableSpan): void {
    this.#open.delete(span as Span);
  }

  get size(): number {
    return this.#open.size;
  }

  /** End every open span now, as interrupted by `reason` (status ERROR, `faultline.interrupted`). Never throws. */
  endAll(reason: string): number {
    const spans = [...this.#open];
    this.#open.clear();
    let ended = 0;
    for (const span of spans) {
      try {
        if (!span.isRecording()) continue;
        span.setAttribute(ATTR_FL_INTERRUPTED, reason);
        span.setStatus({
          code: SpanStatusCode.ERROR,
          message: `interrupted: the process ended (${reason}) before the span did`,
        });
        span.end();
        ended++;
      } catch {
        // a span that cannot be ended is one we could not have saved anyway
      }
    }
    return ended;
  }

  forceFlush(): Promise<void> {
    return Promise.resolve();
  }

  shutdown(): Promise<void> {
    this.#open.clear();
    return Promise.resolve();
  }
}
