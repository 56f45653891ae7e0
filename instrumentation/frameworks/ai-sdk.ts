/**
 * The Vercel AI SDK. Its telemetry spans are ordinary OTel spans, active around each model call, so the span layer's
 * LLM spans nest under them with no bridge: ai 6's `ai.generateText.doGenerate` (`ai.streamText.doStream`, …) with
 * `experimental_telemetry` on, ai 7's `invoke_agent` / `step` / `chat` spans once the app registers `@ai-sdk/otel`.
 * What is left is the task: an LLM call made inside an AI SDK operation that has a function id belongs to the task
 * named by that id.
 *
 *   ai 6   the operation's span is active: its `ai.telemetry.functionId` attribute
 *   ai 7   the span has no function id; the SDK publishes each operation on the `ai:telemetry` tracing channel
 *          (node:diagnostics_channel), its event carrying `functionId`. A store bound to the channel's start holds
 *          it for the operation's async scope, telemetry integration registered or not.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import * as diagnosticsChannel from 'node:diagnostics_channel';
import { trace, type Attributes, type Context } from '@opentelemetry/api';
import { logger, safely } from '../../src/diag';

const log = logger('frameworks');

const FUNCTION_ID = 'ai.telemetry.functionId';
/** The channel name ai 7 publishes its operations on (`AI_SDK_TELEMETRY_TRACING_CHANNEL`). */
const TELEMETRY_CHANNEL = 'ai:telemetry';

const operationFunctionId = new AsyncLocalStorage<string>();
let bound = false;

/**
 * Hold the function id of each AI SDK operation for its async scope, from the `ai:telemetry` tracing channel. Once
 * per process; nothing is loaded, and an SDK without the channel (ai 6) never publishes on it. Binding a store makes
 * the SDK publish (it skips the channel without subscribers): a start message per operation, step and tool.
 */
export function bindAiSdkChannel(): void {
  if (bound || typeof diagnosticsChannel.tracingChannel !== 'function') return;
  bound = true;
  diagnosticsChannel.tracingChannel(TELEMETRY_CHANNEL).start.bindStore(operationFunctionId, (message) =>
    safely(
      log,
      'reading an AI SDK telemetry event',
      () => {
        const id = (message as { event?: { functionId?: unknown } } | null)?.event?.functionId;
        return typeof id === 'string' && id !== '' ? id : operationFunctionId.getStore();
      },
      operationFunctionId.getStore(),
    ),
  );
}

/** The function id of the AI SDK operation whose span is active in `ctx`, if any (ai 6). */
export function aiSdkFunctionId(ctx: Context): string | undefined {
  // SDK spans expose their name and attributes (ReadableSpan); a span that does not gives no task.
  const span = trace.getSpan(ctx) as { name?: unknown; attributes?: Attributes } | undefined;
  if (span === undefined || typeof span.name !== 'string' || !span.name.startsWith('ai.')) return undefined;
  const id = span.attributes?.[FUNCTION_ID];
  return typeof id === 'string' && id !== '' ? id : undefined;
}

/**
 * The function id of the AI SDK operation the code running now is inside, from the channel's scope (ai 7). Read when
 * a call starts (the async scope is the operation's then), and kept on the call's context.
 */
export function aiSdkOperationFunctionId(): string | undefined {
  return operationFunctionId.getStore();
}
