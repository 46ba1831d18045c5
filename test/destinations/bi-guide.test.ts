import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { parse } from 'yaml';
import { TABLES } from '../../schemas/warehouse.js';
import { WAREHOUSE_VIEWS } from '../../schemas/warehouse-views.js';
import { BI_GUIDE_PATH, renderBiGuide } from '../../scripts/bi-guide.js';
import {
  DBT_DIR,
  DBT_SOURCES_PATH,
  DBT_STAGING_DIR,
  renderDbtPackage,
  renderDbtSources,
  stagingModelName,
} from '../../scripts/dbt-sources.js';

it('docs/guides/bi.md lists every view and column and is up to date (npx tsx scripts/bi-guide.ts)', async () => {
  const guide = await readFile(BI_GUIDE_PATH, 'utf8');
  expect(guide).toBe(renderBiGuide(guide));
  for (const v of WAREHOUSE_VIEWS) {
    expect(guide).toContain(`### \`${v.name}\``);
    for (const c of v.columns) expect(guide).toContain(`| \`${c.name}\` |`);
  }
});

it('dbt/models/sources.yml describes every synced table and view, freshness on _synced_at (npx tsx scripts/dbt-sources.ts)', async () => {
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

it('the dbt package is current: a staging model of every table and view, its key per workspace (npx tsx scripts/dbt-sources.ts)', async () => {
  const files = renderDbtPackage();
  for (const [path, content] of files)
    expect(await readFile(join(DBT_DIR, path), 'utf8'), path).toBe(content);
  // Nothing in the generated folder that the specs do not give (a model of a relation gone).
  for (const name of await readdir(join(DBT_DIR, DBT_STAGING_DIR)))
    expect(files.has(`${DBT_STAGING_DIR}/${name}`), name).toBe(true);
  const doc = parse(files.get(`${DBT_STAGING_DIR}/support_sync.yml`)!) as {
    models: { name: string; data_tests?: unknown[]; columns: { name: string }[] }[];
  };
  for (const t of Object.values(TABLES)) {
    const model = doc.models.find((m) => m.name === stagingModelName(t.name));
    expect(
      model?.columns.map((c) => c.name),
      t.name,
    ).toEqual(['workspace_id', ...t.columns.map((c) => c.name)]);
    expect(model?.data_tests, t.name).toEqual([
      { support_sync_unique_key: { arguments: { columns: ['workspace_id', ...t.primaryKey] } } },
    ]);
  }
  for (const v of WAREHOUSE_VIEWS)
    expect(files.has(`${DBT_STAGING_DIR}/${stagingModelName(v.name)}.sql`)).toBe(true);
});
