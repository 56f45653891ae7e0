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

/** Characters of one line kept at most: a longer line (no line break in 32 M characters) is dropped, not kept growing. */
const MAX_LINE_CHARS = 32 * 1024 * 1024;

export class SseParser {
  // StringDecoder: keeps a split UTF-8 sequence for the next chunk, like TextDecoder's stream mode, at a third of the cost.
  readonly #decoder = new StringDecoder('utf8');
  readonly #onEvent: (event: SseEvent) => void;
  /**
   * The start of a line still unterminated, as the pieces it arrived in: joined once, when its line break arrives.
   * Appending to one string and searching it again would flatten it on every chunk, which makes a long line cost time
   * quadratic in its length.
   */
  #carry: string[] = [];
  #carried = 0;
  /** The line being carried grew past MAX_LINE_CHARS: it is dropped when its line break arrives. */
  #overlong = false;
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
    // Only the new text is searched (the carried pieces hold no line break). Lines are found with native indexOf (LF,
    // the common case, first; CR only when the text has one) instead of a per-character loop.
    let start = 0;
    let from = 0;
    // Next CR at or after `from` (-1: none left), searched again only once passed.
    let cr = text.indexOf('\r');
    for (;;) {
      let i = text.indexOf('\n', from);
      if (cr !== -1) {
        if (cr < from) cr = text.indexOf('\r', from);
        if (cr !== -1 && (i === -1 || cr < i)) i = cr;
      }
      if (i === -1) break;
      if (this.#carried === 0 && !this.#overlong) {
        this.#line(text.slice(start, i));
      } else {
        const overlong = this.#overlong;
        this.#carry.push(text.slice(start, i));
        const line = overlong ? undefined : this.#carry.join('');
        this.#carry = [];
        this.#carried = 0;
        this.#overlong = false;
        if (line !== undefined) this.#line(line);
      }
      if (text.charCodeAt(i) === 13) {
        if (i + 1 < text.length) {
          if (text.charCodeAt(i + 1) === 10) i++;
        } else {
          this.#pendingCr = true;
        }
      }
      start = from = i + 1;
    }
    if (start < text.length && !this.#overlong) {
      const rest = start === 0 ? text : text.slice(start);
      this.#carried += rest.length;
      if (this.#carried > MAX_LINE_CHARS) {
        this.#overlong = true;
        this.#carry = [];
        this.#carried = 0;
      } else {
        this.#carry.push(rest);
      }
    }
  }

  /** End of stream: an unterminated last event is discarded, as the spec says. */
  end(): void {
    this.#carry = [];
    this.#carried = 0;
    this.#overlong = false;
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
