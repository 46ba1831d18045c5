import {
  type CheckpointUpdate,
  type RejectedItem,
  RejectedRecord,
  type SchemaChangeSighting,
  type TableSpec,
} from '../../schemas/warehouse.js';
import { stagedColumns } from '../batch.js';
import { schemaChangesSql } from '../sql/schema-changes.js';
import { bindLiteral, bqIdent, stringLiteral } from './dialect.js';
import type { BigQueryPlace } from './staging.js';
import { inlineCheckpoints, stateTablesOf, upsertStateSql } from './state-sql.js';

/*
 * SQL pieces of BigQuery's writes: the merge clauses and version rule the flush uses (flush-sql.ts),
 * `_rejected`, `_schema_changes` and checkpoint upserts. Values travel as literals (dialect.ts). (DDL: ddl.ts; staging: staging.ts, flush-sql.ts.)
 */

/**
 * The parts of a MERGE of staged rows `S` into a target `T` by `key` (the table's key as stored:
 * `workspace_id` first in shared tables, WarehouseDialect.storedKey): the join, the key column to count
 * matches by, what an update sets (every staged column, `_synced_at`, and a revived row's `_deleted_at`) and
 * what an insert writes. `syncedAt`: the SQL of the stamp.
 */
export function mergeClauses(spec: TableSpec<unknown>, key: readonly string[], syncedAt: string) {
  const cols = stagedColumns(spec);
  const nonKey = cols.filter((c) => !key.includes(c.name));
  return {
    on: key.map((k) => `T.${bqIdent(k)} = S.${bqIdent(k)}`).join(' AND '),
    firstKey: `T.${bqIdent(key[0]!)}`,
    sets: [
      ...nonKey.map((c) => `${bqIdent(c.name)} = S.${bqIdent(c.name)}`),
      `\`_synced_at\` = ${syncedAt}`,
      ...(spec.tracksDeletion ? ['`_deleted_at` = CAST(NULL AS TIMESTAMP)'] : []),
    ],
    insertCols: [
      ...cols.map((c) => bqIdent(c.name)),
      '`_synced_at`',
      ...(spec.tracksDeletion ? ['`_deleted_at`'] : []),
    ],
    insertVals: [
      ...cols.map((c) => `S.${bqIdent(c.name)}`),
      syncedAt,
      ...(spec.tracksDeletion ? ['CAST(NULL AS TIMESTAMP)'] : []),
    ],
  };
}

// --- _rejected --------------------------------------------------------------------------------------------

/**
 * Characters of one `_rejected` upsert at most: a batch of many or large set-aside items becomes several
 * statements, each far under a query's length (BigQuery: 1,024 K characters), which a flush packs into its
 * scripts. Each upsert names its items by key, so the statements are independent and idempotent.
 */
export const REJECTED_STATEMENT_CHARS = 256 * 1024;

/**
 * What `_rejected.raw` holds for an item whose JSON alone would pass a statement's length: the size, so the
 * entry (its key, reason and where it was read) is still written and the item can be fetched again from the
 * source by its id.
 */
export function omittedRaw(jsonChars: number): { raw_omitted: string } {
  return { raw_omitted: `${jsonChars} characters of JSON, more than one warehouse statement holds` };
}

/**
 * Upserts rejected items, as statements of at most `budget` characters (see REJECTED_STATEMENT_CHARS): a new
 * entry is first seen now; a known one keeps first_seen_at, is seen once more and, if it had been resolved,
 * is open again. The source is a UNION ALL of literal rows (the emulator we test against mis-binds some
 * struct-array literals; both forms are equally valid on the service).
 */
