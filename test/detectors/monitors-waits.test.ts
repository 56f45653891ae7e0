/**
 * Timeouts and deadlocks read from span status and times alone (detectors/monitors/waits.ts): no faultline
 * deadline, no declaration — each pattern next to the near-miss that must stay silent (a retry that succeeds, waits
 * that do not overlap, waits on a third party, one side that got its answer).
 */
import { describe, expect, it } from 'vitest';
import { Run, usage } from './support/semconv-trace';

const deadline = { type: 'DeadlineExceeded', message: 'deadline exceeded while waiting' };
const waitsOf = (run: Run) => run.findings().filter((f) => f.detector === 'waits');

describe('deadlock: two agents waiting on each other, both timing out', () => {
  it('waits that name each other are a deadlock, named as such', () => {
    const run = new Run();
    const a = run.agent('planner');
    const b = run.agent('booker');
    run.chat(a, usage(120, 20));
    run.chat(b, usage(110, 20));
    const t = run.t;
    run.wait(a, 'booker.replies', 117_000, { at: t, error: deadline });
    run.wait(b, 'planner.replies', 116_000, { at: t + 300, error: deadline });
    run.fail(a, 'DeadlineExceeded');
    run.fail(b, 'DeadlineExceeded');
    run.fail(run.root, 'DeadlineExceeded');
    const f = waitsOf(run);
    expect(f.map((x) => [x.failure, x.mast])).toEqual([['workflow_deadlock', '1.5']]);
    expect(f[0]!.confidence).toBe(0.85);
    expect(f[0]!.evidence).toMatch(
      /(planner waited on booker and booker on planner|booker waited on planner and planner on booker)/,
    );
    expect(f[0]!.evidence).toMatch(/117 s/);
    expect(f[0]!.evidence).toMatch(/116 s/);
  });

  it('idle agent turns that both end in an exceeded deadline, with nothing said about whom they wait on', () => {
    const run = new Run();
    const a = run.agent('left');
    const b = run.agent('right');
    run.chat(a, usage(100, 10), { ms: 200 });
    run.chat(b, usage(100, 10), { ms: 200 });
    a.end = b.end = a.start + 60_000;
    run.root.end = a.end + 5;
    run.fail(a, 'TimeoutError');
    run.fail(b, 'TimeoutError');
    const f = waitsOf(run);
    expect(f.map((x) => x.failure)).toEqual(['workflow_deadlock']);
    expect(f[0]!.confidence).toBe(0.7);
  });

  it('near-misses: waits on a third party, waits one after the other, one side answered', () => {
    const third = new Run();
    const a = third.agent('planner');
    const b = third.agent('booker');
    third.wait(a, 'billing.replies', 60_000, { at: 0, error: deadline });
    third.wait(b, 'billing.replies', 60_000, { at: 10, error: deadline });
    expect(waitsOf(third)).toEqual([]);

    const sequential = new Run();
    const c = sequential.agent('planner');
    const d = sequential.agent('booker');
    sequential.wait(c, 'booker.replies', 30_000, { error: deadline });
    sequential.wait(d, 'planner.replies', 30_000, { error: deadline });
    expect(waitsOf(sequential)).toEqual([]);

    const answered = new Run();
    const e = answered.agent('planner');
    const g = answered.agent('booker');
    answered.wait(e, 'booker.replies', 30_000, { at: 0, error: deadline });
    answered.wait(g, 'planner.replies', 29_000, { at: 100 });
    expect(waitsOf(answered)).toEqual([]);
  });
});

describe('repeated timeouts the run never got past', () => {
  const timeout = { type: 'TimeoutError', message: 'The operation was aborted due to timeout' };

  it('the same tool timing out twice, the run ending in error', () => {
    const run = new Run();
    const a = run.agent('searcher');
    run.chat(a, usage(100, 20, 'tool_calls'));
    run.tool(a, 'web_search', {}, { ms: 30_000, error: timeout });
    run.chat(a, usage(140, 20, 'tool_calls'));
    run.tool(a, 'web_search', {}, { ms: 30_000, error: timeout });
    run.fail(run.root, 'TimeoutError');
    const f = waitsOf(run);
    expect(f.map((x) => [x.failure, x.mast])).toEqual([['timeout', '1.5']]);
    expect(f[0]!.evidence).toMatch(/tool web_search timed out 2 times \(up to 30 s\)/);
    expect(f[0]!.agent).toBe('searcher');
  });

  it("an agent's model calls timing out again and again, the run ending on the last one", () => {
    const run = new Run();
    const a = run.agent('writer');
    for (let i = 0; i < 3; i++)
      run.chat(a, {}, { ms: 60_000, error: { type: 'APIConnectionTimeoutError', message: 'Request timed out.' } });
    expect(waitsOf(run).map((x) => x.evidence)).toEqual([
      expect.stringMatching(/model calls of writer timed out 3 times/),
    ]);
  });

  it('near-misses: one timeout then a success; two timeouts then a success; timeouts the run carried on past', () => {
    const once = new Run();
    const a = once.agent('searcher');
    once.tool(a, 'web_search', {}, { ms: 10_000, error: timeout });
    once.tool(a, 'web_search');
    once.chat(a, usage(100, 40));
    expect(waitsOf(once)).toEqual([]);

    const twice = new Run();
    const b = twice.agent('searcher');
    twice.tool(b, 'web_search', {}, { ms: 10_000, error: timeout });
    twice.tool(b, 'web_search', {}, { ms: 10_000, error: timeout });
    twice.tool(b, 'web_search');
    twice.fail(twice.root, 'Error');
    expect(waitsOf(twice)).toEqual([]);

    const past = new Run();
    const c = past.agent('searcher');
    past.tool(c, 'web_search', {}, { ms: 10_000, error: timeout });
    past.tool(c, 'web_search', {}, { ms: 10_000, error: timeout });
    past.chat(c, usage(100, 40));
    expect(waitsOf(past)).toEqual([]);
  });

  it('an error that is not a timeout is not counted', () => {
    const run = new Run();
    const a = run.agent('searcher');
    for (let i = 0; i < 3; i++)
      run.tool(
        a,
        'web_search',
        {},
        { error: { type: 'ConnectionRefused', message: 'connect ECONNREFUSED 10.0.0.1:443' } },
      );
    run.fail(run.root, 'ConnectionRefused');
    expect(waitsOf(run)).toEqual([]);
  });
});
