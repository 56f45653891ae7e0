/**
 * A labelled evaluation set for the workflow monitors: seeded multi-agent runs written as OTLP JSON spans the way
 * GenAI producers record them, each run clean or carrying one failure mode.
 *
 * Why it is written this way (issue 28): an evaluation built from faultline's own examples and thresholds agrees with
 * faultline by construction. So the faults here are written from the failure modes' definitions, not from the
 * monitors (this file must not share their strings or numbers; monitor-independence.test.ts checks):
 *  - MAST (Cemri et al., "Why Do Multi-Agent LLM Systems Fail?", arXiv 2503.13657): 1.3 step repetition, the
 *    unnecessary reiteration of steps already completed; 1.4 loss of conversation history, an unexpected context
 *    truncation that reverts the agent to an earlier conversational state; 2.1 conversation reset, an unwarranted
 *    restart of a dialogue losing its context and progress; 1.2 disobey role specification, an agent not keeping to its
 *    role's responsibilities and constraints, behaving like another agent; 3.1 premature termination, ending a task
 *    before all the information is exchanged or its objectives met; 1.5 unaware of termination conditions (carrying on
 *    without getting anywhere: our "no progress").
 *  - ARCF (../shared/papers/arcf-reliability-control.txt §4.2): timeout errors, context overflow, role violation,
 *    output conflict, workflow deadlock, premature termination, infinite loop, output quality degradation.
 * The spans follow the producers' documented conventions (../shared/reference/genai-otel.md §1.3–1.5, §2.2; the
 * message JSON schemas in ../shared/reference/semconv-schemas/): plain latest GenAI semconv as OTel's
 * instrumentation-genai writes it (`invoke_agent` / `chat` / `execute_tool`, `gen_ai.tool.definitions`, usage, finish
 * reasons, `gen_ai.input/output.messages` when content is captured), and OpenLLMetry's indexed attributes
 * (`gen_ai.prompt.N.*`, `gen_ai.completion.N.*`, `llm.request.functions.N.*`, `traceloop.span.kind`). Provider errors
 * are worded as the providers word them (OpenAI / Azure / vLLM / Anthropic / Gemini / Bedrock context-limit refusals,
 * SDK timeouts, gRPC deadlines). Clean runs include legitimate near-misses: successful retries, re-reads after a
 * change, long contexts that fit, runs that end early because the work is done, a last answer that tells the user what
 * happens after the run, brief answers to the user's yes/no follow-ups.
 *
 * Each faulted run says whether its fault leaves evidence in the spans without message content (`evidence: 'spans'`)
 * or only in the content (`'content'`): a judgement from the definitions, used to report recall on what is observable.
 */

export const MODES = [
  'step_repetition',
  'premature_termination',
  'quality_degradation',
  'context_overflow',
  'history_loss',
  'role_violation',
  'output_conflict',
  'timeout_deadlock',
  'no_progress',
];
export const PRODUCERS = ['semconv', 'openllmetry'];

/** A small seeded PRNG (mulberry32): the set is the same on every machine. */
function prng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    chance: (k, n) => next() * n < k,
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: (xs) => xs[Math.floor(next() * xs.length)],
    hex: (n) => Array.from({ length: n }, () => Math.floor(next() * 16).toString(16)).join(''),
  };
}

const tok = (s) => Math.max(1, Math.ceil(String(s).length / 4));
const fn = (name, description, props) => ({
  type: 'function',
  name,
  description,
  parameters: {
    type: 'object',
    properties: Object.fromEntries(props.map((p) => [p, { type: 'string' }])),
    required: props,
  },
});

// ------------------------------------------------------------------------------------------------ models

/** Models by provider, with their documented context windows (provider model pages, 2025). */
const MODELS = [
  {
    provider: 'openai',
    model: 'gpt-4o',
    window: 128000,
    host: 'api.openai.com',
    finish: { stop: 'stop', tool: 'tool_calls', length: 'length' },
  },
  {
    provider: 'azure.ai.openai',
    model: 'gpt-4o-mini',
    window: 128000,
    host: 'contoso-ai.openai.azure.com',
    finish: { stop: 'stop', tool: 'tool_calls', length: 'length' },
  },
  {
    provider: 'anthropic',
    model: 'claude-sonnet-4-20250514',
    window: 200000,
    host: 'api.anthropic.com',
    finish: { stop: 'end_turn', tool: 'tool_use', length: 'max_tokens' },
  },
  {
    provider: 'gcp.gemini',
    model: 'gemini-2.0-flash',
    window: 1048576,
    host: 'generativelanguage.googleapis.com',
    finish: { stop: 'STOP', tool: 'STOP', length: 'MAX_TOKENS' },
  },
  {
    provider: 'aws.bedrock',
    model: 'anthropic.claude-3-5-sonnet-20240620-v1:0',
    window: 200000,
    host: 'bedrock-runtime.us-east-1.amazonaws.com',
    finish: { stop: 'end_turn', tool: 'tool_use', length: 'max_tokens' },
  },
  // An OpenAI-compatible vLLM server: the window is the server's --max-model-len.
  {
    provider: 'openai',
    model: 'meta-llama/Llama-3.1-8B-Instruct',
    window: 32768,
    host: 'vllm.internal',
    port: 8000,
    vllm: true,
    finish: { stop: 'stop', tool: 'tool_calls', length: 'length' },
  },
];

/** The provider's own refusal of a request over the window, as its API and SDK report it. */
function overflowError(m, rng, inputTokens) {
  const completion = rng.pick([1024, 2048, 4096]);
  if (m.vllm) {
    return rng.chance(1, 2)
      ? {
          type: 'BadRequestError',
          message: `400 This model's maximum context length is ${m.window} tokens. However, you requested ${inputTokens + completion} tokens (${inputTokens} in the messages, ${completion} in the completion). Please reduce the length of the messages or completion.`,
        }
      : {
          type: 'BadRequestError',
          message: `400 'max_tokens' is too large: ${completion}. This model's maximum context length is ${m.window} tokens and your request has ${inputTokens} input tokens (${completion} > ${m.window} - ${inputTokens}).`,
        };
  }
  if (m.provider === 'openai' || m.provider === 'azure.ai.openai') {
    return {
      type: rng.pick(['BadRequestError', 'context_length_exceeded']),
      message: `400 This model's maximum context length is ${m.window} tokens. However, your messages resulted in ${inputTokens} tokens. Please reduce the length of the messages.`,
    };
  }
  if (m.provider === 'anthropic')
    return {
      type: rng.pick(['BadRequestError', 'invalid_request_error']),
      message: `400 {"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: ${inputTokens} tokens > ${m.window} maximum"}}`,
    };
  if (m.provider === 'gcp.gemini')
    return {
      type: rng.pick(['ClientError', '400']),
      message: `400 INVALID_ARGUMENT. The input token count (${inputTokens}) exceeds the maximum number of tokens allowed (${m.window}).`,
    };
  return {
    type: 'ValidationException',
    message: rng.pick([
      'Input is too long for requested model.',
      `prompt is too long: ${inputTokens} tokens > ${m.window} maximum`,
    ]),
  };
}

