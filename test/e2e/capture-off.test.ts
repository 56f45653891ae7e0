/**
 * Privacy with content capture off (register's default), online detectors on (FAULTLINE_DETECT=true): they fire on
 * content — mojibake, an in-band error notice, a JSON error envelope, tool arguments that break their schema or name an
 * ungrounded entity — and their findings land on the spans, yet nothing of the content does. A marker word placed in
 * every piece of content (the request messages, the answer, the tool arguments) must appear nowhere in the exported
 * trace file.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runNode } from '../support/child';
import { startLlmServer, type LlmServer } from '../support/llm-server';

vi.setConfig({ testTimeout: 120_000 });
const REGISTER_MJS = join(resolve(__dirname, '../..'), 'dist/src/register.mjs');
const MARK = 'Quillfeather';

const tools = [
  {
    type: 'function',
    function: {
      name: 'book_hotel',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string' }, nights: { type: 'integer' } },
        required: ['city', 'nights'],
        additionalProperties: false,
      },
    },
  },
];
const answers: Array<Record<string, unknown>> = [
  { content: `Caf\u00c3\u00a9 ${MARK} na\u00c3\u00afve \u00e2\u20ac\u201c r\u00c3\u00a9sum\u00c3\u00a9` }, // mojibake
  { content: `[API ERROR] ${MARK} upstream unavailable` }, // in-band notice
  { content: JSON.stringify({ error: { message: `${MARK} quota exhausted`, code: `${MARK}_code` } }) }, // JSON envelope
  {
    content: null,
    tool_calls: [
      {
        id: 'c1',
        type: 'function',
        function: { name: 'book_hotel', arguments: JSON.stringify({ city: MARK, nights: 'two' }) },
      },
    ],
  },
  {
    content: null,
    tool_calls: [
      {
        id: 'c2',
        type: 'function',
        function: { name: 'book_hotel', arguments: JSON.stringify({ city: `${MARK}ville Harbour`, nights: 2 }) },
      },
    ],
  },
];

let server: LlmServer;
beforeAll(async () => {
  let i = 0;
  server = await startLlmServer(() => {
    const message: Record<string, unknown> = { role: 'assistant', ...answers[i++ % answers.length] };
    const finish = message.tool_calls ? 'tool_calls' : 'stop';
    return {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        id: `chatcmpl-${i}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: 'gpt-4o-mini',
        choices: [{ index: 0, message, finish_reason: finish }],
        usage: { prompt_tokens: 9, completion_tokens: 7 },
      }),
    };
  });
});
afterAll(() => server.close());

describe('content capture off', () => {
  it('the detectors find the faults and no span carries a word of the content', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'faultline-privacy-'));
    const file = join(dir, 'traces.jsonl');
    const app = `
      const body = JSON.stringify({ model: 'gpt-4o-mini', tools: ${JSON.stringify(tools)},
        messages: [{ role: 'system', content: 'You book hotels for ${MARK}.' }, { role: 'user', content: 'Two nights in Lisbon for ${MARK}, please.' }] });
      for (let i = 0; i < ${answers.length}; i++) {
        const res = await fetch(process.env.LLM_URL + '/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        await res.text();
      }`;
    const r = await runNode(['--import', REGISTER_MJS, '--input-type=module', '-e', app], {
      env: { LLM_URL: server.url, FAULTLINE_TRACES_FILE: file, FAULTLINE_DETECT: 'true' },
      timeoutMs: 60_000,
    });
    expect(r.code, r.stderr).toBe(0);
    const text = readFileSync(file, 'utf8');
    const detectors = new Set(
      [...text.matchAll(/"faultline\.detection\.detector","value":\{"stringValue":"([a-z_]+)"/g)].map((m) => m[1]),
    );
    // The faults were seen (so their evidence was written) ...
    for (const d of ['encoding', 'in_band_error', 'schema_contract', 'entity_grounding'])
      expect(detectors, [...detectors].join(',')).toContain(d);
    // ... and not one piece of content was.
    expect(text).not.toContain(MARK);
    expect(text.toLowerCase()).not.toContain(MARK.toLowerCase());
  });
});
