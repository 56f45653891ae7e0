/**
 * The tasks of a command campaign: a JSON-lines file, one task per line — an object with an `id` (string or number)
 * and any fields the command's placeholders or the oracle read (`{"id":"t1","input":"…","expected":"…"}`), or a bare
 * JSON string (the task's `input`; its id is then `task-<line>`). Blank lines are skipped. Every problem names the
 * file and the line.
 */
import { readFileSync } from 'node:fs';
import { FaultlineInputError } from '../errors';

export interface CampaignTask {
  id: string;
  /** The task object as written (with `input` for a bare string). */
  fields: Record<string, unknown>;
  /** 1-based line in the tasks file. */
  line: number;
}

export function loadTasks(file: string): CampaignTask[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new FaultlineInputError(
      'FAULTLINE_FILE_NOT_FOUND',
      `--tasks ${file}: ${code === 'ENOENT' ? 'no such file' : `cannot read (${code ?? String(err)})`}`,
      { cause: err },
    );
  }
  const tasks: CampaignTask[] = [];
  const seen = new Map<string, number>();
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  lines.forEach((raw, i) => {
    const line = i + 1;
    if (raw.trim() === '') return;
    const bad = (problem: string): never => {
      throw new FaultlineInputError('FAULTLINE_USAGE', `--tasks ${file}: line ${line}: ${problem}`);
    };
    let v: unknown;
    try {
      v = JSON.parse(raw);
    } catch (err) {
      bad(`invalid JSON (${(err as Error).message}); expected one task per line, e.g. {"id":"t1","input":"…"}`);
    }
    let task: CampaignTask;
    if (typeof v === 'string') task = { id: `task-${line}`, fields: { input: v }, line };
    else if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
      const o = v as Record<string, unknown>;
      const id = o.id;
      if (!(typeof id === 'string' && id.trim() !== '') && !(typeof id === 'number' && Number.isFinite(id)))
        bad('a task object needs an "id" (a string or a number)');
      task = { id: String(id), fields: o, line };
    } else task = bad(`expected a task object or a string, got ${Array.isArray(v) ? 'an array' : JSON.stringify(v)}`);
    const dup = seen.get(task.id);
    if (dup !== undefined) bad(`task id ${JSON.stringify(task.id)} is already used on line ${dup}`);
    seen.set(task.id, line);
    tasks.push(task);
  });
  if (tasks.length === 0)
    throw new FaultlineInputError('FAULTLINE_USAGE', `--tasks ${file}: no tasks (one JSON object or string per line)`);
  return tasks;
}
