/**
 * An OpenAI-compatible chat completions server on 127.0.0.1 for the calculator agent (fixtures/calc-agent.mjs): a
 * gpt-4.1-mini chat completion written by the project in OpenAI's format (../../support/openai-wire.ts), with a
 * fresh id, time and usage per answer, as a live server sends. It answers the question it is asked (it knows nothing about faults): "EXPR: a+b" for a question, the
 * value for an expression.
 */
import { startLlmServer, type LlmServer } from '../../support/llm-server';
import { chatCompletion } from '../../support/openai-wire';
import { roughTokens } from '../../support/wire-text';

const WORDS: Record<string, string> = { plus: '+', minus: '-', times: '*' };

function reply(system: string, user: string): string {
  if (system.startsWith('Rewrite')) {
    const m = /(\d+)\s+(plus|minus|times)\s+(\d+)/.exec(user);
    return m
      ? `The question asks us to combine two numbers, so the expression to evaluate is straightforward. EXPR: ${m[1]} ${WORDS[m[2]!]} ${m[3]}`
      : 'I cannot tell.';
  }
  const m = /^(\d+)\s*([+\-*])\s*(\d+)$/.exec(user.trim());
  if (!m) return 'ANSWER: unknown';
  const [a, b] = [Number(m[1]), Number(m[3])];
  return `Working it out step by step gives the result. ANSWER: ${m[2] === '+' ? a + b : m[2] === '-' ? a - b : a * b}`;
}

export async function startCalcModel(latencyMs = 0): Promise<LlmServer> {
  return startLlmServer(async (req) => {
    if (latencyMs > 0) await new Promise((r) => setTimeout(r, latencyMs));
    const body = JSON.parse(req.body.toString('utf8')) as { messages: Array<{ role: string; content: string }> };
    const system = body.messages.find((m) => m.role === 'system')?.content ?? '';
    const user = body.messages.filter((m) => m.role === 'user').pop()?.content ?? '';
    const response = chatCompletion({
      model: 'gpt-4.1-mini-2025-04-14',
      text: reply(system, user),
      inputTokens: roughTokens(system + user),
    });
    return { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(response) };
  });
}
