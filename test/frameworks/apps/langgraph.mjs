// A LangGraph app: a planner node (a model with a weather tool, called until it answers) and a worker node; one
// invoke, then the graph streamed (LLM tokens and state values) for another question. Prints what it got.
import { tool } from '@langchain/core/tools';
import { HumanMessage, ToolMessage } from '@langchain/core/messages';
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import { ChatOpenAI } from '@langchain/openai';
import { z } from 'zod';

const configuration = { baseURL: `${process.env.LLM_URL}/v1` };
const getWeather = tool(async ({ location }) => `sunny, 21°C in ${location}`, {
  name: 'get_weather',
  description: 'Get the current weather in a given location',
  schema: z.object({ location: z.string() }),
});
const plannerModel = new ChatOpenAI({ model: 'gpt-4.1-mini', apiKey: 'sk-test', configuration }).bindTools([
  getWeather,
]);
const workerModel = new ChatOpenAI({ model: 'gpt-4o', apiKey: 'sk-test', configuration });

const State = Annotation.Root({ question: Annotation(), weather: Annotation(), answer: Annotation() });
const graph = new StateGraph(State)
  .addNode('planner', async (state) => {
    const messages = [new HumanMessage(state.question)];
    for (;;) {
      const reply = await plannerModel.invoke(messages);
      messages.push(reply);
      if (!reply.tool_calls?.length) return { weather: reply.content };
      for (const call of reply.tool_calls)
        messages.push(new ToolMessage({ content: await getWeather.invoke(call.args), tool_call_id: call.id }));
    }
  })
  .addNode('worker', async (state) => ({
    answer: (await workerModel.invoke(`Answer the user with: ${state.weather}`)).content,
  }))
  .addEdge(START, 'planner')
  .addEdge('planner', 'worker')
  .addEdge('worker', END)
  .compile();

const out = {};
try {
  const state = await graph.invoke({ question: 'What is the weather in Paris?' });
  out.json = { weather: state.weather, answer: state.answer };
} catch (err) {
  out.json = { error: err.name, message: err.message };
}
try {
  let tokens = '';
  let last;
  for await (const [mode, chunk] of await graph.stream(
    { question: 'What is the weather in New York?' },
    { streamMode: ['messages', 'values'], configurable: { thread_id: 'ny-thread' } },
  )) {
    if (mode === 'messages' && typeof chunk[0].content === 'string') tokens += chunk[0].content;
    if (mode === 'values') last = chunk;
  }
  out.stream = { tokens, weather: last?.weather, answer: last?.answer };
} catch (err) {
  out.stream = { error: err.name, message: err.message };
}
process.stdout.write(JSON.stringify(out));
