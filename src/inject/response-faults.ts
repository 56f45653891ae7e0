/**
 * The response side of the fault step, in each call's own wire format:
 *  - stream faults act event by event on SSE (any LLM API, A2A), Ollama's NDJSON and Gemini's JSON-array streams,
 *    and on whole frames of Bedrock's AWS event-stream (a garbled frame is re-encoded with valid CRCs), read with the
 *    span layer's readers (providers/sse.ts, providers/json-stream.ts, providers/eventstream.ts); the stream is never
 *    buffered, and every event before and after the fault passes as it was;
 *  - content faults (AgentChaos) rewrite a JSON answer through its chat-completion view (bodies.ts).
 * A compressed body is decoded with the one decompressor (instrumentation/decompress.ts: streaming, bounded,
 * asynchronous) and reaches the application decoded, its Content-Encoding removed; a coding we cannot decode, or a
 * JSON body too big to hold, makes the fault not applicable and the body passes untouched. Every path ends: the
 * application gets the planned fault, or the error it would get anyway (a body that does not decode).
 */
import type { Dispatcher } from 'undici';
import { BodyDecoder, canDecode, decodeAll, isIdentity } from '../wire/decompress';
import type { ForwardingController } from '../../instrumentation/forwarding-controller';
import { headerValue } from '../../instrumentation/providers/response-body';
import { JsonStreamSplitter } from '../wire/json-stream';
import { SseParser } from '../wire/sse';
import type { Exchange, Protocol } from '../../instrumentation/types';
import { applySpecs } from '../catalog/agentchaos/spec';
import { EventStreamParser } from '../../instrumentation/providers/eventstream';
import {
  eventStreamEvent,
  notApplicableReason,
  streamEvent,
  streamFraming,
  type AnyStreamFraming,
} from '../catalog/formats';
import type { StreamEvent, StreamTransform } from '../catalog/types';
import { logger, safely } from '../diag';
import type { CompiledRule } from '../plan/select';
import { fromChatView, toChatView } from './bodies';
import type { FaultEngine, Hit, TaskState } from './engine';
import { abortError, after } from './delayed';

const log = logger('inject');

type Handler = Dispatcher.DispatchHandler;
type Controller = Dispatcher.DispatchController;
type Headers = Record<string, string | string[] | undefined>;

/** A JSON answer a content fault buffers is bounded (as the span layer's parse bound): a bigger one passes untouched. */
const MAX_BUFFER_BYTES = 32 * 1024 * 1024;

/** What the response side needs of its faulted call. */
export interface FaultedResponseCall {
  readonly h: Handler;
  readonly controller: ForwardingController;
  readonly wasOpened: boolean;
  readonly exchange: Exchange;
  readonly taskState: TaskState;
  readonly faultEngine: FaultEngine;
  recordFireFor(
    hit: Hit,
    noop: boolean,
    original?: string | Buffer,
    delivered?: string | Buffer,
    detail?: string,
    delayMs?: number,
  ): void;
  notApplicable(rule: CompiledRule): void;
}

/** Response headers without Content-Encoding and Content-Length: the body the application gets is decoded or rewritten. */
function plainHeaders(headers: Headers, length?: number): Headers {
  const out: Headers = {};
  for (const [k, v] of Object.entries(headers)) {
    const key = k.toLowerCase();
    if (key === 'content-length' || key === 'content-encoding' || key === 'transfer-encoding') continue;
    out[k] = v;
  }
  if (length !== undefined) out['content-length'] = String(length);
  return out;
}

function without(headers: Headers, name: string): Headers {
  if (!Object.keys(headers).some((k) => k.toLowerCase() === name)) return headers;
  return Object.fromEntries(Object.entries(headers).filter(([k]) => k.toLowerCase() !== name));
}

export class ResponseFaults implements Handler {
  private mode: 'pass' | 'buffer' | 'stream' = 'pass';
  private status = 0;
  private headers: Headers = {};
  private statusMessage?: string;
  private chunks: Buffer[] = [];
  private buffered = 0;
  private stream?: StreamFaults;
  finished = false;

  constructor(
    readonly call: FaultedResponseCall,
    private readonly streamHits: Hit[],
    private readonly contentHits: Hit[],
  ) {}

  get ctl(): ForwardingController {
    return this.call.controller;
  }

  onRequestStart(controller: Controller, context: unknown): void {
    this.ctl.attach(controller);
    if (!this.call.wasOpened) this.call.h.onRequestStart?.(this.ctl, context);
  }

  onRequestUpgrade(_controller: Controller, statusCode: number, headers: Headers, socket: unknown): void {
    (this.call.h.onRequestUpgrade as ((...a: unknown[]) => void) | undefined)?.(this.ctl, statusCode, headers, socket);
  }

