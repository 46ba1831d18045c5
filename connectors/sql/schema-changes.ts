import {
  SCHEMA_CHANGE_KEY,
  SchemaChangeRecord,
  type SchemaChangeSighting,
  SYSTEM_TABLES,
} from '../../schemas/warehouse.js';
import {
  type Bind,
  limitClause,
  parsedRows,
  type SqlSession,
  statement,
  type WarehouseDialect,
} from './dialect.js';

/*
 * `_schema_changes`, written once against the dialect: the upsert each destination runs inside its page
 * transaction (PostgreSQL binds the values, BigQuery inlines them in its script), and the reads of `status`
 * and of the run's end.
 */

const TABLE = '_schema_changes';
const COLUMNS = SYSTEM_TABLES._schema_changes.columns.map((c) => c.name);

/** The SQL of a batch's sightings: what is still to record, and the upsert that records it. */
export interface SchemaChangesSql {
  /**
   * The sightings as `_schema_changes` rows stamped `at`, less those already recorded for their run (a
   * SELECT: a writer may skip the upsert when it returns nothing, so pages of a run that saw the same drift
   * before write nothing).
   */
  readonly pending: string;
  /**
   * The upsert of `pending`: a new key is first seen now (in this run); a known one, seen first in this
   * run, moves its last sighting, counts the run and takes the latest example; its first sighting and label
   * stay. A page of a workflow without a run id records only new keys.
   */
  readonly upsert: string;
  /**
   * Run before `upsert`: a new (custom) field recorded before with a value of one JSON type, seen now with
   * another (neither null), gets a `type_change` row (observed: the new type; expected: the type seen before), upserted
   * like any sighting.
   */
  readonly typeChanges: string;
}

export function schemaChangesSql(
  d: WarehouseDialect,
  bind: Bind,
  sightings: readonly SchemaChangeSighting[],
  at: string,
): SchemaChangesSql {
  const rows = sightings.map((c) => {
    const run = bind(c.runId, 'string');
    const values: Record<string, string> = {
      table_name: bind(c.table, 'string'),
      field_path: bind(c.fieldPath, 'string'),
      kind: bind(c.kind, 'string'),
      observed: bind(c.observed, 'string'),
      expected: bind(c.expected, 'string'),
      json_type: bind(c.jsonType, 'string'),
      example: bind(c.example, 'string'),
      label: bind(c.label, 'string'),
      stream: bind(c.stream, 'string'),
      first_seen_at: at,
      last_seen_at: at,
      first_run_id: run,
      last_run_id: run,
      runs_seen: bind(1, 'integer'),
    };
    return `SELECT ${COLUMNS.map((name) => `${values[name]} AS ${d.ident(name)}`).join(', ')}`;
  });
  // Aliases of their own (P, R, N, B): the statements that take these as their source name theirs T and S.
  const sameKey = SCHEMA_CHANGE_KEY.map((k) => `R.${d.ident(k)} = P.${d.ident(k)}`).join(' AND ');
  const pending = `SELECT * FROM (${rows.join('\nUNION ALL ')}) AS P
WHERE NOT EXISTS (SELECT 1 FROM ${d.table(TABLE)} R WHERE ${sameKey} AND R.last_run_id = P.last_run_id)`;
  const upsert = upsertOf(d, pending);
  const seenBefore = COLUMNS.map((c) =>
    c === 'kind'
      ? `'type_change' AS kind`
      : c === 'observed'
        ? 'N.json_type AS observed'
        : c === 'expected'
          ? `B.json_type || ' (as seen before)' AS expected`
          : `N.${d.ident(c)}`,
  );
  const typeChanges = upsertOf(
    d,
    `SELECT ${seenBefore.join(', ')} FROM (${pending}) AS N
JOIN ${d.table(TABLE)} B ON B.table_name = N.table_name AND B.field_path = N.field_path AND B.kind = N.kind AND B.observed = ''
WHERE N.kind IN ('new_field', 'new_custom_field') AND N.json_type <> 'null' AND B.json_type <> 'null' AND N.json_type <> B.json_type`,
  );
  return { pending, upsert, typeChanges };
}

/** The upsert of sightings (`source`: rows of `_schema_changes`), see SchemaChangesSql.upsert. */
function upsertOf(d: WarehouseDialect, source: string): string {
  return d.mergeSource(TABLE, SCHEMA_CHANGE_KEY, COLUMNS, source, (incoming) => ({
    set: {
      expected: `${incoming}.expected`,
      json_type: `${incoming}.json_type`,
      example: `${incoming}.example`,
      label: `COALESCE(T.label, ${incoming}.label)`,
      stream: `${incoming}.stream`,
      last_seen_at: `${incoming}.last_seen_at`,
      last_run_id: `${incoming}.last_run_id`,
      runs_seen: 'T.runs_seen + 1',
    },
    when: `${incoming}.last_run_id IS NOT NULL AND T.last_run_id IS DISTINCT FROM ${incoming}.last_run_id`,
  }));
}

/** Narrows `listSchemaChanges`. */
export interface SchemaChangeFilter {
  /** Only changes first seen by this run. */
  readonly firstRunId?: string;
  /** At most this many, newest first seen first. */
  readonly limit?: number;
}

/** Schema changes, the newest first seen first (then by table, path, kind, observed). */
export function listSchemaChanges(
  session: SqlSession,
  filter: SchemaChangeFilter = {},
): Promise<SchemaChangeRecord[]> {
  const d = session.dialect;
  const query = statement(d, (bind) => {
    const where =
      filter.firstRunId === undefined ? '' : ` WHERE first_run_id = ${bind(filter.firstRunId, 'string')}`;
    return `SELECT ${COLUMNS.map((c) => d.ident(c)).join(', ')} FROM ${d.table(TABLE)}${where}
      ORDER BY first_seen_at DESC, ${SCHEMA_CHANGE_KEY.map((k) => d.ident(k)).join(', ')}${limitClause(filter.limit)}`;
  });
  return parsedRows(session, 'listSchemaChanges', query, (row) => SchemaChangeRecord.parse(row));
}
