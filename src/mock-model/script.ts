/**
 * The embedded model's behaviour for the example agents (examples/agents): it plays each role from what is in the
 * conversation — the task text, the plan, tool results, the evidence and judgments it is shown — and nothing else.
 * It never sees faults or ground truth, so a fault in an earlier message reaches the outcome the way it would with a
 * real model: a dropped acknowledgement leaves the cart empty and the evidence says so; partial evidence is judged on
 * what it still contains. Like a careful model, it checks what it can see, not what is missing (that is what the
 * evidence guards add).
 */
import { extractJson, readSections, roleOf, type AgentRole } from './protocol';
import type { ChatMessage, ChatRequest, MockReply } from './types';

type Json = Record<string, unknown>;

/** Reference implementations the mock "writes" for the coding tasks, keyed by function name. */
const SOLUTIONS: Record<string, string> = {
  sumEven:
    'function sumEven(numbers) {\n  return numbers.filter((n) => n % 2 === 0).reduce((a, b) => a + b, 0);\n}\nmodule.exports = { sumEven };\n',
  isPalindrome:
    "function isPalindrome(text) {\n  const s = text.toLowerCase().replace(/[^a-z0-9]/g, '');\n  return s === [...s].reverse().join('');\n}\nmodule.exports = { isPalindrome };\n",
  fizzBuzz:
    "function fizzBuzz(n) {\n  const out = [];\n  for (let i = 1; i <= n; i++) out.push(i % 15 === 0 ? 'FizzBuzz' : i % 3 === 0 ? 'Fizz' : i % 5 === 0 ? 'Buzz' : String(i));\n  return out;\n}\nmodule.exports = { fizzBuzz };\n",
  wordCount:
    "function wordCount(text) {\n  const counts = {};\n  for (const w of text.toLowerCase().match(/[a-z']+/g) ?? []) counts[w] = (counts[w] ?? 0) + 1;\n  return counts;\n}\nmodule.exports = { wordCount };\n",
};

export function agentScript(request: ChatRequest): MockReply {
  const system = request.messages
    .filter((m) => m.role === 'system' || m.role === 'developer')
    .map(textOf)
    .join('\n');
  const role = roleOf(system);
  const sections = Object.assign(
    {},
    ...request.messages.filter((m) => m.role === 'user').map((m) => readSections(textOf(m))),
  ) as Record<string, string>;
  const reply = (role && ROLE_SCRIPTS[role]?.(sections, request)) ?? { content: 'I have nothing to add.' };
  return reply;
}

const ROLE_SCRIPTS: Record<AgentRole, (s: Record<string, string>, req: ChatRequest) => MockReply> = {
  Planner: (s) => plan(s.Task),
  Worker: (s, req) => work(extractJson(s.Plan), req),
  Verifier: (s) => json(verify(s.Task, extractJson(s.Evidence))),
  Decision: (s) => json(decide(s.Task, extractJson(s.Judgment), extractJson(s.Evidence))),
  Supervisor: (s) =>
    s.Mode?.trim() === 'plan' ? plan(s.Task) : json(decide(s.Task, undefined, extractJson(s.Evidence))),
};

// ------------------------------------------------------------------------------------------------ task reading

interface TaskSpec {
  family: 'shopping' | 'coding';
  product?: string;
  quantity?: number;
  fn?: string;
  params?: string;
}

function readTask(text: string | undefined): TaskSpec | undefined {
  if (!text) return undefined;
  const shop = /(\d+)\s+units?\s+of\s+"([^"]+)"/i.exec(text);
  if (shop) return { family: 'shopping', quantity: Number(shop[1]), product: shop[2] };
  const code = /function\s+(\w+)\s*\(([^)]*)\)/.exec(text);
  if (code) return { family: 'coding', fn: code[1], params: code[2].trim() };
  return undefined;
}

function plan(taskText: string | undefined): MockReply {
  const t = readTask(taskText);
  if (!t) return { content: 'I could not find a task I know how to plan.' };
  if (t.family === 'shopping') {
    return json({
      family: 'shopping',
      product: t.product,
      quantity: t.quantity,
      steps: ['search_product', 'add_to_cart', 'view_cart'],
    });
  }
  return json({
    family: 'coding',
    function: t.fn,
    params: t.params,
    file: `${t.fn}.js`,
    steps: ['write_file', 'run_tests'],
  });
}

