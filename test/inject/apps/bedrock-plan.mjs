// A planner / worker workflow on Amazon Bedrock through the AWS SDK (BedrockRuntimeClient's default handler,
// NodeHttp2Handler: node:http2, or NodeHttpHandler: node:http with BEDROCK_HTTP1=1): the planner makes two Converse
// calls, the worker streams with ConverseStream. Prints what the application got.
import { BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand } from '@aws-sdk/client-bedrock-runtime';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { runAgent, runWorkflow } from 'faultline';

const credentials = {
  accessKeyId: 'AKIAFAULTLINETEST000',
  secretAccessKey: 'fake/secret/key/for/the/loopback/test0000',
};
const requestHandler = process.env.BEDROCK_HTTP1 === '1' ? new NodeHttpHandler() : undefined;
const client = new BedrockRuntimeClient({
  region: 'us-east-1',
  endpoint: process.env.LLM_URL,
  credentials,
  ...(requestHandler ? { requestHandler } : {}),
});
const ask = (modelId, text) => ({ modelId, messages: [{ role: 'user', content: [{ text }] }] });
const json = (r) => ({ text: r.output?.message?.content?.[0]?.text, stop: r.stopReason });
const out = {};
await runWorkflow('bedrock-plan', async () => {
  await runAgent('planner', async () => {
    out.first = json(
      await client.send(
        new ConverseCommand(ask('us.anthropic.claude-sonnet-4-5-20250929-v1:0', 'What is the weather in Paris?')),
      ),
    );
    out.second = json(
      await client.send(new ConverseCommand(ask('us.anthropic.claude-sonnet-4-5-20250929-v1:0', 'And in Tokyo?'))),
    );
  });
  await runAgent('worker', async () => {
    const r = await client.send(new ConverseStreamCommand(ask('us.amazon.nova-pro-v1:0', 'What is 4200 + 42?')));
    const events = [];
    let text = '';
    for await (const e of r.stream) {
      events.push(Object.keys(e)[0]);
      text += e.contentBlockDelta?.delta?.text ?? '';
    }
    out.stream = { events, text };
  });
});
client.destroy();
process.stdout.write(JSON.stringify(out));
