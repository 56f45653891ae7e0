/**
 * Handing a whole response to the application's undici handler (undici 7's handler API) at once: start, the body in
 * one chunk (none when empty), end. What a step inside the GenAI span layer does when it answers from a buffer — a
 * guard delivering the answer it judged, or the last one after it gave up — rather than from the network.
 */
import type { Dispatcher } from 'undici';

export interface WholeResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  statusMessage: string;
  body: Buffer;
  trailers: Record<string, string | string[] | undefined> | null;
}

export function deliverResponse(
  handler: Dispatcher.DispatchHandler,
  controller: Dispatcher.DispatchController,
  r: WholeResponse,
): void {
  handler.onResponseStart?.(controller, r.status, r.headers, r.statusMessage);
  if (r.body.length > 0) handler.onResponseData?.(controller, r.body);
  handler.onResponseEnd?.(controller, r.trailers ?? {});
}
