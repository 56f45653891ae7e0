// A planner / worker workflow on the OpenAI Responses API through the openai SDK: the planner makes two JSON calls,
// the worker streams the answer. Prints what the application got.
import OpenAI from 'openai';
import { runAgent, runWorkflow } from 'faultline';

const client = new OpenAI({ apiKey: 'sk-test', baseURL: `${process.env.LLM_URL}/v1` });
const out = {};
const json = (r) => ({ text: r.output_text, status: r.status, reason: r.incomplete_details?.reason ?? null });
await runWorkflow('responses-plan', async () => {
  await runAgent('planner', async () => {
    out.first = json(await client.responses.create({ model: 'gpt-4.1', input: 'What is the weather in Paris?' }));
    out.second = json(await client.responses.create({ model: 'gpt-4.1', input: 'And in Tokyo?' }));
  });
  await runAgent('worker', async () => {
    const stream = await client.responses.create({ model: 'gpt-4o', input: 'What is 4200 + 42?', stream: true });
    const types = [];
    let text = '';
    for await (const e of stream) {
      types.push(e.type);
      if (e.type === 'response.output_text.delta') text += e.delta;
    }
    out.stream = { types, text };
  });
});
process.stdout.write(JSON.stringify(out));
