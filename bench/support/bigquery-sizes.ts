/**
 * The logical size of every warehouse table in a BigQuery dataset, sampled while a bench runs, for the
 * quota proxy's bill (test/support/bigquery-billing.ts). The emulator's table metadata says `numBytes: 0` and
 * its jobs `totalBytesProcessed: 0`, so the size is computed the way BigQuery defines it, by a query of its
 * own per sample: per table, the sum over rows and columns of each value's logical size (STRING 2 + UTF-8
 * bytes, JSON its text, INT64/FLOAT64/TIMESTAMP 8, BOOL 1, NULL 0), with the column types of the table
 * specs. The sampler talks to the emulator directly (its queries are no part of what the proxy counts);
 * samples follow each other with a pause of at least 2 s, longer when a sample takes long, so that a large
 * world is not scanned back to back on a loaded machine.
 */
import type { BigQuery } from '@google-cloud/bigquery';
import { BQ_TYPES, bigQueryDialect } from '../../connectors/bigquery/dialect.js';
import { DestinationSettings } from '../../connectors/settings.js';
import { type TableLayout, tableLayouts } from '../../connectors/table-layouts.js';
import { WAREHOUSE_VIEWS } from '../../schemas/warehouse-views.js';
import { logicalBytesSql } from '../../test/support/bigquery-billing.js';
import { shapeOfQuery } from '../../test/support/bigquery-job-shapes.js';

export interface TableSizes {
  /**
   * The latest sampled logical size of a warehouse table, or of a BI view (a query of a view bills the
   * tables it reads: their sizes summed); undefined for any other name.
   */
  sizeOf(table: string): number | undefined;
  /** Samples now: bytes and rows per existing warehouse table. */
  sample(): Promise<Record<string, { bytes: number; rows: number }>>;
  stop(): Promise<void>;
}

function sizeQuery(dataset: string, layouts: readonly TableLayout[]): string {
  return layouts
    .map((t) => {
      const bytes = t.columns.map((c) => logicalBytesSql(c.name, BQ_TYPES[c.type])).join(' + ');
      return `SELECT '${t.name}' AS table_name, COUNT(*) AS row_count, IFNULL(SUM(${bytes}), 0) AS bytes FROM \`${dataset}\`.\`${t.name}\``;
    })
    .join('\nUNION ALL\n');
}

/** Starts sampling the warehouse tables of `dataset` (those that exist at each sample). */
export function startTableSizeSampler(client: BigQuery, dataset: string): TableSizes {
  const layouts = tableLayouts(new DestinationSettings({}));
  const latest = new Map<string, number>();
  const viewTables = new Map(
    WAREHOUSE_VIEWS.map((v) => [
      v.name,
      [...new Set(shapeOfQuery(v.sql(bigQueryDialect(dataset))).children.flatMap((c) => c.reads))],
    ]),
  );
  const sizeOf = (table: string): number | undefined => {
    const tables = viewTables.get(table);
    if (!tables) return latest.get(table);
    return tables.reduce((sum, t) => sum + (latest.get(t) ?? 0), 0);
  };
  let stopped = false;

  async function sample(): Promise<Record<string, { bytes: number; rows: number }>> {
    const [tables] = await client
      .dataset(dataset)
      .getTables()
      .catch(() => [[]] as [{ id?: string }[]]);
    const existing = new Set(tables.map((t) => t.id));
    const present = layouts.filter((t) => existing.has(t.name));
    if (present.length === 0) return {};
    const [rows] = await client.query(sizeQuery(dataset, present));
    const out: Record<string, { bytes: number; rows: number }> = {};
    for (const r of rows as { table_name: string; row_count: number; bytes: number }[]) {
      out[r.table_name] = { bytes: Number(r.bytes), rows: Number(r.row_count) };
      latest.set(r.table_name, Number(r.bytes));
    }
    return out;
  }

  const loop = (async () => {
    while (!stopped) {
      const started = performance.now();
      await sample().catch(() => undefined); // a table created or migrated meanwhile: next sample
      const pause = Math.max(2000, 4 * (performance.now() - started));
      for (let waited = 0; waited < pause && !stopped; waited += 200)
        await new Promise((r) => setTimeout(r, 200));
    }
  })();

  return {
    sizeOf,
    sample,
    async stop() {
      stopped = true;
      await loop;
    },
  };
}
