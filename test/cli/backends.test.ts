/**
 * Issue 17 Build 2: `diagnose` and `eval` straight from Jaeger and Tempo, against loopback servers answering like
 * them (support/backends.ts): the recorded API responses, and a labelled trace set served in each API's encoding.
 * The diagnoses equal those of the same traces read from files; pagination, auth headers, an older API, and
 * backends that are down or answer something else are covered, each through the bin.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TraceBuilder } from '../diagnosers/support/builder';
import { labelledSet } from '../diagnosers/support/labelled';
import { otlpJson } from '../diagnosers/support/otlp-file';
import { cli, ensureBuilt } from '../campaign/support/bin';
import {
  FORMATS,
  perTrace,
  recorded,
  startJaeger,
  startTempo,
  type Backend,
  type ServedTrace,
} from './support/backends';

let dir = '';
let served: ServedTrace[] = [];
let file = '';
const backends: Backend[] = [];
const WINDOW = ['--start', '2026-09-01T00:00:00Z', '--end', '2026-11-01T00:00:00Z'];

const sorted = (stdout: string): string[] => stdout.trim().split('\n').filter(Boolean).sort();

beforeAll(() => {
  ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), 'faultline-backends-'));
  const b = new TraceBuilder();
  labelledSet(b, { seed: 11, perFault: 1, clean: 4 });
  served = perTrace([JSON.parse(otlpJson(b.finished))]);
  // The equivalent file: the same traces, one OTLP/JSON document per line.
  file = join(dir, 'traces.jsonl');
  writeFileSync(file, served.map((t) => JSON.stringify(t.otlp)).join('\n') + '\n');
}, 120_000);

afterAll(async () => {
  await Promise.all(backends.map((b) => b.close()));
});

async function track(p: Promise<Backend>): Promise<Backend> {
  const b = await p;
  backends.push(b);
  return b;
}

describe('diagnose --jaeger', () => {
  it('v1 search on the recorded Jaeger API responses: the same diagnoses as the downloaded files, page by page', async () => {
    const apiTrace = (JSON.parse(recorded('jaeger.otlp2jaeger-out.api-traces.json')) as { data: unknown[] }).data[0];
    const uiTrace = JSON.parse(recorded('jaeger.ui_01.trace.json'));
    const jaeger = await track(startJaeger({ v1: [apiTrace, uiTrace] as never }));
    const r = await cli([
      'diagnose',
      '--jaeger',
      jaeger.url,
      '--service',
      'telemetrygen',
      '--start',
      '2017-01-01T00:00:00Z',
      '--end',
      '2025-01-01T00:00:00Z',
      '--page-size',
      '1',
      '-f',
      'jsonl',
    ]);
    expect(r.code, r.stderr).toBe(0);
    const files = await cli([
      'diagnose',
      join(FORMATS, 'jaeger.otlp2jaeger-out.api-traces.json'),
      join(FORMATS, 'jaeger.ui_01.trace.json'),
      '-f',
      'jsonl',
    ]);
    expect(sorted(r.stdout)).toEqual(sorted(files.stdout));
    expect(sorted(r.stdout)).toHaveLength(2);
    const searches = jaeger.seen.filter((s) => s.path === '/api/traces');
    // Newest first, one per page; the second window ends before the first page's trace began.
    expect(searches.length).toBeGreaterThanOrEqual(2);
    expect(searches[0]!.query.get('limit')).toBe('1');
    expect(Number(searches[1]!.query.get('end'))).toBeLessThan(1706678909209712);
    expect(r.stderr).toMatch(/Jaeger http:\/\/127\.0\.0\.1:\d+: 2 traces in \d+ requests/);
  });

  it('api_v3 where v1 is gone (Jaeger main): the same diagnoses as the file, paginated by time window', async () => {
    const jaeger = await track(startJaeger({ v3: served }));
    const r = await cli([
      'diagnose',
      '--jaeger',
      jaeger.url,
      '--service',
      'agent',
      ...WINDOW,
      '--page-size',
      '4',
      '-f',
      'jsonl',
    ]);
    expect(r.code, r.stderr).toBe(0);
    const f = await cli(['diagnose', file, '-f', 'jsonl']);
    expect(sorted(r.stdout)).toEqual(sorted(f.stdout));
    expect(sorted(r.stdout)).toHaveLength(served.length);
    expect(f.stdout).toMatch(/"faultType":"truncate"/);
    const pages = jaeger.seen.filter((s) => s.path === '/api/v3/traces');
    expect(pages.length).toBeGreaterThanOrEqual(Math.ceil(served.length / 4));
    expect(pages[0]!.query.get('query.serviceName')).toBe('agent');
    expect(jaeger.seen[0]!.path).toBe('/api/traces');
  });

  it('--trace-id fetches traces by id; a missing one is named after the others are diagnosed (exit 2)', async () => {
    const jaeger = await track(startJaeger({ v3: served }));
    const r = await cli([
      'diagnose',
      '--jaeger',
      jaeger.url,
      '--trace-id',
      served[0]!.traceId,
      '--trace-id',
      'ab'.repeat(16),
      '-f',
      'jsonl',
    ]);
    expect(r.code).toBe(2);
    expect(sorted(r.stdout)).toHaveLength(1);
    expect(r.stdout).toContain(served[0]!.traceId);
    expect(r.stderr).toMatch(new RegExp(`✖ Jaeger at http://127\\.0\\.0\\.1:\\d+: trace ${'ab'.repeat(16)} not found`));
  });
});

describe('diagnose --tempo', () => {
  it('TraceQL search then each trace by id, on the recorded Tempo responses: the same diagnosis as the ingested file', async () => {
    const id = '5b8efff798038103d269b633813fc60c';
    const tempo = await track(
      startTempo({
        recorded: {
          search: recorded('tempo.api-search-traceql.generated.json'),
          byId: { [id]: recorded('tempo.api-v2-traces-id.generated.json') },
        },
      }),
    );
    const q = '{ span.chaos.fault.type = "truncation" }';
    const r = await cli(['diagnose', '--tempo', tempo.url, '--query', q, '--lookback', '30d', '-f', 'jsonl']);
    expect(r.code, r.stderr).toBe(0);
    for (const f of [
      'otlp-json.curl-request.sent-to-tempo.json',
      'tempo.api-v2-traces-id.generated.json',
      'tempo.api-traces-id.v1.generated.json',
    ]) {
      expect(sorted(r.stdout), f).toEqual(sorted((await cli(['diagnose', join(FORMATS, f), '-f', 'jsonl'])).stdout));
    }
    // The faulty span is the chat call the recorded trace marks as failed.
    expect(JSON.parse(r.stdout)).toMatchObject({ traceId: id, spanId: 'eee19b7ec3c1b174' });
    expect(tempo.seen[0]!.path).toBe('/api/search');
    expect(tempo.seen[0]!.query.get('q')).toBe(q);
    expect(tempo.seen[1]!.path).toBe(`/api/v2/traces/${id}`);
  });

  it('paginates the search by time window, sends bearer token and X-Scope-OrgID, and eval scores the same as from the file', async () => {
    const tempo = await track(startTempo({ traces: served, auth: { header: 'x-scope-orgid', value: 'tenant-1' } }));
    const args = ['--tempo', tempo.url, ...WINDOW, '--page-size', '3', '--org-id', 'tenant-1', '--token', 's3cret'];
    const r = await cli(['diagnose', ...args, '-f', 'jsonl']);
    expect(r.code, r.stderr).toBe(0);
    expect(sorted(r.stdout)).toEqual(sorted((await cli(['diagnose', file, '-f', 'jsonl'])).stdout));
    const searches = tempo.seen.filter((s) => s.path === '/api/search');
    expect(searches.length).toBeGreaterThanOrEqual(Math.ceil(served.length / 3));
    expect(new Set(searches.map((s) => s.query.get('end'))).size).toBe(searches.length);
    for (const s of tempo.seen) {
      expect(s.headers['x-scope-orgid']).toBe('tenant-1');
      expect(s.headers.authorization).toBe('Bearer s3cret');
    }
    const e = await cli(['eval', ...args, '-f', 'json']);
    const fromFile = await cli(['eval', file, '-f', 'json']);
    expect(e.code, e.stderr).toBe(0);
    // Timings aside, and rows in trace order (the backend answers newest first).
    const strip = (s: string) => {
      const o = JSON.parse(s) as {
        diagnosers: Array<Record<string, unknown>>;
        rows: Array<{ truth: { traceId: string } }>;
      };
      for (const d of o.diagnosers) {
        delete d.spansPerSecond;
        delete d.msPerTrace;
      }
      o.rows.sort((a, b) => a.truth.traceId.localeCompare(b.truth.traceId));
      return o;
    };
    expect(strip(e.stdout)).toEqual(strip(fromFile.stdout));
  });

  it('an older Tempo without /api/v2 is read through /api/traces; basic auth from the URL becomes a header, never printed', async () => {
    const tempo = await track(
      startTempo({
        traces: served.slice(0, 2),
        v1Only: true,
        auth: { header: 'authorization', value: `Basic ${Buffer.from('ops:pa ss').toString('base64')}` },
      }),
    );
    const url = tempo.url.replace('http://', 'http://ops:pa%20ss@');
    const r = await cli(['diagnose', '--tempo', url, ...WINDOW, '-f', 'jsonl']);
    expect(r.code, r.stderr).toBe(0);
    expect(sorted(r.stdout)).toHaveLength(2);
    expect(tempo.seen.some((s) => s.path.startsWith('/api/traces/'))).toBe(true);
    expect(r.stderr).not.toContain('pa');
    const denied = await cli(['diagnose', '--tempo', tempo.url, ...WINDOW]);
    expect(denied.code).toBe(2);
    expect(denied.stderr.trim()).toMatch(
      /^✖ Tempo at http:\/\/127\.0\.0\.1:\d+\/api\/search\?.*: answered 401 Unauthorized: unauthorized \(check --token \/ --user \/ --org-id\)$/,
    );
  });
});

describe('backends that are down or answer something else', () => {
  it('unreachable, an HTML page, a JSON of another shape: one line each, exit 2, no stack', async () => {
    const html = await track(
      (async () => {
        const { createServer } = await import('node:http');
        const s = createServer((req, res) => {
          res.writeHead(200, { 'content-type': req.url?.startsWith('/api/search') ? 'application/json' : 'text/html' });
          res.end(
            req.url?.startsWith('/api/search')
              ? '{"status":"ok"}'
              : '<!doctype html><html><title>Grafana</title></html>',
          );
        });
        await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
        const url = `http://127.0.0.1:${(s.address() as { port: number }).port}`;
        return { url, seen: [], close: () => new Promise<void>((r) => s.close(() => r())) };
      })(),
    );
    // A port nothing listens on.
    const { createServer } = await import('node:net');
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const dead = (probe.address() as { port: number }).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const cases: Array<[string[], RegExp]> = [
      [
        ['diagnose', '--jaeger', `http://127.0.0.1:${dead}`, '--service', 'x'],
        new RegExp(
          `^✖ Jaeger at http://127\\.0\\.0\\.1:${dead}/api/traces\\?service=x.*: cannot reach it: connection refused`,
        ),
      ],
      [
        ['diagnose', '--jaeger', html.url, '--service', 'x'],
        /answered text\/html, not JSON: it starts with "<!doctype html><html><title>Grafana<\/title><\/html>" \(is this the Jaeger API\?\)/,
      ],
      [
        ['eval', '--tempo', html.url],
        /Tempo at .*\/api\/search\?.*: expected a search result \{"traces":\[…\]\}, found a JSON object with keys "status"/,
      ],
      [['diagnose', '--jaeger', 'ftp://x'], /--jaeger expects an http\(s\) URL/],
      [['diagnose', '--jaeger', html.url], /--jaeger needs --service/],
      [['diagnose', file, '--tempo', html.url], /give one source of traces, not trace files and --tempo/],
      [['diagnose', '--tempo', html.url, '--lookback', 'soon'], /--lookback expects a duration/],
    ];
    for (const [args, msg] of cases) {
      const r = await cli(args, {}, 30_000);
      expect(r.code, `${args.join(' ')}\n${r.stderr}`).toBe(2);
      expect(
        r.stderr
          .trim()
          .split('\n')
          .filter((l) => l.startsWith('✖')),
      ).toHaveLength(1);
      expect(r.stderr).toMatch(msg);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
  });
});
