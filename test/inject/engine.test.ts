/**
 * Plan semantics through the real stack: per-task state and reset, reproducibility by seed, selection independent of
 * sampling, position and selectors, trigger verification live and offline, and safety switches.
 */
import { AlwaysOffSampler, SamplingDecision, type Sampler } from '@opentelemetry/sdk-trace-base';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LLM_ERROR_TEXT } from '../../src/catalog/agentchaos/experiments';
import { FaultlineInputError } from '../../src/errors';
import { createInjector, formatTriggerReport, triggerReportFromSpans } from '../../src/inject/index';
import { loadCorpus } from '../support/corpus';
import { corpusReply, startLlmServer, type LlmServer } from '../support/llm-server';
import { callSpans, faultName, setupHarness, type Harness } from './harness';
import { spanRecord } from '../support/to-traces';

const TEXT = loadCorpus('openai-chat.jsonl').find((r) => r.id === '55dae6f503a5')!;
const ORIGINAL = (TEXT.response as { choices: [{ message: { content: string } }] }).choices[0].message.content;

let server: LlmServer;
beforeAll(async () => {
  server = await startLlmServer(() => corpusReply(TEXT));
});
afterAll(async () => {
  await server.close();
});

const contentsOf = async (client: OpenAI, n: number, model?: string) => {
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await client.chat.completions.create({
      ...(TEXT.request as object),
      ...(model ? { model } : {}),
    } as never);
    out.push((r as unknown as { choices: [{ message: { content: string } }] }).choices[0].message.content);
  }
  return out;
};
const hits = (contents: string[]) => contents.flatMap((c, i) => (c === LLM_ERROR_TEXT ? [i + 1] : []));

describe('with the plan processor in the provider', () => {
  let h: Harness;
  let client: OpenAI;
  beforeAll(() => {
    h = setupHarness();
    client = new OpenAI({ apiKey: 'sk-test', baseURL: `${server.url}/v1`, maxRetries: 0 });
  });
  afterAll(async () => {
    await h.shutdown();
  });
  beforeEach(() => h.exporter.reset());

  it('state is per task: a single fault hits the first call of every task', async () => {
    const plan = { rules: [{ fault: 'llm_error_single', match: { operation: 'chat' } }] };
    const a = await h.task(plan, () => contentsOf(client, 3));
    const b = await h.task(plan, () => contentsOf(client, 3));
    expect(hits(a.result)).toEqual([1]);
    expect(hits(b.result)).toEqual([1]);
    const report = h.injector.triggerReport();
    expect(report.tasks.filter((t) => t.taskId === a.taskId || t.taskId === b.taskId).every((t) => t.triggered)).toBe(
      true,
    );
  });

  it('same seed and same call sequence give the same faults (CPython Random(1234): calls 3, 8, 10)', async () => {
    const plan = { seed: 1234, rules: [{ fault: 'llm_error_intermittent' }] };
    const a = await h.task(plan, () => contentsOf(client, 10));
    const b = await h.task(plan, () => contentsOf(client, 10));
    expect(hits(a.result)).toEqual([3, 8, 10]);
    expect(hits(b.result)).toEqual([3, 8, 10]);
    const c = await h.task({ seed: 42, rules: [{ fault: 'llm_error_intermittent' }] }, () => contentsOf(client, 10));
    expect(hits(c.result)).toEqual([2, 3, 4, 8, 10]);
  });

  it('selectors: model, url and position pick exactly the planned calls', async () => {
    const plan = {
      rules: [
        { fault: 'llm_error_persistent', match: { model: 'gpt-4o-*', url: '*/v1/chat/completions', position: [2, 3] } },
      ],
    };
    const { result } = await h.task(plan, async () => [
      ...(await contentsOf(client, 1, 'other-model')),
      ...(await contentsOf(client, 4, 'gpt-4o-mini')),
    ]);
    expect(hits(result)).toEqual([3, 4]); // the 2nd and 3rd gpt-4o-* calls
    const re = await h.task(
      { rules: [{ fault: 'llm_error_persistent', match: { url: '/127\\.0\\.0\\.1:\\d+\\/v1\\//' } }] },
      () => contentsOf(client, 2),
    );
    expect(hits(re.result)).toEqual([1, 2]);
  });

  it('trigger verification offline from exported spans matches the live ledger', async () => {
    const { taskId } = await h.task(
      {
        rules: [
          { name: 'cut', fault: 'llm_truncate_burst' },
          { name: 'ascii', fault: 'llm_corrupt_single', match: { model: 'never' } },
        ],
      },
      () => contentsOf(client, 4),
    );
    const spans = callSpans(await h.waitForSpans((s) => callSpans(s).length >= 4));
    const offline = triggerReportFromSpans(spans.map(spanRecord));
    const live = h.injector.triggerReport(taskId);
    expect(live.tasks[0].rules.find((r) => r.rule === 'cut')).toMatchObject({
      matched: 4,
      fires: 3,
      noops: 0,
      triggered: true,
    });
    expect(offline.tasks).toHaveLength(1);
    expect(offline.tasks[0].rules).toEqual([
      { rule: 'cut', fault: 'llm_truncate_burst', fires: 3, noops: 0, notApplicable: 0, triggered: true },
    ]);
    expect(formatTriggerReport(offline)).toContain('triggered  cut (llm_truncate_burst): fired 3');
  });
});

