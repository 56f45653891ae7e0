/** docs/fault-catalog.md, generated from the catalog and its parameter schemas (a test fails when it is stale). */
import { z } from 'zod';
import { listFaults } from './index';
import type { FaultDefinition } from './types';

function paramsOf(f: FaultDefinition): string {
  const schema = z.toJSONSchema(f.params, { io: 'input' }) as { properties?: Record<string, { description?: string; default?: unknown }> };
  const props = Object.entries(schema.properties ?? {});
  if (props.length === 0) return '—';
  return props.map(([k, p]) => `\`${k}\`${p.default !== undefined ? ` = ${JSON.stringify(p.default)}` : ''}${p.description ? `: ${p.description}` : ''}`).join('<br>');
}

const esc = (s: string) => s.replace(/\|/g, '\\|');

function table(faults: readonly FaultDefinition[], withParams: boolean): string {
  const head = withParams ? '| name | type | category | strategy | what it does | params |\n|---|---|---|---|---|---|' : '| name | base | type | category | target | strategy | what it does |\n|---|---|---|---|---|---|---|';
  const rows = faults.map((f) =>
    withParams
      ? `| \`${f.name}\` | ${f.type} | ${f.category} | ${f.strategy.kind} (rule may override) | ${esc(f.description)} | ${esc(paramsOf(f))} |`
      : `| \`${f.name}\` | ${f.base} | ${f.type} | ${f.category} | ${f.target} | ${f.strategy.kind} | ${esc(f.description)} |`,
  );
  return [head, ...rows].join('\n');
}

export function catalogMarkdown(): string {
  const all = listFaults();
  const by = (mode: FaultDefinition['mode']) => all.filter((f) => f.mode === mode);
  return `<!-- Generated from src/catalog by src/catalog/doc.ts: do not edit (regenerate: UPDATE_CATALOG_DOC=1 npx vitest run test/catalog/doc.test.ts). -->
# Fault catalog

${all.length} faults a plan can name. \`type\` is the diagnosis taxonomy (src/taxonomy.ts) the fault is scored as;
\`category\` is AgentChaos's crash / omission / value, or communication. Every fire is recorded on its span under
\`faultline.fault.*\` (see docs/fault-plans.md).

## AgentChaos content faults (${by('content').length})

Applied to the JSON body of an OpenAI chat completion (Anthropic messages through a chat view: text blocks = content,
tool_use blocks = tool_calls, stop_reason ↔ finish_reason). The strategy is part of the name: single = the first
eligible call, persistent = every eligible call, intermittent = each eligible call with probability 0.3 (seeded
MT19937), burst = the first 3 eligible calls; pos_early/mid/late = exactly the 1st/2nd/3rd matched call with the
target-field guard off. An eligible call passes the guard: content faults skip responses with tool calls, tool faults
need one. Not applicable to streamed responses (reported as such in trigger verification).

${table(by('content'), false)}

## Transport faults (${by('transport').length})

What real clients see: nothing reaches the network (except after \`slow_first_byte\`'s delay). Default strategy
single; a rule may set \`strategy\` (single, persistent, intermittent + \`probability\`, burst + \`count\`).

${table(by('transport'), true)}

## Streaming faults (${by('stream').length})

Applied event by event on SSE responses (OpenAI and Anthropic); the stream is never buffered. Not applicable to JSON
responses.

${table(by('stream'), true)}

## Communication faults (${by('message').length})

"When Messages Go Wrong" faults between agents: on the in-process MessageChannel they transform the AgentMessage;
on A2A and MCP calls they act on the request message (the JSON-RPC params). Select them by \`boundary\`
(I1 plan, I2 action request, I3 observation, I4 evidence handoff, or your label), \`source\`, \`target\`, \`agent\`,
\`tool\`. A transform with nothing to act on (no donor message, no such field) is a no-op.

${table(by('message'), true)}
`;
}
