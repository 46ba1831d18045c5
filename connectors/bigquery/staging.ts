import { randomUUID } from 'node:crypto';
import type { TableField, TableMetadata } from '@google-cloud/bigquery';
import { adapt, managedwriter } from '@google-cloud/bigquery-storage';
import { credentials } from '@grpc/grpc-js';
import { GoogleAuth, PassThroughClient } from 'google-auth-library';
import type { BatchManifest, StagedOp } from '../../schemas/warehouse/staging.js';
import { SCHEMA_PER_WORKSPACE, sharesTables, type WarehouseScope } from '../../schemas/warehouse.js';
import type { WarehouseDialect } from '../sql/dialect.js';
import { scopedDialect } from '../sql/scoped-dialect.js';
import { bigQueryDialect } from './dialect.js';
import type { BigQuerySession } from './session.js';

/*
 * Staging: what a page writes reaches BigQuery through the Storage Write API's default stream, appended to
 * one table, `_staging` — no job, no DML, no table operation per page. A flush (flush.ts) later merges the
 * staged entries into their tables and records their batches in `_staging_merged` (an append too).
 *
 * Each batch of `_staging` is described by one row of `_staging_batches`, its manifest (what it holds per
 * op and table, and its small entries), appended once the batch is durable: a flush finds what is pending
 * by table reads of the manifests and the merged markers (no job, nothing billed) instead of a query of
 * `_staging` that billed 10 MB for each of the two tables it named, every flush (doc §15.5).
 *
 * One staging table for every target, not one per target: a page's rows, the ids it saw, the items it set
 * aside and its checkpoints are one AppendRows request, which BigQuery applies whole or not at all, so the
 * checkpoint of a page is never staged without its rows.
 */

export const STAGING_TABLE = '_staging';
export const MERGED_TABLE = '_staging_merged';
/**
 * Staged checkpoints, apart from the rows: small enough to be read whole by a table read (tabledata.list,
 * no query job, no bytes billed), so a checkpoint read costs no query. Appended after the page's rows, in a
 * batch of their own: a checkpoint is never durable before the rows it follows.
 */
export const STAGED_CHECKPOINTS_TABLE = '_staging_checkpoints';
/**
 * The manifests of the batches of `_staging`: appended after the batch, so a manifest never names entries
 * that are not durable (a crash between the two leaves entries no flush merges — their page failed and is
 * fetched again — and that expire with the partition).
 */
export const BATCHES_TABLE = '_staging_batches';
/**
 * Which (batch, table) sightings were folded into the table's `_synced_at` (sightings.ts): a batch's seen
 * ids are folded lazily, after its merge, so a run that changes nothing pays no UPDATE for them.
 */
export const FOLDED_TABLE = '_staging_folded';
/**
 * The staging tables of one destination. In shared tables (SYNC_WAREHOUSE_LAYOUT=shared-tables) each
 * workspace has its own, suffixed with its id (`_staging__north`): a flush merges every batch its staging
 * holds, whoever staged it (a worker that died leaves nothing behind), so staging shared by workspaces would
 * have one workspace's flush merge another's batches, checkpoints and ledger entries — and its table reads
 * of the manifests would grow with every workspace of the deployment. A schema of the workspace's own keeps
 * the names above.
 */
export interface StagingTables {
  readonly entries: string;
  readonly checkpoints: string;
  readonly batches: string;
  readonly merged: string;
  readonly folded: string;
}

export function stagingTablesOf(scope: WarehouseScope): StagingTables {
  // A workspace id is `[a-z][a-z0-9-]*` (schemas/workspaces.ts) and has no `_`: `-` → `_` keeps ids apart
  // and makes a plain identifier.
  const suffix = sharesTables(scope) ? `__${scope.workspace.replaceAll('-', '_')}` : '';
  return {
    entries: `${STAGING_TABLE}${suffix}`,
    checkpoints: `${STAGED_CHECKPOINTS_TABLE}${suffix}`,
    batches: `${BATCHES_TABLE}${suffix}`,
    merged: `${MERGED_TABLE}${suffix}`,
    folded: `${FOLDED_TABLE}${suffix}`,
  };
}

