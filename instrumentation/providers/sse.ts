/**
 * Incremental Server-Sent Events parser (WHATWG "event stream interpretation"), fed with exactly the chunks the
 * application receives. A chunk boundary may fall anywhere, even inside a UTF-8 sequence or between CR and LF.
 * It never holds back data from the application: it only reads copies.
 */

export interface SseEvent {
  /** `event:` field, or 'message' when absent. */
  event: string;
  /** `data:` lines joined with '\n'. */
  data: string;
}

export class SseParser {
  readonly #decoder = new TextDecoder('utf-8');
  readonly #onEvent: (event: SseEvent) => void;
  #buffer = '';
  #event = '';
  #data: string[] = [];
  /** The previous chunk ended with CR: a leading LF in the next chunk belongs to the same line break. */
  #pendingCr = false;

  constructor(onEvent: (event: SseEvent) => void) {
    this.#onEvent = onEvent;
  }

  push(chunk: Uint8Array): void {
    let text = this.#decoder.decode(chunk, { stream: true });
    if (this.#pendingCr && text.startsWith('\n')) text = text.slice(1);
    this.#pendingCr = false;
    let start = 0;
    const buf = this.#buffer + text;
    const offset = this.#buffer.length;
    this.#buffer = '';
    // Scan only the new text for line breaks (the carried-over buffer has none).
    for (let i = offset; i < buf.length; i++) {
      const c = buf.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      this.#line(buf.slice(start, i));
      if (c === 13) {
        if (i + 1 < buf.length) {
          if (buf.charCodeAt(i + 1) === 10) i++;
        } else {
          this.#pendingCr = true;
        }
      }
      start = i + 1;
    }
    this.#buffer = buf.slice(start);
  }

  /** End of stream: an unterminated last event is discarded, as the spec says. */
  end(): void {
    this.#buffer = '';
    this.#data = [];
    this.#event = '';
  }

  #line(line: string): void {
    if (line === '') {
      if (this.#data.length > 0) {
        this.#onEvent({ event: this.#event || 'message', data: this.#data.join('\n') });
      }
      this.#data = [];
      this.#event = '';
      return;
    }
    if (line.charCodeAt(0) === 58 /* ':' comment */) return;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === 'data') this.#data.push(value);
    else if (field === 'event') this.#event = value;
  }
}
