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
  readonly #onBlock: ((block: SseBlock) => void) | undefined;
  /** With onBlock: the raw lines (terminators included) of the block being read, before the carried line. */
  #raw: string[] = [];

  constructor(onEvent: (event: SseEvent) => void, options: SseParserOptions = {}) {
    this.#onEvent = onEvent;
    this.#onBlock = options.onBlock;
  }

  push(chunk: Uint8Array): void {
    let text = this.#decoder.write(chunk);
    const blocks = this.#onBlock !== undefined;
    if (this.#atStart && text.length > 0) {
      // A byte order mark at the start of the stream is not part of the first field (WHATWG event stream).
      this.#atStart = false;
      if (text.charCodeAt(0) === 0xfeff) {
        text = text.slice(1);
        if (blocks) this.#raw.push('\ufeff');
      }
    }
    if (this.#pendingCr) {
      this.#pendingCr = false;
      if (text.charCodeAt(0) === 10) {
        text = text.slice(1);
        // The LF of a CRLF split across chunks: its line already ended, so it opens the next block's raw text.
        if (blocks) this.#raw.push('\n');
      }
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
      const lineEnd = i;
      if (text.charCodeAt(i) === 13) {
        if (i + 1 < text.length) {
          if (text.charCodeAt(i + 1) === 10) i++;
        } else {
          this.#pendingCr = true;
        }
      }
      let event: SseEvent | undefined;
      let blank = false;
      if (this.#carried === 0 && !this.#overlong) {
        blank = lineEnd === start;
        if (blocks) this.#raw.push(text.slice(start, i + 1));
        event = this.#line(text.slice(start, lineEnd));
      } else {
        const overlong = this.#overlong;
        this.#carry.push(text.slice(start, lineEnd));
        const line = overlong ? undefined : this.#carry.join('');
        if (blocks) {
          if (overlong) this.#passRaw(text.slice(start, i + 1));
          else this.#raw.push(`${line as string}${text.slice(lineEnd, i + 1)}`);
        }
        this.#carry = [];
        this.#carried = 0;
        this.#overlong = false;
        if (line !== undefined) event = this.#line(line);
      }
      if (blocks && blank) this.#block(event);
      start = from = i + 1;
    }
    if (start < text.length) {
      const rest = start === 0 ? text : text.slice(start);
      if (this.#overlong) {
        if (blocks) this.#passRaw(rest);
        return;
      }
      this.#carried += rest.length;
      if (this.#carried > MAX_LINE_CHARS) {
        this.#overlong = true;
        // With onBlock the held text goes on as it came (unparsed), so nothing is lost and nothing grows.
        if (blocks) this.#passRaw(this.#carry.join('') + rest);
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
    this.#raw = [];
  }

  /** With onBlock: the text received since the last complete block (an unterminated last event), taken. */
  takePending(): string {
    const rest = this.#raw.join('') + this.#carry.join('') + this.#decoder.end();
    this.#raw = [];
    this.#carry = [];
    this.#carried = 0;
    return rest;
  }

  #block(event: SseEvent | undefined): void {
    const raw = this.#raw.length === 1 ? (this.#raw[0] as string) : this.#raw.join('');
    this.#raw = [];
    (this.#onBlock as (block: SseBlock) => void)(event ? { raw, event } : { raw });
  }

  /** With onBlock, on an overlong line: the block so far and `text` handed over as they are, as a block without event. */
  #passRaw(text: string): void {
    const raw = this.#raw.length > 0 ? this.#raw.join('') + text : text;
    this.#raw = [];
    if (raw.length > 0) (this.#onBlock as (block: SseBlock) => void)({ raw });
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