  onResponseStart(_controller: Controller, status: number, headers: Headers, statusMessage?: string): void {
    const type = (headerValue(headers, 'content-type') ?? '').toLowerCase();
    const encoding = headerValue(headers, 'content-encoding');
    const ok = status >= 200 && status < 300;
    const protocol = this.call.exchange.protocol;
    let forward = headers;
    if (this.streamHits.length > 0) {
      const framing = ok ? streamFraming(protocol, type) : undefined;
      if (framing === undefined || !canDecode(encoding)) {
        for (const hit of this.streamHits) this.call.notApplicable(hit.rule);
      } else {
        const transforms: Array<{ hit: Hit; t: StreamTransform }> = [];
        for (const hit of this.streamHits) {
          const fault = hit.rule.fault;
          if (fault.mode !== 'stream' || notApplicableReason(fault, protocol) !== undefined)
            this.call.notApplicable(hit.rule);
          else if (this.call.faultEngine.fire(this.call.taskState, hit.rule))
            transforms.push({ hit, t: fault.transform(hit.rule.params) });
        }
        if (transforms.length > 0) {
          this.mode = 'stream';
          this.stream = new StreamFaults(this, protocol, framing, transforms, encoding);
          // The faulted body is decoded and no longer as long as the server said.
          forward = isIdentity(encoding) ? without(headers, 'content-length') : plainHeaders(headers);
        }
      }
    }
    if (this.contentHits.length > 0) {
      if (ok && type.includes('json') && this.mode === 'pass' && canDecode(encoding)) {
        this.mode = 'buffer';
        this.status = status;
        this.headers = headers;
        this.statusMessage = statusMessage;
        return;
      }
      for (const hit of this.contentHits) this.call.notApplicable(hit.rule);
    }
    this.call.h.onResponseStart?.(this.ctl, status, forward as never, statusMessage);
  }

  onResponseData(_controller: Controller, chunk: Buffer): void {
    if (this.finished) return;
    if (this.mode === 'buffer') {
      // Our own copy: a step upstream may reuse its buffers.
      this.chunks.push(Buffer.from(chunk));
      this.buffered += chunk.length;
      if (this.buffered > MAX_BUFFER_BYTES) this.giveUpBuffering();
    } else if (this.mode === 'stream') {
      (this.stream as StreamFaults).write(chunk);
    } else {
      this.call.h.onResponseData?.(this.ctl, chunk);
    }
  }

  onResponseEnd(_controller: Controller, trailers: Headers): void {
    if (this.finished) return;
    if (this.mode === 'buffer') {
      void this.deliverBuffered(trailers).catch((err: unknown) => this.fail(err as Error));
      return;
    }
    if (this.mode === 'stream') return (this.stream as StreamFaults).end(trailers);
    this.finished = true;
    this.call.h.onResponseEnd?.(this.ctl, trailers as never);
  }

  onResponseError(_controller: Controller, err: Error): void {
    this.fail(err);
  }

  /** End the call with an error (the upstream's, or the body's own), once. */
  fail(err: Error): void {
    if (this.finished) return;
    this.finished = true;
    this.stream?.stop();
    this.call.h.onResponseError?.(this.ctl, err);
  }

  // ------------------------------------------------------------------ content (AgentChaos)

  /** Too big to hold: the content faults do not apply, and the body goes on as it came. */
  private giveUpBuffering(): void {
    for (const hit of this.contentHits) this.call.notApplicable(hit.rule);
    this.mode = 'pass';
    this.call.h.onResponseStart?.(this.ctl, this.status, this.headers as never, this.statusMessage);
    for (const c of this.chunks.splice(0)) if (!this.ctl.aborted) this.call.h.onResponseData?.(this.ctl, c);
  }

  private async deliverBuffered(trailers: Headers): Promise<void> {
    const raw = Buffer.concat(this.chunks);
    this.chunks = [];
    const encoding = headerValue(this.headers, 'content-encoding');
    let plain: Buffer | undefined = raw;
    if (!isIdentity(encoding)) {
      const decoded = await decodeAll(raw, encoding, { maxOutputBytes: MAX_BUFFER_BYTES });
      plain = decoded.error || decoded.overflow ? undefined : decoded.body;
    }
    const result =
      plain === undefined
        ? this.notApplicable()
        : safely(log, 'content fault', () => this.applyContent(plain), undefined);
    const body = result?.body ?? raw;
    const headers = result?.body ? plainHeaders(this.headers, body.length) : this.headers;
    const deliver = (): void => {
      if (this.ctl.aborted || this.finished) return;
      this.finished = true;
      this.call.h.onResponseStart?.(this.ctl, this.status, headers as never, this.statusMessage);
      if (body.length > 0) this.call.h.onResponseData?.(this.ctl, body);
      this.call.h.onResponseEnd?.(this.ctl, trailers as never);
    };
    if (result?.delayMs) after(result.delayMs, this.ctl, this.call.h, deliver);
    else deliver();
  }