// ------------------------------------------------------------------------------------------------ workflows

const CITIES = ['Lisbon', 'Oslo', 'Nairobi', 'Osaka', 'Lima', 'Krakow', 'Denver', 'Hanoi'];
const TOPICS = [
  'heat pumps in cold climates',
  'sodium-ion batteries',
  'urban tree canopy and heat',
  'microplastics in drinking water',
  'four-day work weeks',
];
const REPOS = ['acme/payments', 'acme/web-shop', 'tools/cli-kit', 'infra/deployer'];

/**
 * A workflow: its agents (each with its own tools) and a clean plan. A plan is a list of agent turns; a turn is its
 * agent, its input and steps: tool calls (`tool`, `args`, `result`) and answers (`answer`).
 */
const WORKFLOWS = {
  travel_booking(rng) {
    const from = rng.pick(CITIES);
    const to = rng.pick(CITIES.filter((c) => c !== from));
    const date = `2026-0${rng.int(1, 9)}-${String(rng.int(10, 28))}`;
    const nights = rng.int(2, 6);
    const flight = `FL-${rng.int(1000, 9999)}`;
    const price = rng.int(180, 900);
    const hotel = `HT-${rng.int(100, 999)}`;
    const hold = `HF-${rng.hex(6).toUpperCase()}`;
    const room = `RM-${rng.hex(6).toUpperCase()}`;
    const request = `Book me a flight from ${from} to ${to} on ${date} and a hotel in ${to} for ${nights} nights.`;
    return {
      key: { name: 'flight_id', value: flight, agent: 'flight_agent', tool: 'hold_fare', arg: 'flight_id' },
      agents: {
        flight_agent: {
          role: 'You search and hold flights. Never book hotels.',
          tools: [
            fn('search_flights', 'Search flights', ['origin', 'destination', 'date']),
            fn('hold_fare', 'Hold a fare for 24 hours', ['flight_id']),
          ],
        },
        hotel_agent: {
          role: 'You search and hold hotel rooms. Never touch flights.',
          tools: [
            fn('search_hotels', 'Search hotels', ['city', 'checkin', 'nights']),
            fn('hold_room', 'Hold a room', ['hotel_id']),
          ],
        },
        coordinator: { role: 'You summarise the bookings for the traveller.', tools: [] },
      },
      request,
      search: {
        agent: 'hotel_agent',
        tool: 'search_hotels',
        args: (i) => ({ city: to, checkin: date, nights: String(nights + (i % 2)), max_price: String(120 + 20 * i) }),
        empty: '{"hotels":[],"note":"no availability for these dates"}',
      },
      turns: [
        {
          agent: 'flight_agent',
          input: request,
          steps: [
            {
              tool: 'search_flights',
              args: { origin: from, destination: to, date },
              result: JSON.stringify({
                flights: [
                  { id: flight, price, currency: 'EUR', stops: 0 },
                  { id: `FL-${rng.int(1000, 9999)}`, price: price + 85, currency: 'EUR', stops: 1 },
                ],
              }),
            },
            {
              tool: 'hold_fare',
              args: { flight_id: flight },
              result: JSON.stringify({ hold: hold, flight_id: flight, status: 'held', expires: '24h' }),
            },
            {
              answer: `Held flight ${flight} (${from} → ${to}, ${date}, nonstop) at ${price} EUR; hold reference ${hold}.`,
            },
          ],
        },
        {
          agent: 'hotel_agent',
          input: `Flight ${flight} arrives in ${to} on ${date}. Find a hotel for ${nights} nights.`,
          steps: [
            {
              tool: 'search_hotels',
              args: { city: to, checkin: date, nights: String(nights) },
              result: JSON.stringify({ hotels: [{ id: hotel, name: `Hotel ${to} Central`, rate: rng.int(70, 240) }] }),
            },
            {
              tool: 'hold_room',
              args: { hotel_id: hotel },
              result: JSON.stringify({ hold: room, hotel_id: hotel, status: 'held' }),
            },
            {
              answer: `Held a room at Hotel ${to} Central (${hotel}) from ${date} for ${nights} nights; reference ${room}.`,
            },
          ],
        },
        {
          agent: 'coordinator',
          input: `Flight: ${flight} held (${hold}), ${price} EUR. Hotel: ${hotel} held (${room}).`,
          steps: [
            {
              answer: `Your trip is on hold: flight ${flight} from ${from} to ${to} on ${date} for ${price} EUR (hold ${hold}), and ${nights} nights at Hotel ${to} Central (hold ${room}). Both holds expire in 24 hours; reply "confirm" to pay.`,
            },
          ],
        },
      ],
    };
  },
  code_review(rng) {
    const repo = rng.pick(REPOS);
    const pr = rng.int(100, 4999);
    const file = rng.pick(['src/ledger.ts', 'src/cart/total.ts', 'lib/parse_args.py', 'cmd/deploy/main.go']);
    const line = rng.int(12, 240);
    const request = `Review pull request #${pr} in ${repo} and leave comments on anything risky.`;
    return {
      key: { name: 'line', value: String(line), agent: 'reader', tool: 'post_comment', arg: 'line' },
      agents: {
        reader: {
          role: 'You fetch diffs and files for review. You do not comment.',
          tools: [
            fn('fetch_diff', 'Fetch the diff of a pull request', ['repo', 'pr']),
            fn('read_file', 'Read a file at the PR head', ['repo', 'path']),
          ],
        },
        reviewer: {
          role: 'You lint and comment on pull requests. You do not change code.',
          tools: [
            fn('run_linter', 'Run the linter on a file', ['path']),
            fn('post_comment', 'Post a review comment', ['pr', 'path', 'line', 'body']),
          ],
        },
        summarizer: { role: 'You write the review summary for the author.', tools: [] },
      },
      request,
      search: {
        agent: 'reader',
        tool: 'read_file',
        args: (i) => ({
          repo,
          path: [
            'src/util.ts',
            'src/index.ts',
            'src/types.ts',
            'src/config.ts',
            'src/main.ts',
            'src/app.ts',
            'src/lib.ts',
          ][i % 7],
        }),
        empty: '{"error":"file not found at head","status":404}',
      },
      turns: [
        {
          agent: 'reader',
          input: request,
          steps: [
            {
              tool: 'fetch_diff',
              args: { repo, pr: String(pr) },
              result: `diff --git a/${file} b/${file}\n@@ -${line},6 +${line},9 @@\n-  total = sum(items)\n+  total = sum(i.price for i in items)\n+  if total < 0: total = 0`,
            },
            {
              tool: 'read_file',
              args: { repo, path: file },
              result: `// ${file} (412 lines)\nexport function total(items) {\n  return items.reduce((a, i) => a + i.price, 0)\n}`,
            },
            {
              answer: `PR #${pr} changes ${file} around line ${line}: the total now sums item prices and clamps negatives to zero.`,
            },
          ],
        },
        {
          agent: 'reviewer',
          input: `${file} line ${line}: total now clamps negative sums to 0.`,
          steps: [
            {
              tool: 'run_linter',
              args: { path: file },
              result: JSON.stringify({ warnings: [{ line: line + 2, rule: 'no-magic-numbers' }], errors: [] }),
            },
            {
              tool: 'post_comment',
              args: {
                pr: String(pr),
                path: file,
                line: String(line),
                body: 'Clamping a negative total hides refund bugs; raise instead?',
              },
              result: JSON.stringify({ id: rng.int(10000, 99999), status: 'posted' }),
            },
            {
              answer: `Commented on ${file}:${line}: clamping negatives to zero hides refund errors; one lint warning at line ${line + 2}.`,
            },
          ],
        },
        {
          agent: 'summarizer',
          input: `Comments: ${file}:${line} clamping concern; lint warning at ${line + 2}.`,
          steps: [
            {
              answer: `Review of #${pr}: one risk (negative totals clamped to zero in ${file}:${line} could hide refund bugs) and one lint warning. Requesting changes.`,
            },
          ],
        },
      ],
    };
  },
  research(rng) {
    const topic = rng.pick(TOPICS);
    const year = rng.int(2019, 2025);
    const share = rng.int(11, 63);
    const url = `https://example.org/reports/${rng.hex(8)}`;
    const request = `Write a short brief on ${topic}, with sources.`;
    return {
      key: { name: 'share', value: `${share}%`, agent: 'searcher', tool: 'cite_source', arg: 'claim' },
      agents: {
        searcher: {
          role: 'You find and read sources. You do not write the brief.',
          tools: [fn('web_search', 'Search the web', ['query']), fn('fetch_page', 'Fetch a page as text', ['url'])],
        },
        writer: {
          role: 'You write the brief from the notes you are given, citing them.',
          tools: [fn('cite_source', 'Register a citation', ['url', 'claim'])],
        },
      },
      request,
      search: {
        agent: 'searcher',
        tool: 'web_search',
        args: (i) => ({
          query: `${topic} ${['evidence', 'study', 'meta-analysis', 'statistics', 'survey', 'review', 'data'][i % 7]} ${year + (i % 3)}`,
        }),
        empty: '{"results":[]}',
      },
      turns: [
        {
          agent: 'searcher',
          input: request,
          steps: [
            {
              tool: 'web_search',
              args: { query: `${topic} evidence ${year}` },
              result: JSON.stringify({ results: [{ url, title: `${topic}: ${year} field study` }] }),
            },
            {
              tool: 'fetch_page',
              args: { url },
              result: `A ${year} field study of ${topic} across 38 sites found a ${share}% change against controls, with wide regional variation and a small sample in two regions.`,
            },
            {
              answer: `Notes: ${url} (${year}) reports a ${share}% change across 38 sites; variation is regional; two regions have small samples.`,
            },
          ],
        },
        {
          agent: 'writer',
          input: `Notes: ${url} reports ${share}% across 38 sites (${year}).`,
          steps: [
            {
              tool: 'cite_source',
              args: { url, claim: `${share}% change across 38 sites` },
              result: '{"citation":"[1]"}',
            },
            {
              answer: `Brief: ${topic}. The strongest recent evidence, a ${year} field study over 40 sites [1], reports a ${share}% change against controls. Effects vary by region, and two regions rest on small samples, so local pilots should precede policy.`,
            },
          ],
        },
      ],
    };
  },
  support_triage(rng) {
    const order = `ORD-${rng.int(10000, 99999)}`;
    const email = `${rng.pick(['ana', 'li', 'sam', 'noor', 'jo'])}.${rng.hex(3)}@example.com`;
    const amount = rng.int(12, 480);
    const request = `Customer ${email} writes: "My order ${order} arrived damaged, I want my money back."`;
    return {
      key: { name: 'order_id', value: order, agent: 'triage_agent', tool: 'issue_refund', arg: 'order_id' },
      agents: {
        triage_agent: {
          role: 'You identify the customer and the order, and classify the ticket. You never issue refunds.',
          tools: [
            fn('lookup_customer', 'Find a customer by email', ['email']),
            fn('get_order', 'Get an order', ['order_id']),
          ],
        },
        resolution_agent: {
          role: 'You resolve classified tickets: refunds and replies.',
          tools: [
            fn('issue_refund', 'Refund an order', ['order_id', 'amount']),
            fn('send_reply', 'Email the customer', ['to', 'body']),
          ],
        },
      },
      request,
      search: {
        agent: 'triage_agent',
        tool: 'get_order',
        args: (i) => ({ order_id: `${order.slice(0, 4)}${Number(order.slice(4)) + i + 1}` }),
        empty: '{"error":"order not found"}',
      },
      turns: [
        {
          agent: 'triage_agent',
          input: request,
          steps: [
            {
              tool: 'lookup_customer',
              args: { email },
              result: JSON.stringify({ customer_id: `C-${rng.int(1000, 9999)}`, tier: 'standard' }),
            },
            {
              tool: 'get_order',
              args: { order_id: order },
              result: JSON.stringify({ order_id: order, total: amount, status: 'delivered', items: 2 }),
            },
            {
              answer: `Ticket: damaged delivery, order ${order} (${amount} EUR, delivered). Classification: refund request, eligible.`,
            },
          ],
        },
        {
          agent: 'resolution_agent',
          input: `Refund request for order ${order}, ${amount} EUR, customer ${email}.`,
          steps: [
            {
              tool: 'issue_refund',
              args: { order_id: order, amount: String(amount) },
              result: JSON.stringify({ refund: `RF-${rng.int(1000, 9999)}`, order_id: order, status: 'refunded' }),
            },
            {
              tool: 'send_reply',
              args: { to: email, body: `We are sorry: order ${order} has been refunded (${amount} EUR).` },
              result: '{"status":"sent"}',
            },
            { answer: `Refunded ${amount} EUR for ${order} and emailed ${email}.` },
          ],
        },
      ],
    };
  },
};