/**
 * Where a destination's SQL writes: its dataset, the dataset's dialect kept to the workspace's rows (in
 * shared tables: every MERGE keyed and every UPDATE filtered by `workspace_id`), and its staging tables. A
 * BigQuerySession is one; the SQL builders (flush-sql.ts, state-sql.ts, sql.ts) take it.
 */
export interface BigQueryPlace {
  readonly dataset: string;
  readonly dialect: WarehouseDialect;
  readonly staging: StagingTables;
}

/** The place of a dataset and scope, as a session has it (for SQL built without a session: tests). */
export function bigQueryPlace(dataset: string, scope: WarehouseScope = SCHEMA_PER_WORKSPACE): BigQueryPlace {
  return {
    dataset,
    dialect: scopedDialect(bigQueryDialect(dataset), scope),
    staging: stagingTablesOf(scope),
  };
}

/** Whether `table` is one of the staging tables of some workspace (they have no `workspace_id`). */
export function isStagingTable(table: string): boolean {
  return table.startsWith('_staging');
}

/** Staged entries older than this are gone (partition expiration): a flush never looks further back. */
export const STAGING_RETENTION_DAYS = 7;

/** One row of `_staging`. */
export interface StagedEntry {
  readonly op: StagedOp;
  /** The target table (rows, seen ids, items set aside); null for checkpoints and ledger entries. */
  readonly table: string | null;
  /** The row's id (rows, seen ids) or the item's id (items set aside), as text. */
  readonly id: string | null;
  /** The entry as JSON: a warehouse row (JSON columns as text), a checkpoint, an item set aside … */
  readonly doc: string | null;
  /** Full refresh: the row replaces an equal version (see WriteBatch.repair). */
  readonly repair: boolean;
}

const FIELDS: TableField[] = [
  { name: 'batch', type: 'STRING', mode: 'REQUIRED', description: 'One AppendRows request (a page)' },
  { name: 'seq', type: 'INTEGER', mode: 'REQUIRED', description: 'Order of staging (µs clock + counter)' },
  { name: 'staged_at', type: 'TIMESTAMP', mode: 'REQUIRED', description: 'When the entry was staged' },
  { name: 'op', type: 'STRING', mode: 'REQUIRED', description: 'row, seen, checkpoint, rejected, …' },
  { name: 'table_name', type: 'STRING', mode: 'NULLABLE', description: 'Target table' },
  { name: 'row_id', type: 'STRING', mode: 'NULLABLE', description: 'Row or item id' },
  { name: 'doc', type: 'STRING', mode: 'NULLABLE', description: 'The entry as JSON' },
  { name: 'repair', type: 'BOOLEAN', mode: 'NULLABLE', description: 'Full refresh row' },
];

const CHECKPOINT_FIELDS: TableField[] = [
  { name: 'batch', type: 'STRING', mode: 'REQUIRED', description: 'One AppendRows request' },
  { name: 'seq', type: 'INTEGER', mode: 'REQUIRED', description: 'Order of staging (µs clock + counter)' },
  { name: 'staged_at', type: 'TIMESTAMP', mode: 'REQUIRED', description: 'When the checkpoint was staged' },
  { name: 'doc', type: 'STRING', mode: 'REQUIRED', description: 'The checkpoint as JSON, with updated_at' },
];

const BATCH_FIELDS: TableField[] = [
  { name: 'batch', type: 'STRING', mode: 'REQUIRED', description: 'A batch of _staging' },
  { name: 'seq', type: 'INTEGER', mode: 'REQUIRED', description: "The batch's first entry's seq" },
  { name: 'staged_at', type: 'TIMESTAMP', mode: 'REQUIRED', description: 'When the batch was staged' },
  { name: 'doc', type: 'STRING', mode: 'REQUIRED', description: 'The manifest as JSON (BatchManifest)' },
];

const MERGED_FIELDS: TableField[] = [
  { name: 'batch', type: 'STRING', mode: 'REQUIRED', description: 'A staged batch merged by a flush' },
  { name: 'merged_at', type: 'TIMESTAMP', mode: 'REQUIRED', description: 'When' },
];

const FOLDED_FIELDS: TableField[] = [
  { name: 'batch', type: 'STRING', mode: 'REQUIRED', description: 'A merged batch' },
  { name: 'table_name', type: 'STRING', mode: 'REQUIRED', description: 'Whose sightings were folded' },
  { name: 'folded_at', type: 'TIMESTAMP', mode: 'REQUIRED', description: 'When' },
];

