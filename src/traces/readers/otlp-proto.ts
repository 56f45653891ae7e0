/**
 * OTLP protobuf: a binary ExportTraceServiceRequest (what @opentelemetry/exporter-trace-otlp-proto POSTs), or the
 * OTel Collector file exporter's `format: proto` stream, where each message is preceded by its length as a 4-byte
 * big-endian unsigned integer. A small wire-format decoder (wire types 0, 1, 2, 5) for the trace messages of
 * opentelemetry-proto (trace/v1/trace.proto, common/v1/common.proto, resource/v1/resource.proto) turns a message into
 * the canonical OTLP/JSON object (hex ids, integer enums, int64 as strings), which the OTLP/JSON reader
 * normalises like any other. Unknown fields are skipped, as protobuf requires.
 */
import { MAX_VALUE_DEPTH, TraceDataError } from '../normalize';

export const format = 'otlp-proto' as const;

class Reader {
  pos: number;
  constructor(
    readonly buf: Buffer,
    start: number,
    readonly end: number,
    readonly path: string,
  ) {
    this.pos = start;
  }

  fail(problem: string): never {
    throw new TraceDataError(`${this.path} (byte ${this.pos})`, problem);
  }

  /** A varint as a bigint (int64/uint64 values). */
  varintBig(): bigint {
    let result = 0n;
    let shift = 0n;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) this.fail('truncated varint');
      const b = this.buf[this.pos++] as number;
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
    }
    this.fail('varint longer than 10 bytes');
  }

  /** A varint known to be small (tags, lengths, enums, bools). */
  varint(): number {
    let result = 0;
    let mul = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) this.fail('truncated varint');
      const b = this.buf[this.pos++] as number;
      result += (b & 0x7f) * mul;
      if ((b & 0x80) === 0) return result;
      mul *= 128;
    }
    this.fail('varint longer than 10 bytes');
  }

  fixed64(): bigint {
    if (this.pos + 8 > this.end) this.fail('truncated fixed64');
    const v = this.buf.readBigUInt64LE(this.pos);
    this.pos += 8;
    return v;
  }

  double(): number {
    if (this.pos + 8 > this.end) this.fail('truncated double');
    const v = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return v;
  }

  fixed32(): number {
    if (this.pos + 4 > this.end) this.fail('truncated fixed32');
    const v = this.buf.readUInt32LE(this.pos);
    this.pos += 4;
    return v;
  }

  /** A length-delimited field: [start, end) of its bytes. */
  bytes(): [number, number] {
    const lenAt = this.pos;
    const len = this.varint();
    const start = this.pos;
    if (start + len > this.end) {
      this.pos = lenAt; // report the byte where the length is written
      this.fail(`length ${len} runs past the end of the message`);
    }
    this.pos += len;
    return [start, start + len];
  }

  sub(path: string): Reader {
    const [s, e] = this.bytes();
    return new Reader(this.buf, s, e, path);
  }

  string(): string {
    const [s, e] = this.bytes();
    return this.buf.toString('utf8', s, e);
  }

  hex(): string {
    const [s, e] = this.bytes();
    return this.buf.toString('hex', s, e);
  }

  skip(wire: number): void {
    switch (wire) {
      case 0:
        this.varintBig();
        return;
      case 1:
        this.fixed64();
        return;
      case 2:
        this.bytes();
        return;
      case 5:
        this.fixed32();
        return;
      default:
        this.fail(`unsupported wire type ${wire}`);
    }
  }

  /** Iterate the fields of this message: calls `on(field, wire)`, which must consume the value or return false. */
  fields(on: (field: number, wire: number) => boolean): void {
    while (this.pos < this.end) {
      const tag = this.varint();
      const field = Math.floor(tag / 8);
      const wire = tag & 7;
      if (field === 0) this.fail('field number 0');
      if (!on(field, wire)) this.skip(wire);
    }
  }
}

type Json = Record<string, unknown>;

function int64(v: bigint): string {
  return BigInt.asIntN(64, v).toString();
}

