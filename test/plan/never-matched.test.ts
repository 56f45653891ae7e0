/**
 * Issue 26: a rule that never matched says why, from the calls the plan saw: the README's `operation: chat` on
 * Gemini calls (generate_content) names the field and suggests `operation: model`; fields that each matched some
 * call but never together are named together; a plan that saw no call says so.
 */
import { describe, expect, it } from 'vitest';
import { summaryLine } from '../../src/announce';
import { Ledger } from '../../src/inject/verify';
import { parsePlan } from '../../src/plan/load';

const gemini = {
  'gen_ai.operation.name': 'generate_content',
  'gen_ai.provider.name': 'gcp.gemini',
  'gen_ai.request.model': 'gemini-2.5-flash',
};
const chat = (agent: string) => ({
  'gen_ai.operation.name': 'chat',
  'gen_ai.request.model': 'gpt-4o',
  'gen_ai.agent.name': agent,
});

function line(rules: unknown[], calls: Array<Record<string, string>>): string {
  const plan = parsePlan({ seed: 1, rules });
  const ledger = new Ledger();
  for (const c of calls) ledger.saw(c);
  return summaryLine(plan, 'plan.yaml', ledger.report());
}

describe('a never-matched rule says why', () => {
  it('operation: chat on Gemini calls', () => {
    const l = line([{ fault: 'llm_truncate_single', match: { operation: 'chat' } }], [gemini, gemini, gemini]);
    expect(l).toBe(
      'faultline: plan.yaml: 0 of 1 rule fired; never matched: llm_truncate_single (none of the 3 calls seen had operation=chat: generate_content gemini-2.5-flash ×3; `operation: model` selects every model call)',
    );
  });

  it('fields that matched apart but never together', () => {
    const l = line(
      [{ fault: 'http_429', match: { agent: 'planner', model: 'gpt-4o-mini' } }],
      [chat('planner'), { ...chat('writer'), 'gen_ai.request.model': 'gpt-4o-mini' }],
    );
    expect(l).toContain(
      'never matched: http_429 (no call of the 2 calls seen had model=gpt-4o-mini and agent=planner together:',
    );
  });

  it('no call seen, and trace text escaped', () => {
    expect(line([{ fault: 'http_429' }], [])).toContain(
      'never matched: http_429 (no model, tool or agent call was seen)',
    );
    const l = line([{ fault: 'http_429', match: { agent: 'x' } }], [chat('evil\u001b]0;pwned\u0007')]);
    expect(l.includes('\u001b') || l.includes('\u0007')).toBe(false);
  });
});
