/**
 * Taking OTLP trace requests in, for both of the collector's transports (collect.ts, collect-grpc.ts): a body is
 * decoded as it arrives by the one decompressor (src/wire/decompress.ts) with an output limit, and every byte
 * held for requests in flight — as received and as decoded — is reserved in one budget shared by all requests (a
 * request that does not fit is refused with 503, which exporters retry, as is every request while the online path
 * says it is behind); a decoded body is validated (every span must normalise), canonicalised and appended to the
 * output file as one OTLP/JSON line.
 */
import type { WriteStream } from 'node:fs';
import { BodyDecoder, canDecode, declaredGzipSize } from '../wire/decompress';
import { logger } from '../diag';
import type { SpanRecord } from './model';
import { TraceDataError, isRecord } from './normalize';
import { canonicalOtlp, spansOfOtlpDocument } from './readers/otlp-json';
import { decodeExportTraceRequest } from './readers/otlp-proto';

const log = logger('collect');

export interface CollectorStats {
  requests: number;
  spans: number;
  rejected: number;
  /** Answered 503: the memory for request bodies was taken, or the online path is behind (retried by exporters). */
  busy: number;
  /** Requests cut at the drain deadline or by a timeout (never answered 200, so never counted as stored). */
  cut: number;
}

export type Encoding = 'json' | 'proto';

