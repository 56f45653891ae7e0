/**
 * Schema contract: tool-call arguments against the JSON Schema the request gave for that tool (compiled once per
 * schema object), and agent messages against the contracts the user registered (zod, Standard Schema or JSON Schema).
 */
import type { Detector, Finding, LlmObservation, MessageObservation, Observation } from './types';
import { contractsFor, validateAgainst } from './contracts';
import { validateJsonSchema } from './json-schema';
import { argumentsValue, failedCall, safeParse, scanJson } from './text';

export const schemaContractDetector: Detector = {
  name: 'schema_contract',
  applies: (obs) =>
    obs.hasContent && (obs.kind === 'message' || (!failedCall(obs) && obs.response.toolCalls.length > 0)),
  detect(obs: Observation, ctx): Finding[] {
    const out: Finding[] = [];
    if (obs.kind === 'llm') {
      const o = obs as LlmObservation;
      const tools = o.request?.tools ?? [];
      o.response.toolCalls.forEach((tc, index) => {
        const field = `tool_calls[${index}].arguments`;
        const add = (confidence: number, evidence: string) =>
          out.push({
            detector: 'schema_contract',
            faultType: 'schema',
            severity: 'error',
            confidence,
            evidence,
            location: { spanId: o.spanId, field, index },
          });
        const def = tools.find((t) => t.name === tc.name);
        if (!def) {
          if (tools.length > 0) add(0.8, `call to tool "${tc.name}" that the request did not define`);
          return;
        }
        if (def.type === 'custom') return; // a custom (free-form / grammar) tool takes text, not JSON
        const raw = tc.arguments.trim() === '' ? '{}' : tc.arguments;
        const args = raw === tc.arguments ? argumentsValue(tc) : safeParse(raw);
        if (args === undefined) {
          // Cut JSON is structural truncation's finding; anything else that does not parse is a contract breach.
          if (scanJson(raw) !== 'incomplete') add(0.9, `arguments of "${tc.name}" are not valid JSON`);
          return;
        }
        if (def.parameters === undefined) return;
        const issues = validateJsonSchema(def.parameters, args);
        const undeclared = issues.length === 0 ? undeclaredKeys(def.parameters, args) : [];
        if (undeclared.length > 0) {
          add(
            0.8,
            `arguments of "${tc.name}" carry ${undeclared.map((k) => `"${k}"`).join(', ')}, which its schema does not declare`,
          );
          return;
        }
        if (issues.length > 0) {
          const first = issues[0]!;
          add(
            0.95,
            `arguments of "${tc.name}" break its schema: ${first.path} ${first.message}${issues.length > 1 ? ` (+${issues.length - 1} more)` : ''}`,
          );
        }
      });
      return out;
    }
    const m = obs as MessageObservation;
    m.delivered.forEach((msg, index) => {
      for (const c of contractsFor(ctx.contracts, msg)) {
        if (c.schema === undefined) continue;
        const issues = validateAgainst(c.schema, msg.payload);
        if (issues.length === 0) continue;
        const first = issues[0]!;
        out.push({
          detector: 'schema_contract',
          faultType: 'schema',
          severity: 'error',
          confidence: 0.95,
          evidence: `message breaks contract "${c.name}": ${first.path} ${first.message}${issues.length > 1 ? ` (+${issues.length - 1} more)` : ''}`,
          location: { spanId: m.spanId, field: `payload${first.path.slice(1)}`, index },
        });
      }
    });
    return out;
  },
};

/**
 * Keys the schema's `properties` do not declare while `additionalProperties` is left unspecified: JSON Schema allows
 * them, but a model calling a function never invents parameters, so one is a contract breach in practice.
 */
function undeclaredKeys(schema: unknown, args: unknown): string[] {
  if (typeof schema !== 'object' || schema === null || typeof args !== 'object' || args === null || Array.isArray(args))
    return [];
  const s = schema as { properties?: unknown; additionalProperties?: unknown; patternProperties?: unknown };
  if (
    typeof s.properties !== 'object' ||
    s.properties === null ||
    s.additionalProperties !== undefined ||
    s.patternProperties !== undefined
  )
    return [];
  const declared = s.properties as Record<string, unknown>;
  return Object.keys(args).filter((k) => !(k in declared));
}
