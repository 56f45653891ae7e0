/**
 * Diagnosis of traces made by the real fault-injection stack, content-free spans with online detection events (the
 * production default). Assertions: support/injected-suite.ts.
 */
import { describeInjected } from './support/injected-suite';

describeInjected('online');
