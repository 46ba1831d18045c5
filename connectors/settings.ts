import {
  type RejectedItem,
  rejectedItemKey,
  SCHEMA_PER_WORKSPACE,
  type SchemaChangeSighting,
  scopedSpec,
  TABLE_NAMES,
  type TableName,
  type TableSpec,
  tableSpecOf,
  type WarehouseScope,
} from '../schemas/warehouse.js';
import { rejectedList, schemaChangeList } from './batch.js';
import type { DestinationHooks, DestinationOptions, WriteBatch } from './destination.js';
import { DestinationError } from './errors.js';

/**
 * The options every destination takes, resolved once and shared by its parts (DDL, write path, reads):
 * which spec each table has (the column policy applied), the clock that stamps writes, the hooks.
 */
/** What `_schema_changes.example` holds where the column policy covers the table. */
export const WITHHELD_EXAMPLE = '(withheld: SYNC_COLUMN_POLICY covers this table)';

export class DestinationSettings {
  readonly clock: () => Date;
  /**
   * No test clock: `_synced_at` comes from the warehouse's own clock (PostgreSQL `now()`, BigQuery
   * `CURRENT_TIMESTAMP()`), so every worker stamps by one clock.
   */
  readonly serverClock: boolean;
  readonly hooks: DestinationHooks;
  /** The workspace written, and whether its tables are shared with other workspaces (a `workspace_id` each). */
  readonly scope: WarehouseScope;
  readonly #specs: ReadonlyMap<TableName, TableSpec<unknown>>;
  readonly #redactor: DestinationOptions['redactor'];

  constructor(options: DestinationOptions) {
    this.clock = options.clock ?? (() => new Date());
    this.serverClock = options.clock === undefined;
    this.hooks = options.hooks ?? {};
    this.#redactor = options.redactor;
    this.scope = options.scope ?? SCHEMA_PER_WORKSPACE;
    const tables = options.tables ?? {};
    // Every write path takes its spec here, so the column policy is applied once, to every row written,
    // and in shared tables every row carries its workspace.
    this.#specs = new Map(
      TABLE_NAMES.map((name) => {
        const spec = (tables[name] ?? tableSpecOf(name)) as TableSpec<unknown>;
        return [name, scopedSpec(this.scope, this.#redactor?.spec(spec) ?? spec)];
      }),
    );
  }

  /** The spec of a table: the model's, unless the options replaced it; its rows redacted by the policy. */
  spec(name: TableName): TableSpec<unknown> {
    const spec = this.#specs.get(name);
    if (spec === undefined) throw new DestinationError(`unknown table ${String(name)}`);
    return spec;
  }

  /** The spec of a table whose rows can be marked deleted; any other table is a caller's mistake. */
  deletable(name: TableName): TableSpec<unknown> {
    const spec = this.spec(name);
    if (!spec.tracksDeletion) throw new DestinationError(`${name} does not track deletions`);
    return spec;
  }

  /**
   * Items set aside, as `_rejected` stores them (see rejectedList): their raw JSON under the column policy
   * too, and an item without an id keyed by the hash of what is stored, not of the plain item.
   */
  /**
   * The schema changes of the batches, deduplicated. An example is a piece of a source value: where the
   * column policy covers the table, it is withheld (the field path, kind and type stay), since which of the
   * table's values a drifted field carries cannot be told from its path alone.
   */
  schemaChanges(batches: readonly WriteBatch[]): SchemaChangeSighting[] {
    const redactor = this.#redactor;
    const changes = schemaChangeList(batches);
    if (redactor === undefined) return changes;
    return changes.map((c) => (redactor.covers(c.table) ? { ...c, example: WITHHELD_EXAMPLE } : c));
  }

  rejectedItems(items: readonly RejectedItem[] | undefined): RejectedItem[] {
    const redactor = this.#redactor;
    if (redactor === undefined || items === undefined) return rejectedList(items);
    return rejectedList(
      items.map((item) => {
        if (!redactor.covers(item.table)) return item;
        const raw = redactor.raw(item.table, item.raw);
        return { ...item, raw, itemKey: item.itemId ?? rejectedItemKey(null, raw) };
      }),
    );
  }
}
