import pg from 'pg';
import { Secret } from '../../schemas/secret.js';
import {
  canonicalTimestamp,
  SCHEMA_PER_WORKSPACE,
  sharesTables,
  type WarehouseScope,
} from '../../schemas/warehouse.js';
import type { WithErrorMapping } from '../errors.js';
import type { Row, SqlSession, Statement, WarehouseDialect } from '../sql/dialect.js';
import { scopedDialect } from '../sql/scoped-dialect.js';
import { ident, postgresDialect } from './dialect.js';
import { passwordOf, postgresErrors } from './errors.js';

/** Namespace of our advisory locks (first key of the two-int form); the second is hashtext(schema.name). */
const LOCK_NAMESPACE = 0x5359_4e43; // 'SYNC'

/** OIDs of the types whose rows are normalized: timestamptz, bigint, numeric. */
const TIMESTAMPTZ = 1184;
const NUMERIC_TYPES = new Set([20, 1700]);

/** timestamptz as text, so that microseconds survive (a JS Date keeps milliseconds only). */
const textTimestamps = {
  getTypeParser: (oid: number, format?: 'text' | 'binary') =>
    oid === TIMESTAMPTZ
      ? (v: string) => canonicalTimestamp(v.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00'))
      : pg.types.getTypeParser(oid, format as 'text'),
};

/**
 * The connection pool of a PostgreSQL destination and how statements run on it: reads normalized, writes
 * in transactions, merges into one table serialized by a transaction-scoped advisory lock.
 */
/** How long each statement of the write probe may wait. */
const PROBE_TIMEOUT = '10s';

export class PostgresSession implements SqlSession {
  readonly dialect: WarehouseDialect;
  readonly withErrorMapping: WithErrorMapping;
  readonly #pool: pg.Pool;
  /** What a table's merge lock is taken on besides the table: its workspace's rows, in shared tables. */
  readonly #lockedRows: string;

  constructor(
    connectionString: string,
    readonly schema: string,
    poolSize: number,
    scope: WarehouseScope = SCHEMA_PER_WORKSPACE,
  ) {
    this.dialect = scopedDialect(postgresDialect(schema), scope);
    this.#lockedRows = sharesTables(scope) ? `/${scope.workspace}` : '';
    this.withErrorMapping = postgresErrors(new Secret(passwordOf(connectionString)));
    this.#pool = new pg.Pool({ connectionString, max: poolSize, application_name: 'support-sync' });
    // An idle client losing its connection must not crash the process; the next query reports it.
    this.#pool.on('error', () => undefined);
  }

  async rows(query: Statement): Promise<Row[]> {
    const r = await this.#pool.query({
      text: query.sql,
      values: query.values.map((v) => v.value),
      types: textTimestamps as never,
    });
    const numeric = new Set(r.fields.filter((f) => NUMERIC_TYPES.has(f.dataTypeID)).map((f) => f.name));
    return r.rows.map((row: Row) => {
      const out: Row = {};
      for (const [k, v] of Object.entries(row))
        out[k] = v instanceof Date ? canonicalTimestamp(v) : numeric.has(k) && v !== null ? Number(v) : v;
      return out;
    });
  }

  async execute(write: Statement): Promise<void> {
    await this.#pool.query(
      write.sql,
      write.values.map((v) => v.value),
    );
  }

  /** Runs a query as given (tests, status): rows as pg returns them. */
  async raw<R extends pg.QueryResultRow>(sql: string, params: unknown[]): Promise<R[]> {
    return (await this.#pool.query<R>(sql, params)).rows;
  }

  /**
   * A write as a run makes it, rolled back: a table created in the schema, a row inserted, and an update of
   * `_sync_state` that matches no row (privileges are checked all the same). Each statement waits at most
   * PROBE_TIMEOUT (a lock held elsewhere, a server that stopped answering).
   */
  probeWrite(): Promise<'probed' | 'not_prepared'> {
    return this.withErrorMapping('probeWrite', async () => {
      const client = await this.#pool.connect();
      const schema = ident(this.schema);
      try {
        const state = await client.query<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [
          `${schema}."_sync_state"`,
        ]);
        if (state.rows[0]?.t == null) return 'not_prepared';
        await client.query('BEGIN');
        await client.query(`SET LOCAL statement_timeout = '${PROBE_TIMEOUT}'`);
        await client.query(`SET LOCAL lock_timeout = '${PROBE_TIMEOUT}'`);
        await client.query(`CREATE TABLE ${schema}."_preflight_probe" (probe text)`);
        await client.query(`INSERT INTO ${schema}."_preflight_probe" (probe) VALUES ('probe')`);
        await client.query(`UPDATE ${schema}."_sync_state" SET stream = stream WHERE false`);
        return 'probed';
      } finally {
        await client.query('ROLLBACK').catch(() => undefined);
        client.release();
      }
    });
  }

  /**
   * `fn` in one transaction, committed when it returns, rolled back when it throws; errors mapped.
   * `opening`: a statement without parameters sent with the BEGIN in one round trip (a simple query of two
   * statements), its rows handed to `fn` — a write's stamp costs no round trip of its own.
   */
  transaction<T>(
    context: string,
    fn: (client: pg.PoolClient, opened: pg.QueryResultRow[]) => Promise<T>,
    opening?: string,
  ): Promise<T> {
    return this.withErrorMapping(context, async () => {
      const client = await this.#pool.connect();
      // A checked-out client has no pool listener: a server that goes away between two statements of the
      // transaction (a restart, a failover) would emit 'error' with none, and crash the worker. The next
      // statement fails instead, and the broken client is discarded, not pooled.
      let broken: Error | undefined;
      const onError = (err: Error) => {
        broken = err;
      };
      client.on('error', onError);
      try {
        const begun = await client.query(opening === undefined ? 'BEGIN' : `BEGIN; ${opening}`);
        const opened = opening === undefined ? [] : (begun as unknown as pg.QueryResult[])[1]!.rows;
        const out = await fn(client, opened);
        await client.query('COMMIT');
        return out;
      } catch (err) {
        if (!broken) await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      } finally {
        client.off('error', onError);
        client.release(broken ?? false);
      }
    });
  }

  /**
   * Serializes merges into one table: the transaction's advisory lock on it, released at commit. In shared
   * tables the lock is the workspace's part of the table: two workspaces' writers never share a key (each
   * key starts with its workspace_id), so they neither deadlock nor lose updates, and one workspace's
   * backfill does not queue another's merges behind it.
   */
  lockTable(client: pg.PoolClient, table: string): Promise<void> {
    return this.#advisoryLock(client, `${this.schema}.${table}${this.#lockedRows}`);
  }

  /** Serializes concurrent prepare() calls (CREATE … IF NOT EXISTS is not race-free). */
  lockDdl(client: pg.PoolClient): Promise<void> {
    return this.#advisoryLock(client, `${this.schema}:ddl`);
  }

  async #advisoryLock(client: pg.PoolClient, key: string): Promise<void> {
    await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [LOCK_NAMESPACE, key]);
  }

  close(): Promise<void> {
    return this.#pool.end();
  }
}
