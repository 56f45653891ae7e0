/** Records of /work/shared/corpus (real recorded LLM API traffic), loaded once per file. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CORPUS as SHARED_CORPUS } from './shared';

export const CORPUS_DIR = process.env.FAULTLINE_CORPUS_DIR ?? SHARED_CORPUS;

export interface CorpusRecord {
  id: string;
  endpoint: string;
  status: number;
  model?: string;
  tags: string[];
  request: Record<string, unknown>;
  response?: unknown;
  sse?: string;
}

const cache = new Map<string, CorpusRecord[]>();

export function loadCorpus(file: 'openai-chat.jsonl' | 'openai-chat-stream.jsonl' | 'anthropic-messages.jsonl'): CorpusRecord[] {
  let records = cache.get(file);
  if (!records) {
    records = readFileSync(join(CORPUS_DIR, file), 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as CorpusRecord);
    cache.set(file, records);
  }
  return records;
}

/** The response body bytes a provider would send for a record (JSON re-serialised compactly, SSE verbatim). */
export function recordBody(r: CorpusRecord): string {
  return r.sse ?? JSON.stringify(r.response);
}

/** Split an SSE body into its events (each with its trailing blank line), the way a provider flushes them. */
export function sseEvents(sse: string): string[] {
  const out: string[] = [];
  const re = /[\s\S]*?(?:\r?\n\r?\n|$)/g;
  for (const m of sse.matchAll(re)) if (m[0]) out.push(m[0]);
  return out;
}
