/**
 * Where the trace commands (diagnose, eval, verify) get their traces: files, or a Jaeger or Tempo query. Every
 * problem with an input (a missing file, a bad line, an unreachable backend, a trace id not found) is collected,
 * not thrown, so a command reports what it could read and then names each bad input (`finish`: exit 2).
 *
 * Spans faultline itself exported as diagnoses (`diagnose --export otlp`) are not part of the system under
 * observation: they are dropped here, so reading a trace back from the backend gives the same diagnosis again.
 */
import { FaultlineInputError } from '../errors';
import type { TraceRecord } from '../traces/model';
import type { CommandOption } from './types';
import type { ParsedOptions } from './options';
import { processEnv } from '../env';

/** The options a command that reads traces takes besides FILE...: the backend query. */
export const SOURCE_OPTIONS: CommandOption[] = [
  {
    name: 'jaeger',
    value: 'URL',
    description: 'read traces from a Jaeger query service (e.g. http://localhost:16686) instead of files',
  },
  {
    name: 'tempo',
    value: 'URL',
    description: 'read traces from Grafana Tempo (e.g. http://localhost:3200) instead of files',
  },
  {
    name: 'service',
    value: 'NAME',
    description: 'Jaeger: the service to search (Tempo: adds resource.service.name to the query)',
  },
  { name: 'operation', value: 'NAME', description: 'Jaeger: the operation (span name) to search' },
  { name: 'tag', value: 'KEY=VALUE', description: 'Jaeger: an attribute the traces must have', multiple: true },
  { name: 'query', value: 'TRACEQL', description: 'Tempo: a TraceQL query (default {})' },
  { name: 'trace-id', value: 'ID', description: 'fetch this trace by id instead of searching', multiple: true },
  {
    name: 'lookback',
    value: 'DURATION',
    description: 'search the last DURATION (30m, 6h, 2d) when --start is not given',
    default: '1h',
  },
  { name: 'start', value: 'TIME', description: 'search from this time (ISO 8601 or epoch seconds)' },
  { name: 'end', value: 'TIME', description: 'search up to this time (default: now)' },
  { name: 'limit', value: 'N', description: 'at most N traces from the backend', default: 100 },
  { name: 'page-size', value: 'N', description: 'traces per search request', default: 50 },
  {
    name: 'token',
    value: 'TOKEN',
    description: 'backend auth: Authorization: Bearer TOKEN (default $FAULTLINE_BACKEND_TOKEN)',
  },
  {
    name: 'user',
    value: 'USER:PASSWORD',
    description: 'backend auth: basic auth (default $FAULTLINE_BACKEND_USER; or user:pass@ in the URL)',
  },
  { name: 'org-id', value: 'TENANT', description: 'Tempo multi-tenancy: X-Scope-OrgID' },
  { name: 'header', value: '"NAME: VALUE"', description: 'an extra request header for the backend', multiple: true },
];

export const SOURCE_DETAILS = [
  'Traces from a backend instead of files:',
  '  --jaeger URL --service NAME [--operation OP] [--tag k=v]... [--lookback 1h | --start T --end T] [--limit N]',
  '  --tempo URL [--query TRACEQL] [--lookback 1h | --start T --end T] [--limit N] [--org-id TENANT]',
  '  --jaeger URL | --tempo URL  --trace-id ID...',
  'Searches are paged by time window (--page-size traces per request) up to --limit traces.',
  'Auth: --token, --user, --org-id, --header (tokens are better given as FAULTLINE_BACKEND_TOKEN / _USER).',
];

/** The instrumentation scope of the diagnosis spans `--export otlp` writes (see report/diagnosis-spans.ts). */
export const DIAGNOSIS_SCOPE = 'faultline/diagnose';

export interface TraceInput {
  traces: AsyncIterable<TraceRecord>;
  /** Every bad input met so far (complete once `traces` is exhausted). */
  problems: FaultlineInputError[];
  /** What was read, for messages: the files, or the backend URL. */
  label: string;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const strs = (v: unknown): string[] => (Array.isArray(v) ? v.map(String) : typeof v === 'string' ? [v] : []);

function positive(flag: string, v: unknown): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1)
    throw new FaultlineInputError('FAULTLINE_USAGE', `--${flag} must be a positive integer; got ${JSON.stringify(v)}`);
  return n;
}

