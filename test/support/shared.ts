/**
 * Where the project's shared reference material lives: `../shared` beside the repository (as on developer machines
 * and in CI), or FAULTLINE_SHARED_DIR.
 */
import { resolve } from 'node:path';

export const SHARED_DIR = process.env.FAULTLINE_SHARED_DIR ?? resolve(__dirname, '../../../shared');
export const CORPUS = resolve(SHARED_DIR, 'corpus');
export const FORMATS = resolve(SHARED_DIR, 'reference/formats');
export const SEMCONV_SCHEMAS = resolve(SHARED_DIR, 'reference/semconv-schemas');
