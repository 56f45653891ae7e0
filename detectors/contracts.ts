/**
 * Message contracts: which registered contracts apply to a message, and validating a payload against one whatever
 * its schema is — zod (`safeParse`), any Standard Schema (`~standard.validate`, synchronous results only) or a plain
 * JSON Schema object (our compiled validator).
 */
import type { AgentMessage } from '../instrumentation/types';
import { validateJsonSchema } from './json-schema';
import type { MessageContract } from './types';

export interface ContractIssue {
  path: string;
  message: string;
}

export function contractApplies(c: MessageContract, m: AgentMessage): boolean {
  const match = c.match;
  if (!match) return true;
  if (match.boundary !== undefined && match.boundary !== m.boundary) return false;
  if (match.target !== undefined && match.target !== m.target) return false;
  if (match.source !== undefined && match.source !== m.source) return false;
  return true;
}

export function contractsFor(contracts: readonly MessageContract[] | undefined, m: AgentMessage): MessageContract[] {
  return contracts ? contracts.filter((c) => contractApplies(c, m)) : [];
}

type SafeParse = (v: unknown) => {
  success: boolean;
  error?: { issues?: Array<{ path?: PropertyKey[]; message?: string }> };
};
type StandardValidate = (v: unknown) => unknown;

function pathText(path: readonly unknown[] | undefined): string {
  if (!path || path.length === 0) return '$';
  return (
    '$' +
    path
      .map((p) =>
        typeof p === 'number'
          ? `[${p}]`
          : `.${String(typeof p === 'object' && p !== null && 'key' in p ? (p as { key: unknown }).key : p)}`,
      )
      .join('')
  );
}

/** Validate a value against a contract schema; returns the issues (empty = valid). */
export function validateAgainst(schema: unknown, value: unknown): ContractIssue[] {
  if (schema === null || schema === undefined) return [];
  const s = schema as { safeParse?: unknown; '~standard'?: { validate?: unknown } };
  if (typeof s.safeParse === 'function') {
    const r = (s.safeParse as SafeParse).call(schema, value);
    if (r.success) return [];
    return (r.error?.issues ?? [{ message: 'invalid' }])
      .slice(0, 20)
      .map((i) => ({ path: pathText(i.path), message: i.message ?? 'invalid' }));
  }
  const std = s['~standard'];
  if (std && typeof std.validate === 'function') {
    const r = (std.validate as StandardValidate)(value) as
      { issues?: Array<{ path?: unknown[]; message?: string }> } | Promise<unknown>;
    if (r instanceof Promise) return []; // asynchronous validation cannot run in a synchronous detector
    return (r.issues ?? []).slice(0, 20).map((i) => ({ path: pathText(i.path), message: i.message ?? 'invalid' }));
  }
  if (typeof schema === 'object')
    return validateJsonSchema(schema, value).map((i) => ({ path: i.path, message: i.message }));
  return [];
}
