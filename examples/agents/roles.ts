/**
 * The agents of the example workflows. Each turn runs inside `runAgent` (an invoke_agent span) and calls the model
 * through the openai SDK. Like real agents they are a little resilient: a reply that cannot be parsed, or a failed
 * call, is asked again once — so a single fault can be absorbed while a persistent one cannot.
 */
import { runAgent } from '../../instrumentation/agents/invoke-agent';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { extractJson, formatSections, NONE_RECEIVED } from '../../src/mock-model/protocol';
import type { Json, TaskDef, TaskFamily } from './family';
import type { ModelConnection } from './model';

export const SYSTEM = {
  Planner:
    'You are the Planner agent of a multi-agent team. Read the task and reply with only a JSON plan object: ' +
    'for a shopping task {"family":"shopping","product":<exact product title>,"quantity":<integer>,"steps":[...]}, ' +
    'for a coding task {"family":"coding","function":<name>,"params":<parameter list>,"file":"<name>.js","steps":[...]}.',
  Worker:
    'You are the Worker agent. Carry out the plan with the tools, one call at a time. When done, reply with only a ' +
    'JSON evidence object describing what the environment shows (shopping: product_title, product_id, sku, ' +
    'requested_quantity, observed_quantity, cart_verified; coding: function, path, tests_passed, tests_total, all_passed).',
  Verifier:
    'You are the Verifier agent. Check the evidence against the task and reply with only ' +
    '{"verdict":"accept"|"reject"|"no_evidence","reason":<short>}.',
  Decision:
    'You are the Decision agent. Using the verifier judgment and the evidence, reply with only ' +
    '{"decision":"accept"|"reject","reason":<short>} plus, when accepting a shopping task, "order":{"sku","quantity"}, ' +
    'or a coding task, "submit":{"path"}. If there is no judgment, check the evidence yourself.',
  Supervisor:
    'You are the Supervisor agent. In mode "plan", reply like a planner with only a JSON plan. In mode "decide", ' +
    'check the evidence against the task yourself and reply like a decision maker with only the JSON decision.',
} as const;

export type Role = keyof typeof SYSTEM;

/** What each agent may do (runAgent's declarations, read by the workflow monitors): its tools and whom it sends to. */
export const DECLARED: Record<Role, { role: string; tools?: string[]; targets: string[] }> = {
  Planner: { role: 'planner', tools: [], targets: ['Worker'] },
  Worker: { role: 'worker', targets: ['Executor', 'Verifier', 'Decision', 'Supervisor'] },
  Verifier: { role: 'verifier', tools: [], targets: ['Decision'] },
  Decision: { role: 'decision', tools: [], targets: [] },
  Supervisor: { role: 'supervisor', tools: [], targets: ['Worker'] },
};

interface AskOptions {
  tools?: TaskFamily['tools'];
  stream?: boolean;
  /** The field a usable reply must have (a JSON error object is not a plan). */
  requires?: string;
}

/** One chat completion; undefined when the call failed (after the SDK's own retry). Tool calls are returned raw. */
async function complete(
  llm: ModelConnection,
  messages: ChatCompletionMessageParam[],
  options: AskOptions = {},
): Promise<{ text: string; toolCalls: { id: string; name: string; arguments: string }[] } | undefined> {
  try {
    if (options.stream) {
      const stream = await llm.client.chat.completions.create({
        model: llm.model,
        messages,
        stream: true,
        stream_options: { include_usage: true },
      });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
      return { text, toolCalls: [] };
    }
    const res = await llm.client.chat.completions.create({
      model: llm.model,
      messages,
      ...(options.tools ? { tools: options.tools } : {}),
    });
    const msg = res.choices[0]?.message;
    const toolCalls = (msg?.tool_calls ?? []).flatMap((tc) =>
      tc.type === 'function' ? [{ id: tc.id, name: tc.function.name, arguments: tc.function.arguments }] : [],
    );
    return { text: msg?.content ?? '', toolCalls };
  } catch {
    // The failed call is on its span (error.type); the agent carries on without this reply.
    return undefined;
  }
}

const REASK = 'Your previous reply could not be used. Reply again with only the JSON object.';

