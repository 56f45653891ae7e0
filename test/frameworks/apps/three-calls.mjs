// The simplest app: three plain chat.completions.create calls in a script (no task scope, no agent framework).
import OpenAI from 'openai';

const client = new OpenAI({ apiKey: 'sk-test', baseURL: `${process.env.LLM_URL}/v1` });
const request = JSON.parse(process.env.REQ);
const out = [];
for (let i = 0; i < 3; i++) out.push((await client.chat.completions.create(request)).choices[0]);
process.stdout.write(JSON.stringify(out.map((c) => ({ content: c.message.content, finish: c.finish_reason }))));
