import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectModel, FAMILIES, runTask, TOPOLOGIES, type ModelConnection } from '../../examples';

let llm: ModelConnection;
beforeAll(async () => {
  llm = await connectModel({ env: {} });
});
afterAll(() => llm.close());

describe('example workflows succeed clean on the embedded model', () => {
  for (const family of Object.values(FAMILIES)) {
    for (const topology of TOPOLOGIES) {
      it(`${family.name} × ${topology}: every task succeeds`, async () => {
        for (const task of family.tasks) {
          const run = await runTask({ family, task, topology, llm });
          expect(run.outcome, `${task.id}: ${JSON.stringify(run.decision)}`).toMatchObject({ success: true });
          expect(run.decision?.decision).toBe('accept');
        }
      });
    }
  }
});
