/** One place to check a span: name, kind, status and a subset of attributes. */
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { expect } from 'vitest';

export interface ExpectedSpan {
  name?: string;
  kind?: SpanKind;
  status?: SpanStatusCode;
  attributes?: Record<string, unknown>;
  /** Attribute keys that must be absent. */
  absent?: string[];
}

export function assertSpan(span: ReadableSpan | undefined, expected: ExpectedSpan): ReadableSpan {
  expect(span, 'span exists').toBeDefined();
  const s = span as ReadableSpan;
  if (expected.name !== undefined) expect(s.name).toBe(expected.name);
  if (expected.kind !== undefined) expect(SpanKind[s.kind]).toBe(SpanKind[expected.kind]);
  if (expected.status !== undefined) expect(SpanStatusCode[s.status.code]).toBe(SpanStatusCode[expected.status]);
  for (const [k, v] of Object.entries(expected.attributes ?? {})) {
    expect(s.attributes[k], `attribute ${k}`).toEqual(v);
  }
  for (const k of expected.absent ?? []) expect(s.attributes[k], `attribute ${k} absent`).toBeUndefined();
  return s;
}
