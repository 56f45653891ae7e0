/**
 * The state of one recognised call (`LiveExchange`, the Exchange the steps and protocol modules see): its span, its
 * request as far as read (a streamed body's copy completes it later), its notes; and the calls whose request body is
 * still to be read at their span's end.
 */
import { type Context, type Span } from '@opentelemetry/api';
import { parseJsonBody } from './json-body';
import { type LlmRequestHead, type ProtocolModule, type ProtocolStart } from './internal-types';
import { type Match } from './recognition';
import type { AgentMessage, Exchange, LlmRequestSummary, Protocol } from './types';

/**
 * The Exchange of one call. `llmRequest` (messages in semconv shape) is built on first read, and `notes` on first
 * use: most calls with no steps and content capture off never touch either. For a streamed request body the request
 * fields fill in once the body has flowed past (`bodyRead`).
 */
export class LiveExchange implements Exchange {
  readonly protocol: Protocol;
  readonly url: URL;
  readonly method: string;
  attempt = 0;
  /** Redirect hops followed within this call. */
  redirects = 0;
  /** The span has ended (or is about to): nothing more is set on it. */
  closed = false;
  #notes: Map<string, unknown> | undefined;
  #start: ProtocolStart;
  #body: Buffer;
  #request: unknown;
  #complete: boolean;

  constructor(
    readonly module: ProtocolModule,
    readonly span: Span,
    readonly context: Context,
    /** The context the call was made in. */
    readonly parent: Context,
    start: ProtocolStart,
    private readonly match: Match,
    body: Buffer | undefined,
    request: unknown,
    readonly t0: number,
    readonly capture: boolean,
  ) {
    this.protocol = module.protocol;
    this.url = match.url;
    this.method = match.method;
    this.#start = start;
    this.#body = body ?? EMPTY;
    this.#request = request;
    this.#complete = body !== undefined;
  }

  get operation(): string {
    return this.#start.operation;
  }

  get provider(): string {
    return this.#start.provider;
  }

  get stream(): boolean {
    return this.#start.stream;
  }

  get message(): AgentMessage | undefined {
    return this.#start.message;
  }

  get requestBody(): Buffer {
    return this.#body;
  }

  get request(): unknown {
    return this.#request;
  }

  get llmRequest(): LlmRequestSummary | undefined {
    return this.#start.llmRequest;
  }

  /** The whole request body is known (at hand from the start, or copied as it flowed). */
  get requestBodyComplete(): boolean {
    return this.#complete;
  }

  get rewriteBody(): ProtocolStart['rewriteBody'] {
    return this.#start.rewriteBody;
  }

  /** What the metrics need, without building the whole request summary. */
  llmHead(): LlmRequestHead | undefined {
    return this.#start.llmHead ?? this.#start.llmRequest;
  }

  get notes(): Map<string, unknown> {
    return (this.#notes ??= new Map());
  }

  /** The request's declared length, when it has one. */
  get contentLength(): string | undefined {
    return this.match.headers['content-length'];
  }

  get port(): number {
    return this.match.port;
  }

  #laterRead: (() => void) | undefined;

  /**
   * Read the request body at the span's end, or when flushExchanges asks (a process about to exit ends the spans
   * still open as they are): nothing else reads what the body says before (no step runs on a call whose body is read
   * late), so a turn of the event loop of its own per call bought nothing.
   */
  readLater(read: () => void): void {
    this.#laterRead = read;
    unreadRequests.add(this);
  }

  /** The read `readLater` put off, now (the span is ending). */
  readNow(): void {
    const read = this.#laterRead;
    if (read === undefined) return;
    this.dropRead();
    read();
  }

  /** The span ends without its request read (the call is handed back untouched). */
  dropRead(): void {
    this.#laterRead = undefined;
    unreadRequests.delete(this);
  }

  /** A streamed request body has flowed past in full: complete the span's start from it. */
  bodyRead(body: Buffer): void {
    if (this.closed) return;
    this.#body = body;
    this.#complete = true;
    this.#request = parsed(body);
    const start = this.module.start(this.url, this.#request, this.match.headers, this.capture);
    if (start === undefined) return;
    this.#start = start;
    this.span.updateName(start.name);
    this.span.setAttributes(start.attributes);
  }
}

const EMPTY = Buffer.alloc(0);

export function rewrite(exchange: LiveExchange): Buffer | undefined {
  const sc = exchange.span.spanContext();
  const traceparent = `00-${sc.traceId}-${sc.spanId}-${sc.traceFlags.toString(16).padStart(2, '0')}`;
  return exchange.rewriteBody?.(traceparent, sc.traceState?.serialize());
}

/** Calls whose request body is read at their span's end (`readLater`): read at once by `flushExchanges`. */
export const unreadRequests = new Set<LiveExchange>();

/** The request body's JSON value, or undefined when it is empty or not JSON. */
export function parsed(buf: Buffer): unknown {
  if (buf.length === 0) return undefined;
  try {
    return parseJsonBody(buf);
  } catch {
    return undefined;
  }
}
