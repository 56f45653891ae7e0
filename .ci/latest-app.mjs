// The app for .ci/latest: one chat completion with the openai SDK installed beside it (the newest, then the oldest
// faultline admits) against a loopback server.
import { createServer } from 'node:http';
import OpenAI from 'openai';

const answer = {
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1,
  model: 'gpt-4o-mini',
  choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
};
const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(answer));
  });
}).listen(0, '127.0.0.1');
await new Promise((resolve) => server.once('listening', resolve));
const client = new OpenAI({ apiKey: 'sk-test', baseURL: `http://127.0.0.1:${server.address().port}/v1` });
const r = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'ping' }] });
if (r.choices[0].message.content !== 'ok') throw new Error('the app did not get the answer unchanged');
server.close();
