import { describe, expect, it } from 'vitest';
import { analyse, isSilent, row, type RunRecord } from '../../src/campaign/analysis';

let n = 0;
function pair(
  condition: string,
  topology: 'sequential' | 'flat',
  clean: boolean,
  fault: Partial<RunRecord>,
): RunRecord[] {
  n++;
  const base = {
    study: 'main' as const,
    family: 'shopping',
    task: 't',
    topology,
    arm: 'none' as const,
    rep: 1,
    cell: condition,
    reason: '',
    detections: 0,
    guardEvents: 0,
    errorSpans: 0,
    durationMs: 1,
  };
  return [
    {
      ...base,
      run: 2 * n,
      taskId: `c${n}`,
      condition: 'clean',
      faulted: false,
      success: clean,
      decision: clean ? 'accept' : 'reject',
      triggered: false,
    },
    {
      ...base,
      run: 2 * n + 1,
      taskId: `f${n}`,
      condition,
      faulted: true,
      matchedTo: `c${n}`,
      success: false,
      decision: 'reject',
      triggered: true,
      ...fault,
    },
  ];
}

describe('campaign analysis', () => {
  const records = [
    ...pair('x@I4', 'flat', true, { success: true, decision: 'accept' }),
    ...pair('x@I4', 'sequential', true, {}),
    // A silent failure: accepted, nothing detected, guarded or errored.
    ...pair('x@I4', 'sequential', true, { decision: 'accept' }),
    // Failed and accepted, but a detector fired: not silent.
    ...pair('x@I4', 'sequential', true, { decision: 'accept', detections: 1 }),
    // Clean twin failed: counts for Δpass@1, not for the clean-conditional loss.
    ...pair('x@I4', 'sequential', false, {}),
    // Untriggered: excluded with its twin, counted.
    ...pair('x@I4', 'sequential', true, { triggered: false, success: true }),
  ];
  const s = analyse(records);
  const st = row(s.main.byCondition, 'x@I4')!;

  it('excludes untriggered runs with their clean twin and counts them', () => {
    expect(st.pairs).toBe(5);
    expect(st.untriggered).toBe(1);
    expect(s.untriggered).toBe(1);
  });

  it('computes pass@1, Δpass@1 and the clean-conditional loss over applied matched pairs', () => {
    expect(st.cleanPass).toMatchObject({ k: 4, n: 5 });
    expect(st.faultPass).toMatchObject({ k: 1, n: 5 });
    expect(st.deltaPass).toBeCloseTo(60);
    expect(st.ccl).toMatchObject({ k: 3, n: 4 });
  });

  it('counts a failure as silent only when the system accepted and nothing signalled', () => {
    expect(st.silent).toMatchObject({ k: 1, n: 4 });
    expect(isSilent({ ...records[5], errorSpans: 1 })).toBe(false);
    expect(isSilent({ ...records[5], guardEvents: 1 })).toBe(false);
    expect(isSilent(records[5])).toBe(true);
    expect(isSilent(records[4])).toBe(false); // clean run
  });

  it('groups by topology and by condition × topology', () => {
    expect(row(s.main.byTopology, 'flat')?.faultPass.rate).toBe(1);
    expect(row(s.main.byConditionTopology, 'x@I4 | sequential')?.pairs).toBe(4);
  });
});
