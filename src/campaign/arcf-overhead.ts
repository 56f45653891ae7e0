/** The instrumentation overhead of a workflow: paired bare / instrumented runs, the median relative difference. */
import { BasicTracerProvider, type SpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { context, trace } from '@opentelemetry/api';
import { createOnlineDetection } from '../../detectors/online';
import { FaultlineInstrumentation } from '../../instrumentation/instrumentation';
import { bootstrap, quantile, type Interval } from '../stats';

export interface OverheadResult {
  pairs: number;
  bareMs: number;
  instrumentedMs: number;
  /** Median of the paired relative differences, with a bootstrap 95 % interval. */
  relative: Interval;
}

/** A span exporter that keeps nothing: the cost measured is recording and judging, not writing. */
const discard: SpanExporter = { export: (_spans, done) => done({ code: 0 }), shutdown: async () => {} };

/**
 * ARCF's observability overhead: the delay telemetry adds. Clean runs of the example tasks, in interleaved pairs
 * (order alternating), once bare and once with faultline's span layer, channel spans, online detectors and workflow
 * monitors on; the relative paired difference of their wall times. Runs after the campaign's harness is shut down.
 */
export async function measureOverhead(run: () => Promise<unknown>, pairs = 24): Promise<OverheadResult> {
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(discard)] });
  const cm = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(cm);
  trace.setGlobalTracerProvider(provider);
  const online = createOnlineDetection();
  // Constructed disabled (it enables itself otherwise): on only for the instrumented half of each pair.
  const inst = new FaultlineInstrumentation({
    enabled: false,
    onExchangeEnd: online.onExchangeEnd,
    onDelivery: online.onDelivery,
    onWorkflowEvent: online.onWorkflowEvent,
    captureMessageContent: false,
  });
  inst.setTracerProvider(provider);
  const timed = async (on: boolean): Promise<number> => {
    if (on) inst.enable();
    const t0 = performance.now();
    try {
      await run();
    } finally {
      if (on) inst.disable();
    }
    return performance.now() - t0;
  };
  const diffs: number[] = [];
  const bare: number[] = [];
  const instrumented: number[] = [];
  try {
    await timed(false); // warm-up
    await timed(true);
    for (let i = 0; i < pairs; i++) {
      const first = i % 2 === 0;
      const a = await timed(first);
      const b = await timed(!first);
      const [on, off] = first ? [a, b] : [b, a];
      bare.push(off);
      instrumented.push(on);
      diffs.push((on - off) / off);
    }
  } finally {
    await provider.shutdown();
    trace.disable();
    context.disable();
  }
  const med = (xs: readonly number[]) => quantile(xs, 0.5);
  return { pairs, bareMs: med(bare), instrumentedMs: med(instrumented), relative: bootstrap(diffs, med, { seed: 7 }) };
}