/** Ask for a JSON object; re-ask once when the reply is missing or does not parse. */
export async function askJson(
  llm: ModelConnection,
  role: Role,
  user: string,
  options: AskOptions = {},
): Promise<Json | undefined> {
  const messages: ChatCompletionMessageParam[] = [
    { role: 'system', content: SYSTEM[role] },
    { role: 'user', content: user },
  ];
  for (let attempt = 0; attempt < 2; attempt++) {
    const reply = await complete(llm, messages, options);
    const parsed = extractJson(reply?.text);
    if (parsed && (options.requires === undefined || parsed[options.requires] !== undefined)) return parsed;
    if (reply) messages.push({ role: 'assistant', content: reply.text });
    messages.push({ role: 'user', content: REASK });
  }
  return undefined;
}

export function planner(
  llm: ModelConnection,
  task: TaskDef,
  role: 'Planner' | 'Supervisor' = 'Planner',
): Promise<Json | undefined> {
  const user =
    role === 'Supervisor' ? formatSections({ Mode: 'plan', Task: task.text }) : formatSections({ Task: task.text });
  return runAgent(role, () => askJson(llm, role, user, { requires: 'family' }), DECLARED[role]);
}

/** Sends an action request to the Executor and returns the observation that came back, if any. */
export type ActionPort = (operation: string, args: Json) => Promise<Json | undefined>;

/**
 * The Worker: a tool loop. Read-only tools run here; actions go to the environment's Executor through `act` (the I2
 * action request; the I3 observation comes back). A missing acknowledgement is reported to the model as such: the
 * action may or may not have happened, so a careful agent does not blindly repeat it.
 */
export function worker<T extends TaskDef, Env>(
  llm: ModelConnection,
  family: TaskFamily<T, Env>,
  env: Env,
  task: T,
  plan: Json,
  act: ActionPort,
): Promise<Json | undefined> {
  return runAgent(
    'Worker',
    async () => {
      const messages: ChatCompletionMessageParam[] = [
        { role: 'system', content: SYSTEM.Worker },
        { role: 'user', content: formatSections({ Plan: JSON.stringify(plan) }) },
      ];
      let reasked = false;
      for (let turn = 0; turn < 10; turn++) {
        const reply = await complete(llm, messages, { tools: family.tools });
        if (reply && reply.toolCalls.length > 0) {
          messages.push({
            role: 'assistant',
            content: reply.text || null,
            tool_calls: reply.toolCalls.map((c) => ({
              id: c.id,
              type: 'function' as const,
              function: { name: c.name, arguments: c.arguments },
            })),
          });
          for (const call of reply.toolCalls) {
            const args = extractJson(call.arguments);
            let result: Json;
            if (!args) result = { error: `invalid arguments: not a JSON object: ${call.arguments.slice(0, 80)}` };
            else if (family.actions.has(call.name))
              result = (await act(call.name, args)) ?? { error: 'no acknowledgement from the executor' };
            else result = family.runTool(env, task, call.name, args);
            messages.push({ role: 'tool', tool_call_id: call.id, content: JSON.stringify(result) });
          }
          continue;
        }
        const evidence = extractJson(reply?.text);
        // Evidence reports what the environment shows; an error object from the model is not evidence.
        if (evidence && evidence.error === undefined) return evidence;
        if (reasked) return undefined;
        reasked = true;
        if (reply) messages.push({ role: 'assistant', content: reply.text });
        messages.push({ role: 'user', content: REASK });
      }
      return undefined;
    },
    { ...DECLARED.Worker, tools: family.tools.flatMap((t) => (t.type === 'function' ? [t.function.name] : [])) },
  );
}

export function verifier(llm: ModelConnection, task: TaskDef, evidence: Json | undefined): Promise<Json | undefined> {
  const user = formatSections({ Task: task.text, Evidence: evidence ? JSON.stringify(evidence) : NONE_RECEIVED });
  return runAgent(
    'Verifier',
    () => askJson(llm, 'Verifier', user, { stream: true, requires: 'verdict' }),
    DECLARED.Verifier,
  );
}

export function decision(
  llm: ModelConnection,
  task: TaskDef,
  judgment: Json | undefined,
  evidence: Json | undefined,
  role: 'Decision' | 'Supervisor' = 'Decision',
): Promise<Json | undefined> {
  const sections: Record<string, string | undefined> =
    role === 'Supervisor' ? { Mode: 'decide', Task: task.text } : { Task: task.text };
  if (role === 'Decision') sections.Judgment = judgment ? JSON.stringify(judgment) : NONE_RECEIVED;
  sections.Evidence = evidence ? JSON.stringify(evidence) : NONE_RECEIVED;
  return runAgent(
    role,
    () => askJson(llm, role, formatSections(sections), { stream: true, requires: 'decision' }),
    DECLARED[role],
  );
}
