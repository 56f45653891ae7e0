/**
 * Reports the conformance tier (test/support/conformance.ts) when vitest.config.ts left it out because the shared
 * folder is absent: one skipped test per file, named with how to run it. Under FAULTLINE_CONFORMANCE=require (CI)
 * the missing folder fails instead. With the folder present the tier's own files run and this file has nothing to say.
 */
import { describe, expect, it } from 'vitest';
import { CONFORMANCE_REQUIRED, SHARED_PRESENT, SKIP_REASON, conformanceFiles } from './support/conformance';

const files = conformanceFiles();

describe('conformance tier', () => {
  it('is found: the files that read the shared folder', () => {
    expect(files.length).toBeGreaterThan(0);
    expect(files).toContain('test/detectors/corpus.test.ts');
    expect(files).not.toContain('test/conformance.test.ts');
  });

  it.runIf(CONFORMANCE_REQUIRED)('has the shared folder (FAULTLINE_CONFORMANCE=require)', () => {
    expect(SHARED_PRESENT, SKIP_REASON).toBe(true);
  });

  if (!SHARED_PRESENT) for (const file of files) it.skip(`${file}: ${SKIP_REASON}`, () => {});
});
