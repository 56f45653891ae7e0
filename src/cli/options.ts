/**
 * Options as data: each command's option table (src/cli/types.ts CommandOption) drives both argv parsing
 * (node's util.parseArgs) and its `--help` text, so the two cannot drift.
 */
import { parseArgs } from 'node:util';
import { FaultlineInputError } from '../errors';
import type { Command, CommandOption } from './types';

export type ParsedOptions = Record<string, string | boolean | string[] | undefined>;

const HELP: CommandOption = { name: 'help', short: 'h', description: 'show this help' };

export function parseCommandArgs(cmd: Command, argv: string[]): { options: ParsedOptions; positionals: string[] } {
  const config: NonNullable<Parameters<typeof parseArgs>[0]>['options'] = {};
  for (const o of [...cmd.options, HELP]) {
    config[o.name] = {
      type: o.value !== undefined ? 'string' : 'boolean',
      ...(o.short ? { short: o.short } : {}),
      ...(o.multiple ? { multiple: true } : {}),
    };
  }
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: argv, options: config, allowPositionals: true, strict: true });
  } catch (err) {
    // parseArgs messages name the flag ("Unknown option '--x'"); add where to look.
    const msg = (err as Error).message.replace(/\. To specify a positional argument.*$/s, '');
    throw new FaultlineInputError('FAULTLINE_USAGE', `${msg} (see faultline ${cmd.name} --help)`);
  }
  const options: ParsedOptions = {};
  for (const o of cmd.options) {
    const v = parsed.values[o.name];
    if (v !== undefined) options[o.name] = v as string | boolean | string[];
    else if (o.default !== undefined) options[o.name] = typeof o.default === 'number' ? String(o.default) : o.default;
  }
  if (parsed.values.help) options.help = true;
  return { options, positionals: parsed.positionals };
}

/** Check a string option against its allowed values (`a|b|c` in the option's `value`). */
export function oneOf<T extends string>(cmd: Command, name: string, value: unknown, allowed: readonly T[]): T {
  if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
  throw new FaultlineInputError(
    'FAULTLINE_USAGE',
    `--${name} must be one of ${allowed.join(', ')}; got ${JSON.stringify(value)} (see faultline ${cmd.name} --help)`,
  );
}

function optionLines(options: readonly CommandOption[]): string[] {
  const left = options.map((o) => `${o.short ? `-${o.short}, ` : '    '}--${o.name}${o.value ? ` <${o.value}>` : ''}`);
  const w = Math.max(...left.map((l) => l.length));
  return options.map((o, i) => {
    const extra = [
      o.multiple ? 'repeatable' : undefined,
      o.default !== undefined ? `default: ${String(o.default)}` : undefined,
    ]
      .filter(Boolean)
      .join(', ');
    return `  ${left[i]!.padEnd(w)}  ${o.description}${extra ? ` (${extra})` : ''}`;
  });
}

export function commandHelp(cmd: Command): string {
  const lines = [`Usage: ${cmd.usage}`, '', cmd.summary, '', 'Options:', ...optionLines([...cmd.options, HELP])];
  if (cmd.details) lines.push('', cmd.details.trimEnd());
  return lines.join('\n') + '\n';
}
