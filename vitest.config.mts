import { fileURLToPath } from 'node:url';
import { defineConfig, type Plugin } from 'vitest/config';
import { CONFORMANCE_REQUIRED, SHARED_PRESENT, conformanceFiles } from './test/support/conformance.js';

const PARTS = fileURLToPath(new URL('./src/parts.ts', import.meta.url));
const EAGER_PARTS = fileURLToPath(new URL('./test/support/eager-parts.ts', import.meta.url));

/**
 * src/parts.ts loads the runtime's optional parts with require(), which vitest cannot follow into TypeScript
 * sources: under vitest the same parts come from test/support/eager-parts.ts, imported statically.
 */
const eagerParts: Plugin = {
  name: 'faultline-eager-parts',
  enforce: 'pre',
  async resolveId(source, importer, options) {
    if (!importer || !/(^|\/)parts$/.test(source)) return null;
    const resolved = await this.resolve(source, importer, { ...options, skipSelf: true });
    return resolved?.id === PARTS ? EAGER_PARTS : null;
  },
};

export default defineConfig({
  plugins: [eagerParts],
  test: {
    include: ['test/**/*.test.ts'],
    // Without the shared folder the conformance tier is left out (test/conformance.test.ts reports it as skipped).
    exclude: ['**/node_modules/**', ...(SHARED_PRESENT || CONFORMANCE_REQUIRED ? [] : conformanceFiles())],
    // Every process a test file starts is killed when its worker exits, even after a failure (test/support/reap.ts).
    setupFiles: ['test/support/reap.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Tests install a process-wide undici dispatcher and OTel globals: keep files isolated.
    isolate: true,
    fileParallelism: true,
    maxWorkers: 2,
    // The JSON report lets .ci/run print a plain "N passed, N failed" closing line.
    reporters: ['default', 'json'],
    outputFile: { json: 'coverage/vitest-results.json' },
  },
});