export class IntakeProblem extends Error {
  constructor(
    /** HTTP status; the gRPC transport maps it to a gRPC code. */
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * What both transports share: the memory budget for bodies in flight, and turning a decoded body into a stored line.
 */
export class Intake {
  private used = 0;

  constructor(
    readonly maxBody: number,
    private readonly maxBuffered: number,
    private readonly stream: WriteStream,
    readonly stats: CollectorStats,
    private readonly onSpans: ((spans: SpanRecord[]) => void) | undefined,
    /** Why new requests are refused for now, if they are (the online path is behind). */
    private readonly backpressure: (() => string | undefined) | undefined = undefined,
  ) {}

  /** Reserve `n` bytes of the shared budget, or refuse the request (503: retried later). */
  reserve(n: number): void {
    if (this.used + n > this.maxBuffered) {
      throw new IntakeProblem(
        503,
        `the collector is holding ${this.maxBuffered} bytes of request bodies already; retry later`,
      );
    }
    this.used += n;
  }

  release(n: number): void {
    this.used -= n;
  }

  /** Held bytes of all requests in flight (for tests and stats). */
  get buffered(): number {
    return this.used;
  }

  /** Validate (every span must normalise), canonicalise and store one decoded request; resolves once on disk. */
  async accept(encoding: Encoding, body: Buffer): Promise<number> {
    let doc: Record<string, unknown>;
    const spans: SpanRecord[] = [];
    try {
      if (encoding === 'proto') doc = decodeExportTraceRequest(body);
      else {
        const parsed: unknown = JSON.parse(body.toString('utf8'));
        if (!isRecord(parsed)) throw new IntakeProblem(400, 'expected a JSON object (ExportTraceServiceRequest)');
        doc = parsed;
      }
      for (const s of spansOfOtlpDocument(doc)) spans.push(s);
    } catch (err) {
      if (err instanceof IntakeProblem) throw err;
      if (err instanceof TraceDataError)
        throw new IntakeProblem(400, `invalid ExportTraceServiceRequest: ${err.message}`);
      throw new IntakeProblem(
        400,
        `invalid ${encoding === 'proto' ? 'protobuf' : 'JSON'} body: ${(err as Error).message}`,
      );
    }
    if (spans.length === 0) return 0; // nothing worth a line
    const line = JSON.stringify(encoding === 'proto' ? doc : canonicalOtlp(doc));
    await new Promise<void>((resolve, reject) => {
      this.stream.write(`${line}\n`, (err) => (err ? reject(err) : resolve()));
    });
    this.stats.spans += spans.length;
    if (this.onSpans !== undefined) {
      try {
        this.onSpans(spans);
      } catch (err) {
        log.error('collector: online processing of accepted spans failed:', err);
      }
    }
    return spans.length;
  }

  /**
   * A body arriving in chunks, decoded as it comes (bounded by `maxBody` and by the shared budget). The returned
   * `release` must be called once the body is no longer held.
   */
  body(contentEncoding: string | undefined): BodyReader {
    const behind = this.backpressure?.();
    if (behind !== undefined) throw new IntakeProblem(503, behind);
    return new BodyReader(this, contentEncoding);
  }
}

/** One request body: received bytes counted, decoded on the fly, every held byte reserved in the budget. */
export class BodyReader {
  private readonly parts: Buffer[] = [];
  private received = 0;
  private decodedBytes = 0;
  private reserved = 0;
  /** The first 3 and the last 4 bytes received: a gzip body's magic and its size trailer. */
  private head = Buffer.alloc(0);
  private tail = Buffer.alloc(0);
  private readonly decoder: BodyDecoder | undefined;
  private problem: IntakeProblem | undefined;

  constructor(
    private readonly intake: Intake,
    private readonly encoding: string | undefined,
  ) {
    if (!canDecode(encoding))
      throw new IntakeProblem(
        415,
        `unsupported content-encoding ${JSON.stringify(encoding)}: use gzip, deflate, br or none`,
      );
    this.decoder = BodyDecoder.create(encoding, (b) => this.decoded(b), { maxOutputBytes: intake.maxBody });
  }

  private hold(n: number): void {
    this.intake.reserve(n);
    this.reserved += n;
  }

  private decoded(b: Buffer): void {
    if (this.problem !== undefined) return;
    try {
      this.hold(b.length);
      this.decodedBytes += b.length;
      this.parts.push(b);
    } catch (err) {
      this.problem = err as IntakeProblem;
      this.release(); // a refused body's bytes go back at once, not when its request ends
    }
  }

  /** Received bytes; throws an IntakeProblem (413, 503) as soon as the body cannot be taken. */
  write(chunk: Buffer): void {
    if (this.problem !== undefined) throw this.problem;
    this.received += chunk.length;
    if (this.received > this.intake.maxBody)
      throw new IntakeProblem(413, `request body larger than ${this.intake.maxBody} bytes`);
    // Received bytes count until the request ends (compressed ones wait in the decoder's queue until decoded).
    this.hold(chunk.length);
    if (this.head.length < 3) this.head = Buffer.concat([this.head, chunk.subarray(0, 3)]).subarray(0, 3);
    this.tail =
      chunk.length >= 4
        ? Buffer.from(chunk.subarray(chunk.length - 4))
        : Buffer.concat([this.tail, chunk]).subarray(-4);
    if (this.decoder === undefined) this.parts.push(chunk);
    else this.decoder.write(chunk);
  }

  /** The whole decoded body. */
  async end(): Promise<Buffer> {
    if (this.decoder !== undefined) {
      // A gzip body that declares more than the limit is refused now, before the rest of it is decoded for nothing:
      // 40 concurrent bombs otherwise decode hundreds of MiB that are garbage the moment they are refused.
      const declared = declaredGzipSize(this.encoding, this.head, this.tail);
      if (declared !== undefined && declared > this.intake.maxBody) {
        this.release();
        throw new IntakeProblem(
          413,
          `decompressed body larger than ${this.intake.maxBody} bytes (its gzip trailer declares ${declared})`,
        );
      }
      await this.decoder.end();
      if (this.problem !== undefined) throw this.problem;
      if (this.decoder.overflow)
        throw new IntakeProblem(413, `decompressed body larger than ${this.intake.maxBody} bytes`);
      if (this.decoder.error)
        throw new IntakeProblem(400, `bad ${this.encoding ?? ''} data: ${this.decoder.error.message}`);
    }
    return this.parts.length === 1 ? (this.parts[0] as Buffer) : Buffer.concat(this.parts);
  }

  /** Give the held bytes back to the budget (always, whatever happened). */
  release(): void {
    this.decoder?.destroy();
    this.intake.release(this.reserved);
    this.reserved = 0;
    this.parts.length = 0;
  }
}

/** The gRPC code of an HTTP status (google.rpc.Code): 3 INVALID_ARGUMENT, 8 RESOURCE_EXHAUSTED, 14 UNAVAILABLE, 12 UNIMPLEMENTED. */
export function grpcCodeOf(status: number): number {
  return status === 400 ? 3 : status === 413 ? 8 : status === 503 ? 14 : 12;
}
