// A prebuilt LangGraph agent: `createReactAgent` with a weather tool (the model calls it, then answers). No line
// mentions faultline. Prints the final answer.
import { tool } from '@langchain/core/tools';
import { createReactAgent } from '@langchain/langgraph/prebuilt';
import { ChatOpenAI } from '@langchain/openai';
import { z } from 'zod';

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

const out = {};
try {
  const state = await agent.invoke({ messages: [{ role: 'user', content: 'What is the weather in Paris?' }] });
  out.messages = state.messages.map((m) => m.getType());
  out.answer = state.messages.at(-1).content;
} catch (err) {
  out.error = { name: err.name, message: err.message };
}
process.stdout.write(JSON.stringify(out));