const clone = (x) => JSON.parse(JSON.stringify(x));
const toolSteps = (turn) => turn.steps.filter((s) => s.tool);
const answerOf = (turn) => turn.steps.find((s) => s.answer !== undefined);

// ------------------------------------------------------------------------------------------------ faults

/**
 * Each mode's injection, varied in magnitude and wording. Each returns the evidence class ('spans' when the fault shows
 * without message content) and a variant name.
 */
const FAULTS = {
  /** MAST 1.3: steps already completed done again. */
  step_repetition(w, rng) {
    const turn = rng.pick(w.turns.filter((t) => toolSteps(t).length > 0));
    if (rng.chance(7, 10)) {
      const s = rng.pick(toolSteps(turn));
      const extra = rng.int(2, 5);
      turn.steps.splice(turn.steps.indexOf(s) + 1, 0, ...Array.from({ length: extra }, () => clone(s)));
      return { evidence: 'spans', variant: `same call ×${extra + 1}` };
    }
    // The agent runs its whole turn again on the same input, with the same results.
    const i = w.turns.indexOf(turn);
    w.turns.splice(i + 1, 0, clone(turn), ...(rng.chance(1, 2) ? [clone(turn)] : []));
    return { evidence: 'content', variant: 'turn redone' };
  },
  /** MAST 3.1: the run stops before its objectives are met. */
  premature_termination(w, rng, _m, run) {
    const r = rng.int(1, 10);
    if (r <= 4) {
      // The last call asks for a tool and nothing ever runs it.
      const i = rng.int(0, Math.max(0, w.turns.length - 2));
      const turn = w.turns[i];
      const s = toolSteps(turn).at(-1);
      turn.steps = [...turn.steps.slice(0, turn.steps.indexOf(s)), { ...s, unexecuted: true }];
      w.turns = w.turns.slice(0, i + 1);
      // OpenLLMetry records the finish reason and tool requests only with content (gen_ai.completion.N.*).
      return {
        evidence: run.producer === 'semconv' || run.content ? 'spans' : 'content',
        variant: 'tool requested, never run',
      };
    }
    if (r <= 7) {
      // The first agent says what comes next, and nothing comes.
      const next = w.turns[1].agent.replace('_', ' ');
      answerOf(w.turns[0]).answer += rng.pick([
        ` Next I'll pass this to the ${next}.`,
        ` I will now hand over to the ${next} to finish.`,
        ' Let me continue with the remaining steps.',
        ` Handing off to ${next} next.`,
      ]);
      w.turns = w.turns.slice(0, 1);
      return { evidence: 'content', variant: 'announced continuation' };
    }
    // Only part of the request is done, and the final answer reports the part.
    w.turns.splice(1, 1);
    const last = w.turns.at(-1);
    if (last.agent === w.turns[0].agent) w.turns = w.turns.slice(0, 1);
    else answerOf(last).answer = rng.pick(['All done: ', 'Complete. ', 'Finished: ']) + answerOf(w.turns[0]).answer;
    return { evidence: 'content', variant: 'half the request' };
  },
  /** ARCF output quality degradation: an agent's answers collapse while the task still needs them. */
  quality_degradation(w, rng) {
    const parts = w.parts;
    const collapsed = rng.int(2, 4);
    const filler = rng.pick([
      'N/A',
      'See above.',
      '...',
      'TBD',
      'OK.',
      'Same as before.',
      'I am unable to continue.',
      'Done.',
    ]);
    for (let i = parts.length - collapsed; i < parts.length; i++)
      parts[i].answer = rng.chance(7, 10) ? filler : `${filler} ${filler}`;
    return { evidence: 'spans', variant: `last ${collapsed} of ${parts.length} collapsed` };
  },
  /** ARCF context overflow: the request outgrows the model's window and the provider refuses it. */
  context_overflow(w, rng, m) {
    const turn = rng.pick(w.turns.filter((t) => toolSteps(t).length > 0));
    const steps = toolSteps(turn);
    const over = 1 + rng.int(1, 15) / 100;
    // Tool results (documents, pages, logs) fill the window; the provider counts them.
    const base = Math.round((m.window * rng.int(41, 69)) / 100);
    steps[0].resultTokens = base;
    if (steps[1]) steps[1].resultTokens = Math.round(m.window * over) - base;
    const last = steps[1] ?? steps[0];
    last.overflowAfter = true;
    const i = w.turns.indexOf(turn);
    turn.steps = turn.steps.slice(0, turn.steps.indexOf(last) + 1);
    w.turns = w.turns.slice(0, i + 1);
    w.rootError = rng.chance(7, 10);
    return {
      evidence: 'spans',
      variant: `${m.vllm ? 'vllm' : m.provider} at ${Math.round(over * 100)}% of ${m.window}`,
    };
  },
  /** MAST 1.4 / 2.1: a later call of the same turn carries less of the conversation, and work is redone. */
  history_loss(w, rng) {
    const turn = rng.pick(w.turns.filter((t) => toolSteps(t).length >= 2));
    const steps = toolSteps(turn);
    const reset = rng.chance(1, 2);
    const idx = turn.steps.indexOf(steps[1]);
    // After the second tool result the agent's next request starts again from its opening (reset) or loses the first exchange.
    const redo = { ...clone(steps[0]), history: reset ? 'opening' : 'drop_first' };
    turn.steps.splice(idx + 1, 0, redo);
    return { evidence: 'spans', variant: reset ? 'reset to the opening (2.1)' : 'first exchange lost (1.4)' };
  },
  /** MAST 1.2: an agent uses a tool that belongs to another agent's role. */
  role_violation(w, rng, _m, run) {
    const names = Object.keys(w.agents).filter((a) => w.agents[a].tools.length > 0);
    const owner = rng.pick(names);
    const thief = rng.pick(w.turns.filter((t) => t.agent !== owner && w.agents[t.agent].tools.length > 0));
    const ownerTurn = w.turns.find((t) => t.agent === owner);
    const stolen = clone(rng.pick(toolSteps(ownerTurn)));
    const n = rng.int(1, 2);
    for (let k = 0; k < n; k++) thief.steps.splice(thief.steps.length - 1, 0, clone(stolen));
    return {
      evidence: run.producer === 'semconv' || run.content ? 'spans' : 'content',
      variant: `${thief.agent} ran ${owner}'s ${stolen.tool} ×${n}`,
    };
  },
  /** ARCF output conflict: two agents hold different values for the same thing. */
  output_conflict(w, rng) {
    const k = w.key;
    const v = String(k.value);
    const digits = v.replace(/\D/g, '');
    let other;
    const how = rng.chance(1, 2);
    if (how && digits.length >= 2) {
      const a = digits.split('');
      const i = rng.int(0, a.length - 2);
      [a[i], a[i + 1]] = a[i + 1] === a[i] ? [String((Number(a[i]) + 1) % 10), a[i]] : [a[i + 1], a[i]];
      other = v.replace(digits, a.join(''));
    } else other = v.replace(/\d(?=\D*$)/, (d) => String((Number(d) + rng.int(1, 8)) % 10));
    // A later agent acts on (and reports) the other value.
    const later = w.turns.filter((t) => t.agent !== k.agent);
    const target = rng.pick(later);
    const swap = (x) => JSON.parse(JSON.stringify(x).split(v).join(other));
    for (const s of target.steps) {
      if (s.tool) s.args = swap(s.args);
      if (s.answer !== undefined) s.answer = s.answer.split(v).join(other);
    }
    if (!JSON.stringify(target.steps).includes(other)) answerOf(target).answer += ` (${k.name} ${other})`;
    return { evidence: 'content', variant: `${k.name} ${v} vs ${other}` };
  },
  /** ARCF timeout errors and workflow deadlock. */
  timeout_deadlock(w, rng) {
    const r = rng.int(1, 10);
    if (r <= 4) {
      const [a, b] = w.turns.slice(0, 2);
      w.deadlock = {
        a: a.agent,
        b: b.agent,
        waitMs: rng.int(45, 180) * 1000,
        error: rng.pick(['DeadlineExceeded', 'TimeoutError', 'DEADLINE_EXCEEDED']),
      };
      w.turns = [];
      w.rootError = true;
      return { evidence: 'spans', variant: `deadlock ${Math.round(w.deadlock.waitMs / 1000)} s` };
    }
    const turn = rng.pick(w.turns.filter((t) => toolSteps(t).length > 0));
    const times = rng.int(2, 3);
    if (r <= 7) {
      const s = toolSteps(turn)[0];
      const ms = rng.pick([10000, 30000, 60000]);
      const fails = Array.from({ length: times }, () => ({
        ...clone(s),
        toolError: {
          type: rng.pick(['TimeoutError', 'ETIMEDOUT']),
          message: rng.pick([
            'The operation was aborted due to timeout',
            `connect ETIMEDOUT 10.0.3.17:443`,
            `tool ${s.tool} timed out after ${ms / 1000}s`,
          ]),
          ms,
        },
      }));
      turn.steps = [...turn.steps.slice(0, turn.steps.indexOf(s)), ...fails];
      w.turns = w.turns.slice(0, w.turns.indexOf(turn) + 1);
      w.rootError = true;
      return { evidence: 'spans', variant: `tool timeout ×${times}` };
    }
    const s = toolSteps(turn)[0];
    s.chatTimeouts = times;
    turn.steps = turn.steps.slice(0, turn.steps.indexOf(s) + 1);
    s.chatTimeoutsFatal = true;
    w.turns = w.turns.slice(0, w.turns.indexOf(turn) + 1);
    w.rootError = true;
    return { evidence: 'spans', variant: `model call timeout ×${times}` };
  },
  /** MAST 1.5 (no progress): the same tool tried again and again, its answer never changing. */
  no_progress(w, rng) {
    const s = w.search;
    const turn = w.turns.find((t) => t.agent === s.agent);
    const n = rng.int(4, 7);
    const tries = Array.from({ length: n }, (_, i) => ({ tool: s.tool, args: s.args(i), result: s.empty }));
    const keep = turn.steps.slice(
      0,
      turn.steps.findIndex((x) => x.tool === s.tool),
    );
    turn.steps = [
      ...keep,
      ...tries,
      {
        answer: rng.pick([
          'I could not find anything suitable.',
          'Still searching; nothing yet.',
          'No results so far, I will keep trying different parameters.',
        ]),
      },
    ];
    w.turns = w.turns.slice(0, w.turns.indexOf(turn) + 1);
    return { evidence: 'content', variant: `${s.tool} ×${n}, same answer` };
  },
};

