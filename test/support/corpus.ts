/** Records of /work/shared/corpus (real recorded LLM API traffic), loaded once per file. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CORPUS as SHARED_CORPUS } from './shared';
import type { CorpusRecord } from './wire-record';

export { recordBody, sseEvents, streamPieces, type CorpusRecord } from './wire-record';

export const CORPUS_DIR = process.env.FAULTLINE_CORPUS_DIR ?? SHARED_CORPUS;

export type CorpusFile =
  | 'openai-chat.jsonl'
  | 'openai-chat-stream.jsonl'
  | 'anthropic-messages.jsonl'
  | 'openai-responses.jsonl'
  | 'gemini.jsonl'
  | 'ollama.jsonl'
  | 'embeddings.jsonl';

const cache = new Map<string, CorpusRecord[]>();

export function loadCorpus(file: CorpusFile): CorpusRecord[] {
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
