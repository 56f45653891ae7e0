'use strict';
/**
 * Small multi-agent workflows written for the independent evaluation set (unlike examples/: no shopping cart, no
 * coding pipeline): a trip planner, a support desk, a research digest and an ops report. Each agent calls the real
 * openai client (ctx.llm) with the conversation a real agent would send, and runs its tools (ctx.tool); what the
 * "model" answers is scripted here, deterministically from the task's seed, with the variety real answers have:
 * markdown lists without final punctuation, tables, code, JSON, URLs at the end, CJK and emoji, long answers, text
 * that talks about errors and timeouts. Tools fail the way real tools do (bad arguments, a flaky backend that a retry
 * fixes, a lookup that finds nothing and is handled).
 */

const CITIES = [
  { city: 'Lisbon', country: 'Portugal', sight: 'the Alfama and São Jorge castle', food: 'pastéis de nata' },
  { city: 'Kraków', country: 'Poland', sight: 'the Wawel castle and Kazimierz', food: 'pierogi' },
  { city: 'Montréal', country: 'Canada', sight: 'the Plateau and Mont-Royal', food: 'bagels and poutine' },
  { city: 'Kyoto', country: 'Japan', sight: 'Fushimi Inari and Gion', food: 'kaiseki' },
  { city: 'Valparaíso', country: 'Chile', sight: 'the ascensores and Cerro Alegre', food: 'empanadas de mariscos' },
  { city: 'Tbilisi', country: 'Georgia', sight: 'the old town and the Narikala fortress', food: 'khachapuri' },
];
const CURRENCIES = [['EUR', 'USD'], ['PLN', 'EUR'], ['CAD', 'USD'], ['JPY', 'EUR'], ['CLP', 'USD'], ['GEL', 'EUR']];
const TOPICS = ['retrieval-augmented generation for legal search', 'fault injection for distributed systems', 'energy use of transformer inference', 'multilingual speech recognition', 'graph neural networks for traffic forecasting'];
const PRODUCTS = ['ThermoMug 2', 'AeroPress Go', 'Lumen desk lamp', 'Trailrunner backpack', 'NoiseAway earbuds'];

function toolDef(name, description, properties, required) {
  return { type: 'function', function: { name, description, parameters: { type: 'object', properties, required, additionalProperties: false } } };
}

/** Finish text in one of the ways real answers end (the variety a truncation heuristic must live with). */
function ending(ctx, body, kind) {
  switch (kind) {
    case 'list':
      return `${body}\n\nNext steps:\n- confirm the booking\n- share the plan with the group`;
    case 'url':
      return `${body} Details: https://example.org/guides/${ctx.int(100, 999)}`;
    case 'emoji':
      return `${body} Have a great trip ✈️🌍`;
    case 'table':
      return `${body}\n\n| item | value |\n|---|---|\n| total | ${ctx.int(100, 900)} |\n| items | ${ctx.int(2, 9)} |`;
    case 'code':
      return `${body}\n\n\`\`\`sql\nSELECT region, sum(revenue) FROM sales GROUP BY region;\n\`\`\``;
    case 'cjk':
      return `${body} 要約: 計画は順調です。`;
    case 'noperiod':
      return body.replace(/[.!]$/, '');
    default:
      return body;
  }
}

/** A long, valid answer (slow because it is long, not because anything went wrong). */
function longText(ctx, subject, paragraphs) {
  const out = [];
  for (let i = 0; i < paragraphs; i++) {
    out.push(`${ctx.pick(['First', 'Then', 'After that', 'Finally', 'Meanwhile', 'In addition'])}, ${subject} ${ctx.pick(['covers the essentials', 'leaves room for changes', 'keeps costs predictable', 'fits the schedule', 'avoids the busiest hours'])} and ${ctx.pick(['the team agreed on it', 'it matches the brief', 'the numbers add up', 'nothing is left open'])}.`);
  }
  return out.join(' ');
}

// ------------------------------------------------------------------------------------------------ trip planner