/** How deep the AnyValue being decoded nests (bounded as for JSON: normalize.ts MAX_VALUE_DEPTH). */
let valueDepth = 0;

function anyValue(r: Reader): Json {
  if (valueDepth >= MAX_VALUE_DEPTH) r.fail(`value nested deeper than ${MAX_VALUE_DEPTH} levels`);
  valueDepth++;
  try {
    return anyValueFields(r);
  } finally {
    valueDepth--;
  }
}

function anyValueFields(r: Reader): Json {
  let out: Json = {};
  r.fields((f, w) => {
    if (f === 1 && w === 2) out = { stringValue: r.string() };
    else if (f === 2 && w === 0) out = { boolValue: r.varint() !== 0 };
    else if (f === 3 && w === 0) out = { intValue: int64(r.varintBig()) };
    else if (f === 4 && w === 1) out = { doubleValue: r.double() };
    else if (f === 5 && w === 2) out = { arrayValue: { values: repeated(r.sub(`${r.path}.arrayValue`), 1, anyValue) } };
    else if (f === 6 && w === 2)
      out = { kvlistValue: { values: repeated(r.sub(`${r.path}.kvlistValue`), 1, keyValue) } };
    else if (f === 7 && w === 2) {
      const [s, e] = r.bytes();
      out = { bytesValue: r.buf.toString('base64', s, e) };
    } else return false;
    return true;
  });
  return out;
}

function repeated(r: Reader, field: number, decode: (r: Reader) => Json): Json[] {
  const out: Json[] = [];
  r.fields((f, w) => {
    if (f !== field || w !== 2) return false;
    out.push(decode(r.sub(`${r.path}[${out.length}]`)));
    return true;
  });
  return out;
}

function keyValue(r: Reader): Json {
  const out: Json = { key: '' };
  r.fields((f, w) => {
    if (f === 1 && w === 2) out.key = r.string();
    else if (f === 2 && w === 2) out.value = anyValue(r.sub(`${r.path}.value`));
    else return false;
    return true;
  });
  return out;
}

/** Decodes a message with `attributes` (repeated KeyValue) at field `attrField` plus the given scalar fields. */
function withAttributes(r: Reader, attrField: number, on: (f: number, w: number, out: Json) => boolean): Json {
  const out: Json = {};
  const attrs: Json[] = [];
  r.fields((f, w) => {
    if (f === attrField && w === 2) {
      attrs.push(keyValue(r.sub(`${r.path}.attributes[${attrs.length}]`)));
      return true;
    }
    return on(f, w, out);
  });
  if (attrs.length > 0) out.attributes = attrs;
  return out;
}

function resource(r: Reader): Json {
  return withAttributes(r, 1, (f, w, out) => {
    if (f === 2 && w === 0) out.droppedAttributesCount = r.varint();
    else return false;
    return true;
  });
}

function scope(r: Reader): Json {
  return withAttributes(r, 3, (f, w, out) => {
    if (f === 1 && w === 2) out.name = r.string();
    else if (f === 2 && w === 2) out.version = r.string();
    else return false;
    return true;
  });
}

function event(r: Reader): Json {
  return withAttributes(r, 3, (f, w, out) => {
    if (f === 1 && w === 1) out.timeUnixNano = r.fixed64().toString();
    else if (f === 2 && w === 2) out.name = r.string();
    else return false;
    return true;
  });
}

function link(r: Reader): Json {
  return withAttributes(r, 4, (f, w, out) => {
    if (f === 1 && w === 2) out.traceId = r.hex();
    else if (f === 2 && w === 2) out.spanId = r.hex();
    else if (f === 3 && w === 2) out.traceState = r.string();
    else if (f === 6 && w === 5) out.flags = r.fixed32();
    else return false;
    return true;
  });
}

function status(r: Reader): Json {
  const out: Json = {};
  r.fields((f, w) => {
    if (f === 2 && w === 2) out.message = r.string();
    else if (f === 3 && w === 0) out.code = r.varint();
    else return false;
    return true;
  });
  return out;
}

