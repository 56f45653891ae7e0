/**
 * Incremental Server-Sent Events parser (WHATWG "event stream interpretation"), fed with exactly the chunks the
 * application receives. A chunk boundary may fall anywhere, even inside a UTF-8 sequence or between CR and LF.
 * It never holds back data from the application: it only reads copies.
 */
import { StringDecoder } from 'node:string_decoder';

export interface SseEvent {
  /** `event:` field, or 'message' when absent. */
  event: string;
  /** `data:` lines joined with '\n'. */
  data: string;
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

  constructor(onEvent: (event: SseEvent) => void) {
    this.#onEvent = onEvent;
  }

  push(chunk: Uint8Array): void {
    let text = this.#decoder.write(chunk);
    if (this.#atStart && text.length > 0) {
      // A byte order mark at the start of the stream is not part of the first field (WHATWG event stream).
      this.#atStart = false;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    if (this.#pendingCr) {
      this.#pendingCr = false;
      if (text.charCodeAt(0) === 10) text = text.slice(1);
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
      this.#line(buf.slice(start, i));
      if (buf.charCodeAt(i) === 13) {
        if (i + 1 < buf.length) {
          if (buf.charCodeAt(i + 1) === 10) i++;
        } else {
          this.#pendingCr = true;
        }
      }
      start = from = i + 1;
    }
    this.#buffer = start === 0 ? buf : buf.slice(start);
  }

  /** End of stream: an unterminated last event is discarded, as the spec says. */
  end(): void {
    this.#buffer = '';
    this.#data = undefined;
    this.#event = '';
  }

  #line(line: string): void {
    if (line === '') {
      if (this.#data !== undefined) this.#onEvent({ event: this.#event || 'message', data: this.#data });
      this.#data = undefined;
      this.#event = '';
      return;
    }
    if (line.charCodeAt(0) === 58 /* ':' comment */) return;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === 'data') this.#data = this.#data === undefined ? value : `${this.#data}\n${value}`;
    else if (field === 'event') this.#event = value;
  }
}
