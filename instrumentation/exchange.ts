/**
 * The Exchange rides in the undici dispatch options under a private symbol, so the steps composed inside the GenAI
 * span layer (guard, fault) can find the call they are part of without any global state.
 */
import type { Exchange } from './types';

/** Key of the {@link Exchange} in undici dispatch options. */
export const EXCHANGE: unique symbol = Symbol.for('faultline.exchange');

/** The exchange a request belongs to, or undefined when the request is not one of ours (pass it through untouched). */
export function getExchange(opts: unknown): Exchange | undefined {
  if (opts === null || typeof opts !== 'object') return undefined;
  return (opts as { [EXCHANGE]?: Exchange })[EXCHANGE];
}
