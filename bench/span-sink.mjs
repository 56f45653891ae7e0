// Where a per-call bench's spans go: counted (so a run can show one span per call), then through a
// BatchSpanProcessor into an exporter that drops them — the SDK's real path, no I/O. Loaded in the bench's child.
import { require } from './paths.mjs';

/** The span processors to give a tracer provider, and how many spans have ended so far. */
export function spanSink() {
  const { InMemorySpanExporter, BatchSpanProcessor } = require('@opentelemetry/sdk-trace-base');
  let ended = 0;
  const counter = {
    onStart() {},
    onEnd() {
      ended++;
    },
    forceFlush: async () => {},
    shutdown: async () => {},
  };
  const drop = new InMemorySpanExporter();
  drop.export = (spans, cb) => cb({ code: 0 });
  return { spanProcessors: [counter, new BatchSpanProcessor(drop)], count: () => ended };
}
