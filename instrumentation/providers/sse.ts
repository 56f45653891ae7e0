/**
 * Incremental Server-Sent Events parser (WHATWG "event stream interpretation"), fed with exactly the chunks the
 * application receives. A chunk boundary may fall anywhere, even inside a UTF-8 sequence or between CR and LF.
 * It never holds back data from the application: it only reads copies.
 *
 * With `onBlock`, it also hands over each block of the stream as it was received (every line up to and including
 * the blank line that ends it), whether or not it dispatched an event: the fault step cuts, stalls and garbles a
 * stream at these boundaries and passes every other block on unchanged. Without it, no raw text is kept.
 */
import { StringDecoder } from 'node:string_decoder';

export interface SseEvent {
  /** `event:` field, or 'message' when absent. */
  event: string;
  /** `data:` lines joined with '\n'. */
  data: string;
}

/** One blank-line-terminated block of the stream, as received, and the event it dispatched (none for comments). */
export interface SseBlock {
  raw: string;
  event?: SseEvent;
}

export interface SseParserOptions {
  onBlock?: (block: SseBlock) => void;
}

export class SseParser {
  // StringDecoder: keeps a split UTF-8 sequence for the next chunk, like TextDecoder's stream mode, at a third of the cost.
  readonly #decoder = new StringDecoder('utf8');
  readonly #onEvent: (event: SseEvent) => void;
  #buffer = '';
  #event = '';
  /** `data:` lines so far, joined with LF (undefined: none yet). */
  #data: string | undefined;
  /** The previous chunk ended with CR: a leading LF in the next chunk belongs to the same line break. */
  #pendingCr = false;
  #atStart = true;
  readonly #onBlock: ((block: SseBlock) => void) | undefined;
  /** With onBlock: the raw lines of the block being read. */
  #raw: string[] = [];

  constructor(onEvent: (event: SseEvent) => void, options: SseParserOptions = {}) {
    this.#onEvent = onEvent;
    this.#onBlock = options.onBlock;
  }

  push(chunk: Uint8Array): void {
    let text = this.#decoder.write(chunk);
    if (this.#atStart && text.length > 0) {
      // A byte order mark at the start of the stream is not part of the first field (WHATWG event stream).
      this.#atStart = false;
      if (text.charCodeAt(0) === 0xfeff) {
        text = text.slice(1);
        if (this.#onBlock) this.#raw.push('\ufeff');
      }
    }
    if (this.#pendingCr) {
      this.#pendingCr = false;
      if (text.charCodeAt(0) === 10) {
        text = text.slice(1);
        // The LF of a CRLF split across chunks: its line already ended, so it opens the next block's raw text.
        if (this.#onBlock) this.#raw.push('\n');
      }
    }
    // The carried-over buffer holds no line break, so only the new text is searched. Lines are found with native
    // indexOf (LF, the common case, first; CR only when the text has one) instead of a per-character loop.
    const buf = this.#buffer.length > 0 ? this.#buffer + text : text;
    let start = 0;
    let from = this.#buffer.length;
    // Next CR at or after `from` (-1: none left), searched again only once passed.
    let cr = buf.indexOf('\r', from);
    for (;;) {
      let i = buf.indexOf('\n', from);
      if (cr !== -1) {
        if (cr < from) cr = buf.indexOf('\r', from);
        if (cr !== -1 && (i === -1 || cr < i)) i = cr;
      }
      if (i === -1) break;
      const lineEnd = i;
      if (buf.charCodeAt(i) === 13) {
        if (i + 1 < buf.length) {
          if (buf.charCodeAt(i + 1) === 10) i++;
        } else {
          this.#pendingCr = true;
        }
      }
      if (this.#onBlock) this.#raw.push(buf.slice(start, i + 1));
      const event = this.#line(buf.slice(start, lineEnd));
      if (this.#onBlock && lineEnd === start) this.#block(event);
      start = from = i + 1;
    }
    this.#buffer = start === 0 ? buf : buf.slice(start);
  }

  /** End of stream: an unterminated last event is discarded, as the spec says. */
  end(): void {
    this.#buffer = '';
    this.#data = undefined;
    this.#event = '';
    this.#raw = [];
  }

  /** With onBlock: the text received since the last complete block (an unterminated last event), taken. */
  takePending(): string {
    const rest = this.#raw.join('') + this.#buffer + this.#decoder.end();
    this.#raw = [];
    this.#buffer = '';
    return rest;
  }

  #block(event: SseEvent | undefined): void {
    const raw = this.#raw.length === 1 ? (this.#raw[0] as string) : this.#raw.join('');
    this.#raw = [];
    (this.#onBlock as (block: SseBlock) => void)(event ? { raw, event } : { raw });
  }

  /** One line; a blank line dispatches the event (returned too). */
  #line(line: string): SseEvent | undefined {
    if (line === '') {
      let event: SseEvent | undefined;
      if (this.#data !== undefined) {
        event = { event: this.#event || 'message', data: this.#data };
        this.#onEvent(event);
      }
      this.#data = undefined;
      this.#event = '';
      return event;
    }
    if (line.charCodeAt(0) === 58 /* ':' comment */) return undefined;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === 'data') this.#data = this.#data === undefined ? value : `${this.#data}\n${value}`;
    else if (field === 'event') this.#event = value;
    return undefined;
  }
}
