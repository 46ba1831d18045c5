import { encodeStateKey, type StateAddress } from '../../schemas/state-key.js';
import type { CheckpointUpdate } from '../../schemas/warehouse.js';
import {
  byStateTable,
  CHECKPOINT_BODY,
  type QueueTableName,
  STATE_TABLES,
  type StateTable,
  type StateTableName,
  stateColumnsOf,
} from '../state-tables.js';
import { bqIdent, int64Literal, stringLiteral, timestampLiteral } from './dialect.js';
import type { BigQueryPlace } from './staging.js';

/*
 * The checkpoint upserts of BigQuery's write paths, one MERGE per state table (connectors/state-tables.ts):
 * thread keys into `_thread_queue`, re-read keys into `_reread_queue`, every other key into `_sync_state`.
 * The source of a MERGE selects checkpoints — `(stream, scope, …, updated_at)`, as they are staged — and
 * each MERGE takes its own, by the address encodeStateKey gives its keys, restated here in SQL.
 */

const THREAD_STREAM = encodeStateKey({ kind: 'thread', ticketNumber: 1 }).stream;
/** Streams whose scopes are never export windows: a `reread/…` scope there is no re-read key. */
const NOT_PASSES = [
  THREAD_STREAM,
  encodeStateKey({ kind: 'report', query: 'q' }).stream,
  encodeStateKey({ kind: 'sweep' }).stream,
];

/** The queue tables in SQL: whether checkpoint `c` is a row of the table, and its key columns' values. */
const QUEUE_SQL: {
  readonly [T in QueueTableName]: {
    holds(c: string): string;
    key(c: string): string[];
  };
} = {
  _thread_queue: {
    holds: (c) =>
      `(${c}.stream = ${stringLiteral(THREAD_STREAM)} AND REGEXP_CONTAINS(${c}.scope, r'^[1-9][0-9]*$'))`,
    key: (c) => [`CAST(${c}.scope AS INT64)`],
  },
  _reread_queue: {
    holds: (c) =>
      `(${c}.stream NOT IN (${NOT_PASSES.map(stringLiteral).join(', ')}) AND REGEXP_CONTAINS(${c}.scope, r'^reread/[^/]+/[^/]+$'))`,
    key: (c) => [`${c}.stream`, `SPLIT(${c}.scope, '/')[OFFSET(1)]`, `SPLIT(${c}.scope, '/')[OFFSET(2)]`],
  },
};

/** Whether checkpoint `alias` is held by a table other than `_sync_state`. */
export const inQueueTable = (alias: string) =>
  `(${Object.values(QUEUE_SQL)
    .map((q) => q.holds(alias))
    .join(' OR ')})`;

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
export function stateTablesOf(list: readonly StateAddress[]): ReadonlySet<StateTableName> {
  return new Set(byStateTable(list).map(({ table }) => table.name));
}

/**
 * The MERGEs (`;`-separated, no trailing `;`) that upsert the checkpoints `source` selects into the state
 * tables `tables` names. `keepLater`: a stored checkpoint written later than the source's is kept (staged
 * checkpoints merged in any order); otherwise the source's wins.
 */
export function upsertStateSql(
  place: BigQueryPlace,
  source: string,
  tables: ReadonlySet<StateTableName>,
  keepLater: boolean,
): string {
  return STATE_TABLES.filter((t) => tables.has(t.name))
    .map((table) => {
      if (table.name === '_sync_state')
        return mergeSql(
          place,
          table,
          `SELECT * FROM (${source}) c WHERE NOT ${inQueueTable('c')}`,
          keepLater,
        );
      const queue = QUEUE_SQL[table.name];
      const key = queue.key('c').map((v, i) => `${v} AS ${bqIdent(table.keyColumns[i]!)}`);
      return mergeSql(
        place,
        table,
        `SELECT ${key.join(', ')}, c.* EXCEPT (stream, scope) FROM (${source}) c WHERE ${queue.holds('c')}`,
        keepLater,
      );
    })
    .join(';\n');
}

/**
 * One state table's MERGE, by the dialect's (keyed by `workspace_id` first in shared tables, the source's
 * rows the workspace's: sql/scoped-dialect.ts).
 */
function mergeSql(place: BigQueryPlace, table: StateTable, source: string, keepLater: boolean): string {
  return place.dialect.mergeSource(table.name, table.keyColumns, stateColumnsOf(table), source, (s) => ({
    set: Object.fromEntries(CHECKPOINT_BODY.map((c) => [c, `${s}.${bqIdent(c)}`])),
    when: keepLater ? `T.updated_at <= ${s}.updated_at` : 'TRUE',
  }));
}
