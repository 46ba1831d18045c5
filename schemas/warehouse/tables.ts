import type { z } from 'zod';
import { STREAMS, type StreamName } from '../streams.js';
import { businessCalendarTable, slaTargetsTable } from './business-calendar.js';
import { reportSnapshots, reportSnapshotValuesTable } from './report-snapshots.js';
import { STREAM_TABLE_NAMES, type TableName } from './table-names.js';
import type { StreamTable } from './table-spec.js';
import { type ApiRowInput, apiTable, type TableSpec } from './table-spec.js';
import { ticketObservationsTable } from './ticket-observations.js';

/**
 * The table catalog: the spec of every data table (its key, merge rule, column descriptions and layout),
 * derived from the API's zod schemas, and the input type each table accepts. Every table and column is
 * documented in docs/warehouse.md, generated from here.
 */

/** The spec of each stream's table, from its declaration in the stream's module (streams/<name>.ts). */
type StreamSpecs = {
  readonly [S in StreamName as (typeof STREAMS)[S]['warehouse'] extends null
    ? never
    : (typeof STREAMS)[S]['table']]: TableSpec<ApiRowInput<z.infer<StreamSchema<S>>>>;
};
type StreamSchema<S extends StreamName> = NonNullable<(typeof STREAMS)[S]['warehouse']>['schema'];

const streamSpecs = Object.fromEntries(
  STREAM_TABLE_NAMES.map((table) => {
    const declaration = Object.values(STREAMS).find((s) => s.table === table)?.warehouse;
    if (!declaration) throw new Error(`warehouse: no stream declares the table ${table}`);
    return [table, streamTableSpec(table, declaration)];
  }),
) as unknown as StreamSpecs;

function streamTableSpec(name: TableName, declaration: StreamTable): TableSpec<unknown> {
  return apiTable<z.ZodObject>({ name, ...declaration }) as TableSpec<unknown>;
}

/** Every data table's spec by name (the report tables come from report-snapshots.ts). */
const SPECS = {
  ...streamSpecs,
  report_snapshots: reportSnapshots,
  report_snapshot_values: reportSnapshotValuesTable,
  ticket_observations: ticketObservationsTable,
  business_calendar: businessCalendarTable,
  sla_targets: slaTargetsTable,
} satisfies Record<TableName, TableSpec<unknown>>;

/** The input type a write batch (`WriteBatch`) holds for each table: what its spec's `toRow` takes. */
export type RowInputs = {
  [T in TableName]: (typeof SPECS)[T] extends TableSpec<infer Input> ? Input : never;
};
export type WarehouseRowInput<T extends TableName = TableName> = RowInputs[T];

export const TABLES: { readonly [T in TableName]: TableSpec<RowInputs[T]> } = SPECS;
export function tableSpecOf<T extends TableName>(name: T): TableSpec<RowInputs[T]> {
  const spec = TABLES[name];
  if (!spec) throw new Error(`warehouse: unknown table ${String(name)}`);
  return spec;
}
