'use strict';
/**
 * The multi-agent workflows of the independent set, each of another shape and unlike examples/ and the set this one
 * replaced (no trip planner, support desk, research digest or ops report):
 * - `helpdesk`: a triage agent's structured handoff (`response_format: json_schema`) to one of two specialists, who
 *   looks the customer up with a tool and streams the reply; a subject line under the app's own `max_tokens`;
 * - `changelog`: a planner splits the work over three workers running in parallel (each reads a commit with a tool,
 *   by short SHA when the conversation has the full one) and a reducer streams the merged digest;
 * - `critic`: a writer streams a draft, a critic answers a JSON verdict, and the loop runs until the critic approves
 *   (one or two rounds), then a title;
 * - `orders`: a tool-heavy ordering agent (search, stock with a flaky backend, a strictly validated `place_order`, an
 *   order status polled until it ships).
 * Each agent calls the real openai client (ctx.llm) with what a real agent would send; what the "model" answers is
 * scripted here from the task's seed (ctx.rng), with non-ASCII names, amounts and markdown. Tools validate their
 * arguments against their declared schema where a real one would (`orders`), and the agent gives up on a validation
 * error: that run is a fault, not a recovery.
 */

const CUSTOMERS = [
  { id: 'cus_8RkQ2', name: 'Zoë Åkesson', city: 'Malmö' },
  { id: 'cus_4TnW7', name: 'José Núñez', city: 'Córdoba' },
  { id: 'cus_9PzL1', name: 'Anaïs Lefèvre', city: 'Besançon' },
  { id: 'cus_2HmV5', name: 'Grzegorz Łukasik', city: 'Łódź' },
];
const REPOS = ['billing-api', 'web-console', 'ingest-worker', 'auth-gateway', 'search-indexer'];
const ITEMS = [
  { sku: 'TNT-2P-OLIVE', name: 'two-person tent, olive', price: 189.5 },
  { sku: 'SLP-BAG-M10', name: 'sleeping bag −10 °C, size M', price: 129 },
  { sku: 'STV-TI-ULTRA', name: 'titanium stove', price: 64.9 },
  { sku: 'PAD-INFL-RG', name: 'inflatable pad, regular', price: 79 },
];

function toolDef(name, description, properties, required) {
  return {
    type: 'function',
    function: { name, description, parameters: { type: 'object', properties, required, additionalProperties: false } },
  };
}

/** What a strict tool does with its arguments: parse, then check them against its declared parameters. */
function validated(def, args) {
  const p = def.function.parameters;
  for (const k of p.required)
    if (!(k in args)) throw new TypeError(`${def.function.name}: missing required argument "${k}"`);
  for (const [k, v] of Object.entries(args)) {
    const want = p.properties[k];
    if (!want) throw new TypeError(`${def.function.name}: unexpected argument "${k}"`);
    const ok =
      want.type === 'integer'
        ? Number.isInteger(v)
        : want.type === 'number'
          ? typeof v === 'number'
          : typeof v === want.type;
    if (!ok) throw new TypeError(`${def.function.name}: argument "${k}" must be ${want.type}`);
  }
  return args;
}

const hex = (ctx, n) => Array.from({ length: n }, () => '0123456789abcdef'[ctx.int(0, 15)]).join('');
const assistantToolTurn = (tc) => ({
  role: 'assistant',
  content: null,
  tool_calls: [{ id: tc.id, type: 'function', function: { name: tc.name, arguments: tc.arguments } }],
});

// ------------------------------------------------------------------------------------------------ helpdesk

