/**
 * A trace worker (see parallel.ts): parses the blocks of JSON lines it is sent, groups each block's spans by trace
 * into pieces, tells the coordinator which pieces it holds, and then, as the coordinator decides, runs the task on
 * the pieces that are whole traces or sends back the spans of pieces that are parts of a larger trace.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { sortSpans, type SpanRecord } from './model';
import { JsonLinesParser } from './readers/jsonl';
import { loadTask, serializeProblem, type FromWorker, type ToWorker, type WorkerSetup } from './parallel-protocol';

interface Piece {
  traceId: string;
  spans: SpanRecord[];
  first: number;
  last: number;
}

interface Block {
  parser: JsonLinesParser;
  /** After the summary: the pieces, by the index the summary gave them, until each was used. */
  pieces?: (Piece | undefined)[];
  left?: number;
}

const setup = workerData as WorkerSetup;
const port = parentPort as NonNullable<typeof parentPort>;
const blocks = new Map<number, Block>();
let task: ((trace: { traceId: string; spans: SpanRecord[] }) => unknown) | undefined;

function post(msg: FromWorker): void {
  port.postMessage(msg);
}

/** The block's spans → pieces (the trace grouper's idle rule applied inside the block), in order of last span. */
function piecesOf(spans: SpanRecord[]): Piece[] {
  const open = new Map<string, Piece>();
  const closed: Piece[] = [];
  for (let i = 0; i < spans.length; i++) {
    const span = spans[i] as SpanRecord;
    const seq = i + 1;
    const p = open.get(span.traceId);
    if (p !== undefined && seq - p.last <= setup.idleSpans) {
      p.spans.push(span);
      p.last = seq;
      continue;
    }
    if (p !== undefined) closed.push(p);
    open.set(span.traceId, { traceId: span.traceId, spans: [span], first: seq, last: seq });
  }
  const all = closed.length === 0 ? [...open.values()] : [...closed, ...open.values()];
  return all.sort((a, b) => a.last - b.last);
}

function finishBlock(no: number, block: Block): void {
  block.parser.end();
  const problems = block.parser.problems.map((p) => ({ line: p.line, error: serializeProblem(p.error) }));
  const spans = block.parser.take();
  const pieces = piecesOf(spans);
  block.pieces = pieces;
  block.left = pieces.length;
  if (pieces.length === 0) blocks.delete(no);
  post({
    t: 'summary',
    block: no,
    spans: spans.length,
    lines: block.parser.lines,
    problems,
    ids: pieces.map((p) => p.traceId),
    firsts: pieces.map((p) => p.first),
    lasts: pieces.map((p) => p.last),
  });
}

function takePiece(no: number, index: number): Piece {
  const block = blocks.get(no);
  const piece = block?.pieces?.[index];
  if (block === undefined || piece === undefined) throw new Error(`trace worker: no piece ${index} in block ${no}`);
  (block.pieces as (Piece | undefined)[])[index] = undefined;
  if (--(block.left as number) === 0) blocks.delete(no);
  return piece;
}

async function handle(msg: ToWorker): Promise<void> {
  switch (msg.t) {
    case 'chunk': {
      let block = blocks.get(msg.block);
      if (block === undefined) {
        block = { parser: new JsonLinesParser(setup.maxLineBytes, msg.startsFile) };
        blocks.set(msg.block, block);
      }
      if (msg.length > 0) block.parser.write(Buffer.from(msg.bytes, msg.offset, msg.length));
      if (msg.final) finishBlock(msg.block, block);
      return;
    }
    case 'run': {
      task ??= await loadTask(setup.task);
      const results: [number, unknown][] = [];
      const parts: [number, number, SpanRecord[]][] = [];
      const { items } = msg;
      for (let i = 0; i < items.length; i += 4) {
        const piece = takePiece(items[i] as number, items[i + 1] as number);
        const slot = items[i + 2] as number;
        const part = items[i + 3] as number;
        if (part === 0) results.push([slot, await task({ traceId: piece.traceId, spans: sortSpans(piece.spans) })]);
        else parts.push([slot, part - 1, piece.spans]);
      }
      post({ t: 'results', results, parts });
      return;
    }
  }
}

let queue = Promise.resolve();
port.on('message', (msg: ToWorker) => {
  queue = queue
    .then(() => handle(msg))
    .catch((err: unknown) => {
      post({
        t: 'error',
        message: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
        stack: err instanceof Error ? err.stack : undefined,
      });
    });
});
