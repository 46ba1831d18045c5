import { BigQuery, type BigQueryOptions, type Job, type Query, type Table } from '@google-cloud/bigquery';
import {
  canonicalTimestamp,
  SCHEMA_PER_WORKSPACE,
  sharesTables,
  type WarehouseScope,
  WORKSPACE_COLUMN,
} from '../../schemas/warehouse.js';
import type { WithErrorMapping } from '../errors.js';
import type { BoundValue, Row, SqlSession, Statement, WarehouseDialect } from '../sql/dialect.js';
import { EVERY_WORKSPACE } from '../sql/scoped-dialect.js';
import { WORKSPACES_TABLE } from './ddl.js';
import { BQ_TYPES } from './dialect.js';
import { bigQueryErrors } from './errors.js';
import { type BigQueryPlace, bigQueryPlace, isStagingTable, type StagingTables } from './staging.js';

export interface BigQuerySessionOptions {
  readonly projectId: string;
  readonly datasetId: string;
  /**
   * Where the dataset is and its jobs run (BIGQUERY_LOCATION: `US`, `EU`, `europe-west2`, …). Unset: the
   * dataset's own location, read once; a dataset not created yet is created in `US` (BigQuery's default).
   */
  readonly location?: string | undefined;
  /**
   * A dataset whose location a dataset not created yet takes when `location` is unset (a workspace's dataset
   * goes where the deployment's is); when it does not exist either, `US`.
   */
  readonly newDatasetLocationOf?: string | undefined;
  /** Client options (an emulator's endpoint, no credentials); default: Application Default Credentials. */
  readonly client: BigQueryOptions;
  /** Attempts for a transaction aborted by a concurrent update of the same table. */
  readonly maxConflictRetries: number;
  /** The workspace written, and whether its tables are shared (default: a dataset of its own). */
  readonly scope?: WarehouseScope;
}

/**
 * The BigQuery client of a destination and how statements run on it: each query or script a job, whose
 * rows come back normalized; a script BigQuery aborted for a concurrent update of the same table is retried
 * with backoff (BigQuery aborts one of two transactions that update one table).
 */
export class BigQuerySession implements SqlSession, BigQueryPlace {
  /**
   * The dataset's SQL, kept to the workspace's rows in shared tables (sql/scoped-dialect.ts): every
   * statement of the write path, the deletions and the bookkeeping takes its tables, keys and updates here.
   */
  readonly dialect: WarehouseDialect;
  readonly scope: WarehouseScope;
  /** This destination's staging tables (the workspace's own in shared tables). */
  readonly staging: StagingTables;
  readonly withErrorMapping: WithErrorMapping = bigQueryErrors();
  readonly client: BigQuery;
  readonly dataset: string;
  readonly #configuredLocation: string | undefined;
  readonly #newDatasetLocationOf: string | undefined;
  #location: Promise<string> | undefined;
  readonly #maxRetries: number;
  /** Table handles of table reads: each learns its schema once (a free tables.get) and keeps it. */
  readonly #tables = new Map<string, Table>();
  /**
   * The warehouse's clock as the last job read it (its creation time), and when on this process's clock:
   * after the job (`readAtMs`) and before it was submitted (`submittedMs`).
   */
  #clock: { readonly warehouseMs: number; readonly readAtMs: number; readonly submittedMs: number } | null =
    null;

  constructor(options: BigQuerySessionOptions) {
    this.dataset = options.datasetId;
    this.#configuredLocation = options.location;
    this.#newDatasetLocationOf = options.newDatasetLocationOf;
    this.#maxRetries = options.maxConflictRetries;
    this.scope = options.scope ?? SCHEMA_PER_WORKSPACE;
    const place = bigQueryPlace(options.datasetId, this.scope);
    this.dialect = place.dialect;
    this.staging = place.staging;
    this.client = new BigQuery({ projectId: options.projectId, ...options.client });
  }