async function helpdesk(ctx) {
  const c = ctx.pick(CUSTOMERS);
  const billing = ctx.rng() < 0.5;
  const amount = (ctx.int(1200, 9900) / 100).toFixed(2);
  const ask = billing
    ? `Hi, this is ${c.name} (${c.id}). I was billed €${amount} twice in March, please fix it.`
    : `Hello, ${c.name} here, account ${c.id}. The jacket I got is the wrong size and I'd like to send it back.`;
  const handoffSchema = {
    type: 'object',
    properties: {
      queue: { type: 'string', enum: ['billing', 'returns'] },
      customer_id: { type: 'string' },
      summary: { type: 'string' },
    },
    required: ['queue', 'customer_id', 'summary'],
    additionalProperties: false,
  };
  const handoff = await ctx.agent('triage', async () => {
    const doc = {
      queue: billing ? 'billing' : 'returns',
      customer_id: c.id,
      summary: billing ? `double charge of €${amount} in March` : 'wrong size, wants a return',
    };
    const r = await ctx.llm(
      {
        system: 'Route the message to a queue. Reply with the handoff object.',
        messages: [{ role: 'user', content: ask }],
        responseFormat: { type: 'json_schema', json_schema: { name: 'handoff', strict: true, schema: handoffSchema } },
      },
      { text: JSON.stringify(doc) },
    );
    return JSON.parse(r.text || '{}');
  });
  const specialist = handoff.queue === 'returns' ? 'returns' : 'billing';
  const reply = await ctx.agent(specialist, async () => {
    const tool =
      specialist === 'billing'
        ? toolDef(
            'list_charges',
            'Charges of a customer in a month',
            { customer_id: { type: 'string' }, month: { type: 'string' } },
            ['customer_id', 'month'],
          )
        : toolDef(
            'open_return',
            'Open a return for the last order',
            { customer_id: { type: 'string' }, reason: { type: 'string' } },
            ['customer_id', 'reason'],
          );
    const args =
      specialist === 'billing'
        ? { customer_id: handoff.customer_id ?? c.id, month: '2025-03' }
        : { customer_id: handoff.customer_id ?? c.id, reason: 'wrong size' };
    const messages = [
      { role: 'system', content: `You are the ${specialist} specialist. Use ${tool.function.name}.` },
      { role: 'user', content: `Handoff: ${JSON.stringify(handoff)}\nCustomer wrote: ${ask}` },
    ];
    const r1 = await ctx.llm(
      { messages, tools: [tool] },
      { toolCalls: [{ id: ctx.callId(), name: tool.function.name, arguments: JSON.stringify(args) }] },
    );
    const tc = r1.toolCalls[0];
    const result = await ctx.tool(tool.function.name, tc.id, tc.arguments, (a) =>
      specialist === 'billing'
        ? {
            customer: a.customer_id,
            charges: [
              { amount, at: '2025-03-04' },
              { amount, at: '2025-03-04' },
            ],
          }
        : {
            customer: a.customer_id,
            return_id: `RMA-${ctx.int(1000, 9999)}`,
            label_url: 'https://returns.example.net/label',
          },
    );
    messages.push(assistantToolTurn(tc), { role: 'tool', tool_call_id: tc.id, content: JSON.stringify(result) });
    const text =
      specialist === 'billing'
        ? `Dear ${c.name}, I can see two charges of €${amount} on 4 March. I've refunded the duplicate; it will reach your card in 3–5 business days. Sorry for the trouble!`
        : `Hi ${c.name}, I've opened return ${result.return_id}. Print the label from ${result.label_url}, drop the parcel at any post office in ${c.city}, and we'll send the right size as soon as it's scanned.`;
    const r2 = await ctx.llm({ messages, tools: [tool], stream: true }, { text });
    return r2.text;
  });
  return ctx.agent('subject', async () => {
    const own = ctx.nearMiss === 'own_max_tokens';
    const r = await ctx.llm(
      {
        system: 'Write an email subject line for this reply.',
        messages: [{ role: 'user', content: reply }],
        maxTokens: own ? 6 : 40,
      },
      {
        text:
          specialist === 'billing'
            ? `Your refund for the duplicate March charge of €${amount}`
            : `Return opened for your order, ${c.name}`,
      },
    );
    return { subject: r.text, body: reply };
  });
}

// ------------------------------------------------------------------------------------------------ changelog

