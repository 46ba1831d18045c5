import {
  type CheckpointUpdate,
  type ColumnSpec,
  type RejectedItem,
  SYSTEM_TABLES,
  type TableSpec,
  type WarehouseRow,
} from '../../schemas/warehouse.js';
import { stagedColumns } from '../batch.js';
import { STATE_TABLES, type StateTableName } from '../state-tables.js';
import { BQ_TYPES, bqIdent, stringLiteral, timestampLiteral } from './dialect.js';
import { mergeClauses, rejectedMergeStatements } from './sql.js';
import { type BigQueryPlace, STAGING_RETENTION_DAYS, type StagedEntry } from './staging.js';
import { inlineCheckpoints, stateTablesOf, upsertStateSql } from './state-sql.js';

/*
 * The SQL of a flush (flush.ts): which staged batches are not merged yet, and the one script that merges
 * them — per table one MERGE of the latest staged version of each row, the ids seen again, the items set
 * aside, the checkpoints. Every statement is idempotent, so a flush that dies anywhere before its batches
 * are recorded merged (an append, after the script) is run again whole.
 */

/** A staged row: the warehouse row as JSON, JSON columns as their text (so JSON_VALUE reads every column). */
export function stagedRowDoc(spec: TableSpec<unknown>, row: WarehouseRow): string {
  const out: Record<string, unknown> = {};
  for (const c of stagedColumns(spec)) {
    const v = row[c.name] ?? null;
    out[c.name] = c.type === 'json' && v !== null ? JSON.stringify(v) : v;
  }
  return JSON.stringify(out);
}

/** The entries of a staged row, a seen id, an item set aside, a checkpoint. */
export const staged = {
  row: (spec: TableSpec<unknown>, row: WarehouseRow, repair: boolean): StagedEntry => ({
    op: 'row',
    table: spec.name,
    id: spec.primaryKey.length === 1 ? String(row[spec.primaryKey[0]!]) : null,
    doc: stagedRowDoc(spec, row),
    repair,
  }),
  seen: (table: string, id: string): StagedEntry => ({ op: 'seen', table, id, doc: null, repair: false }),
  rejected: (item: RejectedItem): StagedEntry => ({
    op: 'rejected',
    table: item.table,
    id: item.itemId,
    doc: JSON.stringify(item),
    repair: false,
  }),
  checkpoint: (cp: CheckpointUpdate, at: Date): StagedEntry => ({
    op: 'checkpoint',
    table: null,
    id: null,
    doc: JSON.stringify({ ...cp, updated_at: at.toISOString() }),
    repair: false,
  }),
  json: (op: StagedEntry['op'], value: unknown): StagedEntry => ({
    op,
    table: null,
    id: null,
    doc: JSON.stringify(value),
    repair: false,
  }),
};

/** The staging table of the place (the workspace's own in shared tables). */
const staging = (place: BigQueryPlace) => `${bqIdent(place.dataset)}.${bqIdent(place.staging.entries)}`;
/** Entries of the retention, of the staging table aliased `alias` (their partitions: the rest expire). */
const retainedIn = (alias: string) =>
  `${alias}.staged_at >= TIMESTAMP_SUB(CURRENT_TIMESTAMP(), INTERVAL ${STAGING_RETENTION_DAYS} DAY)`;
const retained = retainedIn('s');

/** The value of a staged column, typed, read from the JSON `doc` of the staged row aliased `alias`. */
function columnOf(c: ColumnSpec, alias = 's'): string {
  const text = `JSON_VALUE(${alias}.doc, ${stringLiteral(`$.${c.name}`)})`;
  switch (c.type) {
    case 'string':
      return text;
    case 'json':
      return `PARSE_JSON(${text})`;
    default:
      return `CAST(${text} AS ${BQ_TYPES[c.type]})`;
  }
}

const batchList = (batches: readonly string[]) => `UNNEST([${batches.map(stringLiteral).join(', ')}])`;