describe('selection does not depend on sampling', () => {
  it('with an AlwaysOff sampler no span is recorded, and the planned faults still land', async () => {
    const h = setupHarness({ sampler: new AlwaysOffSampler() });
    const client = new OpenAI({ apiKey: 'sk-test', baseURL: `${server.url}/v1`, maxRetries: 0 });
    try {
      const { result, taskId } = await h.task({ rules: [{ fault: 'llm_error_pos_mid' }] }, () => contentsOf(client, 3));
      expect(hits(result)).toEqual([2]);
      expect(h.exporter.getFinishedSpans()).toHaveLength(0);
      expect(h.injector.triggerReport(taskId).tasks[0].rules[0]).toMatchObject({
        matched: 3,
        fires: 1,
        triggered: true,
      });
    } finally {
      await h.shutdown();
    }
  });
});

describe('partial sampling', () => {
  it('positions count every call of the task, whether the processor saw its span or the step selected it', async () => {
    // Records every other span: half the calls are selected by the processor, half by the fault step.
    let n = 0;
    const alternate: Sampler = {
      shouldSample: () => ({
        decision: n++ % 2 === 0 ? SamplingDecision.RECORD_AND_SAMPLED : SamplingDecision.NOT_RECORD,
      }),
      toString: () => 'alternate',
    };
    const h = setupHarness({ sampler: alternate });
    const client = new OpenAI({ apiKey: 'sk-test', baseURL: `${server.url}/v1`, maxRetries: 0 });
    try {
      const { result } = await h.task(
        { rules: [{ fault: 'llm_error_persistent', match: { position: [2, 3, 6] } }] },
        () => contentsOf(client, 8),
      );
      expect(hits(result)).toEqual([2, 3, 6]);
      const spans = callSpans(await h.waitForSpans((s) => callSpans(s).length >= 4));
      expect(spans).toHaveLength(4); // calls 1, 3, 5, 7
      expect(spans.map(faultName)).toEqual([undefined, 'llm_error_persistent', undefined, undefined]);
    } finally {
      await h.shutdown();
    }
  });
});

describe('safety', () => {
  it('a bad plan fails at creation, naming the rule and the problem', () => {
    expect(() => createInjector({ rules: [{ fault: 'llm_eror_single' }] } as never)).toThrow(FaultlineInputError);
    expect(() => createInjector({ rules: [{ fault: 'llm_eror_single' }] } as never)).toThrow(
      /did you mean "llm_error_single"[\s\S]*rules\[0\]\.fault/,
    );
  });

  it('NODE_ENV=production refuses a plan without allowProduction; FAULTLINE_DISABLE=1 makes the injector inert', () => {
    const env = { ...process.env };
    try {
      process.env.NODE_ENV = 'production';
      expect(() => createInjector({ rules: [{ fault: 'http_500' }] })).toThrow(/allowProduction/);
      expect(createInjector({ allowProduction: true, rules: [{ fault: 'http_500' }] }).enabled).toBe(true);
      process.env.NODE_ENV = 'test';
      process.env.FAULTLINE_DISABLE = '1';
      expect(createInjector({ rules: [{ fault: 'http_500' }] }).enabled).toBe(false);
    } finally {
      process.env = env;
    }
  });

  it('FAULTLINE_DISABLE=1: the app gets the provider’s answer', async () => {
    const env = { ...process.env };
    process.env.FAULTLINE_DISABLE = '1';
    const h = setupHarness();
    process.env = env;
    const client = new OpenAI({ apiKey: 'sk-test', baseURL: `${server.url}/v1`, maxRetries: 0 });
    try {
      const { result } = await h.task({ rules: [{ fault: 'llm_error_persistent' }] }, () => contentsOf(client, 2));
      expect(result).toEqual([ORIGINAL, ORIGINAL]);
      const spans = callSpans(await h.waitForSpans((s) => callSpans(s).length >= 2));
      expect(spans.map(faultName)).toEqual([undefined, undefined]);
    } finally {
      await h.shutdown();
    }
  });
});
