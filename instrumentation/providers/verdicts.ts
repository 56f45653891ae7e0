/**
 * Content-free verdicts on an LLM answer, made while faultline's layer holds the answer and the request's
 * declarations (tool definitions, `response_format`), so that diagnosis needs no content: whether each tool call's
 * arguments parse, whether they are valid against the declared schema (and which JSON-Schema keyword at which path
 * breaks), whether the tool was declared at all, whether the text or arguments carry garbled characters (U+FFFD,
 * confirmed mojibake runs), whether the text is blank, and a structured answer against its declared schema. Only
 * verdicts are written (semconv.ts `faultline.tool_call.*`, `faultline.response.*`), never a value: a path names the
 * schema's properties, and for an undeclared property the object holding it, not the model's key.
 */
import type { Attributes } from '@opentelemetry/api';
import { mojibakeRuns } from '../../src/wire/mojibake';
import { validateJsonSchema, type SchemaIssue } from '../../detectors/json-schema';
import {
  ATTR_FL_RESPONSE_BLANK,
  ATTR_FL_RESPONSE_GARBLED,
  ATTR_FL_RESPONSE_SCHEMA,
  ATTR_FL_RESPONSE_SCHEMA_ISSUE,
  ATTR_FL_TOOL_CALL_ARGUMENTS_PARSE,
  ATTR_FL_TOOL_CALL_SCHEMA,
  ATTR_FL_TOOL_CALL_SCHEMA_ISSUE,
} from '../semconv';
import type { ToolCallSummary, ToolDefinition } from '../types';

/** What the request declared, as far as the answer is judged against it. */
export interface Declared {
  tools?: readonly ToolDefinition[];
  /** The JSON Schema of `response_format: {type: 'json_schema'}`. */
  responseSchema?: unknown;
}

/** Answers longer than this are not scanned for garbling or validated (the verdicts stay absent, not negative). */
const MAX_CHARS = 1_000_000;

function parse(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

/** `keyword path`, the path cut before a key the model wrote (an undeclared property names content). */
function issueText(i: SchemaIssue): string {
  const path =
    i.keyword === 'additionalProperties' || i.keyword === 'unevaluatedProperties'
      ? i.path.replace(/\.[^.[\]]*$|\[\d+\]$/, '') || '$'
      : i.path;
  return `${i.keyword} ${path}`;
}

function garbling(texts: readonly string[]): string[] {
  const kinds = new Set<string>();
  for (const t of texts) {
    if (t.includes('\uFFFD')) kinds.add('replacement_char');
    if (mojibakeRuns(t).length > 0) kinds.add('mojibake');
  }
  return [...kinds];
}

/** The verdict attributes of one answer (first choice's text and tool calls). Never throws. */
export function answerVerdicts(
  text: string,
  toolCalls: readonly ToolCallSummary[],
  declared: Declared | undefined,
): Attributes {
  const a: Attributes = {};
  try {
    const size = text.length + toolCalls.reduce((n, t) => n + t.arguments.length, 0);
    if (size > MAX_CHARS) return a;
    if (toolCalls.length > 0) {
      const parsed: string[] = [];
      const schema: string[] = [];
      const issues: string[] = [];
      for (const tc of toolCalls) {
        const p = parse(tc.arguments.trim() === '' ? '{}' : tc.arguments);
        parsed.push(p.ok ? 'ok' : 'failed');
        const def = declared?.tools?.find((d) => d.name === tc.name);
        if (declared?.tools === undefined || declared.tools.length === 0) schema.push('no_schema');
        else if (!def) schema.push('undeclared');
        else if (def.parameters === undefined) schema.push('no_schema');
        else if (!p.ok) schema.push('unparsed');
        else {
          const first = validateJsonSchema(def.parameters, p.value)[0];
          schema.push(first ? 'invalid' : 'valid');
          issues.push(first ? issueText(first) : '');
          continue;
        }
        issues.push('');
      }
      a[ATTR_FL_TOOL_CALL_ARGUMENTS_PARSE] = parsed;
      a[ATTR_FL_TOOL_CALL_SCHEMA] = schema;
      a[ATTR_FL_TOOL_CALL_SCHEMA_ISSUE] = issues;
    } else {
      a[ATTR_FL_RESPONSE_BLANK] = text.trim() === '';
      if (declared?.responseSchema !== undefined && text.trim() !== '') {
        const p = parse(text);
        if (!p.ok) a[ATTR_FL_RESPONSE_SCHEMA] = 'unparsed';
        else {
          const first = validateJsonSchema(declared.responseSchema, p.value)[0];
          a[ATTR_FL_RESPONSE_SCHEMA] = first ? 'invalid' : 'valid';
          if (first) a[ATTR_FL_RESPONSE_SCHEMA_ISSUE] = issueText(first);
        }
      }
    }
    const garbled = garbling([text, ...toolCalls.map((t) => t.arguments)]);
    if (garbled.length > 0) a[ATTR_FL_RESPONSE_GARBLED] = garbled;
  } catch {
    // A verdict is a help, never a failure of the call: a validator's bug leaves the verdicts out.
    return {};
  }
  return a;
}
