/**
 * `operation: model` (issue 26): one selector for every model generation call, whatever its API names it. The
 * attributes are those faultline's spans carry for each API (Gemini generate_content, OpenAI Responses and Chat
 * Completions chat, legacy completions text_completion); embeddings and agent/tool spans are not model calls.
 */
import { describe, expect, it } from 'vitest';
import { compileSelector } from '../../src/plan/select';

const gemini = {
  'gen_ai.operation.name': 'generate_content',
  'gen_ai.provider.name': 'gcp.gemini',
  'gen_ai.request.model': 'gemini-2.0-flash',
};
const responses = {
  'gen_ai.operation.name': 'chat',
  'gen_ai.provider.name': 'openai',
  'openai.api.type': 'responses',
  'gen_ai.request.model': 'gpt-4o',
};
const completions = { 'gen_ai.operation.name': 'text_completion', 'gen_ai.provider.name': 'openai' };
const embeddings = { 'gen_ai.operation.name': 'embeddings', 'gen_ai.provider.name': 'openai' };
const tool = { 'gen_ai.operation.name': 'execute_tool' };

describe('operation: model', () => {
  it('matches Gemini, Responses and completions calls, not embeddings or tools', () => {
    const model = compileSelector({ operation: 'model' });
    expect([gemini, responses, completions].map(model)).toEqual([true, true, true]);
    expect([embeddings, tool, {}].map(model)).toEqual([false, false, false]);
  });

  it('combines with the other fields and with other operations in a list', () => {
    expect(compileSelector({ operation: 'model', model: 'gemini-*' })(gemini)).toBe(true);
    expect(compileSelector({ operation: 'model', model: 'gemini-*' })(responses)).toBe(false);
    const either = compileSelector({ operation: ['model', 'embeddings'] });
    expect([gemini, embeddings, tool].map(either)).toEqual([true, true, false]);
  });

  it('operation: chat still means chat only (Gemini is generate_content)', () => {
    expect(compileSelector({ operation: 'chat' })(gemini)).toBe(false);
    expect(compileSelector({ operation: 'chat' })(responses)).toBe(true);
  });
});
