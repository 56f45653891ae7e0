/**
 * The detectors' observations (detectors/types.ts) built from the one reading of a trace (src/traces/view): an LLM
 * call's request, response and content-free facts; a message's ends. Apart from from-span.ts (which runs the
 * detectors) so that a monitor reading observations does not depend on the detector registry.
 */
import type { LlmRequestSummary, LlmResponseSummary, UsageSummary } from '../instrumentation/types';
import { num, type SpanRecord } from '../src/traces/model';
import {
  isMessageSpan,
  joinMessages,
  llmOperation,
  messageObservation,
  readMessage,
  type LlmCall,
} from '../src/traces/view';
import { readLlmCall } from '../src/traces/view/llm';
import type { LlmObservation, MessageObservation, Observation } from './types';

/** The detectors' observation of one LLM call of the layer. */
export function llmObservation(call: LlmCall): LlmObservation {
  const span = call.span;
  const request: LlmRequestSummary = {
    provider: call.provider ?? 'unknown',
    operation: call.operation,
    stream: call.stream === true,
    messages: call.input ?? [],
    tools: call.tools,
    time: span.start,
  };
  if (call.requestModel !== undefined) request.model = call.requestModel;
  if (call.maxTokens !== undefined) request.maxTokens = call.maxTokens;
  if (call.temperature !== undefined) request.temperature = call.temperature;
  if (call.system !== undefined) request.systemInstructions = call.system;
  const usage: UsageSummary = { ...call.usage };
  const fl = call.faultline;
  const response: LlmResponseSummary = {
    finishReasons: call.finishReasons,
    text: call.hasContent ? outputText(call.output) : '',
    toolCalls: call.hasContent ? call.toolCalls : [],
    durationMs: call.durationMs,
  };
  const status = num(span.attributes, 'http.response.status_code');
  if (status !== undefined) response.status = status;
  if (call.responseId !== undefined) response.id = call.responseId;
  if (call.responseModel !== undefined) response.model = call.responseModel;
  if (call.created !== undefined) response.created = call.created;
  if (Object.keys(usage).length > 0) response.usage = usage;
  if (fl?.contentType !== undefined) response.contentType = fl.contentType;
  if (fl?.bodyBytes !== undefined) response.bodyBytes = fl.bodyBytes;
  if (fl?.chunks !== undefined) {
    response.stream = { chunks: fl.chunks, done: fl.done === true };
    if (call.timeToFirstChunkMs !== undefined) response.stream.timeToFirstChunkMs = call.timeToFirstChunkMs;
    if (fl.malformedEvents !== undefined && fl.malformedEvents > 0)
      response.stream.malformedEvents = fl.malformedEvents;
  }
  if (call.failure?.errorType !== undefined) response.errorType = call.failure.errorType;
  else if (call.failure?.httpStatus !== undefined) response.errorType = String(call.failure.httpStatus);
  if (fl?.aborted === true) response.aborted = true;
  const errorText = [call.failure?.message, call.failure?.detail].filter((t) => t !== undefined).join('\n');
  if (errorText !== '') response.errorMessage = errorText.slice(0, 4096);

  const obs: LlmObservation = { kind: 'llm', spanId: span.spanId, request, response, hasContent: call.hasContent };
  const facts: NonNullable<LlmObservation['facts']> = {};
  if (call.outputChars !== undefined && !call.hasContent) facts.outputChars = call.outputChars;
  if (fl?.outputChars !== undefined) facts.outputChars = fl.outputChars;
  if (call.toolCallCount !== undefined) facts.toolCallCount = call.toolCallCount;
  if (fl?.contentHash !== undefined) facts.contentHash = fl.contentHash;
  if (Object.keys(facts).length > 0) obs.facts = facts;
  return obs;
}

/** The text parts of every output message, concatenated in order (a loop: this runs once per LLM call). */
function outputText(output: LlmCall['output']): string {
  let text = '';
  if (output)
    for (const m of output)
      for (const p of m.parts) if (p.type === 'text') text += String((p as { content?: unknown }).content ?? '');
  return text;
}

/** An LlmObservation from one LLM span read on its own (no trace context: no agent, no wrapper check). */
export function llmObservationFromSpan(span: SpanRecord): LlmObservation {
  return llmObservation(readLlmCall(span, llmOperation(span) ?? 'chat', 1));
}

/** A MessageObservation from one message span read on its own (no other end: a receive span is one delivery). */
export function messageObservationFromSpan(span: SpanRecord): MessageObservation {
  return messageObservation(joinMessages([readMessage(span)], () => 0)[0]!);
}

/** The observation a span carries, or undefined for spans that are neither LLM calls nor messages. */
export function observationFromSpan(span: SpanRecord): Observation | undefined {
  if (llmOperation(span) !== undefined) return llmObservationFromSpan(span);
  if (isMessageSpan(span)) return messageObservationFromSpan(span);
  return undefined;
}
