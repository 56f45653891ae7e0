import { join } from 'node:path';
import { expect, it } from 'vitest';
import { runDemo } from '../../examples/plan-demo/agent';

it('the plan demo runs the agent under its plan: faults land where planned, the report says which fired', async () => {
  const { answers, report } = await runDemo(join(__dirname, '../../examples/plan-demo/plan.yaml'), ['Paris', 'Tokyo']);
  // wrong-city sent the tool to Springfield, for which the tool has no data.
  expect(answers.map((a) => a.answer)).toEqual([
    'Here is the weather: no weather data for "Springfield". Have a nice day!',
    'Here is the weather: no weather data for "Springfield". Have a nice day!',
  ]);
  expect(report.totalTasks).toBe(2);
  for (const t of report.tasks) {
    expect(t.rules.find((r) => r.rule === 'rate-limited')).toMatchObject({ fires: 1, triggered: true });
    expect(t.rules.find((r) => r.rule === 'wrong-city')).toMatchObject({ fires: 1, triggered: true });
  }
});