/** Clean runs, most of them near-misses of a mode: each is legitimate by the definitions above. */
const NEAR_MISSES = {
  plain() {},
  retry_after_error(w, rng) {
    const s = toolSteps(rng.pick(w.turns.filter((t) => toolSteps(t).length > 0)))[0];
    s.chatRetry = rng.pick([
      { type: 'RateLimitError', message: '429 Rate limit reached for requests. Please try again in 2s.' },
      { type: 'InternalServerError', message: '503 The server is overloaded or not ready yet.' },
      { type: 'APIConnectionError', message: 'Connection error.' },
    ]);
  },
  tool_retry(w, rng) {
    const turn = rng.pick(w.turns.filter((t) => toolSteps(t).length > 0));
    const s = toolSteps(turn)[0];
    turn.steps.splice(turn.steps.indexOf(s), 0, {
      ...clone(s),
      toolError: { type: 'TimeoutError', message: 'The operation was aborted due to timeout', ms: 10000 },
    });
  },
  reread_after_change(w) {
    // Read, change, read again: the second read returns the new state.
    const turn = w.turns.find((t) => toolSteps(t).length >= 2);
    const [first, second] = toolSteps(turn);
    const again = clone(first);
    again.result = `${first.result.slice(0, 200)} (updated after ${second.tool})`;
    turn.steps.splice(turn.steps.indexOf(second) + 1, 0, again);
  },
  long_context(w, rng, m) {
    const turn = rng.pick(w.turns.filter((t) => toolSteps(t).length > 0));
    toolSteps(turn)[0].resultTokens = Math.round((m.window * rng.int(55, 85)) / 100);
  },
  done_early(w, rng) {
    // The first agent finds the work already done and says so; nobody else needs to run.
    answerOf(w.turns[0]).answer = rng.pick([
      'Nothing to do: this was already handled earlier today, and the customer has been told.',
      'The request is already satisfied by an existing booking/record; no further action is needed. Closing.',
      'Already complete; no change required.',
    ]);
    w.turns = w.turns.slice(0, 1);
  },
  paginated(w) {
    const s = w.search;
    const turn = w.turns.find((t) => t.agent === s.agent);
    const at = turn.steps.findIndex((x) => x.tool === s.tool);
    const pages = [0, 1, 2].map((i) => ({
      tool: s.tool,
      args: { ...s.args(i), page: String(i + 1) },
      result: `{"page":${i + 1},"items":["r${i}a","r${i}b"]}`,
    }));
    turn.steps.splice(at, 0, ...pages);
  },
  short_final(w, rng) {
    // Every part written, then a one-line sign-off: short, and nothing the task needed is missing.
    w.turns.at(-1).steps.push({ answer: rng.pick(['Done.', 'All parts are above.', 'That completes the document.']) });
  },
  fresh_turn(w) {
    // The same agent is invoked again later for a new, smaller task: a new turn, not a reset.
    const first = w.turns[0];
    w.turns.push({
      agent: first.agent,
      input: 'One more thing: confirm the reference you gave.',
      steps: [{ answer: 'Confirmed.' }],
    });
  },
  promise_to_user(w, rng) {
    // The work is done; the last answer tells the user what happens afterwards, outside this run.
    answerOf(w.turns.at(-1)).answer += rng.pick([
      ' I will send you a reminder the day before it expires.',
      " We'll email you a receipt shortly.",
      " I'll keep this ticket open for a week in case anything else comes up.",
    ]);
  },
  follow_up_questions(w, rng) {
    // After the work, the user asks two yes/no questions and the last agent answers them briefly: short and complete.
    const last = w.turns.at(-1);
    for (const [q, a] of rng.pick([
      [
        ['Is that final?', 'Yes.'],
        ['Anything else needed from me?', 'No, nothing.'],
      ],
      [
        ['Did it go through?', 'It did.'],
        ['Same reference as before?', 'Yes, the same.'],
      ],
    ]))
      w.turns.push({ agent: last.agent, input: q, steps: [{ answer: a }] });
  },
  slow_success(w, rng) {
    toolSteps(rng.pick(w.turns.filter((t) => toolSteps(t).length > 0)))[0].slowMs = rng.int(25, 70) * 1000;
  },
};

