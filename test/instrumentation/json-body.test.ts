/**
 * parseJsonBody: a large request body is parsed piecewise (its top-level members and their array elements one by
 * one, so no string of the whole body is made), with exactly JSON.parse's result, and JSON.parse's failure on what
 * is not JSON. Then the real thing: a long-history chat request through the openai client, recorded on its span.
 * Requests are project-written (../support/chat-exchanges.ts); the recorded ones are json-body-corpus.test.ts.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultlineInstrumentation } from '../../instrumentation';
import { parseJsonBody } from '../../instrumentation/json-body';
import { ANTHROPIC_TEXT, CHAT_PLAIN, CHAT_STREAM, CHAT_TEXT, CHAT_TOOL_CALL } from '../support/chat-exchanges';
import { expectSameAsJsonParse, longHistory } from './support/json-parse-check';
import { corpusReply, startLlmServer, type LlmServer } from '../support/llm-server';
import { ours, setupOtel, type TestOtel } from '../support/otel';

/** Large enough to be parsed piecewise. */
const PAD = 'x'.repeat(70 * 1024);

describe('parseJsonBody', () => {
  it('parses project-written chat requests, grown to a long history of 64 KB to 300 KB, exactly as JSON.parse', () => {
    const records = [CHAT_TEXT, CHAT_PLAIN, CHAT_TOOL_CALL, CHAT_STREAM, ANTHROPIC_TEXT];
    const pool = records.flatMap((r) => r.request.messages as unknown[]);
    for (const [i, r] of records.entries()) {
      const request = longHistory(r, [64, 100, 300][i % 3]! * 1024, pool);
      expectSameAsJsonParse(JSON.stringify(request), false);
      expectSameAsJsonParse(JSON.stringify(request, null, i % 2 ? 2 : '\t'), false); // whitespace between every token
    }
  });

  it('keeps JSON.parse’s meaning in the corners: escapes, Unicode, repeated keys, __proto__, nested and empty arrays', () => {
    const cases = [
      `{"pad":"${PAD}","a":"ends in a backslash \\\\","b":"\\"quoted\\"","c":"\\\\\\"","d":["\\\\",""]}`,
      `{"pad":"${PAD}","emoji":"😀 日本語 é","lone":"\\ud800","esc":"\\u0022\\u005c\\n"}`,
      `{"model":"first","pad":"${PAD}","model":"last"}`,
      `{"pad":"${PAD}","__proto__":{"polluted":true},"messages":[{"__proto__":1}]}`,
      `{"pad":"${PAD}","m":[[1,[2]],{"a":[3]},[],"s",-1.5e-7,true,false,null],"e":[],"o":{}}`,
      ` \r\n\t{ "pad" : "${PAD}" , "n" : [ 1 , 2 ] , "x" : 0 } \n`,
      `{"pad":"${PAD}","k\\u0041y":1,"":2}`,
    ];
    for (const body of cases) expectSameAsJsonParse(body);
    const proto = parseJsonBody(Buffer.from(cases[3]!)) as Record<string, unknown>;
    expect(Object.getPrototypeOf(proto)).toBe(Object.prototype);
    expect(Object.keys(proto)).toEqual(['pad', '__proto__', 'messages']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('fails as JSON.parse does on what is not JSON', () => {
    const bad = [
      `{"pad":"${PAD}","a":[1,],"b":2}`,
      `{"pad":"${PAD}","a":1,}`,
      `{"pad":"${PAD}","a":}`,
      `{"pad":"${PAD}","a":[1}`,
      `{"pad":"${PAD}","a":01}`,
      `{"pad":"${PAD}","a":1} trailing`,
      `{"pad":"${PAD}","a":"unterminated}`,
      `{"pad":"${PAD}" "a":1}`,
      `{"pad":"${PAD}","a":[{"b":1]]}`,
      `\ufeff{"pad":"${PAD}"}`,
      `{"pad":"${PAD}","a":1`,
    ];
    for (const body of bad) expectSameAsJsonParse(body);
    // A body that is JSON but not an object is parsed whole.
    expectSameAsJsonParse(JSON.stringify([PAD, { a: 1 }]));
    expectSameAsJsonParse(JSON.stringify(PAD));
  });
});

describe('a long-history chat request through the openai client', () => {
  let otel: TestOtel;
  let server: LlmServer;
  let inst: FaultlineInstrumentation;
  const rec = CHAT_TOOL_CALL;

  beforeAll(async () => {
    otel = setupOtel();
    inst = new FaultlineInstrumentation();
    inst.enable();
    server = await startLlmServer(() => corpusReply(rec));
  });
  afterAll(async () => {
    inst.disable();
    await server.close();
    await otel.shutdown();
  });

  it('is sent byte for byte and recorded like a short one (model, message count, tool names)', async () => {
    const request = longHistory(
      rec,
      200 * 1024,
      [CHAT_TEXT, CHAT_PLAIN, CHAT_STREAM].flatMap((r) => r.request.messages as unknown[]),
    );
    const client = new OpenAI({ apiKey: 'k', baseURL: `${server.url}/v1`, maxRetries: 0 });
    await client.chat.completions.create(request as never);
    expect(server.requests[0]?.body.toString('utf8')).toBe(JSON.stringify(request));
    const [span] = ours(await otel.waitForSpans((s) => ours(s).length === 1));
    const tools = (request.tools as Array<{ function: { name: string } }>).map((t) => t.function.name);
    // Counted as the conventions' input messages: system and developer messages are instructions.
    const input = (request.messages as Array<{ role?: string }>).filter(
      (m) => m.role !== 'system' && m.role !== 'developer',
    );
    expect(span?.attributes).toMatchObject({
      'gen_ai.request.model': request.model,
      'faultline.request.message_count': input.length,
      'faultline.request.tool_names': tools,
    });
    expect(tools.length).toBeGreaterThan(0);
  });
});
