import { refreshCustomFieldView } from '../connectors/custom-field-view.js';
import type { SchemaDriftSummary } from '../schemas/run-summary.js';
import { CUSTOM_FIELD_PATH_PREFIX, type SchemaChangeRecord } from '../schemas/warehouse.js';
import type { ActivityDeps } from './deps.js';

/** Changes the run summary names, one line each (the rest are in `_schema_changes` and `status`). */
const NAMED = 5;

/**
 * After a run: what `_schema_changes` first saw in it, and — when that includes a custom ticket field (a new
 * one, or values of another type than its own) — the view `ticket_custom_fields` regenerated, so the field is
 * a typed column when the run is done. Once per run rather than on the page that saw the field: the column's
 * type comes from every value the run stored, not from one page's, and the view is replaced once (BigQuery
 * allows a few metadata updates of one table per 10 s; concurrent pages would each replace it).
 */
export function schemaDriftAfterRun(deps: ActivityDeps) {
  return async (input: { runId: string }): Promise<SchemaDriftSummary> => {
    const { destination } = deps;
    const changes = await destination.bookkeeping.listSchemaChanges({ firstRunId: input.runId });
    const fields = changes.filter(
      (c) => c.table_name === 'tickets' && c.field_path.startsWith(CUSTOM_FIELD_PATH_PREFIX),
    );
    const columns = fields.length > 0 ? await refreshCustomFieldView(destination) : null;
    if (columns) deps.logger.info({ columns: columns.length }, 'ticket_custom_fields regenerated');
    return {
      recorded: changes.length,
      changes: changes.slice(0, NAMED).map(describeChange),
      customFieldColumns: columns === null ? null : columns.length,
    };
  };
}

/** `new_field tickets.sla_breached_at`, `new_enum_value tickets.status = merged`. */
export function describeChange(c: SchemaChangeRecord): string {
  const observed = c.observed === '' ? '' : ` = ${c.observed}`;
  const label = c.label === null ? '' : ` ("${c.label}")`;
  return `${c.kind} ${c.table_name}.${c.field_path}${observed}${label}`;
}