async function changelog(ctx) {
  const repos = [...REPOS].sort(() => ctx.rng() - 0.5).slice(0, 3);
  const shas = repos.map(() => hex(ctx, 40));
  const prefix = ctx.nearMiss === 'prefix_argument';
  const ask = `Write this week's changelog for ${repos.join(', ')}. Release commits: ${repos.map((r, i) => `${r}@${shas[i]}`).join(', ')}.`;
  const plan = await ctx.agent('planner', async () => {
    const r = await ctx.llm(
      {
        system: 'Split the changelog into one task per repository. Answer with a JSON list.',
        messages: [{ role: 'user', content: ask }],
        responseFormat: { type: 'json_object' },
      },
      { text: JSON.stringify({ tasks: repos.map((repo, i) => ({ repo, commit: shas[i] })) }) },
    );
    return JSON.parse(r.text || '{"tasks":[]}').tasks ?? [];
  });
  const tool = toolDef(
    'read_commit',
    'Message and diff stats of a commit',
    { repo: { type: 'string' }, ref: { type: 'string' } },
    ['repo', 'ref'],
  );
  const topics = [
    'a retry budget for webhooks',
    'dark mode in the settings page',
    'batching of Kafka writes',
    'rotation of signing keys',
    'a faster prefix index',
  ];
  const settled = await Promise.allSettled(
    repos.map(async (repo, i) => {
      await ctx.sleep(i * 12); // workers start one after another, as a pool hands them out
      return ctx.agent(`worker-${i + 1}`, async () => {
        const sha = plan[i]?.commit ?? shas[i];
        const ref = prefix ? sha.slice(0, 7) : i === 0 ? 'HEAD' : sha;
        const messages = [
          { role: 'system', content: 'Summarise one repository for the changelog. Read its release commit first.' },
          { role: 'user', content: `Repository ${repo}, release commit ${sha}.` },
        ];
        const r1 = await ctx.llm(
          { messages, tools: [tool] },
          { toolCalls: [{ id: ctx.callId(), name: 'read_commit', arguments: JSON.stringify({ repo, ref }) }] },
        );
        const tc = r1.toolCalls[0];
        const topic = topics[REPOS.indexOf(repo)];
        const commit = await ctx.tool('read_commit', tc.id, tc.arguments, (a) => ({
          repo: a.repo,
          sha,
          message: `Add ${topic}`,
          files_changed: ctx.int(3, 40),
          insertions: ctx.int(20, 900),
        }));
        messages.push(assistantToolTurn(tc), { role: 'tool', tool_call_id: tc.id, content: JSON.stringify(commit) });
        const r2 = await ctx.llm(
          { messages, tools: [tool] },
          { text: `**${repo}** — adds ${topic} (${commit.files_changed} files, +${commit.insertions} lines).` },
        );
        return r2.text;
      });
    }),
  );
  const failed = settled.find((s) => s.status === 'rejected');
  if (failed) throw failed.reason;
  const parts = settled.map((s) => s.value);
  return ctx.agent('reducer', async () => {
    const r = await ctx.llm(
      {
        system: 'Merge the repository notes into one changelog in markdown.',
        messages: [{ role: 'user', content: parts.join('\n') }],
        stream: true,
      },
      {
        text: `## Changelog — week ${ctx.int(10, 40)}\n\n${parts.map((p) => `- ${p}`).join('\n')}\n\nThanks to everyone who reviewed — naïve retries are gone at last.`,
      },
    );
    return r.text;
  });
}

// ------------------------------------------------------------------------------------------------ critic loop

async function critic(ctx) {
  const product = ctx.pick(['Larkspur 3.2', 'Quillon 1.9', 'Marrow 0.14']);
  const features = ctx.pick([
    ['offline sync', 'CSV export'],
    ['SSO with Okta', 'audit log'],
    ['a résumé parser', 'bulk tagging'],
  ]);
  const rounds = ctx.rng() < 0.5 ? 1 : 2;
  let draft = '';
  let notes = [];
  for (let round = 1; round <= rounds + 1; round++) {
    const last = round === rounds + 1;
    draft = await ctx.agent('writer', async () => {
      const base = `${product} is out. It brings ${features[0]} and ${features[1]}, plus fixes for ${ctx.int(3, 19)} reported bugs.`;
      const text =
        round === 1
          ? base
          : `${base} Upgrading takes a minute: run the installer again, your settings are kept. ${notes.length ? `(Revised: ${notes.join('; ')}.)` : ''}`;
      const r = await ctx.llm(
        {
          system: 'Write release notes for customers.',
          messages: [
            {
              role: 'user',
              content: `Product ${product}; features: ${features.join(', ')}.${notes.length ? ` Critic notes: ${notes.join('; ')}` : ''}`,
            },
          ],
          stream: true,
        },
        { text: text.trim() },
      );
      return r.text;
    });
    const verdict = await ctx.agent('critic', async () => {
      const v = last
        ? { approved: true, issues: [] }
        : {
            approved: false,
            issues: [ctx.pick(['say how to upgrade', 'mention that settings are kept', 'name the bug count source'])],
          };
      const r = await ctx.llm(
        {
          system: 'Review the release notes. Answer JSON {approved, issues}.',
          messages: [{ role: 'user', content: draft }],
          responseFormat: { type: 'json_object' },
        },
        { text: JSON.stringify(v) },
      );
      try {
        return JSON.parse(r.text);
      } catch {
        return { approved: true, issues: [] };
      }
    });
    if (verdict.approved) break;
    notes = verdict.issues ?? [];
  }
  return ctx.agent('titler', async () => {
    const own = ctx.nearMiss === 'own_max_tokens';
    const r = await ctx.llm(
      {
        system: 'Give the release notes a headline.',
        messages: [{ role: 'user', content: draft }],
        maxTokens: own ? 5 : 30,
      },
      { text: `${product}: ${features[0]} and ${features[1]} are here` },
    );
    return `# ${r.text}\n\n${draft}`;
  });
}

