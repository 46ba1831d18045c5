import type pg from 'pg';
import type { DestinationOptions } from '../destination.js';
import { DestinationSettings } from '../settings.js';
import { SqlDestination } from '../sql/destination.js';
import { preparePostgres, replaceView } from './ddl.js';
import { ident } from './dialect.js';
import { PostgresSession } from './session.js';
import { PostgresWriter } from './write.js';

export { scrubUrls } from './errors.js';

export interface PostgresDestinationOptions extends DestinationOptions {
  /** Schema holding the tables (default `support`). */
  readonly schema?: string;
  /** Maximum connections in the pool (default 8). */
  readonly poolSize?: number;
}

/**
 * PostgreSQL destination: a pool (session.ts), the DDL (ddl.ts), the write path — COPY into a staging
 * table, then INSERT … ON CONFLICT under the table's advisory lock (write.ts) — and the error mapping that
 * keeps the password out of every message (errors.ts). Reads of state and ledger: sql/.
 */
export class PostgresDestination extends SqlDestination {
  readonly schema: string;
  readonly #session: PostgresSession;

  constructor(connectionString: string, options: PostgresDestinationOptions = {}) {
    const schema = options.schema ?? 'support';
    ident(schema);
    const settings = new DestinationSettings(options);
    const session = new PostgresSession(connectionString, schema, options.poolSize ?? 8, settings.scope);
    super({
      // Every write is merged at once, and every read reads: nothing kept in memory between calls.
      capabilities: { stagesWrites: false, remembersCheckpointTags: false, cachesVersionsPerRun: false },
      settings,
      session,
      prepare: () => preparePostgres(session, settings),
      createView: (view) => replaceView(session, settings.scope, view),
      writer: new PostgresWriter(session, settings),
      probeWrite: () => session.probeWrite(),
    });
    this.schema = schema;
    this.#session = session;
  }

  /** Runs a read-only query (tests, status command). Errors are scrubbed like every other call. */
  query<R extends pg.QueryResultRow = Record<string, unknown>>(
    sql: string,
    params: unknown[] = [],
  ): Promise<R[]> {
    return this.#session.withErrorMapping('query', () => this.#session.raw<R>(sql, params));
  }
}