const DAY_MS = 24 * 60 * 60 * 1000;
const APPEND_TIMEOUT_MS = 30_000;
const APPEND_ATTEMPTS = 5;

/** Entries a manifest carries whole: small and few; rows are only counted, seen ids listed by table. */
const carriedWhole = (op: StagedOp) => op !== 'row' && op !== 'seen';

/**
 * Creates `_staging`, `_staging_checkpoints`, `_staging_batches`, `_staging_merged` and `_staging_folded`
 * (idempotent): day partitions that expire after the retention.
 */
export async function prepareStaging(session: BigQuerySession): Promise<void> {
  const names = session.staging;
  const tables: [string, TableField[], string, string[]][] = [
    [names.entries, FIELDS, 'staged_at', ['op', 'table_name', 'batch']],
    [names.checkpoints, CHECKPOINT_FIELDS, 'staged_at', ['batch']],
    [names.batches, BATCH_FIELDS, 'staged_at', ['batch']],
    [names.merged, MERGED_FIELDS, 'merged_at', ['batch']],
    [names.folded, FOLDED_FIELDS, 'folded_at', ['batch']],
  ];
  for (const [name, fields, partition, cluster] of tables) {
    const table = session.client.dataset(session.dataset).table(name);
    const [exists] = await table.exists();
    if (exists) continue;
    const metadata: TableMetadata = {
      schema: { fields },
      description: 'support-sync staging (append-only; merged by a flush)',
      timePartitioning: {
        type: 'DAY',
        field: partition,
        // The markers outlive the entries they mark by a day.
        expirationMs: String(
          (STAGING_RETENTION_DAYS + (name === names.merged || name === names.folded ? 1 : 0)) * DAY_MS,
        ),
      },
      clustering: { fields: cluster },
    };
    await table.create(metadata).catch((err: { code?: number }) => {
      if (err.code !== 409) throw err;
    });
  }
}

/** Where the Storage Write API is: Google's (Application Default Credentials), or an emulator's plaintext gRPC. */
export interface StorageEndpoint {
  /** host:port of an emulator (plaintext, no credentials); undefined: BigQuery's own endpoint. */
  readonly emulator?: string;
}

interface OpenWriter {
  readonly client: managedwriter.WriterClient;
  readonly writer: managedwriter.JSONWriter;
  /** Rejects with the stream's first error: the stream is then closed, and its pending append with it. */
  readonly broken: Promise<never>;
}

/**
 * Appends staged entries through the Storage Write API's default stream (at-least-once: a retried append
 * stages again, which the flush's merge makes harmless): the rows, seen ids, items set aside and ledger
 * entries of a call to `_staging` as one request (all or nothing), then its manifest to `_staging_batches`,
 * then its checkpoints to `_staging_checkpoints` — a batch of their own, appended only once the rows and
 * their manifest are durable, so a checkpoint never claims a page whose rows a flush cannot find (a crash
 * in between re-fetches the page).
 */
export class StagingAppender {
  readonly #entries: DefaultStreamAppender;
  readonly #manifests: DefaultStreamAppender;
  readonly #checkpoints: DefaultStreamAppender;
  readonly #merged: DefaultStreamAppender;
  readonly #folded: DefaultStreamAppender;
  #last = 0;

  constructor(projectId: string, dataset: string, names: StagingTables, endpoint: StorageEndpoint) {
    const stream = (table: string, fields: TableField[]) =>
      new DefaultStreamAppender(projectId, dataset, table, fields, endpoint);
    this.#entries = stream(names.entries, FIELDS);
    this.#manifests = stream(names.batches, BATCH_FIELDS);
    this.#checkpoints = stream(names.checkpoints, CHECKPOINT_FIELDS);
    this.#merged = stream(names.merged, MERGED_FIELDS);
    this.#folded = stream(names.folded, FOLDED_FIELDS);
  }

  /** A new batch id: one per append. */
  static batchId(): string {
    return randomUUID();
  }

