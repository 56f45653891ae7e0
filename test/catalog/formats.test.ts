/**
 * Where a fault has no meaning in a wire format, the plan says so at start-up, once, instead of silently doing
 * nothing; a rule whose selector keeps it away from such formats says nothing.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { planGaps, planGapsMessage } from '../../src/catalog/formats';
import { parsePlan } from '../../src/plan/load';
import { runNode } from '../support/child';

const ROOT = resolve(__dirname, '../..');

const gaps = (rules: unknown[]) => planGaps(parsePlan({ rules }));

describe('planGaps', () => {
  it('says nothing for rules that mean something wherever they can match', () => {
    expect(gaps([{ fault: 'llm_truncate_single', match: { operation: 'chat' } }])).toEqual([]);
    expect(gaps([{ fault: 'http_429' }, { fault: 'valid_partial', match: { boundary: 'I4' } }])).toEqual([]);
    expect(gaps([{ fault: 'stream_drop_done', match: { provider: 'openai' } }])).toEqual([]);
  });

  it('names the formats and the reason', () => {
    expect(gaps([{ fault: 'stream_drop_done', match: { provider: 'gcp.gemini' } }])).toEqual([
      {
        rule: 'stream_drop_done',
        gaps: [
          {
            format: 'Gemini generateContent',
            reason: 'its streams have no terminal marker (the last chunk carries the finish reason)',
          },
        ],
      },
    ]);
    expect(gaps([{ fault: 'tool_error_single', match: { url: '*/api/generate' } }])).toEqual([
      { rule: 'tool_error_single', gaps: [{ format: 'Ollama /api/generate', reason: 'it has no tool calls' }] },
    ]);
    // No operation selector: the rule can meet embeddings calls too.
    expect(gaps([{ fault: 'llm_truncate_single' }])[0]!.gaps.map((g) => g.format)).toEqual([
      'OpenAI-compatible embeddings',
      'Gemini embeddings',
      'Ollama embeddings',
    ]);
  });

  it('a rule that can act nowhere it may match is named, even where the fault is merely of another kind', () => {
    // A stream fault that can meet only embeddings calls, a message fault that can meet only LLM calls.
    expect(gaps([{ fault: 'stream_cut', match: { operation: 'embeddings' } }])[0]!.gaps.map((g) => g.reason)).toEqual([
      'it never streams',
      'it never streams',
      'it never streams',
    ]);
    expect(gaps([{ fault: 'non_delivery', match: { operation: 'chat' } }])[0]!.gaps.map((g) => g.format)).toEqual([
      'OpenAI chat completions',
      'OpenAI Responses',
      'Anthropic messages',
      'Ollama /api/chat',
      'Amazon Bedrock Converse',
      'Amazon Bedrock InvokeModel',
    ]);
    expect(
      gaps([{ fault: 'duplicate', match: { operation: 'generate_content' } }])[0]!.gaps.map((g) => g.format),
    ).toEqual(['Gemini generateContent']);
    // Where they can also meet streams / agent messages, they act there: nothing to say.
    expect(
      gaps([
        { fault: 'stream_cut' },
        { fault: 'non_delivery' },
        { fault: 'duplicate', match: { operation: 'invoke_agent' } },
        { fault: 'delay', match: { provider: 'mcp' } },
      ]),
    ).toEqual([]);
    expect(
      gaps([
        { fault: 'reordering', match: { operation: 'handoff' } },
        { fault: 'stale_replay', match: { url: '*/a2a' } },
      ]),
    ).toEqual([]);
  });

  it('one message for the whole plan', () => {
    const msg = planGapsMessage(
      parsePlan({
        rules: [
          { fault: 'stream_drop_done', match: { operation: 'generate_content' } },
          { fault: 'tool_empty_single', match: { operation: 'text_completion' } },
        ],
      }),
    );
    expect(msg).toBe(
      'fault plan: rule "stream_drop_done" has no meaning on Gemini generateContent (its streams have no terminal marker (the last chunk carries the finish reason)); rule "tool_empty_single" has no meaning on Ollama /api/generate (it has no tool calls). Such calls pass through untouched and `faultline verify` lists the rule as not applicable there.',
    );
  });
});

describe('at start-up', () => {
  it('register says it once on stderr, right after the armed line; a plan without gaps says nothing more', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'faultline-gaps-'));
    writeFileSync(
      join(dir, 'gaps.json'),
      JSON.stringify({
        rules: [{ fault: 'stream_drop_done', match: { provider: 'gcp.gemini' } }, { fault: 'http_429' }],
      }),
    );
    writeFileSync(
      join(dir, 'clean.json'),
      JSON.stringify({ rules: [{ fault: 'llm_truncate_single', match: { operation: 'chat' } }] }),
    );
    writeFileSync(join(dir, 'app.cjs'), '');
    const run = (plan: string) =>
      runNode(['--require', join(ROOT, 'dist/src/register.js'), join(dir, 'app.cjs')], {
        cwd: dir,
        env: { FAULTLINE_PLAN: join(dir, plan), OTEL_TRACES_EXPORTER: 'none' },
      });
    const gaps = await run('gaps.json');
    expect(gaps.code, gaps.stderr).toBe(0);
    const lines = gaps.stderr.split('\n').filter((l) => l.startsWith('faultline: '));
    const at = lines.findIndex((l) => l.includes('armed'));
    expect(lines[at + 1]).toMatch(
      /^faultline: fault plan: rule "stream_drop_done" has no meaning on Gemini generateContent/,
    );
    expect(lines.filter((l) => l.includes('has no meaning'))).toHaveLength(1);
    const clean = await run('clean.json');
    expect(clean.stderr).not.toContain('has no meaning');
  }, 120_000);
});