async function trip(ctx) {
  const c = ctx.pick(CITIES);
  const days = ctx.int(2, 5);
  const [from, to] = CURRENCIES[CITIES.indexOf(c)];
  const date = `2025-0${ctx.int(4, 9)}-${String(ctx.int(10, 28))}`;
  // Tricky clean: the user names the city only through its country (the model knows the capital).
  const derived = ctx.flag('derivedEntity') && c.city === 'Lisbon';
  const ask = derived ? `Plan ${days} days in the capital of Portugal from ${date}, with a budget of 900 ${from}.` : `Plan ${days} days in ${c.city} from ${date}, with a budget of 900 ${from}.`;
  const plan = await ctx.agent('planner', async () => {
    const r = await ctx.llm({ system: 'You are a travel planner. Outline the days.', messages: [{ role: 'user', content: ask }], maxTokens: 300 }, { text: ending(ctx, `Day 1: arrive and walk around ${derived ? 'the old town' : c.sight}. Day 2: museums and ${c.food}. ${days > 2 ? `Days 3-${days}: day trips and rest.` : ''}`.trim(), ctx.pick(['plain', 'plain', 'list', 'noperiod'])) });
    return r.text;
  });
  const weather = await ctx.agent('weather', async () => {
    const messages = [{ role: 'system', content: 'You check the weather for travel plans. Use get_forecast.' }, { role: 'user', content: `${ask}\nPlan:\n${plan}` }];
    const tools = [toolDef('get_forecast', 'Daily forecast for a city', { city: { type: 'string' }, date: { type: 'string' } }, ['city', 'date'])];
    const call = { id: ctx.callId(), name: 'get_forecast', arguments: JSON.stringify({ city: c.city, date }) };
    const r1 = await ctx.llm({ messages, tools }, { toolCalls: [call] }, { entity: { key: 'city', value: c.city } });
    const tc = r1.toolCalls[0];
    if (!tc) return r1.text;
    let result;
    try {
      result = await ctx.tool('get_forecast', tc.id, tc.arguments, (args) => {
        if (typeof args.city !== 'string' || typeof args.date !== 'string') throw new TypeError('get_forecast needs city and date');
        return { city: args.city, date: args.date, high_c: ctx.int(14, 31), rain_pct: ctx.int(0, 70) };
      }, { flaky: ctx.flag('toolRetry') });
    } catch (err) {
      result = { error: String(err.message) };
    }
    messages.push({ role: 'assistant', content: null, tool_calls: [{ id: tc.id, type: 'function', function: { name: tc.name, arguments: tc.arguments } }] }, { role: 'tool', tool_call_id: tc.id, content: JSON.stringify(result) });
    const r2 = await ctx.llm({ messages, tools }, { text: result.error ? `I could not get the forecast (${result.error}); pack for mixed weather.` : `Expect highs around ${result.high_c}°C in ${result.city} with a ${result.rain_pct}% chance of rain — bring a light jacket.` });
    return r2.text;
  });
  const budget = await ctx.agent('budget', async () => {
    const messages = [{ role: 'system', content: 'You convert and check the budget. Use convert_currency.' }, { role: 'user', content: `Budget 900 ${from} for ${days} days. Convert to ${to}.` }];
    const tools = [toolDef('convert_currency', 'Convert an amount between currencies', { amount: { type: 'number' }, from: { type: 'string' }, to: { type: 'string' } }, ['amount', 'from', 'to'])];
    const r1 = await ctx.llm({ messages, tools }, { toolCalls: [{ id: ctx.callId(), name: 'convert_currency', arguments: JSON.stringify({ amount: 900, from, to }) }] });
    const tc = r1.toolCalls[0];
    if (!tc) return r1.text;
    let result;
    try {
      result = await ctx.tool('convert_currency', tc.id, tc.arguments, (args) => {
        if (typeof args.amount !== 'number' || typeof args.from !== 'string' || typeof args.to !== 'string') throw new TypeError('convert_currency: amount must be a number, from/to currency codes');
        return { amount: args.amount, from: args.from, to: args.to, converted: Math.round(args.amount * 1.08 * 100) / 100 };
      });
    } catch (err) {
      result = { error: String(err.message) };
    }
    messages.push({ role: 'assistant', content: null, tool_calls: [{ id: tc.id, type: 'function', function: { name: tc.name, arguments: tc.arguments } }] }, { role: 'tool', tool_call_id: tc.id, content: JSON.stringify(result) });
    const r2 = await ctx.llm({ messages, tools }, { text: result.error ? 'The conversion failed; I kept the budget in the original currency.' : `That is about ${result.converted} ${to}, or ${Math.round(result.converted / days)} ${to} per day.` });
    return r2.text;
  });
  return ctx.agent('writer', async () => {
    const long = ctx.flag('long');
    const body = long ? longText(ctx, `the ${days}-day plan for ${c.city}`, ctx.int(14, 24)) : `Here is your ${days}-day itinerary for ${c.city} — café stops included. ${plan.slice(0, 160)} ${weather.slice(0, 100)} ${budget.slice(0, 80)}`;
    const r = await ctx.llm({ system: 'You write the final itinerary for the traveller.', messages: [{ role: 'user', content: `Write the itinerary.\nPlan: ${plan}\nWeather: ${weather}\nBudget: ${budget}` }], stream: true }, { text: ending(ctx, body, ctx.pick(['plain', 'emoji', 'url', 'list', 'plain'])) });
    return r.text;
  });
}