  private notApplicable(): undefined {
    for (const hit of this.contentHits) this.call.notApplicable(hit.rule);
    return undefined;
  }

  private applyContent(plain: Buffer): { body?: Buffer; delayMs: number } | undefined {
    const ex = this.call.exchange;
    const task = this.call.taskState;
    let parsed: unknown;
    try {
      parsed = JSON.parse(plain.toString('utf8'));
    } catch {
      return this.notApplicable();
    }
    const view = toChatView(ex.protocol, parsed);
    if (view === undefined) return this.notApplicable();
    let current: unknown = view;
    let delayMs = 0;
    for (const hit of this.contentHits) {
      if (hit.rule.fault.mode !== 'content') continue;
      const before = JSON.stringify(current);
      const r = applySpecs(hit.rule.specs, current, task.rules[hit.rule.index].specs, {
        rng: task.rng,
        lastResponse: task.lastResponse,
      });
      if (r.fired.length === 0) continue;
      current = r.body as object;
      delayMs += r.delayMs;
      const afterText = JSON.stringify(current);
      const noop = afterText === before && r.delayMs === 0;
      this.call.recordFireFor(
        hit,
        noop,
        before,
        afterText,
        r.fired.map((i) => hit.rule.specs[i].action).join('+'),
        r.delayMs || undefined,
      );
    }
    const changed = JSON.stringify(current) !== JSON.stringify(view);
    task.lastResponse = current;
    if (!changed) return { delayMs };
    return { body: Buffer.from(JSON.stringify(fromChatView(ex.protocol, parsed, current))), delayMs };
  }
}

/**
 * Stream faults on one response: bytes (decoded when the body is compressed) → the format's events → the faults →
 * the application. A stall pauses the real response; what arrives meanwhile waits, in order.
 */
