import { type TableName, type TableSpec, tableSpecOf } from '../schemas/warehouse.js';
import type { DestinationHooks, DestinationOptions, TableSpecOverrides } from './destination.js';
import { DestinationError } from './errors.js';

/**
 * The options every destination takes, resolved once and shared by its parts (DDL, write path, reads):
 * which spec each table has, the clock that stamps writes, the hooks.
 */
export class DestinationSettings {
  readonly clock: () => Date;
  /**
   * No test clock: `_synced_at` comes from the warehouse's own clock (PostgreSQL `now()`, BigQuery
   * `CURRENT_TIMESTAMP()`), so every worker stamps by one clock.
   */
  readonly serverClock: boolean;
  readonly hooks: DestinationHooks;
  readonly #tables: TableSpecOverrides;

  constructor(options: DestinationOptions) {
    this.clock = options.clock ?? (() => new Date());
    this.serverClock = options.clock === undefined;
    this.hooks = options.hooks ?? {};
    this.#tables = options.tables ?? {};
  }

  /** The spec of a table: the model's, unless the options replaced it. */
  spec(name: TableName): TableSpec<unknown> {
    return (this.#tables[name] ?? tableSpecOf(name)) as TableSpec<unknown>;
  }

  /** The spec of a table whose rows can be marked deleted; any other table is a caller's mistake. */
  deletable(name: TableName): TableSpec<unknown> {
    const spec = this.spec(name);
    if (!spec.tracksDeletion) throw new DestinationError(`${name} does not track deletions`);
    return spec;
  }
}