// ------------------------------------------------------------------------------------------------ support desk

async function support(ctx) {
  const order = `A-${ctx.int(10000, 99999)}`;
  const product = ctx.pick(PRODUCTS);
  const complaint = ctx.pick([`My ${product} arrived broken, order ${order}. I want a refund.`, `Order ${order}: the ${product} never arrived. Where is it?`, `I was charged twice for order ${order} (${product}).`]);
  const triage = await ctx.agent('triage', async () => {
    const json = { category: complaint.includes('charged') ? 'billing' : complaint.includes('never') ? 'shipping' : 'refund', order_id: order, urgency: ctx.pick(['low', 'normal', 'high']) };
    const r = await ctx.llm({ system: 'Classify the ticket. Answer with JSON {category, order_id, urgency}.', messages: [{ role: 'user', content: complaint }], responseFormat: { type: 'json_object' } }, { text: JSON.stringify(json) });
    try {
      return JSON.parse(r.text);
    } catch {
      return { category: 'unknown', order_id: order };
    }
  });
  const facts = await ctx.agent('lookup', async () => {
    const tools = [
      toolDef('find_order', 'Look an order up by id', { order_id: { type: 'string' } }, ['order_id']),
      toolDef('get_refund_policy', 'The current refund policy (no parameters)', {}, []),
    ];
    const messages = [{ role: 'system', content: 'You look up orders and policies for support agents.' }, { role: 'user', content: `Ticket (${triage.category}): ${complaint}` }];
    const calls = [{ id: ctx.callId(), name: 'find_order', arguments: JSON.stringify({ order_id: order }) }];
    if (triage.category !== 'shipping') calls.push({ id: ctx.callId(), name: 'get_refund_policy', arguments: '{}' });
    const r1 = await ctx.llm({ messages, tools }, { toolCalls: calls }, { entity: { key: 'order_id', value: order } });
    const results = [];
    messages.push({ role: 'assistant', content: null, tool_calls: r1.toolCalls.map((t) => ({ id: t.id, type: 'function', function: { name: t.name, arguments: t.arguments } })) });
    for (const tc of r1.toolCalls) {
      let result;
      try {
        result = await ctx.tool(tc.name, tc.id, tc.arguments, (args) => {
          if (tc.name === 'get_refund_policy') return { window_days: 30, condition: 'unused or defective' };
          if (typeof args.order_id !== 'string' || !/^A-\d+$/.test(args.order_id)) throw new TypeError('find_order: order_id must look like A-12345');
          // Tricky clean: the lookup finds nothing and the agent handles it.
          if (ctx.flag('toolHandled')) throw new Error(`order ${args.order_id} not found in the EU warehouse`);
          return { order_id: args.order_id, product, status: complaint.includes('never') ? 'in transit' : 'delivered', paid: ctx.int(20, 240) };
        });
      } catch (err) {
        result = { error: String(err.message) };
      }
      results.push(result);
      messages.push({ role: 'tool', tool_call_id: tc.id, content: JSON.stringify(result) });
    }
    const found = results.find((x) => x.status);
    const r2 = await ctx.llm({ messages, tools }, { text: found ? `Order ${found.order_id} (${found.product}) is ${found.status}; paid ${found.paid} EUR.${results.length > 1 ? ' Refunds are possible within 30 days.' : ''}` : 'The order could not be found; the warehouse search returned no record, so I will ask the customer for a receipt.' });
    return r2.text;
  });
  return ctx.agent('responder', async () => {
    const r = await ctx.llm(
      { system: 'You reply to the customer, politely and briefly.', messages: [{ role: 'user', content: `Ticket: ${complaint}\nFacts: ${facts}` }], stream: ctx.pick([true, false]) },
      { text: ending(ctx, ctx.flag('mentionsError') ? `Sorry about that. We saw an error in our billing system earlier (a timeout on the payment provider), which caused the double charge. ${facts.slice(0, 120)}` : `Thank you for reaching out. ${facts.slice(0, 160)} We will follow up within 24 hours.`, ctx.pick(['plain', 'plain', 'noperiod', 'emoji'])) },
    );
    return r.text;
  });
}

