import { encodeStateKey } from '../../schemas/state-key.js';
import { type CheckpointUpdate, SYSTEM_TABLES } from '../../schemas/warehouse.js';
import { byStateTable } from '../state-tables.js';
import { bqIdent, int64Literal, stringLiteral, timestampLiteral } from './dialect.js';

/*
 * The checkpoint upserts of BigQuery's write paths, one MERGE per state table: thread keys into
 * `_thread_queue`, every other key into `_sync_state` (connectors/state-tables.ts). The source of a MERGE
 * selects checkpoints — `(stream, scope, …, updated_at)`, as they are staged — and each MERGE takes its own.
 */

/** The `_staging_checkpoints` address of every thread key (its scope is the ticket number). */
const THREAD_STREAM = encodeStateKey({ kind: 'thread', ticketNumber: 1 }).stream;

/** Whether checkpoint `alias` is of a `thread` key: encodeStateKey's format, in SQL. */
export const isThread = (alias: string) =>
  `(${alias}.stream = ${stringLiteral(THREAD_STREAM)} AND REGEXP_CONTAINS(${alias}.scope, r'^[1-9][0-9]*$'))`;

/** Checkpoints as an inline table, each stamped with its `updated_at`. */
export function inlineCheckpoints(list: readonly (CheckpointUpdate & { updated_at: Date })[]): string {
  const structs = list.map(
    (cp) =>
      `STRUCT(${stringLiteral(cp.stream)} AS stream, ${stringLiteral(cp.scope)} AS scope, ${stringLiteral(cp.cursor)} AS cursor, ` +
      `${stringLiteral(cp.high_water_mark)} AS high_water_mark, ${stringLiteral(cp.status)} AS status, ` +
      `${int64Literal(cp.pages)} AS pages, ${int64Literal(cp.rows)} AS \`rows\`, ${timestampLiteral(cp.updated_at)} AS updated_at)`,
  );
  return `SELECT * FROM UNNEST([${structs.join(', ')}])`;
}

/** Which state tables a list of checkpoints writes. */
export function stateTablesOf(list: readonly CheckpointUpdate[]): {
  syncState: boolean;
  threadQueue: boolean;
} {
  const { syncState, threadQueue } = byStateTable(list);
  return { syncState: syncState.length > 0, threadQueue: threadQueue.length > 0 };
}

/**
 * The MERGEs (`;`-separated, no trailing `;`) that upsert the checkpoints `source` selects into the state
 * tables `tables` names. `keepLater`: a stored checkpoint written later than the source's is kept (staged
 * checkpoints merged in any order); otherwise the source's wins.
 */
export function upsertStateSql(
  dataset: string,
  source: string,
  tables: { syncState: boolean; threadQueue: boolean },
  keepLater: boolean,
): string {
  const statements: string[] = [];
  if (tables.syncState)
    statements.push(
      mergeSql(dataset, '_sync_state', `SELECT * FROM (${source}) c WHERE NOT ${isThread('c')}`, keepLater),
    );
  if (tables.threadQueue)
    statements.push(
      mergeSql(
        dataset,
        '_thread_queue',
        `SELECT CAST(c.scope AS INT64) AS ticket_number, c.* EXCEPT (stream, scope) FROM (${source}) c WHERE ${isThread('c')}`,
        keepLater,
      ),
    );
  return statements.join(';\n');
}

function mergeSql(
  dataset: string,
  table: '_sync_state' | '_thread_queue',
  source: string,
  keepLater: boolean,
): string {
  const spec = SYSTEM_TABLES[table];
  const key = spec.primaryKey;
  const names = spec.columns.map((c) => bqIdent(c.name));
  const updated = spec.columns
    .filter((c) => !key.includes(c.name))
    .map((c) => `${bqIdent(c.name)} = S.${bqIdent(c.name)}`);
  return `MERGE ${bqIdent(dataset)}.${bqIdent(table)} T
USING (${source}) S ON ${key.map((k) => `T.${bqIdent(k)} = S.${bqIdent(k)}`).join(' AND ')}
WHEN MATCHED${keepLater ? ' AND T.updated_at <= S.updated_at' : ''} THEN UPDATE SET ${updated.join(', ')}
WHEN NOT MATCHED THEN INSERT (${names.join(', ')})
  VALUES (${names.map((n) => `S.${n}`).join(', ')})`;
}
