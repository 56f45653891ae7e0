/** Where the built package is (dist/, from `npm run build`): child processes run it as a user would. */
import { join, resolve } from 'node:path';

export const ROOT = resolve(__dirname, '../..');
export const DIST = join(ROOT, 'dist');