// ------------------------------------------------------------------------------------------------ research digest

async function research(ctx) {
  const topic = ctx.pick(TOPICS);
  const year = ctx.int(2019, 2025);
  const papers = await ctx.agent('searcher', async () => {
    const tools = [toolDef('search_papers', 'Search papers by query and year', { query: { type: 'string' }, year: { type: 'integer', minimum: 2000 } }, ['query', 'year'])];
    const messages = [{ role: 'system', content: 'You find papers for a literature digest.' }, { role: 'user', content: `Find recent papers on ${topic} since ${year}.` }];
    const r1 = await ctx.llm({ messages, tools }, { toolCalls: [{ id: ctx.callId(), name: 'search_papers', arguments: JSON.stringify({ query: topic, year }) }] });
    const tc = r1.toolCalls[0];
    if (!tc) return [];
    let result;
    try {
      result = await ctx.tool('search_papers', tc.id, tc.arguments, (args) => {
        if (typeof args.query !== 'string' || !Number.isInteger(args.year)) throw new TypeError('search_papers: query string and integer year required');
        return { papers: [`${args.query}: a survey (${args.year + 1})`, `Scaling ${args.query.split(' ')[0]} in practice (${args.year + 2})`] };
      }, { flaky: ctx.flag('toolRetry') });
    } catch (err) {
      result = { error: String(err.message), papers: [] };
    }
    messages.push({ role: 'assistant', content: null, tool_calls: [{ id: tc.id, type: 'function', function: { name: tc.name, arguments: tc.arguments } }] }, { role: 'tool', tool_call_id: tc.id, content: JSON.stringify(result) });
    await ctx.llm({ messages, tools }, { text: result.papers.length > 0 ? `Found ${result.papers.length} papers: ${result.papers.join('; ')}.` : 'No papers found.' });
    return result.papers;
  });
  const summaries = [];
  await ctx.agent('summarizer', async () => {
    for (const p of papers.length > 0 ? papers : [`${topic} (background)`]) {
      const cjk = ctx.flag('cjk');
      const r = await ctx.llm({ system: 'Summarise the paper in two sentences.', messages: [{ role: 'user', content: `Summarise: ${p}` }], maxTokens: 200 }, { text: cjk ? `本論文は${topic}について述べる。主な貢献は新しい評価手法である。` : ending(ctx, `The paper "${p}" studies ${topic} and reports a ${ctx.int(5, 40)}% improvement over the baseline. Its main limitation is the small evaluation set.`, ctx.pick(['plain', 'plain', 'noperiod'])) });
      summaries.push(r.text);
    }
  });
  return ctx.agent('editor', async () => {
    const r = await ctx.llm({ system: 'You edit the digest into a short newsletter section.', messages: [{ role: 'user', content: `Summaries:\n${summaries.join('\n')}` }], stream: true }, { text: ending(ctx, `This week in ${topic}: ${summaries.map((s) => s.slice(0, 90)).join(' ')}`, ctx.pick(['table', 'plain', 'list', 'url'])) });
    return r.text;
  });
}

// ------------------------------------------------------------------------------------------------ ops report

