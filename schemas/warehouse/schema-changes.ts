import { z } from 'zod';
import { JsonType, SchemaChangeKind } from '../api/drift.js';
import { Timestamp } from '../api/index.js';
import { TableName } from './table-names.js';

/**
 * Schema drift in the warehouse (`_schema_changes`): what the reader saw that its schema does not know
 * (schemas/api/drift.ts), one row per (table, field path, kind, observed value or type), written with the page
 * that saw it and upserted by that key, so the table grows with the source's changes, not with pages or runs.
 */

/** One sighting on a page, as a writer sends it in `WriteBatch.schemaChanges`. */
export const SchemaChangeSighting = z.object({
  table: TableName,
  fieldPath: z.string().min(1),
  kind: SchemaChangeKind,
  observed: z.string(),
  expected: z.string().nullable(),
  jsonType: JsonType,
  example: z.string(),
  label: z.string().nullable(),
  /** Stream or pass that read the page. */
  stream: z.string().min(1),
  /** The sync run the page belongs to (null: a page of a workflow started before runs were passed down). */
  runId: z.string().min(1).nullable(),
});
export type SchemaChangeSighting = z.infer<typeof SchemaChangeSighting>;

/** A row of `_schema_changes`. */
export const SchemaChangeRecord = z.object({
  table_name: z.string().min(1),
  field_path: z.string().min(1),
  kind: SchemaChangeKind,
  observed: z.string(),
  expected: z.string().nullable(),
  json_type: JsonType,
  example: z.string(),
  label: z.string().nullable(),
  stream: z.string().min(1),
  first_seen_at: Timestamp,
  last_seen_at: Timestamp,
  first_run_id: z.string().nullable(),
  last_run_id: z.string().nullable(),
  runs_seen: z.number().int().positive(),
});
export type SchemaChangeRecord = z.infer<typeof SchemaChangeRecord>;

/** The key a sighting is upserted by. */
export const SCHEMA_CHANGE_KEY = ['table_name', 'field_path', 'kind', 'observed'] as const;

/** The path prefix of custom ticket fields (`ticket_fields.<field id>`). */
export const CUSTOM_FIELD_PATH_PREFIX = 'ticket_fields.';

export const SCHEMA_CHANGES_DESCRIPTION =
  "Schema drift: what the source served that the connector's schema does not know, one row per (table_name, field_path, kind, observed), recorded by the reader and written in the same transaction as the page that saw it. Seen again in a later run: last_seen_at and last_run_id move and runs_seen grows (several pages of one run count once). Nothing is lost either way: every item is kept whole in `_raw`. A new custom ticket field (kind new_custom_field) becomes a column of the view ticket_custom_fields, regenerated after the run that recorded it.";

export const SCHEMA_CHANGE_COLUMN_DESCRIPTIONS: Readonly<Record<keyof SchemaChangeRecord, string>> = {
  table_name: 'Table the items were stored in. Key with field_path, kind and observed.',
  field_path:
    'Where in the item (as `_raw` holds it): `sla_breached_at`, `contact.company`, `team_ids[]` (the elements of a list), `ticket_fields.<field id>` (a custom field), `ticket_fields[].<key>` (a key of the custom-field entries).',
  kind: "new_field (a key the schema does not have), new_enum_value (a value of an open enum outside the known ones: message role, direction or status, agent kind, ticket_type, metric group or dataType), type_change (a JSON type the schema does not read the field as; for a custom field, not its declared type's; for a new field or custom field, not the one seen before) or new_custom_field (a custom ticket field: a column of ticket_custom_fields).",
  observed:
    'The new enum value, or the JSON type a type_change saw (string, number, boolean, object, array, null); empty for new fields.',
  expected:
    'What the schema expects there: the known enum values, or the JSON types it reads the field as (a custom field: its declared type; a new field or custom field: the type seen before); null for new fields.',
  json_type: 'JSON type of the example.',
  example:
    'A short example of the value (its latest sighting): JSON, at most 120 characters, strings cut to 40 and masked where they look like an e-mail address (`<e-mail>`) or a phone number (`<phone>`); never the API key.',
  label: "A custom field's label (its entry's name) as first seen; null otherwise.",
  stream: 'Stream or pass that last saw it.',
  first_seen_at: 'When a sync first saw it (the stamp of the page that did).',
  last_seen_at: 'When a sync last recorded it (the first page of each run that saw it).',
  first_run_id: 'The run that first saw it (joins _sync_runs.run_id).',
  last_run_id: 'The latest run that saw it.',
  runs_seen: 'How many runs saw it (the pages of one run count once).',
};