// ------------------------------------------------------------------------------------------------ worker

interface ToolUse {
  name: string;
  args: string;
  result?: Json;
}

/** Tool calls made so far, paired with their results (by tool_call_id). */
function toolHistory(messages: ChatMessage[]): ToolUse[] {
  const uses = new Map<string, ToolUse>();
  const order: ToolUse[] = [];
  for (const m of messages) {
    if (m.role === 'assistant') {
      for (const tc of m.tool_calls ?? []) {
        const u: ToolUse = { name: tc.function.name, args: tc.function.arguments };
        uses.set(tc.id, u);
        order.push(u);
      }
    } else if (m.role === 'tool' && m.tool_call_id) {
      const u = uses.get(m.tool_call_id);
      if (u) u.result = extractJson(textOf(m)) ?? { error: textOf(m) };
    }
  }
  return order;
}

const ok = (u: ToolUse | undefined): u is ToolUse & { result: Json } => !!u?.result && u.result.error === undefined;
const lastOf = (h: ToolUse[], name: string): ToolUse | undefined => [...h].reverse().find((u) => u.name === name);
const tries = (h: ToolUse[], name: string): number => h.filter((u) => u.name === name).length;
/** A call the tool rejected for its arguments may be retried once; anything else (no acknowledgement, say) may have
 * taken effect, so a careful agent does not repeat it. */
const retryable = (u: ToolUse | undefined, h: ToolUse[]): boolean =>
  !u || (!ok(u) && /invalid arguments/i.test(String(u.result?.error ?? '')) && tries(h, u.name) < 2);

function work(planJson: Json | undefined, req: ChatRequest): MockReply {
  if (!planJson) return json({ status: 'failed', reason: 'no plan received' });
  const h = toolHistory(req.messages);
  const tools = new Set((req.tools ?? []).map((t) => t.function.name));
  if (planJson.family === 'shopping' && tools.has('search_product')) return shop(planJson, h);
  if (planJson.family === 'coding' && tools.has('write_file')) return code(planJson, h);
  return json({ status: 'failed', reason: 'the plan does not fit my tools' });
}

function shop(p: Json, h: ToolUse[]): MockReply {
  const product = String(p.product ?? '');
  const quantity = Number(p.quantity);
  const search = lastOf(h, 'search_product');
  if (!ok(search)) {
    if (tries(h, 'search_product') < 2) return call('search_product', { query: product });
    return json({
      product_title: product,
      requested_quantity: quantity,
      observed_quantity: 0,
      cart_verified: false,
      note: 'search failed',
    });
  }
  const results = Array.isArray(search.result.results) ? (search.result.results as Json[]) : [];
  const match = results.find((r) => String(r.title).toLowerCase() === product.toLowerCase());
  if (!match)
    return json({
      product_title: product,
      requested_quantity: quantity,
      observed_quantity: 0,
      cart_verified: false,
      note: 'product not found',
    });
  const add = lastOf(h, 'add_to_cart');
  if (retryable(add, h)) return call('add_to_cart', { product_id: match.product_id, quantity });
  const view = lastOf(h, 'view_cart');
  if (!ok(view)) {
    if (tries(h, 'view_cart') < 2) return call('view_cart', {});
    return json({
      product_title: match.title,
      product_id: match.product_id,
      sku: match.sku,
      requested_quantity: quantity,
      observed_quantity: 0,
      cart_verified: false,
    });
  }
  const items = Array.isArray(view.result.items) ? (view.result.items as Json[]) : [];
  const line = items.find((i) => i.product_id === match.product_id);
  const observed = line ? Number(line.quantity) : 0;
  return json({
    product_title: match.title,
    product_id: match.product_id,
    sku: match.sku,
    requested_quantity: quantity,
    observed_quantity: observed,
    cart_verified: observed === quantity,
  });
}

