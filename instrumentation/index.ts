/** faultline's instrumentation: public surface only (internal-types.ts is never exported). */
export { FaultlineInstrumentation, captureContentFromEnv } from './instrumentation';
export { createGenAiInterceptor, flushExchanges, settleExchanges, type GenAiInterceptorOptions } from './interceptor';
export { installInstrumentation, type InstalledInstrumentation } from './install';
export { EXCHANGE, getExchange } from './exchange';
export { providerName } from './providers/provider-name';
export { SseParser, type SseEvent } from '../src/wire/sse';
export type * from './types';
