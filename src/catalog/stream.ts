/**
 * Streaming faults (AgentChaos forced stream=false and could not inject these): applied event by event on the stream
 * (SSE events, Ollama's NDJSON lines, the elements of Gemini's JSON array), never buffering it. Events are counted by
 * their payloads (`data:` events, JSON lines or elements; 1-based in parameters). What is terminal and how an event
 * is garbled is the format's (src/catalog/formats.ts).
 */
import { z } from 'zod';
import { timerMs } from '../duration';
import type { FaultType } from '../taxonomy';
import { STRATEGIES } from './agentchaos/experiments';
import type { StreamFault, StreamTransform } from './types';

const afterEvents = z.number().int().min(0).default(2).meta({ description: 'data events delivered before the fault' });

function fault(
  name: string,
  type: FaultType,
  description: string,
  params: z.ZodType,
  transform: (p: Record<string, unknown>) => StreamTransform,
): StreamFault {
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
        reset: z
          .boolean()
          .default(false)
          .meta({ description: 'end with a connection reset instead of a clean end of the body' }),
        partialEvent: z
          .boolean()
          .default(false)
          .meta({ description: 'send the first half of the next event before cutting' }),
      }),
      (p) => {
        const after = Number(p.afterEvents ?? 2);
        let cut = false;
        return {
          onEvent(e, index) {
            if (!e.isData || index < after) return { emit: [e.raw] };
            cut = true;
            return {
              emit: p.partialEvent ? [e.raw.slice(0, Math.max(1, Math.floor(e.raw.trimEnd().length / 2)))] : [],
              then: p.reset ? 'reset' : 'end',
            };
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
        stallMs: timerMs(z.number().int().min(0))
          .meta({ description: 'resume after this long instead of holding until the client aborts, in ms' })
          .optional(),
      }),
      (p) => {
        const after = Number(p.afterEvents ?? 2);
        let stalled = false;
        return {
          onEvent(e, index) {
            if (stalled || !e.isData || index < after) return { emit: [e.raw] };
            stalled = true;
            return { emit: [e.raw], then: 'stall', stallMs: typeof p.stallMs === 'number' ? p.stallMs : undefined };
          },
          changed: () => stalled,
        };
      },
    ),
    fault(
      'stream_drop_done',
      'truncate',
      "the terminal marker (OpenAI data: [DONE], Anthropic message_stop, Responses response.completed, Ollama's done line) is dropped",
      z.strictObject({}),
      () => {
        let dropped = false;
        return {
          onEvent(e) {
            if (!e.isTerminal) return { emit: [e.raw] };
            dropped = true;
            return { emit: [] };
          },
          changed: () => dropped,
        };
      },
    ),
    fault(
      'stream_corrupt_chunk',
      'corrupt',
      'one data event is garbled in transit (its JSON cut in half and followed by U+FFFD)',
      z.strictObject({
        eventIndex: z.number().int().min(1).default(2).meta({ description: 'which data event (1-based)' }),
      }),
      (p) => {
        const target = Number(p.eventIndex ?? 2) - 1;
        let done = false;
        return {
          onEvent(e, index) {
            if (!e.isData || index !== target || e.isTerminal) return { emit: [e.raw] };
            done = true;
            return { emit: [e.corrupt()] };
          },
          changed: () => done,
        };
      },
    ),
  ];
}
