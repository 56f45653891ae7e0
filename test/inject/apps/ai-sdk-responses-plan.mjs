// The same workflow through the Vercel AI SDK with its default OpenAI model (`openai('model')`: the Responses API):
// the planner's two generateText calls, the worker's streamText. Prints what the application got.
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, streamText } from 'ai';
import { runAgent, runWorkflow } from 'faultline';

const openai = createOpenAI({ apiKey: 'sk-test', baseURL: `${process.env.LLM_URL}/v1` });
const out = {};
const json = (r) => ({ text: r.text, finish: r.finishReason });
await runWorkflow('ai-sdk-plan', async () => {
  await runAgent('planner', async () => {
    out.first = json(await generateText({ model: openai('gpt-4.1'), prompt: 'What is the weather in Paris?' }));
    out.second = json(await generateText({ model: openai('gpt-4.1'), prompt: 'And in Tokyo?' }));
  });
  await runAgent('worker', async () => {
    const errors = [];
    const result = streamText({
      model: openai('gpt-4o'),
      prompt: 'What is 4200 + 42?',
      onError: ({ error }) => errors.push(String(error?.name ?? error)),
    });
    let text = '';
    for await (const delta of result.textStream) text += delta;
    out.stream = { text, finish: await result.finishReason, errors };
  });
});
process.stdout.write(JSON.stringify(out));
