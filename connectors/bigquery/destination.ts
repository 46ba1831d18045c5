import type { BigQueryOptions } from '@google-cloud/bigquery';
import { GoogleAuth, PassThroughClient } from 'google-auth-library';
import {
  type Checkpoint,
  type StoredVersion,
  sharesTables,
  type TableName,
} from '../../schemas/warehouse.js';
import type { SqlDialect } from '../../schemas/warehouse-views.js';
import type { CheckpointFilter, Destination, DestinationOptions } from '../destination.js';
import { type RowFilter, rowMatches } from '../row-filter.js';
import { DestinationSettings } from '../settings.js';
import { SqlBookkeeping } from '../sql/bookkeeping.js';
import { SqlDestination } from '../sql/destination.js';
import { BigQueryBookkeeping } from './bookkeeping.js';
import { prepareBigQuery, replaceView } from './ddl.js';
import { bqIdent } from './dialect.js';
import { sharedTablesGate, WriteGate } from './flush.js';
import { BigQuerySession, normalize } from './session.js';
import { laySightingsOver } from './sightings.js';
import {
  type BigQueryHooks,
  DEFAULT_FLUSH_THRESHOLDS,
  type FlushThresholds,
  StagedBigQueryWriter,
} from './staged-writer.js';
import { prepareStaging, StagingAppender } from './staging.js';
import { liveRowsByTableRead, MINIMUM_BILLED_BYTES } from './table-reads.js';
import { RunVersionCache, type VersionCacheLimits } from './version-cache.js';

export interface BigQueryDestinationOptions extends DestinationOptions {
  readonly hooks?: BigQueryHooks;
  readonly projectId: string;
  readonly datasetId: string;
  /**
   * Location of the dataset and its jobs (BIGQUERY_LOCATION); default: the dataset's own, read once (a new
   * dataset: `US`).
   */
  readonly location?: string | undefined;
  /**
   * A dataset of the project whose location the dataset takes if the sync creates it and `location` is unset
   * (a workspace's dataset: the deployment's, worker/workspace-config.ts).
   */
  readonly newDatasetLocationOf?: string | undefined;
  /**
   * API endpoint of an emulator (e.g. http://127.0.0.1:9050). When set, requests carry no credentials;
   * otherwise the client uses Application Default Credentials.
   */
  readonly apiEndpoint?: string;
  /**
   * host:port of an emulator's Storage Write API (plaintext gRPC, no credentials); default: BigQuery's own
   * endpoint with Application Default Credentials.
   */
  readonly storageEndpoint?: string;
  /** When staged rows are merged besides a window's end (default: 50,000 rows or 10 minutes). */
  readonly flushThresholds?: FlushThresholds;
  /** The per-run version cache's size and table-read page (default: 250,000 rows a table, 10,000 a page). */
  readonly versionCacheLimits?: VersionCacheLimits;
  /** Attempts for a transaction aborted by a concurrent update of the same table (default 8). */
  readonly maxConflictRetries?: number;
}

/**
 * Client options for an emulator: no credentials. Going through the auth client anyway (a pass-through
 * client) gives every request a header object, which the client's multipart upload of load jobs requires
 * (without it the upload fails in teeny-request setting Content-Type on undefined headers).
 */
export function emulatorClientOptions(apiEndpoint: string): BigQueryOptions {
  // useAuthWithCustomEndpoint is honoured by @google-cloud/common but missing from BigQueryOptions' typings,
  // and the client's typings pin an older copy of google-auth-library's GoogleAuth: hence the cast.
  return {
    apiEndpoint,
    useAuthWithCustomEndpoint: true,
    authClient: new GoogleAuth({ authClient: new PassThroughClient() }),
  } as unknown as BigQueryOptions;
}

/**
 * BigQuery destination: a client running jobs (session.ts), the DDL (ddl.ts), the write path — pages staged
 * through the Storage Write API (staging.ts), merged per table by a flush (flush.ts), checkpoints read with
 * the staged ones over `_sync_state` (staged-writer.ts) — and the error mapping that keeps tokens out of
 * every message (errors.ts). Other reads of state and ledger: sql/, after this process's staged rows are
 * merged (so a process reads what it wrote).
 */
/** How old a job's reading of the warehouse's clock may be to stand for "now" (currentTime). */
const CLOCK_READING_MAX_AGE_MS = 60_000;