  /**
   * The location every job of this session runs in (BigQuery refuses a job whose location does not hold
   * the datasets it references): the dataset's own, read once (a free datasets.get); a configured location
   * must be it. A dataset not there yet is to be created in the configured location, else where
   * `newDatasetLocationOf` is, else in `US`.
   */
  location(): Promise<string> {
    this.#location ??= this.#readLocation().catch((err: unknown) => {
      this.#location = undefined; // a failed read is tried again by the next job
      throw err;
    });
    return this.#location;
  }

  async #readLocation(): Promise<string> {
    const configured = this.#configuredLocation;
    const actual = await this.#locationOfDataset(this.dataset);
    if (actual === undefined) {
      if (configured !== undefined) return configured;
      const like = this.#newDatasetLocationOf;
      return (like !== undefined ? await this.#locationOfDataset(like) : undefined) ?? DEFAULT_LOCATION;
    }
    if (actual === null) return configured ?? DEFAULT_LOCATION;
    if (configured !== undefined && configured.toLowerCase() !== actual.toLowerCase())
      // Not the service's answer ("Dataset … not found in location …"): one that names both and the fix.
      throw new Error(
        `BIGQUERY_LOCATION is ${configured}, but dataset ${this.client.projectId}:${this.dataset} is in ${actual}: a job runs where its dataset is — set BIGQUERY_LOCATION=${actual}, or leave it unset (the dataset's own location is used)`,
      );
    return actual;
  }

  /** A dataset's location (free datasets.get calls): undefined when there is no such dataset, null when unsaid. */
  async #locationOfDataset(dataset: string): Promise<string | null | undefined> {
    const [exists] = await this.client.dataset(dataset).exists();
    if (!exists) return undefined;
    const [meta] = await this.client.dataset(dataset).getMetadata();
    return typeof meta?.location === 'string' && meta.location !== '' ? meta.location : null;
  }

  /**
   * Runs a query or script as a job and returns the rows of its last statement; job errors throw. With
   * `parseJSON`, JSON columns come back parsed (as PostgreSQL's jsonb does), not as text.
   */
  async run<R = Row>(
    query: string,
    params: Record<string, unknown> = {},
    types: Record<string, unknown> = {},
    results: { parseJSON?: boolean } = {},
  ): Promise<R[]> {
    const options = { query, location: await this.location(), params, types } as Query;
    const submittedMs = Date.now();
    const [job] = (await this.client.createQueryJob(options)) as [Job, unknown];
    const [rows] = await job.getQueryResults({ parseJSON: results.parseJSON ?? false });
    const [meta] = await job.getMetadata();
    const created = Number(meta?.statistics?.creationTime);
    if (Number.isFinite(created) && created > 0)
      this.#clock = { warehouseMs: created, readAtMs: Date.now(), submittedMs };
    const error = meta?.status?.errorResult;
    if (error) throw new Error(`${error.reason ?? 'error'}: ${error.message ?? ''}`);
    return rows as R[];
  }

  /**
   * The warehouse's clock as a job of this session read it at most `maxAgeMs` ago (its creation time, which
   * BigQuery stamps): a time the warehouse has passed, a little earlier than its now. Null: no job that
   * recent.
   */
  recentWarehouseTime(maxAgeMs: number): Date | null {
    if (this.#clock === null || Date.now() - this.#clock.readAtMs > maxAgeMs) return null;
    return new Date(this.#clock.warehouseMs);
  }

  /**
   * A time the warehouse's clock has not passed yet, without a job: this process's clock, or the last job's
   * creation time plus the time since it was submitted (the job was created after that), whichever is later.
   * A stamp that must not be earlier than any reading of the warehouse's clock taken before (a deletion's
   * `since`) uses it.
   */
  warehouseTimeNotBefore(): Date {
    const local = Date.now();
    if (this.#clock === null) return new Date(local);
    return new Date(Math.max(local, this.#clock.warehouseMs + (local - this.#clock.submittedMs)));
  }

  /** A table's stored size (`numBytes` of a tables.get: no job), read fresh. */
  async tableBytes(table: string): Promise<number> {
    const [meta] = await this.client.dataset(this.dataset).table(table).getMetadata();
    const bytes = Number((meta as { numBytes?: string | number }).numBytes ?? 0);
    return Number.isFinite(bytes) ? bytes : 0;
  }

  /**
   * Reads a table's rows through `tabledata.list` (the client's `getRows`), only `fields`: no query job, so
   * no bytes billed and no 10 MB floor (cloud.google.com/bigquery/docs/best-practices-costs: previewing
   * table data is free). For small bookkeeping tables read whole; rows normalized.
   */
  async readTable(table: string, fields: readonly string[]): Promise<Row[]> {
    return (await this.readTableUpTo(table, fields, Number.POSITIVE_INFINITY))!;
  }

  /**
   * `readTable`, or null as soon as the table has more than `maxRows` rows (nothing more is read);
   * `pageRows` rows per request. In shared tables only the workspace's rows come back (a table read has no
   * WHERE: the rows of every workspace are read, and those of others dropped here, so no reader of a table
   * ever sees them); `maxRows` counts every row read, since what a read costs is the whole table.
   */
  async readTableUpTo(
    table: string,
    fields: readonly string[],
    maxRows: number,
    pageRows = TABLE_READ_PAGE_ROWS,
  ): Promise<Row[] | null> {
    let handle = this.#tables.get(table);
    if (!handle) {
      handle = this.client.dataset(this.dataset).table(table);
      await handle.getMetadata();
      this.#tables.set(table, handle);
    }
    // The client maps a row's values onto the selected fields in the schema's order (as BigQuery returns
    // them): ask in that order.
    const order = ((handle.metadata?.schema?.fields ?? []) as { name?: string }[]).map((f) => f.name);
    const scoped = this.#readsScoped(table);
    const asked = scoped && !fields.includes(WORKSPACE_COLUMN) ? [...fields, WORKSPACE_COLUMN] : fields;
    const selected = [...asked].sort((a, b) => order.indexOf(a) - order.indexOf(b));
    const out: Row[] = [];
    let read = 0;
    let query: Record<string, unknown> | null = {
      selectedFields: selected.join(','),
      maxResults: pageRows,
      autoPaginate: false,
    };
    while (query) {
      const [rows, next] = (await handle.getRows(query)) as unknown as [
        Row[],
        Record<string, unknown> | null,
      ];
      read += rows.length;
      if (read > maxRows) return null;
      for (const row of rows) {
        if (scoped && row[WORKSPACE_COLUMN] !== this.scope.workspace) continue;
        const normalized = normalize(row);
        if (asked !== fields) delete normalized[WORKSPACE_COLUMN];
        out.push(normalized);
      }
      query = next ? { ...next, autoPaginate: false } : null;
    }
    return out;
  }

  /** Whether a table read keeps to the workspace's rows: a shared table (not staging, nor the deployment's lists). */
  #readsScoped(table: string): boolean {
    return (
      sharesTables(this.scope) &&
      !isStagingTable(table) &&
      !EVERY_WORKSPACE.has(table) &&
      table !== WORKSPACES_TABLE
    );
  }

  /** A script (a transaction), retried while BigQuery aborts it for a concurrent update. */
  script<R = Row>(sql: string): Promise<R[]> {
    return this.retryConflicts(() => this.run<R>(sql));
  }

  async rows(query: Statement): Promise<Row[]> {
    const { params, types } = parametersOf(query.values);
    const rows = await this.retryConflicts(() => this.run(query.sql, params, types, { parseJSON: true }));
    return rows.map(normalize);
  }

  async execute(write: Statement): Promise<void> {
    const { params, types } = parametersOf(write.values);
    await this.retryConflicts(() => this.run(write.sql, params, types));
  }

  async retryConflicts<R>(fn: () => Promise<R>): Promise<R> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        const message = (err as Error).message ?? '';
        // BigQuery aborts one of two transactions updating a table; the emulator (DuckDB) refuses a query
        // while its connection runs another ("connection is busy"), or loses its result to a table read
        // running on the same connection ("'NoneType' object has no attribute"): all pass by trying again
        // (every statement the destination runs is idempotent or a read).
        const conflict =
          /concurrent update|Could not serialize|aborted due to concurrent|connection is busy|'NoneType' object has no attribute/i.test(
            message,
          );
        if (!conflict || attempt >= this.#maxRetries) throw err;
        await new Promise((r) => setTimeout(r, Math.min(8000, 100 * 2 ** attempt) * (0.5 + Math.random())));
      }
    }
  }

  async close(): Promise<void> {
    // The client holds no pooled connections to release.
  }
}

/** BigQuery's location for a dataset created without one. */
const DEFAULT_LOCATION = 'US';

/** Rows per `tabledata.list` page (BigQuery also caps a page at 10 MB). */
const TABLE_READ_PAGE_ROWS = 10_000;

/**
 * A statement's values as the client's named parameters (`@p<i>`, see the dialect), typed, so that a NULL
 * has a type too. Timestamps given as text become the client's timestamps (which keep microseconds).
 */
function parametersOf(values: readonly BoundValue[]) {
  const params: Record<string, unknown> = {};
  const types: Record<string, unknown> = {};
  values.forEach(({ value, type }, i) => {
    params[`p${i}`] = type === 'timestamp' && typeof value === 'string' ? BigQuery.timestamp(value) : value;
    types[`p${i}`] = type === 'string_list' ? ['STRING'] : BQ_TYPES[type];
  });
  return { params, types };
}

/** BigQuery row values → warehouse values: timestamps canonical strings, INT64 numbers. */
export function normalize(row: Row): Row {
  const out: Row = {};
  for (const [k, v] of Object.entries(row)) {
    if (
      v !== null &&
      typeof v === 'object' &&
      'value' in v &&
      typeof (v as { value: unknown }).value === 'string'
    )
      out[k] = timestampText(v);
    else if (typeof v === 'bigint') out[k] = Number(v);
    else out[k] = v;
  }
  return out;
}

function timestampText(v: unknown): string {
  const s =
    typeof v === 'object' && v !== null && 'value' in v ? String((v as { value: unknown }).value) : String(v);
  return canonicalTimestamp(s);
}