/**
 * The latest staged version of each row of `spec` among `batches`: by the table's version, then by the
 * order of staging (a row fetched twice at one version: the later fetch). `_repair` rides along.
 */
export function latestStagedRowsSql(
  place: BigQueryPlace,
  spec: TableSpec<unknown>,
  batches: readonly string[],
) {
  const cols = stagedColumns(spec);
  const key = place.dialect
    .storedKey(spec.primaryKey)
    .map((k) => bqIdent(k))
    .join(', ');
  const version = spec.merge.kind === 'version' ? `${bqIdent(spec.merge.column)} DESC, ` : '';
  return `SELECT * FROM (SELECT ${cols.map((c) => `${columnOf(c)} AS ${bqIdent(c.name)}`).join(', ')},
    IFNULL(s.repair, FALSE) AS _repair, s.seq AS _seq
  FROM ${staging(place)} s
  WHERE ${retained} AND s.op = 'row' AND s.table_name = ${stringLiteral(spec.name)} AND s.batch IN ${batchList(batches)}) x
WHERE TRUE QUALIFY ROW_NUMBER() OVER (PARTITION BY ${key} ORDER BY ${version}_seq DESC) = 1`;
}

/**
 * When the staged row S replaces the stored T: a newer version, or an equal one with other content (or
 * any content, for a full refresh's row); never an older one. Content tables: other content.
 */
function winsSql(spec: TableSpec<unknown>): string {
  const differs = '(S._repair OR T.`_content_hash` IS DISTINCT FROM S.`_content_hash`)';
  if (spec.merge.kind === 'content') return differs;
  const v = bqIdent(spec.merge.column);
  return `(T.${v} < S.${v} OR (T.${v} = S.${v} AND ${differs}))`;
}

/**
 * The statements merging one table's staged rows; with `counts`, the counting SETs before the MERGE
 * (`inserted_<i>`, `updated_<i>`, declared by the script).
 */
export function mergeStagedSql(
  place: BigQueryPlace,
  spec: TableSpec<unknown>,
  batches: readonly string[],
  now: string,
  counts: number | null,
): string {
  const d = place.dialect;
  const target = d.target(spec.name);
  const source = latestStagedRowsSql(place, spec, batches);
  // In shared tables the key starts with `workspace_id` (the staged rows carry the workspace's), and the
  // join names the workspace too: no stored row of another workspace can match.
  const clauses = mergeClauses(spec, d.storedKey(spec.primaryKey), now);
  const { firstKey, sets, insertCols, insertVals } = clauses;
  const on = `${clauses.on}${d.ownRows('T')}`;
  const wins = `(${winsSql(spec)}${spec.tracksDeletion ? ' OR T.`_deleted_at` IS NOT NULL' : ''})`;
  const counting =
    counts === null
      ? ''
      : `SET inserted_${counts} = (SELECT COUNTIF(${firstKey} IS NULL) FROM (${source}) S LEFT JOIN ${target} T ON ${on});
SET updated_${counts} = (SELECT COUNTIF(${firstKey} IS NOT NULL AND ${wins}) FROM (${source}) S LEFT JOIN ${target} T ON ${on});
`;
  return `${counting}MERGE ${target} T USING (${source}) S ON ${on}
WHEN MATCHED AND ${wins} THEN UPDATE SET ${sets.join(', ')}
WHEN MATCHED AND T.\`_synced_at\` < ${now} THEN UPDATE SET \`_synced_at\` = ${now}
WHEN NOT MATCHED THEN INSERT (${insertCols.join(', ')}) VALUES (${insertVals.join(', ')});`;
}

/**
 * Characters of ids one fold statement names at most: a fold of a big table's sightings is several
 * statements, each far below BigQuery's query length (1,024K characters), packed into scripts by the flush.
 */
export const FOLD_STATEMENT_CHARS = 256 * 1024;