// ------------------------------------------------------------------------------------------------ spans

const KIND = { internal: 1, server: 2, client: 3, consumer: 5 };

function attr(key, v) {
  if (typeof v === 'string') return { key, value: { stringValue: v } };
  if (typeof v === 'boolean') return { key, value: { boolValue: v } };
  if (Array.isArray(v)) return { key, value: { arrayValue: { values: v.map((x) => ({ stringValue: String(x) })) } } };
  return Number.isInteger(v) ? { key, value: { intValue: String(v) } } : { key, value: { doubleValue: v } };
}

/** Builds one trace's spans on a moving clock. */
class TraceBuilder {
  constructor(rng, t0) {
    this.rng = rng;
    this.traceId = rng.hex(32);
    this.now = t0;
    this.spans = [];
  }
  open(name, kind, attributes, parent) {
    const s = {
      traceId: this.traceId,
      spanId: this.rng.hex(16),
      ...(parent ? { parentSpanId: parent.spanId } : {}),
      name,
      kind: KIND[kind],
      startTimeUnixNano: `${BigInt(Math.round(this.now)) * 1000000n}`,
      endTimeUnixNano: '',
      attributes: [],
      events: [],
      status: { code: 0 },
    };
    for (const [k, v] of Object.entries(attributes)) if (v !== undefined) s.attributes.push(attr(k, v));
    this.spans.push(s);
    return s;
  }
  set(s, attributes) {
    for (const [k, v] of Object.entries(attributes)) if (v !== undefined) s.attributes.push(attr(k, v));
  }
  close(s, error) {
    if (error) {
      s.status = { code: 2, message: error.message };
      s.attributes.push(attr('error.type', error.type));
      s.events.push({
        timeUnixNano: `${BigInt(Math.round(this.now)) * 1000000n}`,
        name: 'exception',
        attributes: [attr('exception.type', error.type), attr('exception.message', error.message)],
      });
    } else if (s.status.code === 0 && this.rng.chance(3, 10)) s.status = { code: 1 };
    s.endTimeUnixNano = `${BigInt(Math.round(this.now)) * 1000000n}`;
  }
  tick(ms) {
    this.now += ms;
  }
}

