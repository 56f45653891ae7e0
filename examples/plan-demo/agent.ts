/**
 * The plan demo: a small weather agent (model → tool → model) run as a few tasks under a fault plan, against the
 * local mock model. Faults land on the calls the plan selects; at the end the trigger report says which fired.
 *
 *     npm run build
 *     node dist/examples/plan-demo/agent.js [plan.yaml]      # default: examples/plan-demo/plan.yaml
 *
 * The agent uses plain fetch, so it runs exactly as it would without faultline; the injector is wired through the
 * option slots of `startRuntime` (FAULTLINE_PLAN=… with `faultline/register` does the same from the environment).
 */
import { join } from 'node:path';
import { runWorkflow } from '../../instrumentation/agents/task';
import { createInjector } from '../../src/inject/index';
import { formatTriggerReport, type TriggerReport } from '../../src/inject/verify';
import { loadPlan } from '../../src/plan/load';
import { startRuntime } from '../../src/start';
import { startModelServer } from './model-server';

type Message = { role: string; content: string | null; tool_calls?: ToolCall[]; tool_call_id?: string };
type ToolCall = { id: string; type: 'function'; function: { name: string; arguments: string } };

const WEATHER: Record<string, string> = { Paris: '21°C and sunny', Berlin: '15°C, light rain', Tokyo: '26°C, humid' };

function getWeather(args: string): string {
  try {
    const { city } = JSON.parse(args) as { city?: string };
    return city && WEATHER[city] ? `${city}: ${WEATHER[city]}` : `no weather data for ${JSON.stringify(city)}`;
  } catch {
    return 'invalid tool arguments';
  }
}

/** One chat completion; a 429/5xx is retried once after Retry-After, as real clients do. */
async function complete(baseUrl: string, messages: Message[]): Promise<Message> {
  for (let attempt = 0; ; attempt++) {
    const res = await fetch(`${baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-demo' },
      body: JSON.stringify({
        model: 'demo-model',
        messages,
        tools: [
          {
            type: 'function',
            function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
          },
        ],
      }),
    });
    if ((res.status === 429 || res.status >= 500) && attempt === 0) {
      await res.arrayBuffer();
      await new Promise((r) => setTimeout(r, 1000 * Number(res.headers.get('retry-after') ?? 0)));
      continue;
    }
    if (!res.ok) throw new Error(`model call failed: HTTP ${res.status}`);
    const body = (await res.json()) as { choices: Array<{ message: Message }> };
    return body.choices[0].message;
  }
}

/** The agent: ask, run the tool calls, answer. */
async function weatherAgent(baseUrl: string, city: string): Promise<string> {
  const messages: Message[] = [{ role: 'user', content: `What is the weather in ${city}?` }];
  for (let turn = 0; turn < 4; turn++) {
    const reply = await complete(baseUrl, messages);
    messages.push(reply);
    if (!reply.tool_calls?.length) return reply.content ?? '';
    for (const call of reply.tool_calls)
      messages.push({ role: 'tool', tool_call_id: call.id, content: getWeather(call.function.arguments) });
  }
  return '(no answer)';
}

export interface DemoResult {
  answers: Array<{ city: string; answer: string }>;
  report: TriggerReport;
}

/** Run the demo tasks under the plan at `planPath`. */
export async function runDemo(planPath: string, cities = ['Paris', 'Berlin', 'Tokyo']): Promise<DemoResult> {
  const injector = createInjector(loadPlan(planPath));
  const runtime = startRuntime({
    env: { ...process.env, OTEL_TRACES_EXPORTER: process.env.OTEL_TRACES_EXPORTER ?? 'none' },
    spanProcessors: [injector.spanProcessor],
    steps: [injector.httpStep],
    channelSteps: [injector.channelStep],
    httpSpans: false,
    exitHooks: false,
  });
  const model = await startModelServer();
  try {
    const answers: DemoResult['answers'] = [];
    for (const city of cities) {
      // One task per question: the plan's per-task state (positions, single faults) starts fresh for each.
      const answer = await runWorkflow('weather', () => weatherAgent(model.url, city), {
        taskId: `weather-${city.toLowerCase()}`,
      });
      answers.push({ city, answer });
    }
    return { answers, report: injector.triggerReport() };
  } finally {
    await model.close();
    await runtime.shutdown();
  }
}

if (require.main === module) {
  const planPath = process.argv[2] ?? join(__dirname, '../../../examples/plan-demo/plan.yaml');
  runDemo(planPath).then(
    ({ answers, report }) => {
      for (const a of answers) console.log(`${a.city}: ${a.answer}`);
      console.log('\n' + formatTriggerReport(report));
    },
    (err: unknown) => {
      console.error(`✖ ${err instanceof Error ? err.message : String(err)}`);
      process.exitCode = 2;
    },
  );
}
