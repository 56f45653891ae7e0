import { describe, expect, it } from 'vitest';
import { connectModel, runTask, coding } from '../../examples';
import { startMockModel } from '../../src/mock-model/server';

describe('connectModel', () => {
  it('starts the embedded mock model when no endpoint is configured', async () => {
    const llm = await connectModel({ env: {} });
    try {
      expect(llm.embedded).toBe(true);
      expect(llm.model).toBe('faultline-mock-1');
      expect(llm.baseURL).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    } finally {
      await llm.close();
    }
  });

  it('uses OPENAI_BASE_URL / OPENAI_API_KEY / FAULTLINE_MODEL when set (any OpenAI-compatible endpoint)', async () => {
    const external = await startMockModel();
    const llm = await connectModel({
      env: { OPENAI_BASE_URL: external.baseURL, OPENAI_API_KEY: 'k', FAULTLINE_MODEL: 'my-model' },
    });
    try {
      expect(llm.embedded).toBe(false);
      expect(llm.model).toBe('my-model');
      const run = await runTask({ family: coding, task: coding.tasks[1], topology: 'hierarchical', llm });
      expect(run.outcome.success).toBe(true);
      expect(external.requests).toBeGreaterThanOrEqual(4);
    } finally {
      await llm.close();
      await external.close();
    }
  });
});
