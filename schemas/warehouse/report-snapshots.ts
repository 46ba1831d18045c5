import { createHash } from 'node:crypto';
import { z } from 'zod';
import { ReportResult, Timestamp } from '../api/index.js';
import { type ColumnSpec, column, deriveColumns } from './derive.js';
import { tableSpec, type WarehouseRow } from './table-spec.js';
import { canonicalTimestamp, storableJson, toColumnValue } from './values.js';

/**
 * Report snapshots: an executed report query kept as one `report_snapshots` row (the result whole, in
 * `_raw`) and flattened into `report_snapshot_values`, one row per number, so BI tools can chart it.
 */

/** Input of `report_snapshots`: one executed report query (POST /reports/query) and when it was taken. */
export const ReportSnapshotInput = z.object({
  query: z.string().min(1),
  timezone: z.string().min(1),
  taken_at: Timestamp,
  result: ReportResult,
});
export type ReportSnapshotInput = z.infer<typeof ReportSnapshotInput>;

/** Deterministic id of a snapshot: a hash of (query, timezone, taken_at) so re-writes are idempotent. */
export function reportSnapshotId(s: Pick<ReportSnapshotInput, 'query' | 'timezone' | 'taken_at'>): string {
  return createHash('sha256')
    .update(JSON.stringify([s.query, s.timezone, canonicalTimestamp(s.taken_at)]))
    .digest('hex')
    .slice(0, 32);
}

const reportSnapshotColumns: ColumnSpec[] = [
  column('snapshot_id', 'string', false, 'Hash of (query, timezone, taken_at). Primary key.'),
  // No paths: this table's `_raw` is the result, not the input these columns come from, so a migration
  // has nothing to fill them from.
  ...deriveColumns('report_snapshots', ReportSnapshotInput, {
    omit: ['result'],
    descriptions: {
      query: 'The report query as sent.',
      timezone: 'IANA time zone the report was computed in.',
      taken_at: 'When the snapshot was taken.',
    },
  }).map(({ path: _path, ...c }) => c),
  column('kind', 'string', false, 'Result shape: kpi, time-series, category or data_table.', {
    enumValues: ReportResult.options.map((o) => o.shape.kind.value),
  }),
  column('value_count', 'integer', false, 'Number of rows in report_snapshot_values for this snapshot.'),
];

export const reportSnapshots = tableSpec<ReportSnapshotInput>(
  {
    name: 'report_snapshots',
    description:
      'One row per report query result taken by the sync. The result itself is in _raw; report_snapshot_values flattens it. Latest write wins when the content differs.',
    primaryKey: ['snapshot_id'],
    merge: { kind: 'content' },
    tracksDeletion: false,
    inputSchema: ReportSnapshotInput,
    indexes: [['taken_at'], ['query', 'taken_at']],
    partitionBy: 'taken_at',
    clusterBy: ['kind'],
  },
  reportSnapshotColumns,
  (s) => ({
    snapshot_id: reportSnapshotId(s),
    query: toColumnValue('string', s.query),
    timezone: toColumnValue('string', s.timezone),
    taken_at: toColumnValue('timestamp', s.taken_at),
    kind: s.result?.kind ?? null,
    value_count: s.result ? reportSnapshotValues(s).length : null,
    _raw: storableJson(s.result),
  }),
);

/** One flattened value of a report result (a row of `report_snapshot_values`). */
export const ReportSnapshotValue = z.object({
  snapshot_id: z.string().min(1),
  value_index: z.number().int().nonnegative(),
  taken_at: Timestamp,
  kind: z.enum(['kpi', 'time-series', 'category', 'data_table']),
  dimension_key: z.string().nullable(),
  dimension_label: z.string().nullable(),
  measure_key: z.string(),
  measure_label: z.string().nullable(),
  format: z.string().nullable(),
  value: z.number().nullable(),
});
export type ReportSnapshotValue = z.infer<typeof ReportSnapshotValue>;

