/**
 * The offline detectors (detectors/from-span.ts) as the rule diagnoser's findings source. Online findings recorded
 * as `faultline.detection` events are read by the rules themselves, so they are not asked for twice here.
 */
import { detectSpans } from '../../detectors/from-span';
import type { SpanFindings } from './rules';

export function defaultFindings(): SpanFindings {
  return (trace) => detectSpans(trace, { includeOnline: false });
}
