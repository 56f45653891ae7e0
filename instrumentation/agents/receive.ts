/**
 * Receive spans: one span per message a receiver got, at the receiver — a MessageChannel delivery, an A2A server's
 * SendMessage, an MCP server's tools/call. It records what arrived (the same content-free facts as the sender's span:
 * envelope, keys, size, hash, shape; the payload only with content capture), when the sender says it was sent, which
 * copy of one send it is, and the receiver's own contract check, and it links to the sender's span. So a message
 * fault is visible from either end: from the receive span alone, and — when the sender's span is in the same trace,
 * in this process or another — by comparing both, as an end-to-end integrity check would.
 */
import { SpanKind, type Attributes, type Context, type Link, type Span, type SpanContext } from '@opentelemetry/api';
import { now } from '../../src/clock';
import {
  ATTR_FL_MESSAGE_CONTRACT,
  ATTR_FL_MESSAGE_CONTRACT_ISSUES,
  ATTR_FL_MESSAGE_COPY,
  ATTR_FL_MESSAGE_PAYLOAD_BYTES,
  ATTR_MESSAGING_DESTINATION_NAME,
  ATTR_MESSAGING_MESSAGE_BODY_SIZE,
  ATTR_MESSAGING_MESSAGE_ID,
  ATTR_MESSAGING_OPERATION_TYPE,
  ATTR_MESSAGING_SYSTEM,
} from '../semconv';
import type { AgentMessage } from '../types';
import { contractIssues } from './contract';
import { tracer } from './invoke-agent';
import { messageAttributes } from './message';

export interface ReceiveSpanInput {
  name: string;
  kind?: SpanKind;
  /** The message as the receiver got it. */
  message: AgentMessage;
  /** Context the span starts in (the receiver's, or the sender's propagated one). */
  parent: Context;
  /** The sender's span, when known: linked. */
  sender?: SpanContext;
  captureContent: boolean;
  /** Which delivered copy of one send this is (0-based), when the receiver can tell. */
  copy?: number;
  /** The receiver's declared contract (zod, Standard Schema or JSON Schema), checked against the payload. */
  contract?: unknown;
  /** What the contract is checked against, when not the whole payload (an A2A message's data part). */
  contractValue?: unknown;
  /** `messaging.system`: `faultline` (in-process channel), `a2a`, `mcp`. */
  system: string;
  /** Protocol attributes (a2a.*, mcp.*, gen_ai.*). */
  attributes?: Attributes;
}

/** The attributes of a receive span (exported for tests and for receivers that build their own span). */
export function receiveAttributes(input: Omit<ReceiveSpanInput, 'name' | 'kind' | 'parent' | 'sender'>): Attributes {
  const { message } = input;
  const attrs: Attributes = {
    ...input.attributes,
    ...messageAttributes(message, input.captureContent, 'receive'),
    [ATTR_MESSAGING_SYSTEM]: input.system,
    [ATTR_MESSAGING_OPERATION_TYPE]: 'receive',
  };
  if (message.target !== '') attrs[ATTR_MESSAGING_DESTINATION_NAME] = message.target;
  if (typeof message.id === 'string' && message.id !== '') attrs[ATTR_MESSAGING_MESSAGE_ID] = message.id;
  const bytes = attrs[ATTR_FL_MESSAGE_PAYLOAD_BYTES];
  if (typeof bytes === 'number') attrs[ATTR_MESSAGING_MESSAGE_BODY_SIZE] = bytes;
  if (input.copy !== undefined) attrs[ATTR_FL_MESSAGE_COPY] = input.copy;
  if (input.contract !== undefined) {
    const issues = contractIssues(input.contract, 'contractValue' in input ? input.contractValue : message.payload);
    if (issues !== undefined) {
      attrs[ATTR_FL_MESSAGE_CONTRACT] = issues.length === 0 ? 'valid' : 'invalid';
      if (issues.length > 0) attrs[ATTR_FL_MESSAGE_CONTRACT_ISSUES] = issues;
    }
  }
  return attrs;
}

/** Start a receive span; the caller ends it (after the receiver's handler ran, or at once). */
export function startReceiveSpan(input: ReceiveSpanInput): Span {
  const links: Link[] = input.sender ? [{ context: input.sender, attributes: { 'faultline.link': 'sender' } }] : [];
  return tracer().startSpan(
    input.name,
    {
      kind: input.kind ?? SpanKind.CONSUMER,
      attributes: receiveAttributes(input),
      links,
      startTime: now(),
    },
    input.parent,
  );
}
