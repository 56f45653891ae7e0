/**
 * The wire shape of a recorded exchange and how a provider sends its body: pure helpers, no file access. Kept apart
 * from corpus.ts (the loader of ../shared/corpus) so that a server or test using them is not in the conformance tier.
 */

export interface CorpusRecord {
  id: string;
  endpoint: string;
  /** null for the response-only fixtures of openai-responses.jsonl. */
  status: number;
  model?: string;
  tags: string[];
  request: Record<string, unknown>;
  response?: unknown;
  sse?: string;
  /** Streams that are not SSE: Gemini's JSON array (without alt=sse), Ollama's NDJSON. */
  stream?: string;
  framing?: 'sse' | 'json-array' | 'ndjson';
}

/** The response body bytes a provider would send for a record (JSON re-serialised compactly, streams verbatim). */
export function recordBody(r: CorpusRecord): string {
  return r.sse ?? r.stream ?? JSON.stringify(r.response);
}

/** Split a JSON-array or NDJSON stream into the pieces a server flushes: one element (with its separator) or line each. */
export function streamPieces(r: CorpusRecord): string[] {
  const body = r.stream ?? '';
  if (r.framing === 'ndjson') return body.split(/(?<=\n)/).filter((l) => l !== '');
  // JSON array: cut after each top-level element's closing brace (the separator goes with the next piece).
  const out: string[] = [];
  let depth = 0;
  let inString = false;
  let escaped = false;
  let start = 0;
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (inString) {
      if (escaped) escaped = false;
      else if (c === '\\') escaped = true;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      depth--;
      if (depth === 1 && c === '}') {
        out.push(body.slice(start, i + 1));
        start = i + 1;
      }
    }
  }
  if (start < body.length) out.push(body.slice(start));
  return out;
}

/** Split an SSE body into its events (each with its trailing blank line), the way a provider flushes them. */
export function sseEvents(sse: string): string[] {
  const out: string[] = [];
  const re = /[\s\S]*?(?:\r?\n\r?\n|$)/g;
  for (const m of sse.matchAll(re)) if (m[0]) out.push(m[0]);
  return out;
}
