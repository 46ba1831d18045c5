import { RejectedRecord, type TableSpec } from '../../schemas/warehouse.js';
import { stagedColumns } from '../batch.js';
import type { WarehouseDialect } from '../sql/dialect.js';
import { ident } from './dialect.js';

/*
 * The SQL of PostgreSQL's write path: the merge of a staged batch by the table's rule, the `_synced_at` of
 * rows seen again, and `_rejected`. (DDL: ddl.ts; dialect: dialect.ts; COPY format: copy.ts.) Each takes
 * the destination's dialect: its `target`, `storedKey` and `ownRows` keep a shared table's writes to the
 * workspace's rows (sql/scoped-dialect.ts); staged rows carry their workspace like any column.
 */

/**
 * When the incoming row (EXCLUDED) replaces the stored one (t), by the table's merge rule: a strictly newer
 * version, or an equal one with different content; for content tables, different content. Content is
 * `_content_hash`; IS DISTINCT FROM makes a stored NULL (a row from before hashes) count as different.
 */
export function winsSql(spec: TableSpec<unknown>, repair = false): string {
  // A repair (full refresh) rewrites at an equal version whatever the stored hash says: the stored row may
  // differ from its hash (edited in place), and the refresh is there to make it equal to the source.
  const hashDiffers = repair ? 'TRUE' : 't."_content_hash" IS DISTINCT FROM EXCLUDED."_content_hash"';
  if (spec.merge.kind === 'content') return hashDiffers;
  const v = ident(spec.merge.column);
  return `(t.${v} < EXCLUDED.${v} OR (t.${v} = EXCLUDED.${v} AND ${hashDiffers}))`;
}

/**
 * The merge of a staged batch, in one statement: insert new keys; on conflict replace the row only when
 * the rule says the incoming row wins (winsSql), or when the stored row is marked deleted (it came back);
 * refresh `_synced_at` of the staged rows the merge left as they were (received again, content unchanged);
 * with `checkRejected` (`$2`: the table's name; a single-column key), whether `_rejected` holds an open
 * entry of a staged item. `$1` is the batch's `_synced_at`. Returns (inserted, updated[, open]).
 *
 * The refresh is a second data-modifying statement of the same WITH: both see the snapshot from before the
 * statement, and a row two of them modify is modified by one only, so the refresh leaves out the keys the
 * merge returned (it reads them all before it updates a row) and never meets a row the merge wrote. One
 * statement, not three: each costs a round trip and its parse and plan.
 */
export function mergeSql(
  d: WarehouseDialect,
  spec: TableSpec<unknown>,
  stage: string,
  repair = false,
  checkRejected = false,
): string {
  const target = d.target(spec.name);
  const cols = stagedColumns(spec);
  const names = cols.map((c) => ident(c.name));
  const key = d.storedKey(spec.primaryKey);
  const pk = key.map(ident).join(', ');
  const insertCols = [...names, '"_synced_at"', ...(spec.tracksDeletion ? ['"_deleted_at"'] : [])];
  const selectCols = [...names, '$1::timestamptz', ...(spec.tracksDeletion ? ['NULL::timestamptz'] : [])];
  const nonKey = cols.filter((c) => !key.includes(c.name)).map((c) => ident(c.name));
  const sets = [
    ...nonKey.map((n) => `${n} = EXCLUDED.${n}`),
    '"_synced_at" = EXCLUDED."_synced_at"',
    ...(spec.tracksDeletion ? ['"_deleted_at" = NULL'] : []),
  ];
  const wins = winsSql(spec, repair);
  const revived = spec.tracksDeletion ? ' OR t."_deleted_at" IS NOT NULL' : '';
  const sameRow = key.map((k) => `t.${ident(k)} = s.${ident(k)}`).join(' AND ');
  const mergedKey = key.map((k) => `m.${ident(k)} = s.${ident(k)}`).join(' AND ');
  const open = checkRejected
    ? `, EXISTS (SELECT 1 FROM ${d.table('_rejected')} R WHERE ${storedAfterAll(spec, stage, 2)}) AS open`
    : '';
  return `WITH merged AS (
  INSERT INTO ${target} AS t (${insertCols.join(', ')})
  SELECT ${selectCols.join(', ')} FROM ${ident(stage)} ORDER BY ${pk}
  ON CONFLICT (${pk}) DO UPDATE SET ${sets.join(', ')}
  WHERE ${wins}${revived}
  RETURNING (xmax = 0) AS inserted, ${key.map((k) => `t.${ident(k)}`).join(', ')}
), touched AS (
  UPDATE ${target} AS t SET "_synced_at" = $1::timestamptz FROM ${ident(stage)} AS s
  WHERE ${sameRow} AND t."_synced_at" < $1::timestamptz
    AND NOT EXISTS (SELECT 1 FROM merged m WHERE ${mergedKey})
)
SELECT count(*) FILTER (WHERE inserted)::int AS inserted, count(*) FILTER (WHERE NOT inserted)::int AS updated${open} FROM merged`;
}

