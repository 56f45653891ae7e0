/**
 * The Vercel AI SDK with `experimental_telemetry` on. Its `ai.*` spans are ordinary OTel spans, active around each
 * model call, so the span layer's LLM spans nest under `ai.generateText.doGenerate` (`ai.streamText.doStream`, …) with
 * no bridge. What is left is the task: an LLM call made inside an AI SDK operation that has a function id
 * (`experimental_telemetry: { functionId }`) belongs to the task named by that id.
 */
import { trace, type Attributes, type Context } from '@opentelemetry/api';

const FUNCTION_ID = 'ai.telemetry.functionId';

/** The AI SDK function id of the operation whose span is active in `ctx`, if any. */
export function aiSdkFunctionId(ctx: Context): string | undefined {
  // SDK spans expose their name and attributes (ReadableSpan); a span that does not gives no task.
  const span = trace.getSpan(ctx) as { name?: unknown; attributes?: Attributes } | undefined;
  if (span === undefined || typeof span.name !== 'string' || !span.name.startsWith('ai.')) return undefined;
  const id = span.attributes?.[FUNCTION_ID];
  return typeof id === 'string' && id !== '' ? id : undefined;
}