/**
 * Folds sightings into `_synced_at` (sightings.ts): per stamp the ids seen, each live row moved to its
 * latest stamp, never back. Ids inline, not read from `_staging`: the statement names only its table (one
 * 10 MB floor, not two). Several statements when there are many ids.
 */
export function foldSightingsSql(
  place: BigQueryPlace,
  spec: TableSpec<unknown>,
  groups: readonly { at: Date; ids: readonly string[] }[],
): string[] {
  const id = bqIdent(spec.primaryKey[0]!);
  const live = spec.tracksDeletion ? ' AND T.`_deleted_at` IS NULL' : '';
  const statements: string[] = [];
  let structs: string[] = [];
  let chars = 0;
  const close = () => {
    if (structs.length === 0) return;
    statements.push(`UPDATE ${place.dialect.target(spec.name)} T SET \`_synced_at\` = S.at
FROM (SELECT id, MAX(g.at) AS at FROM UNNEST([${structs.join(', ')}]) g, UNNEST(g.ids) id GROUP BY id) S
WHERE T.${id} = S.id AND T.\`_synced_at\` < S.at${live}${place.dialect.ownRows('T')};`);
    structs = [];
    chars = 0;
  };
  for (const g of groups) {
    let ids: string[] = [];
    const struct = () => {
      if (ids.length > 0) structs.push(`STRUCT(${timestampLiteral(g.at)} AS at, [${ids.join(', ')}] AS ids)`);
      ids = [];
    };
    for (const raw of g.ids) {
      const literal = stringLiteral(raw);
      if (chars + literal.length > FOLD_STATEMENT_CHARS && chars > 0) {
        struct();
        close();
      }
      ids.push(literal);
      chars += literal.length + 2;
    }
    struct();
  }
  close();
  return statements;
}

/**
 * Statements packed in order into parts of at most `budget` characters (joined by newlines): the scripts
 * of a flush. A statement longer than the budget alone is an error: no script could carry it.
 */
export function packStatements(statements: readonly string[], budget: number): string[][] {
  const parts: string[][] = [];
  let part: string[] = [];
  let chars = 0;
  for (const statement of statements) {
    if (statement.length > budget)
      throw new Error(
        `a flush statement of ${statement.length} characters does not fit a BigQuery query (${budget} at most): ${statement.slice(0, 120)}…`,
      );
    if (part.length > 0 && chars + 1 + statement.length > budget) {
      parts.push(part);
      part = [];
      chars = 0;
    }
    chars += (part.length > 0 ? 1 : 0) + statement.length;
    part.push(statement);
  }
  if (part.length > 0) parts.push(part);
  return parts;
}

/**
 * Items set aside (the latest sighting of each, upserted: a known one is open again), as statements each
 * far under a query's length however many and large the items (sql.ts REJECTED_STATEMENT_CHARS), then the
 * open entries whose item a staged row stored after its last rejection in these batches are resolved.
 * Guarded so that a flush with nothing to resolve does not write `_rejected`.
 */
export function rejectedStagedSql(
  place: BigQueryPlace,
  tables: readonly string[],
  batches: readonly string[],
  items: readonly RejectedItem[],
  now: string,
): string[] {
  const upserts = rejectedMergeStatements(place, items, now).map((s) => `${s};`);
  if (tables.length === 0) return upserts;
  const d = place.dialect;
  const stored = `SELECT 1 FROM ${staging(place)} s WHERE ${retained} AND s.op = 'row' AND s.batch IN ${batchList(batches)}
    AND s.table_name = r.table_name AND s.row_id = r.item_id
    AND s.seq > IFNULL((SELECT MAX(x.seq) FROM ${staging(place)} x WHERE x.op = 'rejected'
      AND x.batch IN ${batchList(batches)} AND x.table_name = r.table_name AND x.row_id = r.item_id), 0)`;
  const open = `r.resolved_at IS NULL AND r.table_name IN (${tables.map(stringLiteral).join(', ')})`;
  return [
    ...upserts,
    `IF EXISTS (SELECT 1 FROM ${d.table('_rejected')} r WHERE ${open} AND EXISTS (${stored})) THEN
  UPDATE ${d.target('_rejected')} r SET resolved_at = ${now} WHERE ${open} AND EXISTS (${stored})${d.ownRows('r')};
END IF;`,
  ];
}

