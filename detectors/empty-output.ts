/**
 * Empty output: a successful response with no text and no tool calls, a `tool_calls` finish reason with no tool
 * call, and for messages a delivery that never happened (non_delivery) or carried an empty payload.
 */
import type { Detector, Finding, LlmObservation, MessageObservation, Observation } from './types';
import { failedCall } from './text';

const TOOL_FINISH = new Set(['tool_calls', 'tool_use', 'function_call']);

function emptyPayload(p: unknown): boolean {
  if (p === undefined || p === null) return true;
  if (typeof p === 'string') return p.trim() === '';
  if (Array.isArray(p)) return p.length === 0;
  if (typeof p === 'object') return Object.keys(p).length === 0;
  return false;
}

export const emptyOutputDetector: Detector = {
  name: 'empty_output',
  applies: (obs) => obs.kind === 'message' || !failedCall(obs),
  detect(obs: Observation): Finding[] {
    if (obs.kind === 'llm') {
      const o = obs as LlmObservation;
      const r = o.response;
      const toolCalls = o.hasContent ? r.toolCalls.length : (o.facts?.toolCallCount ?? r.toolCalls.length);
      const chars = o.hasContent ? r.text.trim().length : o.facts?.outputChars;
      const location = { spanId: o.spanId, field: 'content' };
      if (
        r.finishReasons.some((f) => TOOL_FINISH.has(f)) &&
        toolCalls === 0 &&
        (o.hasContent || o.facts?.toolCallCount !== undefined)
      ) {
        return [
          {
            detector: 'empty_output',
            faultType: 'empty',
            severity: 'error',
            confidence: 0.9,
            evidence: `finish reason ${r.finishReasons.join(',')} but no tool call`,
            location: { spanId: o.spanId, field: 'tool_calls' },
          },
        ];
      }
      if (chars === 0 && toolCalls === 0) {
        return [
          {
            detector: 'empty_output',
            faultType: 'empty',
            severity: 'error',
            confidence: 0.9,
            evidence: 'no text and no tool call in a successful response',
            location,
          },
        ];
      }
      return [];
    }
    const m = obs as MessageObservation;
    const delivered = m.hasContent || m.original ? m.delivered.length : m.facts?.deliveredCount;
    if (delivered === 0) {
      return [
        {
          detector: 'empty_output',
          faultType: 'non_delivery',
          severity: 'error',
          confidence: 0.9,
          evidence: 'the message was not delivered',
          location: { spanId: m.spanId },
        },
      ];
    }
    const out: Finding[] = [];
    if (m.hasContent) {
      m.delivered.forEach((msg, index) => {
        if (emptyPayload(msg.payload))
          out.push({
            detector: 'empty_output',
            faultType: 'empty',
            severity: 'error',
            confidence: 0.85,
            evidence: 'empty message payload',
            location: { spanId: m.spanId, field: 'payload', index },
          });
      });
    } else if (m.facts?.payloadBytes !== undefined && m.facts.payloadBytes <= 2 && (m.facts.deliveredCount ?? 1) > 0) {
      out.push({
        detector: 'empty_output',
        faultType: 'empty',
        severity: 'warning',
        confidence: 0.6,
        evidence: `payload of ${m.facts.payloadBytes} bytes`,
        location: { spanId: m.spanId, field: 'payload' },
      });
    }
    return out;
  },
};
