/**
 * Output paths (reports, campaign directories), checked before any work starts: a directory that cannot be created
 * or a file that cannot be written is a one-line input error naming the option and the path (exit 2), never a hang,
 * a stack or work thrown away at the end.
 *
 * Directories are created one level at a time from the nearest existing ancestor: Node's own
 * `mkdir(path, { recursive: true })` never returns for a path under /proc (it retries ENOENT forever).
 */
import { closeSync, mkdirSync, openSync, statSync, unlinkSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { FaultlineInputError } from '../errors';

function reason(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  switch (e?.code) {
    case 'ENOENT':
      return 'no such directory';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EROFS':
      return 'read-only file system';
    case 'ENOTDIR':
      return 'a parent is not a directory';
    case 'EISDIR':
      return 'is a directory';
    case 'ENOSPC':
      return 'no space left on the device';
    default:
      return e?.code ?? String(err);
  }
}

function unwritable(what: string, path: string, err: unknown): FaultlineInputError {
  return new FaultlineInputError('FAULTLINE_OUTPUT_UNWRITABLE', `cannot write ${what} ${path}: ${reason(err)}`, {
    cause: err,
  });
}

function kindOf(path: string): 'dir' | 'file' | undefined {
  try {
    return statSync(path).isDirectory() ? 'dir' : 'file';
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Create `dir` (and missing parents) and return its absolute path; `what` and `shown` name it in the error (`--out DIR`). */
export function ensureDir(dir: string, what: string, shown = dir): string {
  const abs = resolve(dir);
  const missing: string[] = [];
  let at = abs;
  try {
    for (let kind = kindOf(at); kind === undefined; kind = kindOf(at)) {
      missing.unshift(at);
      const up = dirname(at);
      if (up === at) break;
      at = up;
    }
    if (kindOf(at) === 'file') throw Object.assign(new Error('not a directory'), { code: 'ENOTDIR' });
    for (const d of missing) mkdirSync(d);
  } catch (err) {
    throw unwritable(what, shown, err);
  }
  return abs;
}

/**
 * Check that `file` can be written, creating its directory if needed, without changing an existing file (a probe
 * file that did not exist is removed again). Returns the absolute path.
 */
export function checkWritable(file: string, what: string): string {
  const abs = resolve(file);
  ensureDir(dirname(abs), what, file);
  const existed = kindOf(abs);
  if (existed === 'dir') throw unwritable(what, file, Object.assign(new Error('is a directory'), { code: 'EISDIR' }));
  try {
    closeSync(openSync(abs, 'a'));
  } catch (err) {
    throw unwritable(what, file, err);
  }
  if (existed === undefined) unlinkSync(abs);
  return abs;
}

/** Wrap a write's failure (disk full, the directory removed meanwhile) the same way. */
export function writeFailed(what: string, path: string, err: unknown): FaultlineInputError {
  return unwritable(what, path, err);
}
