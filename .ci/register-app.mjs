// A minimal app for .ci/node-lines: one chat completion against a loopback server, run under `--import faultline/register`.
import { createServer } from 'node:http';

const answer = {
  id: 'chatcmpl-1',
  object: 'chat.completion',
  model: 'gpt-4o-mini',
  choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 3, completion_tokens: 1 },
};
const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(answer));
  });
}).listen(0, '127.0.0.1');
await new Promise((resolve) => server.once('listening', resolve));
const res = await fetch(`http://127.0.0.1:${server.address().port}/v1/chat/completions`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'ping' }] }),
});
if ((await res.json()).choices[0].message.content !== 'ok') throw new Error('the app did not get the answer unchanged');
server.close();
