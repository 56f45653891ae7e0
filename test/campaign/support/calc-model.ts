/**
 * An OpenAI-compatible chat completions server on 127.0.0.1 for the calculator agent (fixtures/calc-agent.mjs): a
 * recorded gpt-4.1-mini response from the corpus with only the message content replaced, so the SDK gets the real
 * wire format. It answers the question it is asked (it knows nothing about faults): "EXPR: a+b" for a question, the
 * value for an expression.
 */
import { loadCorpus } from '../../support/corpus';
import { startLlmServer, type LlmServer } from '../../support/llm-server';

function template(): Record<string, unknown> {
  const rec = loadCorpus('openai-chat.jsonl').find((r) => r.id === '55dae6f503a5');
  if (!rec) throw new Error('corpus record 55dae6f503a5 (a plain gpt-4.1-mini chat completion) is missing');
  return rec.response as Record<string, unknown>;
}

const WORDS: Record<string, string> = { plus: '+', minus: '-', times: '*' };

function reply(system: string, user: string): string {
  if (system.startsWith('Rewrite')) {
    const m = /(\d+)\s+(plus|minus|times)\s+(\d+)/.exec(user);
    return m ? `The question asks us to combine two numbers, so the expression to evaluate is straightforward. EXPR: ${m[1]} ${WORDS[m[2]!]} ${m[3]}` : 'I cannot tell.';
  }
  const m = /^(\d+)\s*([+\-*])\s*(\d+)$/.exec(user.trim());
  if (!m) return 'ANSWER: unknown';
  const [a, b] = [Number(m[1]), Number(m[3])];
  return `Working it out step by step gives the result. ANSWER: ${m[2] === '+' ? a + b : m[2] === '-' ? a - b : a * b}`;
}

export async function startCalcModel(latencyMs = 0): Promise<LlmServer> {
  const base = template();
  let served = 0;
  return startLlmServer(async (req) => {
    if (latencyMs > 0) await new Promise((r) => setTimeout(r, latencyMs));
    const body = JSON.parse(req.body.toString('utf8')) as { messages: Array<{ role: string; content: string }> };
    const system = body.messages.find((m) => m.role === 'system')?.content ?? '';
    const user = body.messages.filter((m) => m.role === 'user').pop()?.content ?? '';
    const response = structuredClone(base) as { id: string; created: number; choices: Array<{ message: { content: string }; finish_reason: string }>; usage: { completion_tokens: number; prompt_tokens: number; total_tokens: number } };
    // What a live server sends: a fresh id and the time of this answer.
    response.id = `chatcmpl-${++served}`;
    response.created = Math.floor(Date.now() / 1000);
    response.choices[0]!.message.content = reply(system, user);
    response.choices[0]!.finish_reason = 'stop';
    // The recorded usage counted the recorded answer (428 tokens); a live server counts this one (~4 chars a token).
    response.usage.completion_tokens = Math.ceil(response.choices[0]!.message.content.length / 4);
    response.usage.total_tokens = response.usage.prompt_tokens + response.usage.completion_tokens;
    return { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(response) };
  });
}
