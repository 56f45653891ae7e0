/**
 * ARCF's hierarchical fallback selection (eq. 5): the score's terms and weights, and the HTTP guard choosing by it
 * through the real openai SDK — a fallback that just failed has lost health, so the next call goes to the other.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARCF_WEIGHTS, scoreFallbacks } from '../../detectors/guards/hierarchical-fallback';
import { CHAT_PLAIN } from '../support/chat-exchanges';
import { startLlmServer, type LlmServer } from '../support/llm-server';
import { setupGuardHarness, type GuardHarness } from './harness';

describe('the score', () => {
  it('is 0.40·health + 0.30·capability + 0.20/(1 + tier) + 0.10·(1 − cost/max)', () => {
    expect(ARCF_WEIGHTS).toEqual({ reliability: 0.4, capability: 0.3, hierarchy: 0.2, cost: 0.1 });
    const [a, b] = scoreFallbacks(
      [
        { model: 'a', capability: 0.5, tier: 1, cost: 10 },
        { model: 'b', cost: 5 },
      ],
      (i) => [1, 0.5][i]!,
      () => true,
    );
    // b: 0.4·0.5 + 0.3·1 + 0.2/(1+1) [its list place] + 0.1·(1 − 5/10) = 0.2 + 0.3 + 0.1 + 0.05
    // a: 0.4·1 + 0.3·0.5 + 0.2/2 + 0 = 0.4 + 0.15 + 0.1
    expect(b!.score).toBeCloseTo(0.65, 10);
    expect(a!.score).toBeCloseTo(0.65, 10);
    // A tie keeps the list order.
    expect([a!.index, b!.index]).toEqual([0, 1]);
  });

  it('health outweighs list order, capability outweighs health differences under 0.75 of a point, cost breaks near ties', () => {
    const order = (list: Parameters<typeof scoreFallbacks>[0], health: number[]) =>
      scoreFallbacks(
        list,
        (i) => health[i]!,
        () => true,
      ).map((s) => s.fallback.model);
    expect(order([{ model: 'first' }, { model: 'second' }], [0.2, 1])).toEqual(['second', 'first']);
    expect(order([{ model: 'weak', capability: 0.1 }, { model: 'able' }], [1, 0.6])).toEqual(['able', 'weak']);
    expect(
      order(
        [
          { model: 'dear', tier: 0, cost: 10 },
          { model: 'cheap', tier: 0, cost: 1 },
        ],
        [1, 1],
      ),
    ).toEqual(['cheap', 'dear']);
    // Open circuits (not eligible) are never chosen.
    expect(
      scoreFallbacks(
        [{ model: 'x' }, { model: 'y' }],
        () => 1,
        (i) => i === 1,
      ).map((s) => s.fallback.model),
    ).toEqual(['y']);
  });
});

describe('the HTTP guard chooses by the score', () => {
  const TEXT = CHAT_PLAIN;
  let h: GuardHarness;
  let server: LlmServer;
  let openai: OpenAI;
  beforeAll(async () => {
    h = setupGuardHarness({ sleep: async () => {}, random: () => 0.5 });
    server = await startLlmServer((req) => {
      const model = (JSON.parse(req.body.toString('utf8')) as { model: string }).model;
      if (model === 'fb-b')
        return {
          status: 200,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ ...(TEXT.response as object), model, created: Math.floor(Date.now() / 1000) }),
        };
      return {
        status: 500,
        headers: { 'content-type': 'application/json' },
        body: '{"error":{"message":"down","type":"server_error"}}',
      };
    });
    openai = new OpenAI({ apiKey: 'sk-test', baseURL: `${server.url}/v1`, maxRetries: 0 });
  });
  afterAll(async () => {
    await server.close();
    await h.shutdown();
  });

  it('a fallback that failed loses health: the next call goes to the other first', async () => {
    h.config = {
      routes: [
        {
          name: 'chat',
          retry: false,
          circuit: false,
          fallback: [
            { name: 'a', model: 'fb-a' },
            { name: 'b', model: 'fb-b' },
          ],
        },
      ],
    };
    const models = () => server.requests.map((r) => (JSON.parse(r.body.toString('utf8')) as { model: string }).model);
    const ask = () => openai.chat.completions.create({ model: 'primary', messages: [{ role: 'user', content: 'hi' }] });
    const first = await h.task(undefined, ask);
    expect(first.result.model).toBe('fb-b');
    // Both untried fallbacks scored 1.0 for health: the first in the list (closer in the hierarchy) went first.
    expect(models()).toEqual(['primary', 'fb-a', 'fb-b']);
    await h.task(undefined, ask);
    // fb-a's health is now 0/1: 0.4·0 + 0.3 + 0.2 + 0.05 = 0.55 against fb-b's 0.4 + 0.3 + 0.1 + 0.05 = 0.85.
    expect(models().slice(3)).toEqual(['primary', 'fb-b']);
  });
});
