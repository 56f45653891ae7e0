/** Offline traces: readers for every trace format faultline accepts, and the embedded OTLP/HTTP collector. */
export { readSpans, readTraces, detectFileFormat, TRACE_FORMATS } from './read';
export type { ReadSpansOptions, ReadTracesOptions, TraceFormat } from './read';
export { startCollector } from './collect';
export type { Collector, CollectorOptions, CollectorStats } from './collect';
export { DEFAULT_IDLE_SPANS } from './group';
export * from './model';
export * from './steps';