/** The producer's way of writing an agent turn, an LLM call and a tool execution. */
function producerOf(run, m, tb) {
  const content = run.content;
  const semconv = run.producer === 'semconv';
  return {
    root(workflow) {
      if (semconv)
        return tb.rng.chance(1, 2)
          ? tb.open(`invoke_workflow ${workflow}`, 'internal', { 'gen_ai.operation.name': 'invoke_workflow' })
          : tb.open(workflow, 'internal', {});
      return tb.open(`${workflow}.workflow`, 'internal', {
        'traceloop.span.kind': 'workflow',
        'traceloop.entity.name': workflow,
        'traceloop.workflow.name': workflow,
      });
    },
    agent(name, parent, workflow) {
      if (semconv)
        return tb.open(
          `invoke_agent ${name}`,
          'internal',
          {
            'gen_ai.operation.name': 'invoke_agent',
            'gen_ai.provider.name': m.provider,
            'gen_ai.agent.name': name,
            'gen_ai.request.model': m.model,
          },
          parent,
        );
      return tb.open(
        `${name}.agent`,
        'internal',
        { 'traceloop.span.kind': 'agent', 'traceloop.entity.name': name, 'traceloop.workflow.name': workflow },
        parent,
      );
    },
    chat(parent, call) {
      // call: { system, messages, tools, output: {text} | {toolCall}, finish, inputTokens, outputTokens }
      if (semconv) {
        const s = tb.open(
          `chat ${m.model}`,
          'client',
          {
            'gen_ai.operation.name': 'chat',
            'gen_ai.provider.name': m.provider,
            'gen_ai.request.model': m.model,
            'server.address': m.host,
            'server.port': m.port ?? 443,
            'gen_ai.request.max_tokens': 4096,
          },
          parent,
        );
        if (call.tools.length > 0 && (content || run.toolDefsWithoutContent))
          tb.set(s, {
            'gen_ai.tool.definitions': JSON.stringify(
              call.tools.map((t) => (content ? t : { type: t.type, name: t.name })),
            ),
          });
        if (content) {
          tb.set(s, {
            'gen_ai.system_instructions': JSON.stringify([{ type: 'text', content: call.system }]),
            'gen_ai.input.messages': JSON.stringify(call.messages.map(semconvMessage)),
          });
        }
        return s;
      }
      const s = tb.open(
        `${m.provider === 'anthropic' || m.provider === 'aws.bedrock' ? 'anthropic' : 'openai'}.chat`,
        'client',
        {
          'llm.request.type': 'chat',
          'gen_ai.system':
            m.provider === 'anthropic'
              ? 'Anthropic'
              : m.provider === 'aws.bedrock'
                ? 'AWS'
                : m.provider === 'gcp.gemini'
                  ? 'Google'
                  : 'OpenAI',
          'gen_ai.request.model': m.model,
          'gen_ai.request.max_tokens': 4096,
        },
        parent,
      );
      if (content) {
        const a = {};
        call.tools.forEach((t, i) =>
          Object.assign(a, {
            [`llm.request.functions.${i}.name`]: t.name,
            [`llm.request.functions.${i}.description`]: t.description,
            [`llm.request.functions.${i}.parameters`]: JSON.stringify(t.parameters),
          }),
        );
        [{ role: 'system', text: call.system }, ...call.messages].forEach((msg, i) => {
          a[`gen_ai.prompt.${i}.role`] = msg.role;
          if (msg.text !== undefined) a[`gen_ai.prompt.${i}.content`] = msg.text;
          if (msg.toolCall)
            Object.assign(a, {
              [`gen_ai.prompt.${i}.tool_calls.0.id`]: msg.toolCall.id,
              [`gen_ai.prompt.${i}.tool_calls.0.name`]: msg.toolCall.name,
              [`gen_ai.prompt.${i}.tool_calls.0.arguments`]: JSON.stringify(msg.toolCall.args),
            });
          if (msg.toolResult)
            Object.assign(a, {
              [`gen_ai.prompt.${i}.content`]: msg.toolResult.result,
              [`gen_ai.prompt.${i}.tool_call_id`]: msg.toolResult.id,
            });
        });
        tb.set(s, a);
      }
      return s;
    },
    chatDone(s, call) {
      const reasons = [call.finish];
      if (semconv) {
        tb.set(s, {
          'gen_ai.response.model': m.model,
          'gen_ai.response.id': `resp_${tb.rng.hex(12)}`,
          'gen_ai.response.finish_reasons': reasons,
          'gen_ai.usage.input_tokens': call.inputTokens,
          'gen_ai.usage.output_tokens': call.outputTokens,
        });
        if (content) {
          const parts = call.output.toolCall
            ? [
                {
                  type: 'tool_call',
                  id: call.output.toolCall.id,
                  name: call.output.toolCall.name,
                  arguments: call.output.toolCall.args,
                },
              ]
            : [{ type: 'text', content: call.output.text }];
          tb.set(s, {
            'gen_ai.output.messages': JSON.stringify([
              {
                role: 'assistant',
                parts,
                finish_reason: call.output.toolCall ? 'tool_call' : call.finish === m.finish.length ? 'length' : 'stop',
              },
            ]),
          });
        }
        return;
      }
      tb.set(s, {
        'gen_ai.response.model': m.model,
        'gen_ai.usage.prompt_tokens': call.inputTokens,
        'gen_ai.usage.completion_tokens': call.outputTokens,
        'llm.usage.total_tokens': call.inputTokens + call.outputTokens,
      });
      if (content) {
        const a = { 'gen_ai.completion.0.role': 'assistant', 'gen_ai.completion.0.finish_reason': call.finish };
        if (call.output.toolCall)
          Object.assign(a, {
            'gen_ai.completion.0.tool_calls.0.id': call.output.toolCall.id,
            'gen_ai.completion.0.tool_calls.0.name': call.output.toolCall.name,
            'gen_ai.completion.0.tool_calls.0.arguments': JSON.stringify(call.output.toolCall.args),
          });
        else a['gen_ai.completion.0.content'] = call.output.text;
        tb.set(s, a);
      }
    },
    tool(parent, name, id, args) {
      if (semconv)
        return tb.open(
          `execute_tool ${name}`,
          'internal',
          {
            'gen_ai.operation.name': 'execute_tool',
            'gen_ai.tool.name': name,
            'gen_ai.tool.call.id': id,
            'gen_ai.tool.type': 'function',
            ...(content ? { 'gen_ai.tool.call.arguments': JSON.stringify(args) } : {}),
          },
          parent,
        );
      return tb.open(
        `${name}.tool`,
        'internal',
        {
          'traceloop.span.kind': 'tool',
          'traceloop.entity.name': name,
          ...(content ? { 'traceloop.entity.input': JSON.stringify({ args: [], kwargs: args }) } : {}),
        },
        parent,
      );
    },
    toolDone(s, result) {
      if (!content) return;
      tb.set(s, semconv ? { 'gen_ai.tool.call.result': result } : { 'traceloop.entity.output': result });
    },
  };
}

