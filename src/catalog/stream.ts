/**
 * Streaming faults (AgentChaos forced stream=false and could not inject these): applied event by event on the SSE
 * stream, never buffering it. Events are counted by their `data:` lines (1-based in parameters).
 */
import { z } from 'zod';
import type { FaultType } from '../taxonomy';
import { STRATEGIES } from './agentchaos/experiments';
import type { SseTransform, StreamFault } from './types';

const afterEvents = z.number().int().min(0).default(2).meta({ description: 'data events delivered before the fault' });

/** OpenAI `data: [DONE]` or Anthropic `event: message_stop`: the stream's terminal marker. */
export function isTerminalEvent(raw: string): boolean {
  return /^data:\s*\[DONE\]\s*$/m.test(raw) || /^event:\s*message_stop\s*$/m.test(raw);
}

function fault(name: string, type: FaultType, description: string, params: z.ZodType, transform: (p: Record<string, unknown>) => SseTransform): StreamFault {
  return {
    name,
    base: name,
    type,
    category: type === 'corrupt' ? 'value' : 'omission',
    mode: 'stream',
    target: 'stream',
    strategy: STRATEGIES.single,
    fixedStrategy: false,
    description,
    params: params as unknown as z.ZodType<Record<string, unknown>>,
    transform,
  };
}

export function streamFaults(): StreamFault[] {
  return [
    fault(
      'stream_cut',
      'truncate',
      'the stream ends after afterEvents data events: no finish reason, no terminal marker (reset: a connection error instead of a clean end; partialEvent: half of the next event is sent first)',
      z.strictObject({
        afterEvents,
        reset: z.boolean().default(false).meta({ description: 'end with a connection reset instead of a clean end of the body' }),
        partialEvent: z.boolean().default(false).meta({ description: 'send the first half of the next event before cutting' }),
      }),
      (p) => {
        const after = Number(p.afterEvents ?? 2);
        let cut = false;
        return {
          onEvent(raw, index, isData) {
            if (!isData || index < after) return { emit: [raw] };
            cut = true;
            return { emit: p.partialEvent ? [raw.slice(0, Math.max(1, Math.floor(raw.trimEnd().length / 2)))] : [], then: p.reset ? 'reset' : 'end' };
          },
          changed: () => cut,
        };
      },
    ),
    fault(
      'stream_stall',
      'timeout',
      'the stream stops after afterEvents data events and is held until the client gives up (or resumes after stallMs)',
      z.strictObject({
        afterEvents,
        stallMs: z.number().int().min(0).meta({ description: 'resume after this long instead of holding until the client aborts, in ms' }).optional(),
      }),
      (p) => {
        const after = Number(p.afterEvents ?? 2);
        let stalled = false;
        return {
          onEvent(raw, index, isData) {
            if (stalled || !isData || index < after) return { emit: [raw] };
            stalled = true;
            return { emit: [raw], then: 'stall', stallMs: typeof p.stallMs === 'number' ? p.stallMs : undefined };
          },
          changed: () => stalled,
        };
      },
    ),
    fault('stream_drop_done', 'truncate', 'the terminal marker (OpenAI data: [DONE], Anthropic message_stop) is dropped', z.strictObject({}), () => {
      let dropped = false;
      return {
        onEvent(raw) {
          if (!isTerminalEvent(raw)) return { emit: [raw] };
          dropped = true;
          return { emit: [] };
        },
        changed: () => dropped,
      };
    }),
    fault(
      'stream_corrupt_chunk',
      'corrupt',
      'one data event is garbled in transit (its JSON cut in half and followed by U+FFFD)',
      z.strictObject({ eventIndex: z.number().int().min(1).default(2).meta({ description: 'which data event (1-based)' }) }),
      (p) => {
        const target = Number(p.eventIndex ?? 2) - 1;
        let done = false;
        return {
          onEvent(raw, index, isData) {
            if (!isData || index !== target || isTerminalEvent(raw)) return { emit: [raw] };
            done = true;
            return { emit: [garble(raw)] };
          },
          changed: () => done,
        };
      },
    ),
  ];
}

function garble(raw: string): string {
  return raw.replace(/^data:(.*)$/m, (_m, payload: string) => `data:${payload.slice(0, Math.max(1, Math.floor(payload.length / 2)))}\uFFFD`);
}
