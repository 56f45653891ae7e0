// Bench-only: where the benches find the package: its root, a require() that resolves from it, and the build they
// measure (FAULTLINE_DIST, to measure another build with the same bench, e.g. an A/B against an older commit).
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const require = createRequire(join(root, 'package.json'));
export const DIST = process.env.FAULTLINE_DIST ?? join(root, 'dist');
