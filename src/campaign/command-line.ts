/**
 * The user's command line (`--cmd "node my-agent.js {task}"`, `--oracle "node judge.js {task.expected}"`): split into
 * words the way a POSIX shell does (quotes, backslashes), then placeholders are filled in per word. The program is
 * run without a shell, so a task's text is one argument whatever it contains — nothing in a task is ever executed.
 *
 * Placeholders: `{task}` (the task's `input` when it is a string, else the task as JSON), `{task.FIELD}` (a field of
 * the task: strings as they are, other values as JSON), `{task.id}`.
 */
import { FaultlineInputError } from '../errors';
import type { CampaignTask } from './tasks';

export interface CommandTemplate {
  /** What the user wrote (for messages). */
  text: string;
  words: string[];
}

/** Split a command line into words: whitespace separates; '…' is literal; "…" and bare words honour backslash escapes. */
export function splitCommand(text: string, flag: string): CommandTemplate {
  const words: string[] = [];
  let word: string | undefined;
  let quoted = false;
  let i = 0;
  const bad = (what: string): never => {
    throw new FaultlineInputError('FAULTLINE_USAGE', `${flag}: ${what} in ${JSON.stringify(text)}`);
  };
  const end = (): void => {
    if (word === undefined) return;
    // Shell syntax is not interpreted: say so rather than pass "|" to the program as an argument.
    if (!quoted && /^(\||\|\||&&?|;|[<>]|>>|2>)$/.test(word))
      bad(`"${word}" (no shell runs the command: put a pipeline or redirection in a script, or use sh -c '…')`);
    words.push(word);
    word = undefined;
    quoted = false;
  };
  while (i < text.length) {
    const ch = text[i]!;
    if (/\s/.test(ch)) {
      end();
      i++;
    } else if (ch === "'") {
      quoted = true;
      const j = text.indexOf("'", i + 1);
      if (j < 0) bad('an unterminated single quote');
      word = (word ?? '') + text.slice(i + 1, j);
      i = j + 1;
    } else if (ch === '"') {
      quoted = true;
      let s = '';
      i++;
      while (i < text.length && text[i] !== '"') {
        if (text[i] === '\\' && i + 1 < text.length && '"\\$`'.includes(text[i + 1]!)) i++;
        s += text[i];
        i++;
      }
      if (i >= text.length) bad('an unterminated double quote');
      word = (word ?? '') + s;
      i++;
    } else if (ch === '\\') {
      if (i + 1 >= text.length) bad('a trailing backslash');
      quoted = true;
      word = (word ?? '') + text[i + 1];
      i += 2;
    } else {
      word = (word ?? '') + ch;
      i++;
    }
  }
  end();
  if (words.length === 0) bad('no command');
  return { text, words };
}

const PLACEHOLDER = /\{(task(?:\.[A-Za-z0-9_$-]+)?)\}/g;

function valueOf(task: CampaignTask, name: string): string | undefined {
  if (name === 'task') return typeof task.fields.input === 'string' ? task.fields.input : JSON.stringify(task.fields);
  const field = name.slice('task.'.length);
  if (field === 'id') return task.id;
  if (!Object.prototype.hasOwnProperty.call(task.fields, field)) return undefined;
  const v = task.fields[field];
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** The words with the task's values filled in; a placeholder naming a field the task lacks is an error. */
export function fillCommand(t: CommandTemplate, task: CampaignTask, flag: string): string[] {
  return t.words.map((w) =>
    w.replace(PLACEHOLDER, (_, name: string) => {
      const v = valueOf(task, name);
      if (v === undefined)
        throw new FaultlineInputError(
          'FAULTLINE_USAGE',
          `${flag}: {${name}} names a field task ${JSON.stringify(task.id)} does not have (line ${task.line} of the tasks file)`,
        );
      return v;
    }),
  );
}

/** A word as a POSIX shell would need it quoted (for --dry-run output). */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