function semconvMessage(msg) {
  if (msg.toolCall)
    return {
      role: 'assistant',
      parts: [{ type: 'tool_call', id: msg.toolCall.id, name: msg.toolCall.name, arguments: msg.toolCall.args }],
    };
  if (msg.toolResult)
    return {
      role: 'tool',
      parts: [{ type: 'tool_call_response', id: msg.toolResult.id, result: msg.toolResult.result }],
    };
  return { role: msg.role, parts: [{ type: 'text', content: msg.text }] };
}

/** Renders a plan into spans: each turn an agent span with its model calls and tool executions in order. */
function render(run, w, m, rng) {
  const tb = new TraceBuilder(rng, Date.UTC(2026, 10, 2, 9, 0, 0) + rng.int(0, 86400) * 1000);
  const p = producerOf(run, m, tb);
  const root = p.root(w.name);
  tb.tick(rng.int(1, 5));
  const latency = (out) => 300 + out * rng.int(8, 25) + rng.int(0, 380);
  let rootError;
  if (w.deadlock) {
    // Two agents, each waiting for the other's message.
    const d = w.deadlock;
    const start = tb.now;
    const ends = [];
    for (const [who, other] of [
      [d.a, d.b],
      [d.b, d.a],
    ]) {
      tb.now = start + rng.int(0, 300);
      const ag = p.agent(who, root, w.name);
      // Each agent's model decides to wait for the other before acting.
      const text = rng.pick([
        `I need ${other}'s result before I can continue; waiting for it.`,
        `Holding until ${other} confirms.`,
        `Blocked until ${other} replies.`,
      ]);
      const c = {
        system: w.agents[who].role,
        messages: [{ role: 'user', text: w.request }],
        tools: w.agents[who].tools,
        output: { text },
        finish: m.finish.stop,
        inputTokens: 0,
        outputTokens: tok(text) + 3,
      };
      c.inputTokens = tok(c.system) + tok(w.request) + (c.tools.length ? tok(JSON.stringify(c.tools)) : 0) + 8;
      const chat = p.chat(ag, c);
      tb.tick(latency(c.outputTokens));
      p.chatDone(chat, c);
      tb.close(chat);
      const s = tb.open(
        `receive ${other}.replies`,
        'consumer',
        {
          'messaging.system': rng.pick(['redis', 'rabbitmq', 'kafka']),
          'messaging.operation.type': 'receive',
          'messaging.destination.name': `${other}.replies`,
          'messaging.consumer.group.name': who,
        },
        ag,
      );
      tb.tick(d.waitMs + rng.int(0, 2000));
      tb.close(s, {
        type: d.error,
        message: rng.pick([
          `no message from ${other} before the deadline`,
          'deadline exceeded while waiting for a reply',
          `timed out waiting on ${other}.replies`,
        ]),
      });
      tb.tick(rng.int(1, 20));
      tb.close(ag, { type: d.error, message: 'agent turn did not complete' });
      ends.push(tb.now);
    }
    tb.now = Math.max(...ends) + 5;
    rootError = { type: d.error, message: 'workflow did not complete' };
  }
  for (const turn of w.turns) {
    const agent = w.agents[turn.agent];
    const ag = p.agent(turn.agent, root, w.name);
    const system = agent.role;
    /** The conversation as the agent's next request carries it. */
    let messages = [{ role: 'user', text: turn.input }];
    const opening = messages.slice();
    let extra = 0;
    let turnError;
    const call = (output, finish) => ({
      system,
      messages: messages.slice(),
      tools: agent.tools,
      output,
      finish,
      inputTokens: 0,
      outputTokens: 0,
    });
    const tokensOf = (c) =>
      tok(c.system) +
      (c.tools.length ? tok(JSON.stringify(c.tools)) : 0) +
      c.messages.reduce((n, x) => n + tok(x.text ?? JSON.stringify(x.toolCall ?? x.toolResult)) + 4, 0) +
      extra;
    for (const step of turn.steps) {
      if (step.history === 'opening') {
        messages = opening.slice();
        extra = 0;
      } else if (step.history === 'drop_first') {
        messages = [opening[0], ...messages.slice(3)];
        extra = Math.round(extra / 2);
      }
      const id = `call_${rng.hex(10)}`;
      const output = step.tool ? { toolCall: { id, name: step.tool, args: step.args } } : { text: step.answer };
      const c = call(output, step.tool ? m.finish.tool : m.finish.stop);
      c.inputTokens = tokensOf(c);
      c.outputTokens = tok(step.tool ? JSON.stringify({ name: step.tool, arguments: step.args }) : step.answer) + 3;
      for (const failure of [
        ...(step.chatRetry ? [step.chatRetry] : []),
        ...Array.from({ length: step.chatTimeouts ?? 0 }, () => ({
          type: 'APIConnectionTimeoutError',
          message: 'Request timed out.',
          ms: rng.pick([60000, 120000, 600000]),
        })),
      ]) {
        const s = p.chat(ag, c);
        tb.tick(failure.ms ?? rng.int(75, 900));
        tb.close(s, failure);
        tb.tick(rng.int(200, 2500));
      }
      if (step.chatTimeoutsFatal) {
        turnError = { type: 'APIConnectionTimeoutError', message: 'Request timed out.' };
        break;
      }
      const s = p.chat(ag, c);
      tb.tick(latency(c.outputTokens) + (step.slowMs ?? 0));
      p.chatDone(s, c);
      tb.close(s);
      if (!step.tool) {
        messages.push({ role: 'assistant', text: step.answer });
        continue;
      }
      if (step.unexecuted) break;
      tb.tick(rng.int(2, 30));
      const t = p.tool(ag, step.tool, id, step.args);
      tb.tick(step.toolError?.ms ?? rng.int(35, 1500));
      if (step.toolError) {
        tb.close(t, step.toolError);
        messages.push(
          { role: 'assistant', toolCall: { id, name: step.tool, args: step.args } },
          { role: 'tool', toolResult: { id, result: `error: ${step.toolError.message}` } },
        );
        continue;
      }
      p.toolDone(t, step.result);
      tb.close(t);
      messages.push(
        { role: 'assistant', toolCall: { id, name: step.tool, args: step.args } },
        { role: 'tool', toolResult: { id, result: step.result } },
      );
      extra += step.resultTokens ?? 0;
      if (step.overflowAfter) {
        const c2 = call({ text: '' }, m.finish.stop);
        const n = tokensOf(c2);
        const s2 = p.chat(ag, c2);
        tb.tick(rng.int(150, 900));
        tb.close(s2, overflowError(m, rng, n));
        turnError = { type: 'BadRequestError', message: 'model call failed' };
        break;
      }
    }
    tb.tick(rng.int(1, 10));
    tb.close(ag, turnError && (w.rootError || rng.chance(1, 2)) ? turnError : undefined);
    if (turnError) {
      if (w.rootError) rootError = turnError;
      break;
    }
    tb.tick(rng.int(5, 60));
  }
  tb.tick(rng.int(1, 10));
  tb.close(root, rootError);
  return {
    traceId: tb.traceId,
    otlp: {
      resourceSpans: [
        {
          resource: {
            attributes: [
              attr('service.name', `${w.name.replace('_', '-')}-agents`),
              attr('telemetry.sdk.language', run.producer === 'semconv' ? 'python' : 'nodejs'),
            ],
          },
          scopeSpans: [
            {
              scope:
                run.producer === 'semconv'
                  ? { name: 'opentelemetry.instrumentation.genai', version: '0.3b0' }
                  : { name: '@traceloop/instrumentation-openai', version: '0.27.0' },
              spans: tb.spans,
            },
          ],
        },
      ],
    },
  };
}

