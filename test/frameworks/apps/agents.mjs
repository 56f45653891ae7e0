// An OpenAI Agents SDK app: a planner with a weather tool and an input guardrail hands off to a worker; one run,
// then another question streamed. Chat-completions mode unless AGENTS_API says otherwise. Prints what it got.
import OpenAI from 'openai';
import { Agent, run, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled, tool } from '@openai/agents';

setOpenAIAPI(process.env.AGENTS_API ?? 'chat_completions');
if (process.env.AGENTS_TRACING_OFF === '1') setTracingDisabled(true);
setDefaultOpenAIClient(new OpenAI({ apiKey: 'sk-test', baseURL: `${process.env.LLM_URL}/v1` }));

const getWeather = tool({
  name: 'get_weather',
  description: 'Get the current weather in a given location',
  parameters: {
    type: 'object',
    properties: { location: { type: 'string' } },
    required: ['location'],
    additionalProperties: false,
  },
  strict: true,
  execute: async ({ location }) => `sunny, 21°C in ${location}`,
});
const worker = new Agent({ name: 'worker', instructions: 'Write the answer for the user.', model: 'gpt-4o' });
const planner = new Agent({
  name: 'planner',
  instructions: 'Look up the weather, then hand off to the worker.',
  model: 'gpt-4.1-mini',
  tools: [getWeather],
  handoffs: [worker],
  inputGuardrails: [
    { name: 'on_topic', execute: async () => ({ outputInfo: { ok: true }, tripwireTriggered: false }) },
  ],
});

const out = {};
try {
  const result = await run(planner, 'What is the weather in Paris?');
  out.json = { agent: result.lastAgent?.name, output: result.finalOutput };
} catch (err) {
  out.json = { error: err.name, message: err.message };
}
try {
  const result = await run(planner, 'What is the weather in New York?', { stream: true });
  let text = '';
  for await (const chunk of result.toTextStream()) text += chunk;
  await result.completed;
  out.stream = { agent: result.lastAgent?.name, text, output: result.finalOutput };
} catch (err) {
  out.stream = { error: err.name, message: err.message };
}
process.stdout.write(JSON.stringify(out));
