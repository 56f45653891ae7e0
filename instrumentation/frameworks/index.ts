/**
 * The agent structure of the frameworks an app loads, for `register`: the OpenAI Agents SDK and LangChain/LangGraph
 * bridges wait (at no cost) until the app itself loads the framework — nothing is loaded or required eagerly, and no
 * module is patched; the Vercel AI SDK needs no bridge for its structure (its telemetry spans are OTel spans already),
 * only the `ai:telemetry` channel's function id for the task (see ai-sdk.ts).
 */
import { bindAiSdkChannel } from './ai-sdk';
import { bridgeLangChain } from './langchain';
import { bridgeOpenAIAgents } from './openai-agents';

export { frameworkContext, callContext, getFrameworkRun } from './scope';
export { registerLangChain, langChainHandler, type LangChainContextModule } from './langchain';

export interface FrameworkOptions {
  /** Record tool arguments and results on tool spans (message content capture). */
  captureContent: () => boolean;
}

export interface Frameworks {
  /** Stop bridging (the spans of runs in flight are ended). */
  disable(): void;
}

/** Bridge every supported framework the app loads from now on (or has loaded already). */
export function enableFrameworks(options: FrameworkOptions): Frameworks {
  bindAiSdkChannel();
  const removals = [bridgeOpenAIAgents(options), bridgeLangChain(options)];
  return {
    disable() {
      for (const remove of removals.splice(0)) remove();
    },
  };
}
