/** Recorded LLM traffic from /work/shared/corpus as observations, read through the interceptor's own protocol modules. */
import { readFileSync } from 'node:fs';
import { llmObservationFromWire, type LlmProtocol } from '../../../detectors/wire';
import type { LlmObservation } from '../../../detectors/types';
import { CORPUS as SHARED_CORPUS } from '../../support/shared';

export const CORPUS_DIR = process.env.FAULTLINE_CORPUS ?? SHARED_CORPUS;

export interface CorpusRecord {
  id: string;
  file: string;
  status: number;
  model?: string;
  tags: string[];
  request: unknown;
  response?: unknown;
  sse?: string;
  protocol: LlmProtocol;
}

export function loadCorpus(
  files = ['openai-chat.jsonl', 'openai-chat-stream.jsonl', 'anthropic-messages.jsonl'],
): CorpusRecord[] {
  const out: CorpusRecord[] = [];
  for (const file of files) {
    const protocol: LlmProtocol = file.startsWith('anthropic') ? 'anthropic.messages' : 'openai.chat';
    for (const line of readFileSync(`${CORPUS_DIR}/${file}`, 'utf8').split('\n')) {
      if (line.trim() === '') continue;
      const r = JSON.parse(line) as Omit<CorpusRecord, 'file' | 'protocol'>;
      out.push({ ...r, file, protocol });
    }
  }
  return out;
}

/** The body bytes of a record: the recorded SSE text, or the JSON response re-serialised. */
export function bodyOf(r: CorpusRecord, response: unknown = r.response): string {
  return r.sse ?? JSON.stringify(response);
}

/** When the recorded request was sent: the provider's `created` (OpenAI), else a fixed date (Anthropic has none). */
export function sentAt(r: CorpusRecord): number {
  const created =
    (r.response as { created?: unknown } | undefined)?.created ?? /"created":\s*(\d+)/.exec(r.sse ?? '')?.[1];
  return created !== undefined ? Number(created) * 1000 : Date.UTC(2025, 0, 1);
}

export function observe(r: CorpusRecord, response: unknown = r.response, status = r.status): LlmObservation {
  const chunks = [r.sse !== undefined && response === r.response ? r.sse : JSON.stringify(response)];
  return llmObservationFromWire(r.protocol, r.request, { status, chunks, durationMs: 500 }, r.id, sentAt(r));
}
