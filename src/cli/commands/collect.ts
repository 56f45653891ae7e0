import type { Command } from '../types';

/** `faultline collect`: the embedded OTLP/HTTP receiver writing JSON lines, until SIGINT/SIGTERM. */
export const command: Command = {
  name: 'collect',
  summary: 'Receive OTLP/HTTP traces (JSON or protobuf, gzip) and write them as JSON lines',
  usage: 'faultline collect [--port 4318] [--host 127.0.0.1] [--out traces.jsonl]',
  options: [
    { name: 'port', short: 'p', value: 'PORT', description: 'port to listen on (0 picks a free one)', default: 4318 },
    { name: 'host', value: 'HOST', description: 'address to listen on', default: '127.0.0.1' },
    { name: 'out', short: 'o', value: 'FILE', description: 'JSON-lines file the traces are appended to', default: 'traces.jsonl' },
  ],
  details: [
    'Point any OTLP exporter at it, e.g.',
    '  faultline collect --out run.jsonl &',
    '  OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 node --import faultline/register app.js',
    '  faultline diagnose run.jsonl',
    'Stop it with Ctrl-C (SIGINT) or SIGTERM: the file is flushed and closed first.',
  ].join('\n'),
  async run({ options }) {
    const { FaultlineInputError } = await import('../../errors.js');
    const { resolve } = await import('node:path');
    const { startCollector } = await import('../../traces/collect.js');
    const rawPort = options.port ?? 4318;
    const port = typeof rawPort === 'string' && /^\d+$/.test(rawPort) ? Number(rawPort) : rawPort;
    if (typeof port !== 'number' || !Number.isInteger(port) || port < 0 || port > 65535) {
      throw new FaultlineInputError('FAULTLINE_USAGE', `--port: expected a port number 0-65535, got ${JSON.stringify(rawPort)}`);
    }
    const host = typeof options.host === 'string' ? options.host : '127.0.0.1';
    const out = resolve(typeof options.out === 'string' ? options.out : 'traces.jsonl');
    const collector = await startCollector({ port, host, out });
    process.stdout.write(
      `faultline collect: receiving OTLP/HTTP traces (JSON or protobuf, gzip) on ${collector.tracesUrl}\n` +
        `faultline collect: appending JSON lines to ${out}\n` +
        `faultline collect: exporters: OTEL_EXPORTER_OTLP_ENDPOINT=${collector.url}; stop with Ctrl-C\n`,
    );
    const signal = await new Promise<NodeJS.Signals>((done) => {
      const onInt = (): void => stop('SIGINT');
      const onTerm = (): void => stop('SIGTERM');
      const stop = (sig: NodeJS.Signals): void => {
        process.off('SIGINT', onInt);
        process.off('SIGTERM', onTerm);
        done(sig);
      };
      process.on('SIGINT', onInt);
      process.on('SIGTERM', onTerm);
    });
    await collector.close();
    const { requests, spans, rejected } = collector.stats;
    process.stdout.write(
      `faultline collect: ${signal}: stopped after ${requests} request${requests === 1 ? '' : 's'}, ${spans} span${spans === 1 ? '' : 's'} written to ${out}${rejected > 0 ? `, ${rejected} rejected` : ''}\n`,
    );
    return 0;
  },
};
