/**
 * `faultline` — the CLI entry (bin/faultline.js calls `main(argv)`). Sets process.exitCode: 0 ok, 1 failed run,
 * 2 bad input. Known errors print as `✖ message` without a stack; unknown ones print the message and a hint, with
 * the stack only under FAULTLINE_DEBUG=1.
 */
import { isFaultlineError, FaultlineInputError } from '../errors';
import { PACKAGE_NAME, VERSION } from '../version';
import { COMMANDS, findCommand, tryLoad } from './commands';
import { commandHelp, parseCommandArgs } from './options';
import { guardTerminal } from '../report/terminal';
import { debugFromEnv } from '../env';

function mainHelp(): string {
  const available = COMMANDS.filter((c) => c.available());
  const w = Math.max(...available.map((c) => c.name.length));
  return [
    `${PACKAGE_NAME} ${VERSION} — observable, reproducible, guardable faults in LLM multi-agent systems`,
    '',
    'Usage: faultline <command> [options]',
    '',
    'Commands:',
    ...available.map((c) => `  ${c.name.padEnd(w)}  ${c.summary}`),
    '',
    'Options:',
    '  -h, --help     show help (faultline <command> --help for a command)',
    '  -v, --version  print the version',
    '',
    'Instrument an app: node --import faultline/register app.js',
    '',
  ].join('\n');
}

function report(err: unknown): number {
  const debug = debugFromEnv();
  if (isFaultlineError(err)) {
    process.stderr.write(`✖ ${err.message}\n`);
    if (debug && err.stack) process.stderr.write(`${err.stack}\n`);
    return err instanceof FaultlineInputError ? 2 : 1;
  }
  const msg = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  process.stderr.write(
    `✖ unexpected error: ${msg}\n  This is a bug in faultline; please report it (run with FAULTLINE_DEBUG=1 for the stack).\n`,
  );
  if (debug && err instanceof Error && err.stack) process.stderr.write(`${err.stack}\n`);
  return 1;
}

export async function main(argv: string[]): Promise<void> {
  // Every line any command prints: trace text with its control characters escaped, URLs without credentials.
  guardTerminal(process.stdout);
  guardTerminal(process.stderr);
  try {
    process.exitCode = await run(argv);
  } catch (err) {
    process.exitCode = report(err);
  }
}

async function run(argv: string[]): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined || first === '--help' || first === '-h' || first === 'help') {
    if (first === 'help' && rest[0]) return run([rest[0], '--help']);
    process.stdout.write(mainHelp());
    return first === undefined ? 2 : 0;
  }
  if (first === '--version' || first === '-v') {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  const entry = findCommand(first);
  const cmd = entry ? tryLoad(entry) : undefined;
  if (!cmd) {
    const names = COMMANDS.filter((c) => c.available()).map((c) => c.name);
    throw new FaultlineInputError(
      'FAULTLINE_USAGE',
      `unknown command ${JSON.stringify(first)}: expected one of ${names.join(', ')} (see faultline --help)`,
    );
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(commandHelp(cmd));
    return 0;
  }
  const { options, positionals } = parseCommandArgs(cmd, rest);
  return cmd.run({ options, positionals });
}
