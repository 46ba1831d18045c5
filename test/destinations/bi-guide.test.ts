import { readFile } from 'node:fs/promises';
import { expect, it } from 'vitest';
import { WAREHOUSE_VIEWS } from '../../schemas/warehouse-views.js';
import { BI_GUIDE_PATH, renderBiGuide } from '../../scripts/bi-guide.js';

it('docs/guides/bi.md lists every view and column and is up to date (npx tsx scripts/bi-guide.ts)', async () => {
  const guide = await readFile(BI_GUIDE_PATH, 'utf8');
  expect(guide).toBe(renderBiGuide(guide));
  for (const v of WAREHOUSE_VIEWS) {
    expect(guide).toContain(`### \`${v.name}\``);
    for (const c of v.columns) expect(guide).toContain(`| \`${c.name}\` |`);
  }
});