// ------------------------------------------------------------------------------------------------ orders

async function orders(ctx) {
  const item = ctx.pick(ITEMS);
  const qty = ctx.int(1, 4);
  const c = ctx.pick(CUSTOMERS);
  const tools = [
    toolDef('search_catalog', 'Find products', { query: { type: 'string' } }, ['query']),
    toolDef(
      'check_stock',
      'Units in stock at a warehouse',
      { sku: { type: 'string' }, warehouse: { type: 'string' } },
      ['sku', 'warehouse'],
    ),
    toolDef(
      'place_order',
      'Place an order',
      { sku: { type: 'string' }, quantity: { type: 'integer' }, ship_to: { type: 'string' } },
      ['sku', 'quantity', 'ship_to'],
    ),
    toolDef('order_status', 'Status of an order', { order_id: { type: 'string' } }, ['order_id']),
  ];
  const def = (name) => tools.find((t) => t.function.name === name);
  return ctx.agent('shopper', async () => {
    const messages = [
      {
        role: 'system',
        content: 'You order outdoor gear for the customer. Use the tools; confirm the order at the end.',
      },
      { role: 'user', content: `Please order ${qty} × ${item.name} for ${c.name}, shipping to ${c.city}.` },
    ];
    const step = async (name, args, impl, opts = {}) => {
      const r = await ctx.llm(
        { messages, tools },
        { toolCalls: [{ id: ctx.callId(), name, arguments: JSON.stringify(args) }] },
      );
      const tc = r.toolCalls[0];
      let result;
      try {
        result = await ctx.tool(name, tc.id, tc.arguments, (a) => impl(validated(def(name), a)), opts);
      } catch (err) {
        result = { error: err.message };
      }
      messages.push(assistantToolTurn(tc), { role: 'tool', tool_call_id: tc.id, content: JSON.stringify(result) });
      return result;
    };
    const giveUp = async (what, result) => {
      const r = await ctx.llm(
        { messages, tools },
        { text: `Sorry, I couldn't complete the order: ${what} failed (${result.error}). Nothing was charged.` },
      );
      return r.text;
    };
    const found = await step('search_catalog', { query: item.name.split(',')[0] }, () => ({
      results: ITEMS.filter((i) => i !== item)
        .slice(0, 2)
        .concat([item])
        .map((i) => ({ sku: i.sku, name: i.name, price: i.price })),
    }));
    if (found.error) return giveUp('the catalogue search', found);
    const stock = await step(
      'check_stock',
      { sku: item.sku, warehouse: 'EU-2' },
      (a) => ({ sku: a.sku, warehouse: a.warehouse, units: ctx.int(qty + 2, 60) }),
      { flaky: ctx.nearMiss === 'tool_retried' },
    );
    if (stock.error) return giveUp('the stock check', stock);
    const placed = await step(
      'place_order',
      { sku: item.sku, quantity: qty, ship_to: `${c.name}, ${c.city}` },
      (a) => ({
        order_id: `ORD-${ctx.int(100000, 999999)}`,
        sku: a.sku,
        quantity: a.quantity,
        total_eur: Math.round(a.quantity * item.price * 100) / 100,
      }),
    );
    if (placed.error) return giveUp('placing the order', placed);
    const polls = ctx.nearMiss === 'repeated_poll' ? 2 : 1;
    let status;
    for (let i = 0; i < polls; i++) {
      status = await step('order_status', { order_id: placed.order_id }, (a) => ({
        order_id: a.order_id,
        status: i + 1 < polls ? 'processing' : 'shipped',
      }));
      if (status.error) return giveUp('the status check', status);
    }
    const r = await ctx.llm(
      { messages, tools },
      {
        text: `Done: order ${placed.order_id} for ${qty} × ${item.name} (€${placed.total_eur.toFixed(2)}) is ${status.status}, on its way to ${c.city}.`,
      },
    );
    return r.text;
  });
}

const WORKFLOWS = { helpdesk, changelog, critic, orders };

module.exports = { WORKFLOWS };