/** How long the preflight waits for the Storage Write API's append. */
const STORAGE_PROBE_TIMEOUT_MS = 10_000;

/**
 * Destination.probeWrite for BigQuery: the two ways a run writes. Pages are staged by Storage Write API
 * appends (gRPC, its own endpoint, credentials and firewall rules: it can fail where the REST side answers),
 * flushes are query jobs (DML). Each failure names the side and what it needs.
 */
async function probeBigQueryWrites(
  session: BigQuerySession,
  appender: StagingAppender,
  options: BigQueryDestinationOptions,
): Promise<'probed' | 'not_prepared'> {
  const endpoint = options.storageEndpoint ?? 'bigquerystorage.googleapis.com:443';
  const target = `${options.datasetId}.${session.staging.merged}`;
  const [prepared] = await session.withErrorMapping('probeWrite', () =>
    session.client.dataset(options.datasetId).table(session.staging.merged).exists(),
  );
  if (!prepared) return 'not_prepared';
  await session.withErrorMapping(
    `the BigQuery Storage Write API (${endpoint}) does not take an append to ${target}; every page is staged through it (it needs bigquery.tables.updateData and a way through to ${endpoint})`,
    () => appender.probe(STORAGE_PROBE_TIMEOUT_MS),
  );
  await session.withErrorMapping(
    `a BigQuery query job (DML on ${options.datasetId}._sync_state) was refused; every flush is one (it needs bigquery.jobs.create and bigquery.tables.updateData)`,
    // Changes no row (WHERE FALSE), in shared tables none of another workspace's either.
    () =>
      session.run(
        `UPDATE ${session.dialect.target('_sync_state')} SET stream = stream WHERE FALSE${session.dialect.ownRows()}`,
      ),
  );
  return 'probed';
}

export class BigQueryDestination extends SqlDestination {
  readonly #session: BigQuerySession;
  readonly #writer: StagedBigQueryWriter;
  readonly #settings: DestinationSettings;

  constructor(options: BigQueryDestinationOptions) {
    bqIdent(options.datasetId);
    const settings = new DestinationSettings(options);
    const session = new BigQuerySession({
      projectId: options.projectId,
      datasetId: options.datasetId,
      location: options.location,
      newDatasetLocationOf: options.newDatasetLocationOf,
      client: options.apiEndpoint ? emulatorClientOptions(options.apiEndpoint) : {},
      maxConflictRetries: options.maxConflictRetries ?? 8,
      scope: settings.scope,
    });
    const appender = new StagingAppender(options.projectId, options.datasetId, session.staging, {
      ...(options.storageEndpoint ? { emulator: options.storageEndpoint } : {}),
    });
    const writer = new StagedBigQueryWriter(
      session,
      settings,
      appender,
      options.flushThresholds ?? DEFAULT_FLUSH_THRESHOLDS,
      options.versionCacheLimits,
      options.hooks,
      // Workspaces sharing the dataset's tables take turns writing them in this process.
      sharesTables(settings.scope) ? sharedTablesGate(options.projectId, options.datasetId) : new WriteGate(),
    );
    const bookkeeping = new BigQueryBookkeeping(
      session,
      writer,
      settings,
      new SqlBookkeeping(session, settings),
    );
    super({
      // Pages are staged and merged by a flush (staged-writer.ts), checkpoints it wrote or listed answer by
      // their tag, and a run's stored versions come from one table read (version-cache.ts).
      capabilities: { stagesWrites: true, remembersCheckpointTags: true, cachesVersionsPerRun: true },
      bookkeeping,
      settings,
      session,
      prepare: async () => {
        await prepareBigQuery(session, settings);
        await session.withErrorMapping('prepare', () => prepareStaging(session));
      },
      createView: (view) => replaceView(session, view),
      writer,
      probeWrite: () => probeBigQueryWrites(session, appender, options),
    });
    this.#session = session;
    this.#writer = writer;
    this.#settings = settings;
  }