export function rejectedMergeStatements(
  place: BigQueryPlace,
  items: readonly RejectedItem[],
  syncedAt: string,
  budget = REJECTED_STATEMENT_CHARS,
): string[] {
  const frame = rejectedMergeOf(place, [], syncedAt).length;
  const rowBudget = budget - frame;
  const statements: string[] = [];
  let rows: string[] = [];
  let chars = 0;
  const close = () => {
    if (rows.length > 0) statements.push(rejectedMergeOf(place, rows, syncedAt));
    rows = [];
    chars = 0;
  };
  for (const item of items) {
    let row = rejectedRowSql(item);
    if (row.length > rowBudget) {
      const json = JSON.stringify(item.raw ?? null).length;
      row = rejectedRowSql({ ...item, raw: omittedRaw(json) });
    }
    if (rows.length > 0 && chars + ROW_SEPARATOR.length + row.length > rowBudget) close();
    chars += (rows.length > 0 ? ROW_SEPARATOR.length : 0) + row.length;
    rows.push(row);
  }
  close();
  return statements;
}

const ROW_SEPARATOR = '\nUNION ALL ';

function rejectedRowSql(r: RejectedItem): string {
  return (
    `SELECT ${stringLiteral(r.table)} AS table_name, ${stringLiteral(r.itemKey)} AS item_key, ` +
    `${stringLiteral(r.itemId)} AS item_id, ${stringLiteral(r.stream)} AS stream, ${stringLiteral(r.scope)} AS scope, ` +
    `${stringLiteral(r.pageCursor)} AS page_cursor, ${stringLiteral(r.reason)} AS reason, ` +
    `PARSE_JSON(${stringLiteral(JSON.stringify(r.raw ?? null))}) AS raw`
  );
}

/** The columns of `_rejected`, from its record (schemas/warehouse/system-tables.ts). */
const REJECTED_COLUMNS = Object.keys(RejectedRecord.shape);

/**
 * The MERGE of `_rejected` rows by the dialect's (keyed by `workspace_id` first in shared tables): a new
 * entry is first and last seen now, once, open; a known one takes the item as read now, is seen once more
 * and open again.
 */
function rejectedMergeOf(place: BigQueryPlace, rows: readonly string[], syncedAt: string): string {
  const source = `SELECT *, ${syncedAt} AS first_seen_at, ${syncedAt} AS last_seen_at, 1 AS times_seen,
  CAST(NULL AS TIMESTAMP) AS resolved_at FROM (${rows.join(ROW_SEPARATOR)})`;
  const kept = new Set(['table_name', 'item_key', 'first_seen_at', 'times_seen', 'resolved_at']);
  return place.dialect.mergeSource(
    '_rejected',
    ['table_name', 'item_key'],
    REJECTED_COLUMNS,
    source,
    (incoming) => ({
      set: {
        ...Object.fromEntries(
          REJECTED_COLUMNS.filter((c) => !kept.has(c)).map((c) => [c, `${incoming}.${bqIdent(c)}`]),
        ),
        times_seen: 'T.times_seen + 1',
        resolved_at: 'CAST(NULL AS TIMESTAMP)',
      },
      when: 'TRUE',
    }),
  );
}

// --- _schema_changes ---------------------------------------------------------------------------------

/**
 * The `_schema_changes` statement of a script (sql/schema-changes.ts), guarded by IF EXISTS: a batch whose
 * drift is already recorded for its run does not mutate the table (BigQuery aborts one of two transactions
 * mutating the same table, and every page of a drifting source carries sightings). Empty without sightings.
 */
export function schemaChangeStatements(
  place: BigQueryPlace,
  sightings: readonly SchemaChangeSighting[],
  syncedAt: string,
): string {
  if (sightings.length === 0) return '';
  const sql = schemaChangesSql(place.dialect, bindLiteral, sightings, syncedAt);
  // Type changes first: they compare with the type the stored new field had before the upsert.
  return `IF EXISTS (${sql.pending}) THEN
${sql.typeChanges};
${sql.upsert};
END IF;
`;
}

// --- checkpoints ------------------------------------------------------------------------------------

/** Upserts checkpoints (any number: one MERGE per state table) with `updated_at = at`. */
export function checkpointMergeSql(
  place: BigQueryPlace,
  list: readonly CheckpointUpdate[],
  at: Date,
): string {
  const stamped = list.map((cp) => ({ ...cp, updated_at: at }));
  return upsertStateSql(place, inlineCheckpoints(stamped), stateTablesOf(list), false);
}
