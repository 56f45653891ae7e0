/**
 * The built package (dist/, from `npm run build`), loaded in the test process. The runtime loads its optional parts
 * with a lazy `require()` (src/start.ts, src/config.ts), which only the compiled CommonJS can follow, so tests of
 * those paths run the code that ships: `dist<typeof import('../../src/config')>('src/config')`.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const ROOT = resolve(__dirname, '../..');
export const DIST = join(ROOT, 'dist');

export function dist<T>(path: string): T {
  const file = join(DIST, `${path}.js`);
  if (!existsSync(file)) throw new Error(`run \`npm run build\` first: ${file} is missing`);
  return require(file) as T;
}