  /** Appends entries (rows first, then checkpoints); resolves once BigQuery has them all. */
  async append(entries: readonly StagedEntry[]): Promise<void> {
    const now = Date.now();
    const rest = entries.filter((e) => e.op !== 'checkpoint');
    const checkpoints = entries.filter((e) => e.op === 'checkpoint');
    if (rest.length > 0) {
      const batch = StagingAppender.batchId();
      const rows = rest.map((e) => ({
        batch,
        seq: this.#nextSeq(now),
        staged_at: now * 1000,
        op: e.op,
        table_name: e.table,
        row_id: e.id,
        doc: e.doc,
        repair: e.repair,
      }));
      await this.#entries.append(rows);
      const manifest = manifestOf(rows);
      await this.#manifests.append([
        { batch, seq: rows[0]!.seq, staged_at: now * 1000, doc: JSON.stringify(manifest) },
      ]);
    }
    if (checkpoints.length > 0) {
      const batch = StagingAppender.batchId();
      await this.#checkpoints.append(
        checkpoints.map((e) => ({ batch, seq: this.#nextSeq(now), staged_at: now * 1000, doc: e.doc })),
      );
    }
  }

  /**
   * Records batches merged (a flush's last step, after its script: a flush that dies before it runs again
   * whole, to the same result). An append, not an INSERT: no job, nothing billed.
   */
  async markMerged(batches: readonly string[], at: Date): Promise<void> {
    if (batches.length === 0) return;
    // The time a sighting of these batches stands for until it is folded (sightings.ts): the flush's stamp.
    const mergedAt = at.getTime() * 1000;
    await this.#merged.append(batches.map((batch) => ({ batch, merged_at: mergedAt })));
  }

  /** Records sightings folded, per batch and table (after the script that folded them). */
  async markFolded(folded: readonly { batch: string; table: string }[]): Promise<void> {
    if (folded.length === 0) return;
    const foldedAt = Date.now() * 1000;
    await this.#folded.append(
      folded.map(({ batch, table }) => ({ batch, table_name: table, folded_at: foldedAt })),
    );
  }

  /**
   * The preflight's append (Destination.probeWrite): a merged marker of a batch that never existed, which no
   * flush reads (a flush asks for the markers of the batches it found). One attempt, at most `timeoutMs`
   * for opening the stream and the append together: a Storage Write endpoint that does not answer fails
   * the probe in seconds, one that refuses the connection at once, not after the appends' retries.
   */
  async probe(timeoutMs: number): Promise<void> {
    await this.#merged.appendOnce(
      [{ batch: `preflight-${randomUUID()}`, merged_at: Date.now() * 1000 }],
      timeoutMs,
    );
  }

  /** Microseconds since the epoch, strictly increasing within the process. */
  #nextSeq(nowMs: number): number {
    this.#last = Math.max(this.#last + 1, nowMs * 1000);
    return this.#last;
  }

  close(): void {
    for (const stream of [this.#entries, this.#manifests, this.#checkpoints, this.#merged, this.#folded])
      stream.close();
  }
}

/** The manifest of a batch's rows of `_staging`. */
function manifestOf(
  rows: readonly {
    op: StagedOp;
    table_name: string | null;
    row_id: string | null;
    seq: number;
    doc: string | null;
  }[],
): BatchManifest {
  const counts = new Map<string, { op: StagedOp; table: string | null; n: number }>();
  const entries: { op: StagedOp; seq: number; doc: string }[] = [];
  const seen = new Map<string, string[]>();
  for (const r of rows) {
    const key = `${r.op}\u0000${r.table_name ?? ''}`;
    const count = counts.get(key) ?? { op: r.op, table: r.table_name, n: 0 };
    count.n += 1;
    counts.set(key, count);
    if (carriedWhole(r.op) && r.doc !== null) entries.push({ op: r.op, seq: r.seq, doc: r.doc });
    if (r.op === 'seen' && r.table_name !== null && r.row_id !== null) {
      const ids = seen.get(r.table_name) ?? [];
      ids.push(r.row_id);
      seen.set(r.table_name, ids);
    }
  }
  return { counts: [...counts.values()], entries, seen: Object.fromEntries(seen) };
}

/**
 * One table's default stream: one connection per process, opened on first use; a failed connection is
 * dropped and opened again by the next append.
 */
class DefaultStreamAppender {
  #writer: Promise<OpenWriter> | null = null;

  constructor(
    private readonly projectId: string,
    private readonly dataset: string,
    private readonly table: string,
    private readonly fields: TableField[],
    private readonly endpoint: StorageEndpoint,
  ) {}

  /** Appends rows as one request (all or nothing); resolves once BigQuery has them. */
  async append(rows: readonly Record<string, unknown>[]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.appendOnce(rows);
        return;
      } catch (err) {
        // The emulator (DuckDB) refuses an append while it runs a query; BigQuery answers a transient
        // error the same way. Either passes by trying again; anything else is the activity's to retry.
        // (bqemulator also answers "Resource In Use" and "Connection failure, please retry" under load.)
        const busy = /connection is busy|Resource In Use|Connection failure|UNAVAILABLE|timed out/i.test(
          (err as Error).message ?? '',
        );
        if (!busy || attempt >= APPEND_ATTEMPTS) throw err;
        await new Promise((r) => setTimeout(r, 100 * 2 ** attempt * (0.5 + Math.random())));
      }
    }
  }

  /** One append, without retries; opening the stream and the append together wait at most `timeoutMs`. */
  async appendOnce(rows: readonly Record<string, unknown>[], timeoutMs = APPEND_TIMEOUT_MS): Promise<void> {
    const opened = this.#open();
    let timer: NodeJS.Timeout | undefined;
    try {
      // A stream that broke, or a service that went quiet, may never answer: opening the stream and the
      // append together wait at most this long, then the stream is dropped.
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`staging append timed out (no answer in ${timeoutMs / 1000} s)`)),
          timeoutMs,
        );
      });
      const { writer, broken } = await Promise.race([opened, timeout]);
      const result = await Promise.race([writer.appendRows(rows as never).getResult(), broken, timeout]);
      const errors = result.rowErrors ?? [];
      if (result.error || errors.length > 0) {
        const why = result.error?.message ?? errors[0]?.message ?? 'row error';
        throw new Error(`staging append refused: ${why}`);
      }
    } catch (err) {
      // A broken stream is not reused: the next append opens a new one.
      if (this.#writer === opened) this.close();
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  #open() {
    if (this.#writer) return this.#writer;
    const opening: Promise<OpenWriter> = (async () => {
      const client = new managedwriter.WriterClient({
        projectId: this.projectId,
        ...(this.endpoint.emulator ? emulatorOptions(this.endpoint.emulator) : {}),
      });
      client.enableWriteRetries(true);
      const parent = `projects/${this.projectId}/datasets/${this.dataset}/tables/${this.table}`;
      const connection = await client.createStreamConnection({
        streamId: managedwriter.DefaultStream,
        destinationTable: parent,
      });
      // A stream error is an event: unheard, it would end the process. The broken stream is dropped so the
      // next append opens another, and closing it leaves its pending append unanswered: the append fails
      // with the stream's error at once (a refused connection in milliseconds, not at the timeout).
      let breaks: (err: Error) => void = () => undefined;
      const broken = new Promise<never>((_, reject) => {
        breaks = reject;
      });
      broken.catch(() => undefined); // an error while no append waits is only the stream's end
      connection.on('error', (err: Error) => {
        breaks(err);
        if (this.#writer === opening) this.close();
      });
      const schema = adapt.convertBigQuerySchemaToStorageTableSchema({ fields: this.fields });
      const protoDescriptor = adapt.convertStorageSchemaToProto2Descriptor(schema, 'root');
      const writer = new managedwriter.JSONWriter({ connection, protoDescriptor });
      return { client, writer, broken };
    })();
    this.#writer = opening;
    return opening;
  }

  close(): void {
    const opened = this.#writer;
    this.#writer = null;
    void opened
      ?.then(({ client, writer }) => {
        writer.close();
        client.close();
      })
      .catch(() => undefined);
  }
}

/** An emulator's gRPC endpoint: plaintext, no credentials (nor a lookup of them). */
function emulatorOptions(hostPort: string) {
  const i = hostPort.lastIndexOf(':');
  return {
    servicePath: hostPort.slice(0, i),
    port: Number(hostPort.slice(i + 1)),
    sslCreds: credentials.createInsecure(),
    // google-gax pins its own google-auth-library; the pass-through client only has to answer its calls.
    auth: new GoogleAuth({ authClient: new PassThroughClient() }) as never,
  };
}