class StreamFaults {
  private readonly decoder: BodyDecoder | undefined;
  private readonly push: (bytes: Buffer) => void;
  private readonly takePending: () => string;
  /** How an event's text is its bytes: utf8, or latin1 for binary frames (one character a byte). */
  private readonly encoding: BufferEncoding;
  private dataIndex = 0;
  private stalled = false;
  private recorded = false;
  /** An internal error of ours: the rest of the stream passes as it is. */
  private broken = false;
  /** Events read in the chunk that stalled, after the stalled one (emitted, in order, on resume). */
  private heldEvents: string[] = [];
  /** Bytes that arrived during a stall. */
  private held: Buffer[] = [];
  private pendingEnd?: Headers;
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly rf: ResponseFaults,
    protocol: Protocol,
    framing: AnyStreamFraming,
    private readonly transforms: Array<{ hit: Hit; t: StreamTransform }>,
    encoding: string | undefined,
  ) {
    this.decoder = BodyDecoder.create(encoding, (b) => this.plain(b));
    this.encoding = framing === 'eventstream' ? 'latin1' : 'utf8';
    if (framing === 'eventstream') {
      // Whole frames only: a frame with a wrong CRC passes as it came; after a broken prelude, the rest of the bytes.
      const parser = new EventStreamParser(
        (m, frame) => this.event(eventStreamEvent(protocol, frame, m)),
        (frame) => this.event(eventStreamEvent(protocol, frame, undefined)),
      );
      this.push = (b) => {
        parser.push(b);
        if (parser.broken && !this.broken) {
          this.broken = true;
          this.emit(parser.takePending().toString('latin1'));
        }
      };
      this.takePending = () => parser.takePending().toString('latin1');
    } else if (framing === 'sse') {
      const parser = new SseParser(() => {}, {
        onBlock: (b) => this.event(streamEvent(protocol, 'sse', b.raw, b.event?.data, b.event?.event)),
      });
      this.push = (b) => parser.push(b);
      this.takePending = () => parser.takePending();
    } else {
      const splitter = new JsonStreamSplitter(framing, (u) =>
        this.event(streamEvent(protocol, framing, u.raw.toString('utf8'), u.json)),
      );
      this.push = (b) => splitter.push(b);
      this.takePending = () => splitter.takePending().toString('utf8');
    }
  }

  private get call(): FaultedResponseCall {
    return this.rf.call;
  }

  private get ctl(): ForwardingController {
    return this.rf.ctl;
  }

  /** Bytes from the network, as they arrive. */
  write(chunk: Buffer): void {
    if (this.decoder) this.decoder.write(chunk);
    else this.plain(chunk);
  }

  /** The network body ended: once the decoder delivered all of it, end the application's body. */
  end(trailers: Headers): void {
    if (!this.decoder) return this.finishEnd(trailers);
    const decoder = this.decoder;
    void decoder.end().then(() => {
      // fetch reports a body that does not decode as `TypeError: terminated` caused by the zlib error: so does this.
      if (decoder.error) this.rf.fail(decoder.error);
      else this.finishEnd(trailers);
    });
  }

  /** The call ended otherwise (an error, an abort, a cut): stop decoding and record what the faults did. */
  stop(): void {
    this.decoder?.destroy();
    this.clearTimer();
    this.record();
  }

  private plain(bytes: Buffer): void {
    if (this.rf.finished) return;
    if (this.stalled) {
      this.held.push(Buffer.from(bytes));
      return;
    }
    if (this.broken) {
      this.emit(bytes.toString(this.encoding));
      return;
    }
    this.push(bytes);
  }

  private emit(text: string): void {
    if (text.length > 0 && !this.rf.finished && !this.ctl.aborted)
      this.call.h.onResponseData?.(this.ctl, Buffer.from(text, this.encoding));
  }

  private event(e: StreamEvent): void {
    if (this.rf.finished) return;
    if (this.stalled) {
      this.heldEvents.push(e.raw);
      return;
    }
    if (this.broken) return this.emit(e.raw);
    try {
      this.handle(e);
    } catch (err) {
      // Our bug, not the app's: stop faulting this stream and pass the rest through.
      log.error('internal error in a stream fault (the rest of the stream passes through):', err);
      this.broken = true;
      this.emit(e.raw);
    }
  }

  private handle(e: StreamEvent): void {
    let events: StreamEvent[] = [e];
    let action: { then: 'end' | 'reset' | 'stall'; stallMs?: number } | undefined;
    for (const { t } of this.transforms) {
      const next: StreamEvent[] = [];
      for (const ev of events) {
        const r = t.onEvent(ev, this.dataIndex);
        // A later fault sees what an earlier one emitted: the same event, or its replacement as plain text.
        for (const raw of r.emit)
          next.push(raw === ev.raw ? ev : { raw, isData: ev.isData, isTerminal: false, corrupt: () => raw });
        if ('then' in r && !action) action = { then: r.then, stallMs: r.stallMs };
      }
      events = next;
    }
    if (e.isData) this.dataIndex++;
    const texts = events.map((ev) => ev.raw);
    if (action?.then === 'stall') {
      // The stalled event and everything after it wait for the resume (or the application's abort).
      this.heldEvents = texts;
      return this.stall(action.stallMs);
    }
    for (const t of texts) this.emit(t);
    if (!action) return;
    this.rf.finished = true;
    this.stop();
    const real = this.ctl.real;
    if (action.then === 'end') this.call.h.onResponseEnd?.(this.ctl, {});
    else
      this.call.h.onResponseError?.(
        this.ctl,
        Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }),
      );
    // Stop reading the rest of the real response.
    safely(log, 'abort after cut', () => real?.abort(abortError()), undefined);
  }

  private stall(stallMs: number | undefined): void {
    this.stalled = true;
    this.ctl.real?.pause();
    const prev = this.ctl.onAbort;
    this.ctl.onAbort = (reason) => {
      this.clearTimer(); // the app gave up: the resume timer must not hold its process
      prev?.(reason);
      this.rf.fail(reason);
    };
    if (stallMs === undefined) {
      // Held until the application gives up; the real response may be over already, so nothing else keeps it alive.
      this.ctl.hold();
      return;
    }
    this.timer = setTimeout(() => this.resume(), stallMs);
  }

  private resume(): void {
    if (this.rf.finished) return;
    this.stalled = false;
    for (const t of this.heldEvents.splice(0)) this.emit(t);
    for (const b of this.held.splice(0)) {
      this.plain(b);
      if (this.stalled) return; // (a second stall cannot happen: a stall fires once)
    }
    if (this.pendingEnd !== undefined) this.finishEnd(this.pendingEnd);
    else this.ctl.real?.resume();
  }

  private finishEnd(trailers: Headers): void {
    if (this.rf.finished) return;
    if (this.stalled) {
      this.pendingEnd = trailers;
      return;
    }
    // An unterminated last event (the network body ended inside it) is passed on as it came.
    this.emit(this.takePending());
    this.rf.finished = true;
    this.stop();
    this.call.h.onResponseEnd?.(this.ctl, trailers as never);
  }

  private record(): void {
    if (this.recorded) return;
    this.recorded = true;
    for (const { hit, t } of this.transforms)
      this.call.recordFireFor(hit, !t.changed(), undefined, undefined, `after ${this.dataIndex} data events`);
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