/** Moves `_synced_at` of live rows served again unchanged (`$2`, their ids) to the batch's stamp `$1`. */
export function seenSql(d: WarehouseDialect, spec: TableSpec<unknown>): string {
  if (spec.primaryKey.length !== 1) throw new Error(`seen ids need a single-column key (${spec.name})`);
  const live = spec.tracksDeletion ? ' AND "_deleted_at" IS NULL' : '';
  return `UPDATE ${d.target(spec.name)} SET "_synced_at" = $1::timestamptz WHERE ${ident(spec.primaryKey[0]!)} = ANY($2::text[]) AND "_synced_at" < $1::timestamptz${live}${d.ownRows()}`;
}

// --- _rejected --------------------------------------------------------------------------------------------

/** The columns of `_rejected`, from its record (schemas/warehouse/system-tables.ts). */
const REJECTED_COLUMNS = Object.keys(RejectedRecord.shape);

/**
 * Upserts a batch's rejected items (`$2`: a JSON array of {table_name, item_key, …, raw}) with stamp `$1`:
 * a new entry is first seen now; a known one keeps first_seen_at, is seen once more and, if it had been
 * resolved, is open again.
 */
export function rejectedUpsertSql(d: WarehouseDialect): string {
  const source = `SELECT r.table_name, r.item_key, r.item_id, r.stream, r.scope, r.page_cursor, r.reason,
  COALESCE(r.raw, 'null'::jsonb) AS raw, $1::timestamptz AS first_seen_at, $1::timestamptz AS last_seen_at,
  1 AS times_seen, NULL::timestamptz AS resolved_at
FROM jsonb_to_recordset($2::jsonb) AS r(table_name text, item_key text, item_id text, stream text, scope text,
  page_cursor text, reason text, raw jsonb)`;
  const kept = new Set(['table_name', 'item_key', 'first_seen_at', 'times_seen', 'resolved_at']);
  return d.mergeSource('_rejected', ['table_name', 'item_key'], REJECTED_COLUMNS, source, (incoming) => ({
    set: {
      ...Object.fromEntries(REJECTED_COLUMNS.filter((c) => !kept.has(c)).map((c) => [c, `${incoming}.${c}`])),
      times_seen: 'T.times_seen + 1',
      resolved_at: 'NULL',
    },
    when: 'TRUE',
  }));
}

/** Condition on `_rejected`: open entries of table `$n` whose item id is a row of the staged batch. */
function storedAfterAll(spec: TableSpec<unknown>, stage: string, n = 1): string {
  const id = ident(spec.primaryKey[0]!);
  return `table_name = $${n} AND resolved_at IS NULL AND item_id IN (SELECT s.${id}::text FROM ${ident(stage)} s)`;
}

/** Resolves (stamp `$2`) the open `_rejected` entries of table `$1` whose item the staged batch stores. */
export function resolveRejectedSql(d: WarehouseDialect, spec: TableSpec<unknown>, stage: string): string {
  return `UPDATE ${d.target('_rejected')} SET resolved_at = $2::timestamptz WHERE ${storedAfterAll(spec, stage)}${d.ownRows()}`;
}