/**
 * Checkpoints a version before `_staging_checkpoints` staged in `_staging`, with the time each was staged
 * (`updated_at`), inline; a stored later one is kept. Few: only a backlog such a version left.
 */
export function stagedCheckpointsSql(
  place: BigQueryPlace,
  list: readonly (CheckpointUpdate & { updated_at: string })[],
): string {
  if (list.length === 0) return '';
  const stamped = list.map((cp) => ({ ...cp, updated_at: new Date(cp.updated_at) }));
  return `${upsertStateSql(place, inlineCheckpoints(stamped), stateTablesOf(list), true)};`;
}

/**
 * The last checkpoint each (stream, scope) staged in `batches` of `_staging_checkpoints` (in staging order),
 * upserted into the state tables `tables` names; a stored later one is kept. Read there, not inlined: a full
 * sync's flush carries thousands (one per ticket of the thread queue), and inline they made a script of a
 * megabyte — past BigQuery's query length, and minutes of parsing for the emulator.
 */
export function mergeStagedCheckpointsSql(
  place: BigQueryPlace,
  batches: readonly string[],
  tables: ReadonlySet<StateTableName> = new Set(STATE_TABLES.map((t) => t.name)),
): string {
  const fields = CHECKPOINT_COLUMNS.map((c) => `${columnOf(c, 'c')} AS ${bqIdent(c.name)}`).join(', ');
  const latest = `SELECT * EXCEPT (_seq) FROM (SELECT ${fields}, c.seq AS _seq
  FROM ${bqIdent(place.dataset)}.${bqIdent(place.staging.checkpoints)} c
  WHERE ${retainedIn('c')} AND c.batch IN ${batchList(batches)}) x
WHERE TRUE QUALIFY ROW_NUMBER() OVER (PARTITION BY stream, scope ORDER BY _seq DESC) = 1`;
  return `${upsertStateSql(place, latest, tables, true)};`;
}

/**
 * Checkpoints inline up to this many characters of SQL (some 300): a flush of a few — a window's, a run's
 * start and end, a no-change run's — then names `_sync_state` alone (10 MB), where reading them from
 * `_staging_checkpoints` names a second table (10 MB more, and its whole week's scan above that).
 */
export const INLINE_CHECKPOINT_CHARS = 64 * 1024;

/**
 * The state-table upserts (state-sql.ts) of the staged checkpoints of `batches` (`staged`: theirs, in staging order):
 * inline when short (INLINE_CHECKPOINT_CHARS), else read from `_staging_checkpoints` by batch. Either way
 * the latest per (stream, scope) in staging order, and a stored later one is kept.
 */
export function stagedCheckpointMergeSql(
  place: BigQueryPlace,
  batches: readonly string[],
  staged: readonly (CheckpointUpdate & { updated_at: string })[],
): string {
  const latest = latestCheckpoints(staged);
  const inline = stagedCheckpointsSql(place, latest);
  return inline.length <= INLINE_CHECKPOINT_CHARS
    ? inline
    : mergeStagedCheckpointsSql(place, batches, stateTablesOf(latest));
}

/** The last staged checkpoint of each (stream, scope), `docs` in staging order. */
export function latestCheckpoints<C extends CheckpointUpdate>(docs: readonly C[]): C[] {
  const byKey = new Map<string, C>();
  for (const cp of docs) byKey.set(`${cp.stream}\u0000${cp.scope}`, cp);
  return [...byKey.values()];
}

/** The columns of `_sync_state`, from its schema (Checkpoint): what a staged checkpoint's JSON carries. */
const CHECKPOINT_COLUMNS = SYSTEM_TABLES._sync_state.columns;