function code(p: Json, h: ToolUse[]): MockReply {
  const fn = String(p.function ?? '');
  const file = String(p.file ?? `${fn}.js`);
  const write = lastOf(h, 'write_file');
  if (retryable(write, h)) {
    const body =
      SOLUTIONS[fn] ?? `function ${fn}() {\n  throw new Error('not implemented');\n}\nmodule.exports = { ${fn} };\n`;
    return call('write_file', { path: file, content: body });
  }
  const tests = lastOf(h, 'run_tests');
  if (!ok(tests)) {
    if (tries(h, 'run_tests') < 2) return call('run_tests', { path: file });
    return json({
      function: fn,
      path: file,
      tests_passed: 0,
      tests_total: 0,
      all_passed: false,
      note: 'tests could not run',
    });
  }
  const passed = Number(tests.result.passed ?? 0);
  const total = Number(tests.result.total ?? 0);
  return json({
    function: fn,
    path: file,
    tests_passed: passed,
    tests_total: total,
    all_passed: total > 0 && passed === total,
  });
}

// ------------------------------------------------------------------------------------------------ verifier, decision

/** What is wrong with the evidence for this task, judged only on the fields it contains. */
function issues(taskText: string | undefined, ev: Json): string[] {
  const t = readTask(taskText);
  const out: string[] = [];
  if (!t) return ['task not understood'];
  if (t.family === 'shopping') {
    if (ev.product_title !== undefined && String(ev.product_title).toLowerCase() !== t.product?.toLowerCase())
      out.push(`wrong product ${String(ev.product_title)}`);
    if (ev.requested_quantity !== undefined && Number(ev.requested_quantity) !== t.quantity)
      out.push(`requested quantity ${String(ev.requested_quantity)} is not ${t.quantity}`);
    if (ev.observed_quantity !== undefined && Number(ev.observed_quantity) !== t.quantity)
      out.push(`cart holds ${String(ev.observed_quantity)}, not ${t.quantity}`);
    if (ev.cart_verified !== true) out.push('cart not verified');
  } else {
    if (ev.function !== undefined && ev.function !== t.fn) out.push(`wrong function ${String(ev.function)}`);
    if (ev.tests_total !== undefined && Number(ev.tests_passed) !== Number(ev.tests_total))
      out.push(`${String(ev.tests_passed)}/${String(ev.tests_total)} tests pass`);
    if (ev.all_passed !== true) out.push('tests do not all pass');
  }
  return out;
}

function verify(taskText: string | undefined, ev: Json | undefined): Json {
  if (!ev) return { verdict: 'no_evidence', reason: 'no evidence was received from the Worker' };
  const found = issues(taskText, ev);
  return found.length === 0
    ? { verdict: 'accept', reason: 'the evidence satisfies the task' }
    : { verdict: 'reject', reason: found.join('; ') };
}

function decide(taskText: string | undefined, judgment: Json | undefined, ev: Json | undefined): Json {
  const t = readTask(taskText);
  if (judgment?.verdict === 'reject')
    return { decision: 'reject', reason: `verifier rejected: ${String(judgment.reason ?? '')}` };
  if (!ev) return { decision: 'reject', reason: 'no evidence to act on' };
  // Without an accepting judgment the decision maker checks the evidence itself.
  if (judgment?.verdict !== 'accept') {
    const found = issues(taskText, ev);
    if (found.length > 0) return { decision: 'reject', reason: found.join('; ') };
  }
  if (t?.family === 'shopping') {
    return {
      decision: 'accept',
      order: { sku: ev.sku ?? null, quantity: ev.observed_quantity ?? ev.requested_quantity ?? null },
      reason: 'evidence accepted',
    };
  }
  return { decision: 'accept', submit: { path: ev.path ?? null }, reason: 'evidence accepted' };
}

// ------------------------------------------------------------------------------------------------ helpers

function textOf(m: ChatMessage): string {
  if (typeof m.content === 'string') return m.content;
  if (Array.isArray(m.content)) return m.content.map((p) => p.text ?? '').join('');
  return '';
}

const json = (v: unknown): MockReply => ({ content: JSON.stringify(v) });
const call = (name: string, args: unknown): MockReply => ({ toolCalls: [{ name, arguments: args }] });