function span(r: Reader): Json {
  const events: Json[] = [];
  const links: Json[] = [];
  const out = withAttributes(r, 9, (f, w, o) => {
    if (f === 1 && w === 2) o.traceId = r.hex();
    else if (f === 2 && w === 2) o.spanId = r.hex();
    else if (f === 3 && w === 2) o.traceState = r.string();
    else if (f === 4 && w === 2) o.parentSpanId = r.hex();
    else if (f === 5 && w === 2) o.name = r.string();
    else if (f === 6 && w === 0) o.kind = r.varint();
    else if (f === 7 && w === 1) o.startTimeUnixNano = r.fixed64().toString();
    else if (f === 8 && w === 1) o.endTimeUnixNano = r.fixed64().toString();
    else if (f === 11 && w === 2) events.push(event(r.sub(`${r.path}.events[${events.length}]`)));
    else if (f === 13 && w === 2) links.push(link(r.sub(`${r.path}.links[${links.length}]`)));
    else if (f === 15 && w === 2) o.status = status(r.sub(`${r.path}.status`));
    else if (f === 16 && w === 5) o.flags = r.fixed32();
    else return false;
    return true;
  });
  if (out.parentSpanId === '') delete out.parentSpanId;
  if (events.length > 0) out.events = events;
  if (links.length > 0) out.links = links;
  return out;
}

function scopeSpans(r: Reader): Json {
  const out: Json = {};
  const spans: Json[] = [];
  r.fields((f, w) => {
    if (f === 1 && w === 2) out.scope = scope(r.sub(`${r.path}.scope`));
    else if (f === 2 && w === 2) spans.push(span(r.sub(`${r.path}.spans[${spans.length}]`)));
    else if (f === 3 && w === 2) out.schemaUrl = r.string();
    else return false;
    return true;
  });
  out.spans = spans;
  return out;
}

function resourceSpans(r: Reader): Json {
  const out: Json = {};
  const ss: Json[] = [];
  r.fields((f, w) => {
    if (f === 1 && w === 2) out.resource = resource(r.sub(`${r.path}.resource`));
    // 1000 is the deprecated instrumentation_library_spans, with the same layout as ScopeSpans.
    else if ((f === 2 || f === 1000) && w === 2) ss.push(scopeSpans(r.sub(`${r.path}.scopeSpans[${ss.length}]`)));
    else if (f === 3 && w === 2) out.schemaUrl = r.string();
    else return false;
    return true;
  });
  out.scopeSpans = ss;
  return out;
}

/**
 * A binary ExportTraceServiceRequest (bytes [start, end) of `buf`) → the canonical OTLP/JSON object.
 * Throws TraceDataError naming the field path and byte offset of damage.
 */
export function decodeExportTraceRequest(buf: Buffer, start = 0, end = buf.length): { resourceSpans: Json[] } {
  const r = new Reader(buf, start, end, 'ExportTraceServiceRequest');
  const list: Json[] = [];
  r.fields((f, w) => {
    if (f !== 1 || w !== 2) return false;
    list.push(resourceSpans(r.sub(`resourceSpans[${list.length}]`)));
    return true;
  });
  return { resourceSpans: list };
}

/**
 * Does the head look like a single ExportTraceServiceRequest (field 1, length-delimited)? A length running past the
 * end still claims the file: it is then reported as truncated protobuf, which says more than "unknown format".
 */
export function sniffSingle(head: Buffer): boolean {
  if (head.length < 2 || head[0] !== 0x0a) return false;
  try {
    return new Reader(head, 1, head.length, '').varint() > 0;
  } catch {
    return false;
  }
}

/** Does the head look like the collector's length-prefixed proto stream? */
export function sniffFramed(head: Buffer, size: number): boolean {
  if (head.length < 6) return false;
  const len = head.readUInt32BE(0);
  return len > 0 && 4 + len <= size && head[4] === 0x0a;
}