/** The final agent's answer split into parts, one model call each (a writer producing sections, a reviewer per file). */
function withParts(w, rng) {
  const last = w.turns.at(-1);
  const n = rng.int(5, 7);
  const base = answerOf(last).answer;
  const parts = Array.from({ length: n }, (_, i) => ({
    answer:
      `Part ${i + 1}/${n}. ${base} ${['Details follow from the notes above.', 'This section covers the remaining points in order.', 'Each point is checked against the earlier results.', 'Figures are quoted as the tools returned them.'][i % 4]}`.repeat(
        rng.int(1, 3),
      ),
  }));
  w.parts = parts;
  if (rng.chance(1, 2)) {
    last.steps = [...last.steps.filter((s) => s.tool), ...parts];
    return;
  }
  // Or the agent is invoked once per part, each turn handed the previous part.
  const turns = parts.map((part, i) => ({
    agent: last.agent,
    input: i === 0 ? last.input : `Continue with part ${i + 1} of ${n}.`,
    steps: i === 0 ? [...last.steps.filter((s) => s.tool), part] : [part],
  }));
  w.turns.splice(w.turns.length - 1, 1, ...turns);
}

/**
 * The set: for each producer × content capture, `perMode` runs of every mode and `clean` clean runs, over the four
 * workflows and six models. Deterministic for a seed.
 */
export function generateRuns({ seed = 28, perMode = 7, clean = 28 } = {}) {
  const rng = prng(seed);
  const runs = [];
  const names = Object.keys(WORKFLOWS);
  const nearMisses = Object.keys(NEAR_MISSES);
  for (const producer of PRODUCERS) {
    for (const content of [true, false]) {
      const labels = [
        ...MODES.flatMap((mode) => Array.from({ length: perMode }, () => mode)),
        ...Array.from({ length: clean }, () => 'clean'),
      ];
      labels.forEach((label, i) => {
        const workflow = names[(i + (content ? 0 : 1) + (producer === 'semconv' ? 0 : 2)) % names.length];
        const w = { name: workflow, ...WORKFLOWS[workflow](rng) };
        let m = rng.pick(MODELS);
        // A context overflow needs a window a run can fill; the million-token models are rarely the ones refusing.
        if (label === 'context_overflow' && m.window > 200000 && rng.chance(7, 10))
          m = rng.pick(MODELS.filter((x) => x.window <= 200000));
        const run = {
          id: `${producer}-${content ? 'content' : 'nocontent'}-${String(i).padStart(3, '0')}`,
          producer,
          content,
          workflow,
          model: m.model,
          provider: m.provider,
          label,
          toolDefsWithoutContent: producer === 'semconv',
        };
        const needsParts = label === 'quality_degradation' || (label === 'clean' && rng.chance(2, 5));
        if (needsParts) withParts(w, rng);
        if (label === 'clean') {
          const nm =
            needsParts && rng.chance(1, 2)
              ? 'short_final'
              : nearMisses.filter((x) => x !== 'short_final')[i % (nearMisses.length - 1)];
          NEAR_MISSES[nm](w, rng, m);
          run.variant = nm;
          run.evidence = null;
        } else {
          const r = FAULTS[label](w, rng, m, run);
          run.variant = r.variant;
          run.evidence = r.evidence;
        }
        const out = render(run, w, m, rng);
        delete run.toolDefsWithoutContent;
        runs.push({ ...run, traceId: out.traceId, otlp: out.otlp });
      });
    }
  }
  return runs;
}