async function ops(ctx) {
  const region = ctx.pick(['EMEA', 'APAC', 'LATAM', 'NA']);
  const quarter = `Q${ctx.int(1, 4)} 2025`;
  const data = await ctx.agent('analyst', async () => {
    const tools = [toolDef('run_sql', 'Run a read-only SQL query', { query: { type: 'string' } }, ['query'])];
    const query = `SELECT week, revenue, incidents FROM ops_weekly WHERE region = '${region}' AND quarter = '${quarter}'`;
    const messages = [{ role: 'system', content: 'You are a data analyst. Query the warehouse with run_sql.' }, { role: 'user', content: `How did ${region} do in ${quarter}?` }];
    const r1 = await ctx.llm({ messages, tools }, { toolCalls: [{ id: ctx.callId(), name: 'run_sql', arguments: JSON.stringify({ query }) }] });
    const tc = r1.toolCalls[0];
    if (!tc) return { text: r1.text, rows: [] };
    let result;
    try {
      result = await ctx.tool('run_sql', tc.id, tc.arguments, (args) => {
        if (typeof args.query !== 'string' || !/^SELECT /i.test(args.query)) throw new TypeError('run_sql: query must be a SELECT statement');
        return { rows: Array.from({ length: 4 }, (_, i) => ({ week: i + 1, revenue: ctx.int(80, 160) * 1000, incidents: ctx.int(0, 6) })) };
      }, { flaky: ctx.flag('toolRetry') });
    } catch (err) {
      result = { error: String(err.message), rows: [] };
    }
    messages.push({ role: 'assistant', content: null, tool_calls: [{ id: tc.id, type: 'function', function: { name: tc.name, arguments: tc.arguments } }] }, { role: 'tool', tool_call_id: tc.id, content: JSON.stringify(result) });
    const total = result.rows.reduce((a, r) => a + r.revenue, 0);
    const r2 = await ctx.llm({ messages, tools }, { text: result.rows.length > 0 ? `${region} made ${total} in ${quarter} over ${result.rows.length} weeks, with ${result.rows.reduce((a, r) => a + r.incidents, 0)} incidents (two were timeouts in the checkout service).` : 'The query failed, so there is no data for this quarter.' });
    return { text: r2.text, rows: result.rows };
  });
  const chart = await ctx.agent('charts', async () => {
    const tools = [toolDef('make_chart', 'Render a chart', { kind: { type: 'string', enum: ['line', 'bar'] }, title: { type: 'string' }, series: { type: 'array', items: { type: 'number' } } }, ['kind', 'title', 'series'])];
    const messages = [{ role: 'system', content: 'You turn data into one chart.' }, { role: 'user', content: `Chart the weekly revenue: ${JSON.stringify(data.rows)}` }];
    const r1 = await ctx.llm({ messages, tools }, { toolCalls: [{ id: ctx.callId(), name: 'make_chart', arguments: JSON.stringify({ kind: 'line', title: `${region} weekly revenue, ${quarter}`, series: data.rows.map((r) => r.revenue) }) }] });
    const tc = r1.toolCalls[0];
    if (!tc) return r1.text;
    let result;
    try {
      result = await ctx.tool('make_chart', tc.id, tc.arguments, (args) => {
        if (!['line', 'bar'].includes(args.kind) || typeof args.title !== 'string' || !Array.isArray(args.series)) throw new TypeError('make_chart: kind, title and series required');
        return { url: `https://charts.example.org/${ctx.int(1000, 9999)}.png` };
      });
    } catch (err) {
      result = { error: String(err.message) };
    }
    return result.url ?? 'no chart';
  });
  return ctx.agent('reporter', async () => {
    const r = await ctx.llm({ system: 'You write the weekly ops report in markdown.', messages: [{ role: 'user', content: `Data: ${data.text}\nChart: ${chart}` }], stream: true }, { text: ending(ctx, ctx.flag('long') ? longText(ctx, `the ${region} report`, ctx.int(14, 22)) : `## ${region} ${quarter}\n\n${data.text}\n\nChart: ${chart}`, ctx.pick(['code', 'plain', 'table', 'noperiod'])) });
    return r.text;
  });
}

const WORKFLOWS = { trip, support, research, ops };

module.exports = { WORKFLOWS };
