import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { catalogMarkdown } from '../../src/catalog/doc';

it('docs/fault-catalog.md is generated from the catalog and up to date', () => {
  const path = join(__dirname, '../../docs/fault-catalog.md');
  const fresh = catalogMarkdown();
  if (process.env.UPDATE_CATALOG_DOC === '1') writeFileSync(path, fresh);
  expect(readFileSync(path, 'utf8')).toBe(fresh);
  expect(fresh.match(/^\| `/gm)).toHaveLength(89);
});
