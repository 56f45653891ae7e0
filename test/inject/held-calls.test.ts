/**
 * Nothing of a call is held once its span has ended and its fault was decided: many calls with large request bodies,
 * each its own task, under a fault of each family, through the real openai client against a loopback server, leave
 * no call in the span layer's sets.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { heldExchangeCount } from '../../instrumentation/interceptor';
import { loadCorpus } from '../support/corpus';
import { corpusReply, startLlmServer, type LlmServer } from '../support/llm-server';
import { setupHarness, type Harness } from './harness';

const TEXT = loadCorpus('openai-chat.jsonl').find((r) => r.id === '55dae6f503a5')!;
const BIG = 'x'.repeat(256 * 1024);

let server: LlmServer;
let h: Harness;
let client: OpenAI;
beforeAll(async () => {
  server = await startLlmServer(() => corpusReply(TEXT));
  h = setupHarness();
  client = new OpenAI({ apiKey: 'sk-test', baseURL: `${server.url}/v1`, maxRetries: 0 });
});
afterAll(async () => {
  await h.shutdown();
  await server.close();
});

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const heapAfterGc = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};

async function settled(): Promise<number> {
  for (let i = 0; i < 200 && heldExchangeCount() > 0; i++) await new Promise((r) => setTimeout(r, 5));
  return heldExchangeCount();
}

describe('no call is held after its span ended', () => {
  for (const fault of ['http_503', 'llm_error_single', 'llm_truncate_single', 'conn_reset']) {
    it(`${fault}: 200 calls with 256 KB bodies leave nothing held`, async () => {
      const call = () =>
        h.task({ rules: [{ fault }] }, async () => {
          await client.chat.completions
            .create({ ...(TEXT.request as object), messages: [{ role: 'user', content: BIG }] } as never)
            .catch(() => undefined);
        });
      for (let i = 0; i < 20; i++) await call(); // warm up
      await settled();
      h.exporter.reset();
      const before = heapAfterGc();
      for (let i = 0; i < 200; i++) {
        await h.task({ rules: [{ fault }] }, async () => {
          await client.chat.completions
            .create({ ...(TEXT.request as object), messages: [{ role: 'user', content: BIG }] } as never)
            .catch(() => undefined);
        });
      }
      expect(await settled()).toBe(0);
      h.exporter.reset();
      const grown = heapAfterGc() - before;
      // 200 calls held at 256 KB each would be 50 MB.
      expect(grown).toBeLessThan(10 * 1024 * 1024);
    }, 60_000);
  }
});
