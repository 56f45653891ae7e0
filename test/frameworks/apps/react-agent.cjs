// The react-agent.mjs app as CommonJS (`node --require faultline/register`): the same prebuilt agent, the same run.
const { tool } = require('@langchain/core/tools');
const { createReactAgent } = require('@langchain/langgraph/prebuilt');
const { ChatOpenAI } = require('@langchain/openai');
const { z } = require('zod');

const getWeather = tool(async ({ location }) => `sunny, 21°C in ${location}`, {
  name: 'get_weather',
  description: 'Get the current weather in a given location',
  schema: z.object({ location: z.string() }),
});
const llm = new ChatOpenAI({
  model: 'gpt-4o',
  apiKey: 'sk-test',
  configuration: { baseURL: `${process.env.LLM_URL}/v1` },
});
const agent = createReactAgent({ llm, tools: [getWeather] });

async function main() {
  const out = {};
  try {
    const state = await agent.invoke({ messages: [{ role: 'user', content: 'What is the weather in Paris?' }] });
    out.messages = state.messages.map((m) => m.getType());
    out.answer = state.messages.at(-1).content;
  } catch (err) {
    out.error = { name: err.name, message: err.message };
  }
  process.stdout.write(JSON.stringify(out));
}
main();
