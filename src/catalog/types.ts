/**
 * The uniform shape of a catalog fault. Every fault has a name, the diagnosis type it maps to, its category and mode,
 * what it targets, its default strategy (how often it fires), a zod schema of its parameters, and a mode-specific
 * way to apply it. Stateful faults keep their state in the per-task engine state, so it resets with the task.
 */
import type { z } from 'zod';
import type { FaultCategory, FaultMode, FaultType } from '../taxonomy';
import type { AgentMessage } from '../../instrumentation/types';
import type { FaultSpec } from './agentchaos/spec';

export type FaultTarget = 'content' | 'tool_calls' | 'response' | 'transport' | 'stream' | 'message';

/** How often a fault fires: AgentChaos's (max, probability, min) triple, per task and per rule. */
export interface Strategy {
  readonly kind: 'single' | 'persistent' | 'intermittent' | 'burst' | 'pos_early' | 'pos_mid' | 'pos_late' | 'compound';
  readonly maxCount: number;
  readonly minCount: number;
  readonly probability: number;
}

interface FaultBase {
  readonly name: string;
  /** The base fault: `llm_truncate`, `http_503`, `non_delivery`, … */
  readonly base: string;
  readonly type: FaultType;
  readonly category: FaultCategory;
  readonly mode: FaultMode;
  readonly target: FaultTarget;
  readonly strategy: Strategy;
  /** AgentChaos names carry their strategy; a rule may not override it. */
  readonly fixedStrategy: boolean;
  readonly description: string;
  /** Parameters a rule may give under `params`. */
  readonly params: z.ZodType<Record<string, unknown>>;
}

/** AgentChaos content faults: a spec list run by the AgentChaos engine over the response body. */
export interface ContentFault extends FaultBase {
  readonly mode: 'content';
  readonly specs: readonly FaultSpec[];
}

/** What a transport fault does instead of (or before) sending the request. */
export type TransportEffect =
  | { kind: 'respond'; status: number; headers: Record<string, string>; body: string }
  | { kind: 'error'; code: 'ECONNRESET' | 'ECONNREFUSED'; afterMs: number }
  | { kind: 'hang'; stallMs?: number }
  | { kind: 'delay'; delayMs: number };

export interface TransportFault extends FaultBase {
  readonly mode: 'transport';
  /** `errors`: whose error bodies to send (openai, anthropic, gemini, ollama: src/catalog/formats.ts). */
  effect(params: Record<string, unknown>, errors: string): TransportEffect;
}

/** One event of a streamed answer, as the fault step hands it to a stream fault. */
export interface StreamEvent {
  /** The event's text as it crossed the wire, separators included (an SSE block, an NDJSON line, an array element). */
  readonly raw: string;
  /** It carries a payload (an SSE `data:` event, a JSON line or element): what `afterEvents` and `eventIndex` count. */
  readonly isData: boolean;
  /** It is the stream's terminal marker ([DONE], message_stop, response.completed, Ollama's done line). */
  readonly isTerminal: boolean;
  /** The same event garbled in transit: its JSON cut in half and followed by U+FFFD, the framing kept. */
  corrupt(): string;
}

/** Event-wise stream transformation: called per complete event, in order, with the data events before it. */
export interface StreamTransform {
  /** Return the events to emit for this one (zero, one, or more), or an action. */
  onEvent(
    event: StreamEvent,
    index: number,
  ): { emit: string[] } | { emit: string[]; then: 'end' | 'reset' | 'stall'; stallMs?: number };
  /** Whether the stream was changed by the time it ended (false = the fault turned out a no-op). */
  changed(): boolean;
}

export interface StreamFault extends FaultBase {
  readonly mode: 'stream';
  transform(params: Record<string, unknown>): StreamTransform;
}

export interface MessageFaultContext {
  /** Earlier messages to the same target in this task, oldest first. */
  previousToTarget: readonly AgentMessage[];
  /** A donor message at the same boundary from another task, if any. */
  donor?: AgentMessage;
}

/** What a message fault does to one message. `noop` = nothing applicable (reported, not counted as triggered). */
export type MessageEffect =
  { kind: 'deliver'; messages: AgentMessage[]; waitMs?: number; noop?: boolean } | { kind: 'drop'; waitMs?: number };

export interface MessageFault extends FaultBase {
  readonly mode: 'message';
  apply(message: AgentMessage, params: Record<string, unknown>, ctx: MessageFaultContext): MessageEffect;
}

export type FaultDefinition = ContentFault | TransportFault | StreamFault | MessageFault;
