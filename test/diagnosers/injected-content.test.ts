/**
 * Diagnosis of traces made by the real fault-injection stack, with captured message content read by the offline
 * detectors. Assertions: support/injected-suite.ts.
 */
import { describeInjected } from './support/injected-suite';

describeInjected('content');
