import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import type { Job } from '@google-cloud/bigquery';
import type { ColumnSpec, TableSpec, WarehouseRow } from '../../schemas/warehouse.js';
import { stagedColumns } from '../batch.js';
import { fieldOf } from './ddl.js';
import type { BigQuerySession } from './session.js';

/*
 * Staging: a batch reaches BigQuery by a load job (free, atomic; no streaming inserts) into a table of its
 * own, which expires after 6 h in case the process dies before dropping it.
 */

const STAGE_TTL_MS = 6 * 60 * 60 * 1000;
const LOAD_CHUNK_ROWS = 500;

/** A row as a newline-delimited JSON record for a load job (JSON columns as JSON values, not strings). */
export function ndjsonLine(columns: readonly ColumnSpec[], row: WarehouseRow): string {
  const out: Record<string, unknown> = {};
  for (const c of columns) out[c.name] = row[c.name] ?? null;
  return `${JSON.stringify(out)}\n`;
}

/** A fresh staging table name for a batch of `spec` (random: concurrent writers never share one). */
export function stageName(spec: TableSpec<unknown>): string {
  return `_stage_${spec.name}_${randomBytes(6).toString('hex')}`;
}

/** Creates the staging table `stage` for rows of `spec` and loads them into it. */
export async function stageRows(
  session: BigQuerySession,
  spec: TableSpec<unknown>,
  stage: string,
  rows: readonly WarehouseRow[],
): Promise<void> {
  const cols = stagedColumns(spec);
  const fields = cols.map((c) => fieldOf(c, false));
  const table = session.client.dataset(session.dataset).table(stage);
  await table.create({ schema: { fields }, expirationTime: String(Date.now() + STAGE_TTL_MS) });
  await new Promise<void>((resolve, reject) => {
    const stream = table.createWriteStream({
      sourceFormat: 'NEWLINE_DELIMITED_JSON',
      writeDisposition: 'WRITE_TRUNCATE',
      schema: { fields },
    });
    stream.on('error', reject);
    stream.on('complete', (job: Job) => {
      const error = job.metadata?.status?.errorResult;
      if (error) reject(new Error(`load job failed: ${error.message ?? error.reason}`));
      else resolve();
    });
    function* lines() {
      for (let i = 0; i < rows.length; i += LOAD_CHUNK_ROWS) {
        let chunk = '';
        for (const row of rows.slice(i, i + LOAD_CHUNK_ROWS)) chunk += ndjsonLine(cols, row);
        yield Buffer.from(chunk, 'utf8');
      }
    }
    Readable.from(lines()).pipe(stream);
  });
}

/** Drops a staging table (best effort: it expires anyway). */
export async function dropStage(session: BigQuerySession, stage: string): Promise<void> {
  await session.client
    .dataset(session.dataset)
    .table(stage)
    .delete()
    .catch(() => undefined);
}
