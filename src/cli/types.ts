/** One CLI subcommand. Each lives in src/cli/commands/<name>.ts and exports `command`; heavy modules are imported
 * inside `run`, so `faultline --help` stays fast. */
export interface CommandOption {
  /** Long flag without dashes, e.g. `diagnoser`. */
  name: string;
  short?: string;
  /** Placeholder for the value (omit for a boolean flag), e.g. `rule|llm|hybrid`. */
  value?: string;
  description: string;
  default?: string | number | boolean;
  /** May be given more than once. */
  multiple?: boolean;
}

export interface Command {
  name: string;
  /** One line for `faultline --help`. */
  summary: string;
  /** Usage line, e.g. `faultline diagnose FILE... [options]`. */
  usage: string;
  options: CommandOption[];
  /** Extra text for `faultline <command> --help` (examples). */
  details?: string;
  /** Parsed options (by long name) and positional arguments. Returns the exit code: 0 ok, 1 failed run, 2 bad input. */
  run(args: {
    options: Record<string, string | boolean | string[] | undefined>;
    positionals: string[];
  }): Promise<number>;
}
