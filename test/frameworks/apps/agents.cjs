// The agents.mjs app as CommonJS (`node --require faultline/register`): same agents, same two runs, without the
// SDK's own OpenAI trace export.
const OpenAI = require('openai').default;
const { Agent, run, setDefaultOpenAIClient, setOpenAIAPI, setTraceProcessors, tool } = require('@openai/agents');

setOpenAIAPI(process.env.AGENTS_API ?? 'chat_completions');
// As apps do to stop the SDK exporting to OpenAI: the processor list is replaced (faultline's is registered again).
setTraceProcessors([]);
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

async function main() {
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
}
main();
