// A Vercel AI SDK app with telemetry on: a weather tool loop, once with generateText and once with streamText, both
// under the function id "weather-agent". Prints what it got. Telemetry is turned on the way each major documents it:
// ai 6 per call (`experimental_telemetry`), ai 7 once at start-up with `registerTelemetry(new OpenTelemetry())` from
// @ai-sdk/otel (skipped with AI_OTEL=off), then `telemetry` per call for the function id.
import { createOpenAI } from '@ai-sdk/openai';
import * as ai from 'ai';
import { z } from 'zod';

const { generateText, stepCountIs, streamText, tool } = ai;
const v7 = typeof ai.registerTelemetry === 'function';
if (v7 && process.env.AI_OTEL !== 'off') {
  const { OpenTelemetry } = await import('@ai-sdk/otel');
  ai.registerTelemetry(new OpenTelemetry());
}

const openai = createOpenAI({ apiKey: 'sk-test', baseURL: `${process.env.LLM_URL}/v1` });
const tools = {
  get_weather: tool({
    description: 'Get the current weather in a given location',
    inputSchema: z.object({ location: z.string() }),
    execute: async ({ location }) => `sunny, 21°C in ${location}`,
  }),
};
const call = {
  model: openai.chat('gpt-4o'),
  tools,
  stopWhen: stepCountIs(3),
  ...(v7
    ? { telemetry: { functionId: 'weather-agent' } }
    : { experimental_telemetry: { isEnabled: true, functionId: 'weather-agent' } }),
};

const out = {};
try {
  const result = await generateText({ ...call, prompt: 'What is the weather in Paris?' });
  out.json = { text: result.text, steps: result.steps.length };
} catch (err) {
  out.json = { error: err.name, message: err.message };
}
try {
  const result = streamText({ ...call, prompt: 'What is the weather in New York?' });
  let text = '';
  for await (const delta of result.textStream) text += delta;
  out.stream = { text, steps: (await result.steps).length };
} catch (err) {
  out.stream = { error: err.name, message: err.message };
}
process.stdout.write(JSON.stringify(out));