/**
 * Flattens a report result into one row per number, so BI tools can chart it:
 *  - kpi: measure `value` and `previous_value` (no dimension);
 *  - time-series: one row per point × series (dimension = point date, measure = series key);
 *  - category: one row per item (dimension = item key, measure `value`);
 *  - data_table: one row per row × column (dimension = row key, measure = column measureId).
 */
export function reportSnapshotValues(s: ReportSnapshotInput): ReportSnapshotValue[] {
  const snapshot_id = reportSnapshotId(s);
  const taken_at = canonicalTimestamp(s.taken_at);
  return cellsOf(s.result).map((c, value_index) => ({
    snapshot_id,
    value_index,
    taken_at,
    kind: s.result.kind,
    ...c,
  }));
}

/** Where one number of a result stands: its dimension value (none for a kpi), its measure and format. */
type Cell = Omit<ReportSnapshotValue, 'snapshot_id' | 'value_index' | 'taken_at' | 'kind'>;
type Labelled = { readonly key: string; readonly label: string | null };

const cell = (dimension: Labelled | null, measure: Labelled, format: string, value: number | null): Cell => ({
  dimension_key: dimension?.key ?? null,
  dimension_label: dimension?.label ?? null,
  measure_key: measure.key,
  measure_label: measure.label,
  format,
  value,
});

/** The single measure of a kpi or category result. */
const VALUE: Labelled = { key: 'value', label: null };

/** The numbers of a result in the order `value_index` counts them. */
function cellsOf(r: ReportResult): Cell[] {
  switch (r.kind) {
    case 'kpi':
      return [
        cell(null, VALUE, r.format, r.value),
        cell(null, { key: 'previous_value', label: null }, r.format, r.previousValue),
      ];
    case 'time-series':
      return r.points.flatMap((p) =>
        r.series.map((series) =>
          cell({ key: p.date, label: p.label }, series, r.format, p.values[series.key] ?? null),
        ),
      );
    case 'category':
      return r.items.map((item) => cell(item, VALUE, r.format, item.value));
    case 'data_table':
      return r.rows.flatMap((row) =>
        r.columns.map((col) =>
          cell(row, { key: col.measureId, label: col.label }, col.format, row.values[col.measureId] ?? null),
        ),
      );
  }
}

const reportSnapshotValueColumns = deriveColumns('report_snapshot_values', ReportSnapshotValue, {
  descriptions: {
    snapshot_id: 'Snapshot (joins report_snapshots.snapshot_id). Primary key with value_index.',
    value_index: 'Position of the value in the flattened result. Primary key with snapshot_id.',
    taken_at: 'When the snapshot was taken (copied for partitioning and filtering).',
    kind: 'Result shape of the snapshot.',
    dimension_key: 'Point date (time-series), item key (category) or row key (data_table); null for kpi.',
    dimension_label: 'Display label of the dimension value.',
    measure_key: 'Series key (time-series), column measureId (data_table), or value / previous_value.',
    measure_label: 'Display label of the measure.',
    format: 'Display format of the value.',
    value: 'The number; null when the result has no value for this cell.',
  },
});

export const reportSnapshotValuesTable = tableSpec<ReportSnapshotValue>(
  {
    name: 'report_snapshot_values',
    description:
      'Report results flattened to one row per number (see reportSnapshotValues). Latest write wins when the content differs.',
    primaryKey: ['snapshot_id', 'value_index'],
    merge: { kind: 'content' },
    tracksDeletion: false,
    inputSchema: ReportSnapshotValue,
    indexes: [['taken_at']],
    partitionBy: 'taken_at',
    clusterBy: ['snapshot_id', 'measure_key'],
  },
  reportSnapshotValueColumns,
  (v) => {
    const row: WarehouseRow = {};
    for (const c of reportSnapshotValueColumns)
      row[c.name] = toColumnValue(c.type, (v as Record<string, unknown>)[c.name]);
    row['_raw'] = storableJson(v);
    return row;
  },
);
