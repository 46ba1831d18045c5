import { readFile } from 'node:fs/promises';
import { expect, it } from 'vitest';
import { parse } from 'yaml';
import { TABLES } from '../../schemas/warehouse.js';
import { WAREHOUSE_VIEWS } from '../../schemas/warehouse-views.js';
import { BI_GUIDE_PATH, renderBiGuide } from '../../scripts/bi-guide.js';
import { DBT_SOURCES_PATH, renderDbtSources } from '../../scripts/dbt-sources.js';

it('docs/guides/bi.md lists every view and column and is up to date (npx tsx scripts/bi-guide.ts)', async () => {
  const guide = await readFile(BI_GUIDE_PATH, 'utf8');
  expect(guide).toBe(renderBiGuide(guide));
  for (const v of WAREHOUSE_VIEWS) {
    expect(guide).toContain(`### \`${v.name}\``);
    for (const c of v.columns) expect(guide).toContain(`| \`${c.name}\` |`);
  }
});

it('dbt/sources.yml describes every synced table and view, freshness on _synced_at (npx tsx scripts/dbt-sources.ts)', async () => {
  const text = await readFile(DBT_SOURCES_PATH, 'utf8');
  expect(text).toBe(renderDbtSources());
  const doc = parse(text) as {
    sources: { tables: { name: string; loaded_at_field?: string; columns: { name: string }[] }[] }[];
  };
  const listed = doc.sources[0]!.tables;
  for (const t of Object.values(TABLES)) {
    const entry = listed.find((x) => x.name === t.name);
    expect(
      entry?.columns.map((c) => c.name),
      t.name,
    ).toEqual(t.columns.map((c) => c.name));
  }
  expect(listed.find((x) => x.name === 'tickets')?.loaded_at_field).toBe('_synced_at');
  for (const v of WAREHOUSE_VIEWS) expect(listed.map((x) => x.name)).toContain(v.name);
});
