/** docs/fault-catalog.md, generated from the catalog and its parameter schemas (a test fails when it is stale). */
import { z } from 'zod';
import { notApplicableReason, WIRE_FORMATS } from './formats';
import { listFaults } from './index';
import type { FaultDefinition } from './types';

function paramsOf(f: FaultDefinition): string {
  const schema = z.toJSONSchema(f.params, { io: 'input' }) as {
    properties?: Record<string, { description?: string; default?: unknown }>;
  };
  const props = Object.entries(schema.properties ?? {});
  if (props.length === 0) return '—';
  return props
    .map(
      ([k, p]) =>
        `\`${k}\`${p.default !== undefined ? ` = ${JSON.stringify(p.default)}` : ''}${p.description ? `: ${p.description}` : ''}`,
    )
    .join('<br>');
}

const esc = (s: string) => s.replace(/\|/g, '\\|');

function table(faults: readonly FaultDefinition[], withParams: boolean): string {
  const head = withParams
    ? '| name | type | category | strategy | what it does | params |\n|---|---|---|---|---|---|'
    : '| name | base | type | category | target | strategy | what it does |\n|---|---|---|---|---|---|---|';
  const rows = faults.map((f) =>
    withParams
      ? `| \`${f.name}\` | ${f.type} | ${f.category} | ${f.strategy.kind} (rule may override) | ${esc(f.description)} | ${esc(paramsOf(f))} |`
      : `| \`${f.name}\` | ${f.base} | ${f.type} | ${f.category} | ${f.target} | ${f.strategy.kind} | ${esc(f.description)} |`,
  );
  return [head, ...rows].join('\n');
}

/** Which field of each wire format the faults touch, and what their errors look like. */
function formatsTable(): string {
  const rows = WIRE_FORMATS.map((f) => {
    const c = f.content;
    return `| ${f.label} | ${c ? esc(c.text) : '—'} | ${c?.toolCalls ? esc(c.toolCalls) : '—'} | ${c ? esc(c.finish) : '—'} | ${f.streams ?? 'no streams'} | ${f.terminal ? esc(f.terminal) : '—'} | ${f.errors} |`;
  });
  return [
    '| format | content (text) | tool calls | finish reason | streams | terminal marker | error body |',
    '|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

/** Where a fault family has no meaning, and why (one row per family and format). */
function gapsTable(): string {
  const families: Array<[string, FaultDefinition | undefined]> = [
    [
      'content faults on text (llm_*, compound_*)',
      listFaults().find((f) => f.mode === 'content' && f.target === 'content'),
    ],
    [
      'tool-call faults (tool_*, compound_stale_data / wrong_entity)',
      listFaults().find((f) => f.mode === 'content' && f.target === 'tool_calls'),
    ],
    ['stream_cut, stream_stall, stream_corrupt_chunk', listFaults().find((f) => f.name === 'stream_cut')],
    ['stream_drop_done', listFaults().find((f) => f.name === 'stream_drop_done')],
  ];
  const rows: string[] = [];
  for (const [family, fault] of families) {
    if (fault === undefined) continue;
    for (const f of WIRE_FORMATS) {
      const reason = notApplicableReason(fault, f.protocol);
      if (reason !== undefined) rows.push(`| ${family} | ${f.label} | ${reason} |`);
    }
  }
  const messages = listFaults().filter((f) => f.mode === 'message');
  if (messages.length > 0)
    rows.push(
      `| the ${messages.length} communication faults | every LLM format above | ${notApplicableReason(messages[0], 'openai.chat') ?? ''} |`,
    );
  return ['| faults | format | no meaning because |', '|---|---|---|', ...rows].join('\n');
}

export function catalogMarkdown(): string {
  const all = listFaults();
  const by = (mode: FaultDefinition['mode']) => all.filter((f) => f.mode === mode);
  return `<!-- Generated from src/catalog by src/catalog/doc.ts: do not edit (regenerate: UPDATE_CATALOG_DOC=1 npx vitest run test/catalog/doc.test.ts). -->
# Fault catalog

${all.length} faults a plan can name. \`type\` is the diagnosis taxonomy (src/taxonomy.ts) the fault is scored as;
\`category\` is AgentChaos's crash / omission / value, or communication. Every fire is recorded on its span under
\`faultline.fault.*\` (see docs/fault-plans.md).

## Per wire format

Every fault is applied in the call's own wire format. The AgentChaos faults are defined on an OpenAI chat completion
(\`message.content\`, \`message.tool_calls\`, \`finish_reason\`); in the other formats they act on the fields below,
and only the fields a fault changed are written back (thinking, reasoning items, built-in tool calls, thought
signatures and usage are kept). A compressed answer is decoded first (gzip, deflate, br, zstd where Node has it) and
reaches the application decoded; a coding that cannot be decoded, or a JSON answer over 32 MiB, makes the fault not
applicable. Transport faults answer with the format's own error body. Streaming faults count the stream's events:
SSE events with data, NDJSON lines, JSON-array elements.

${formatsTable()}

Where a fault has no meaning the call passes untouched, \`faultline verify\` lists the rule as not applicable, and a
plan whose rule can meet such a format (judged on its \`operation\`, \`provider\` and \`url\` selectors) says so once
on stderr at start-up. Two kinds are announced only when the rule can act nowhere else: a stream fault meeting formats
that never stream (like meeting any JSON answer), and a communication fault meeting LLM calls (it acts on the agent
messages the same rule meets), so \`stream_cut\` with \`operation: embeddings\` or \`non_delivery\` with
\`operation: chat\` is announced, and either without a selector is not. Every fault × format cell is tested
(test/inject/fault-table.test.ts):

${gapsTable()}

## AgentChaos content faults (${by('content').length})

Applied to the JSON answer of each LLM format through its chat-completion view (see above). The strategy is part of the name: single = the first
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

Applied event by event on streamed answers (SSE of every LLM API and A2A, Ollama's NDJSON, Gemini's JSON array); the
stream is never buffered and the events before and after the fault pass as they came. Not applicable to JSON
answers.

${table(by('stream'), true)}

## Communication faults (${by('message').length})

"When Messages Go Wrong" faults between agents: on the in-process MessageChannel they transform the AgentMessage;
on A2A and MCP calls they act on the request message (the JSON-RPC params). Select them by \`boundary\`
(I1 plan, I2 action request, I3 observation, I4 evidence handoff, or your label), \`source\`, \`target\`, \`agent\`,
\`tool\`. A transform with nothing to act on (no donor message, no such field) is a no-op.

${table(by('message'), true)}
`;
}