/** Open the traces a command was given: FILE... or one backend. Usage errors throw; read problems are collected. */
export function openTraceInput(
  command: string,
  options: ParsedOptions,
  positionals: string[],
  env: NodeJS.ProcessEnv = processEnv(),
): TraceInput {
  const jaeger = str(options.jaeger);
  const tempo = str(options.tempo);
  const problems: FaultlineInputError[] = [];
  const given = [
    positionals.length > 0 ? 'trace files' : undefined,
    jaeger ? '--jaeger' : undefined,
    tempo ? '--tempo' : undefined,
  ].filter(Boolean);
  if (given.length === 0)
    throw new FaultlineInputError(
      'FAULTLINE_USAGE',
      `no traces given: name trace files, or --jaeger URL / --tempo URL (see faultline ${command} --help)`,
    );
  if (given.length > 1)
    throw new FaultlineInputError(
      'FAULTLINE_USAGE',
      `give one source of traces, not ${given.join(' and ')} (see faultline ${command} --help)`,
    );

  if (!jaeger && !tempo) {
    const { readTraces } = require('../traces/read') as typeof import('../traces/read');
    return {
      traces: withoutDiagnoses(readTraces(positionals, { onError: (e) => problems.push(e) })),
      problems,
      label: positionals.join(', '),
    };
  }

  const { createBackend, parseDuration, parseHeader, parseTime } =
    require('../traces/backend-http') as typeof import('../traces/backend-http');
  const headers: Record<string, string> = {};
  for (const h of strs(options.header)) {
    const [k, v] = parseHeader(h);
    headers[k] = v;
  }
  const token = str(options.token) ?? (env.FAULTLINE_BACKEND_TOKEN?.trim() || undefined);
  const basic = str(options.user) ?? (env.FAULTLINE_BACKEND_USER?.trim() || undefined);
  if (basic !== undefined && !basic.includes(':'))
    throw new FaultlineInputError('FAULTLINE_USAGE', '--user expects USER:PASSWORD');
  const orgId = str(options['org-id']);
  const backend = createBackend(jaeger ? 'Jaeger' : 'Tempo', (jaeger ?? tempo) as string, {
    headers,
    ...(token !== undefined ? { token } : {}),
    ...(basic !== undefined ? { basic } : {}),
    ...(orgId !== undefined ? { orgId } : {}),
  });
  const end = options.end !== undefined ? parseTime('--end', String(options.end)) : Date.now();
  const start =
    options.start !== undefined
      ? parseTime('--start', String(options.start))
      : end - parseDuration('--lookback', String(options.lookback ?? '1h'));
  if (!(start < end)) throw new FaultlineInputError('FAULTLINE_USAGE', '--start must be before --end');
  const limit = positive('limit', options.limit ?? 100);
  const pageSize = positive('page-size', options['page-size'] ?? 50);
  const traceIds = strs(options['trace-id'])
    .flatMap((s) => s.split(','))
    .map((s) => s.trim())
    .filter(Boolean);
  for (const id of traceIds)
    if (!/^[0-9a-fA-F]{1,32}$/.test(id))
      throw new FaultlineInputError('FAULTLINE_USAGE', `--trace-id expects a hex trace id; got ${JSON.stringify(id)}`);
  const service = str(options.service);
  const { createProgress } = require('../report/progress') as typeof import('../report/progress');
  const progress = createProgress({ label: `${backend.name} ${backend.base}` });
  let requests = 0;
  let count = 0;
  const hooks = {
    onProblem: (e: FaultlineInputError) => problems.push(e),
    onProgress: (n: number, r: number) => {
      count = n;
      requests = r;
      progress.update(n, `traces, ${r} requests`);
    },
  };
  let gen: AsyncGenerator<TraceRecord>;
  if (jaeger) {
    const tags: Record<string, string> = {};
    for (const t of strs(options.tag)) {
      const i = t.indexOf('=');
      if (i <= 0) throw new FaultlineInputError('FAULTLINE_USAGE', `--tag expects KEY=VALUE; got ${JSON.stringify(t)}`);
      tags[t.slice(0, i).trim()] = t.slice(i + 1).trim();
    }
    const { jaegerTraces } = require('../traces/jaeger-query') as typeof import('../traces/jaeger-query');
    gen = jaegerTraces(
      backend,
      {
        start,
        end,
        limit,
        pageSize,
        tags,
        ...(service ? { service } : {}),
        ...(str(options.operation) ? { operation: str(options.operation) } : {}),
        ...(traceIds.length ? { traceIds } : {}),
      },
      hooks,
    );
  } else {
    let query = str(options.query);
    if (service)
      query = query
        ? `(${query}) && { resource.service.name = ${JSON.stringify(service)} }`
        : `{ resource.service.name = ${JSON.stringify(service)} }`;
    const { tempoTraces } = require('../traces/tempo-query') as typeof import('../traces/tempo-query');
    gen = tempoTraces(
      backend,
      { start, end, limit, pageSize, ...(query ? { query } : {}), ...(traceIds.length ? { traceIds } : {}) },
      hooks,
    );
  }
  async function* guarded(): AsyncGenerator<TraceRecord> {
    let failed = false;
    try {
      yield* gen;
    } catch (err) {
      if (!(err instanceof FaultlineInputError) || err.code === 'FAULTLINE_USAGE') throw err;
      failed = true;
      problems.push(err);
    } finally {
      // The summary when the backend answered; its error (printed by finish) says the rest.
      progress.done(
        failed && count === 0
          ? undefined
          : `${backend.name} ${backend.base}: ${count} trace${count === 1 ? '' : 's'} in ${requests} request${requests === 1 ? '' : 's'}`,
      );
    }
  }
  return { traces: withoutDiagnoses(guarded()), problems, label: backend.base };
}

async function* withoutDiagnoses(traces: AsyncIterable<TraceRecord>): AsyncGenerator<TraceRecord> {
  for await (const t of traces) {
    if (!t.spans.some((s) => s.scope.name === DIAGNOSIS_SCOPE)) {
      yield t;
      continue;
    }
    const spans = t.spans.filter((s) => s.scope.name !== DIAGNOSIS_SCOPE);
    if (spans.length > 0) yield { traceId: t.traceId, spans };
  }
}

/** Name every bad input on stderr, one `✖` line each; the exit code they call for (2), or 0. */
export function finish(
  problems: readonly FaultlineInputError[],
  stderr: { write(s: string): unknown } = process.stderr,
): number {
  for (const p of problems) stderr.write(`✖ ${p.message}\n`);
  return problems.length > 0 ? 2 : 0;
}
