import { z } from 'zod';
import { openEnum, openText } from './open.js';

export const MetricFormat = z.enum(['count', 'duration-seconds', 'percent', 'decimal', 'currency-eur']);
export type MetricFormat = z.infer<typeof MetricFormat>;

export const MetricAggregation = z.enum(['count', 'sum', 'median', 'average', 'ratio']);
export const MetricAttribution = z.enum([
  'ticket_created',
  'ticket_resolved',
  'reply_event',
  'reopen_event',
  'reassignment_event',
  'survey_submitted',
  'action_executed',
  'order_paid',
  'agent_presence',
  'mixed_events',
  'current_snapshot',
]);
export type MetricAttribution = z.infer<typeof MetricAttribution>;

/** Metric groups the companion serves (values not given by spec 2.9): any group is read. */
export const KNOWN_METRIC_GROUPS = [
  'automation',
  'backlog',
  'commerce',
  'presence',
  'quality',
  'resolution',
  'responsiveness',
  'routing',
  'satisfaction',
  'sla',
  'volume',
] as const;

/** Value types the companion serves for `dataType` (values not given by spec 2.9): any is read. */
export const KNOWN_METRIC_DATA_TYPES = ['integer', 'number'] as const;

/** A metric catalog entry as the COMPANION serves it (its choice for `group` and `dataType`). */
export const ServedMetricCatalogEntry = z.object({
  id: z.string().regex(/^[a-z][a-z0-9_]*$/),
  label: z.string().min(1),
  description: z.string().min(1),
  group: z.enum(KNOWN_METRIC_GROUPS),
  dataType: z.enum(KNOWN_METRIC_DATA_TYPES),
  format: MetricFormat,
  aggregation: MetricAggregation,
  attribution: MetricAttribution,
  denominator: z.string().optional(),
  snapshot: z.boolean(),
  higherIsBetter: z.boolean(),
});
export type ServedMetricCatalogEntry = z.infer<typeof ServedMetricCatalogEntry>;

/**
 * A metric catalog entry (spec 2.9). STRICT: `id` (used in queries), `format`, `aggregation` and
 * `attribution` (the sets spec 2.9/2.11 list), `snapshot` and `higherIsBetter` (booleans). OPEN: `label`,
 * `description`, `denominator` (text), `group` and `dataType` (values not given: the companion serves
 * `integer`/`number`); unknown fields kept in `_raw`.
 */
export const MetricCatalogEntry = z.looseObject({
  id: z.string().min(1),
  label: openText(),
  description: openText(),
  group: openEnum(KNOWN_METRIC_GROUPS),
  dataType: openEnum(KNOWN_METRIC_DATA_TYPES),
  format: MetricFormat,
  aggregation: MetricAggregation,
  attribution: MetricAttribution,
  denominator: openText().optional(),
  snapshot: z.boolean(),
  higherIsBetter: z.boolean(),
});
export type MetricCatalogEntry = z.infer<typeof MetricCatalogEntry>;

/** Body of `POST /reports/query`: exactly `{query, timezone}` (spec 4.12). */
export const ReportQueryBody = z.strictObject({
  query: z.string().min(1),
  timezone: z.string().min(1),
});
export type ReportQueryBody = z.infer<typeof ReportQueryBody>;

const NumberMap = z.record(z.string(), z.number());

export const KpiResult = z.object({
  kind: z.literal('kpi'),
  value: z.number(),
  previousValue: z.number().nullable(),
  format: MetricFormat,
});
export const TimeSeriesResult = z.object({
  kind: z.literal('time-series'),
  format: MetricFormat,
  series: z.array(z.object({ key: z.string(), label: z.string() })),
  points: z.array(z.object({ date: z.string(), label: z.string(), values: NumberMap })),
});
export const CategoryResult = z.object({
  kind: z.literal('category'),
  format: MetricFormat,
  items: z.array(z.object({ key: z.string(), label: z.string(), value: z.number() })),
});
export const DataTableResult = z.object({
  kind: z.literal('data_table'),
  rowDimension: z.string(),
  columns: z.array(z.object({ measureId: z.string(), label: z.string(), format: MetricFormat })),
  rows: z.array(z.object({ key: z.string(), label: z.string(), values: NumberMap })),
});

/** The four result shapes of spec 2.10, discriminated by `kind`. */
export const ReportResult = z.discriminatedUnion('kind', [
  KpiResult,
  TimeSeriesResult,
  CategoryResult,
  DataTableResult,
]);
export type ReportResult = z.infer<typeof ReportResult>;
export type KpiResult = z.infer<typeof KpiResult>;
export type TimeSeriesResult = z.infer<typeof TimeSeriesResult>;
export type CategoryResult = z.infer<typeof CategoryResult>;
export type DataTableResult = z.infer<typeof DataTableResult>;