  /**
   * The warehouse's clock: from a job this process ran in the last minute when there is one, else a query
   * (`SELECT CURRENT_TIMESTAMP()`, 10 MB). The reading is earlier than now by the job's age; its callers
   * want a time every later stamp follows (a deletion's `since`), and an earlier one only spares, for one
   * run, a row another process stamped in that minute without this run having served it.
   */
  override async currentTime(): Promise<Date> {
    if (!this.#settings.serverClock) return super.currentTime();
    return this.#session.recentWarehouseTime(CLOCK_READING_MAX_AGE_MS) ?? super.currentTime();
  }

  // --- the staged path ------------------------------------------------------------------------------------

  override readCheckpoint(
    ...[stream, scope, options]: Parameters<Destination['readCheckpoint']>
  ): Promise<Checkpoint | null> {
    return this.#writer.readCheckpoint(stream, scope, options);
  }

  override listCheckpoints(filter: CheckpointFilter = {}): Promise<Checkpoint[]> {
    return this.#writer.listCheckpoints(filter);
  }

  // --- reads of merged rows: what this process staged is merged first ------------------------------------

  override async storedVersions(
    ...[table, ids, options]: Parameters<Destination['storedVersions']>
  ): Promise<Map<string, StoredVersion>> {
    // With a run id: from the run's version cache (one table read per table per run, no query), which
    // counts what this process staged as stored. Without: a query, not flushed first — a version staged and
    // not merged yet reads as older, and the row is staged again, harmless (the merge keeps the latest).
    const runId = options?.runId ?? null;
    const spec = this.#settings.spec(table);
    if (runId !== null && RunVersionCache.serves(spec)) {
      const cached = await this.#session.withErrorMapping('storedVersions', () =>
        this.#writer.versions.versions(runId, spec, ids),
      );
      if (cached !== null) return cached;
    }
    return super.storedVersions(table, ids);
  }

  /**
   * `_synced_at` means "last seen in the source" on every destination: where it is asked for, the sightings
   * not folded into it yet are laid over it (sightings.ts laySightingsOver), so no caller needs to know they exist.
   */
  override async liveRows(
    table: TableName,
    columns: readonly string[],
    filter?: RowFilter,
  ): Promise<Record<string, unknown>[]> {
    if (!columns.includes('_synced_at')) return this.#liveRowsAsStored(table, columns, filter);
    const withId = columns.includes('id') ? columns : [...columns, 'id'];
    const rows = await this.#liveRowsAsStored(table, withId, filter);
    await laySightingsOver(
      this.#session,
      this.#settings,
      table,
      new Map(rows.map((r) => [String(r['id']), r])),
    );
    if (withId === columns) return rows;
    return rows.map(({ id: _id, ...rest }) => rest);
  }

  /**
   * By a table read after this process's own batches are merged, filtered in memory (rowMatches), when the
   * table is under 10 MiB — a query of it would bill the 10 MB floor whatever it selects; a larger table is
   * queried (its clustering and partitions can prune what the query bills).
   */
  async #liveRowsAsStored(
    table: TableName,
    columns: readonly string[],
    filter?: RowFilter,
  ): Promise<Record<string, unknown>[]> {
    await this.#writer.flushOwn();
    const bytes = await this.#session.withErrorMapping('liveRows', () => this.#session.tableBytes(table));
    const read = filter && !columns.includes(filter.column) ? [...columns, filter.column] : columns;
    const rows =
      bytes <= MINIMUM_BILLED_BYTES
        ? await liveRowsByTableRead(this.#session, this.#settings, table, read, 'liveRows')
        : null;
    if (rows === null) return super.liveRows(table, columns, filter);
    return rows
      .filter((r) => filter === undefined || rowMatches(filter, r))
      .map((r) => Object.fromEntries(columns.map((c) => [c, r[c] ?? null])));
  }

  override async select(build: (dialect: SqlDialect) => string): Promise<Record<string, unknown>[]> {
    await this.#writer.flushOwn();
    return super.select(build);
  }

  override async close(): Promise<void> {
    this.#writer.close();
    await super.close();
  }

  /**
   * Runs a query (tests) after every staged batch is merged and every sighting folded, so
   * it reads `_synced_at` as "last seen"; rows normalized (timestamps canonical, JSON parsed).
   */
  async query(sql: string, params: Record<string, unknown> = {}): Promise<Record<string, unknown>[]> {
    await this.#writer.flush({ fold: 'all' });
    return this.#session.withErrorMapping('query', async () =>
      (await this.#session.run(sql, params)).map(normalize),
    );
  }
}
