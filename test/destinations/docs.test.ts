import { readFile } from 'node:fs/promises';
import { expect, it } from 'vitest';
import { TABLES } from '../../schemas/warehouse.js';
import { renderWarehouseDocs, WAREHOUSE_DOCS_PATH } from '../../scripts/warehouse-docs.js';

it('docs/warehouse.md documents every table and column and is up to date (npx tsx scripts/warehouse-docs.ts)', async () => {
  const docs = await readFile(WAREHOUSE_DOCS_PATH, 'utf8');
  expect(docs).toBe(renderWarehouseDocs());
  for (const t of Object.values(TABLES))
    for (const c of t.columns) expect(docs).toContain(`| \`${c.name}\` |`);
});
