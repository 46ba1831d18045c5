import {
  type AuditRecord,
  type RejectedItem,
  type SchemaChangeSighting,
  SYSTEM_TABLES,
  type SyncRunRecord,
  TABLE_NAMES,
  type TableName,
} from '../../schemas/warehouse.js';
import { rejectedList, schemaChangeList } from '../batch.js';
import type { WriteBatch } from '../destination.js';
import type { DestinationSettings } from '../settings.js';
import type { ParamValue } from '../sql/dialect.js';
import { bindLiteral, timestampLiteral } from './dialect.js';
import {
  foldSightingsSql,
  mergeStagedSql,
  packStatements,
  rejectedStagedSql,
  stagedCheckpointMergeSql,
} from './flush-sql.js';
import type { BigQuerySession } from './session.js';
import {
  FOLD_AFTER_MS,
  foldedSightings,
  foldGroups,
  type UnfoldedSighting,
  unfoldedOf,
} from './sightings.js';
import { schemaChangeStatements } from './sql.js';
import {
  mergedBatches,
  openRejectionsByTableReads,
  type StagedCheckpoint,
  stagedManifests,
  type UnmergedBatch,
  unmergedBatches,
  unmergedStagedCheckpoints,
} from './state-reads.js';

/**
 * What one script of a flush holds at most, in characters: BigQuery refuses a query longer than 1,024K
 * characters (comments and white space included); the rest is headroom.
 */
const SCRIPT_CHARS = 960 * 1024;

/** Batches one flush merges at most (its script names them): a longer backlog takes several flushes. */
const BATCHES_PER_FLUSH = 2000;

/** What a flush merged: batches, and per table the staged rows and (when asked) what the merge did. */
export interface FlushReport {
  batches: number;
  /** Flush scripts run (0: nothing was staged). */
  merges: number;
  tables: Partial<Record<TableName, { staged: number; inserted: number; updated: number }>>;
  /** Tables whose sightings were folded into `_synced_at` (sightings.ts). */
  folded: TableName[];
}

/** Tables whose sightings a flush folds besides those a day old: every table, or these. */
export type FoldRequest = 'all' | readonly string[];

interface PendingRow {
  batch: string;
  op: string;
  table_name: string | null;
  entry_doc: string | null;
  entry_seq: number | string;
  n: number | string;
}

/**
 * Runs writes one at a time: a flush, or a deletion after its flush (StagedFlusher.exclusive), so this
 * process is one writer per table.
 */
export class WriteGate {
  #chain: Promise<unknown> = Promise.resolve();

  run<T>(write: () => Promise<T>): Promise<T> {
    const run = this.#chain.then(write);
    this.#chain = run.catch(() => undefined);
    return run;
  }
}

/** The gates of datasets whose tables workspaces share, in this process (see sharedTablesGate). */
const SHARED_TABLES_GATES = new Map<string, WriteGate>();

/**
 * The one gate of a dataset's shared tables in this process: the destinations of its workspaces (one each)
 * all write the same tables, and BigQuery runs two mutating DML jobs on a table at once (more queue, a
 * transaction aborts another's), so the workspaces' flushes and deletions take turns as one destination's
 * do. Workers of other processes are told apart by BigQuery alone: a transaction aborted by their write is
 * retried (BigQuerySession.retryConflicts).
 */
export function sharedTablesGate(projectId: string, dataset: string): WriteGate {
  const key = `${projectId}\u0000${dataset}`;
  let gate = SHARED_TABLES_GATES.get(key);
  if (gate === undefined) {
    gate = new WriteGate();
    SHARED_TABLES_GATES.set(key, gate);
  }
  return gate;
}

/**
 * Merges what is staged and not merged yet, one script per flush (flush-sql.ts), one flush at a time in
 * this process. Everything staged counts, whoever staged it: a worker that died between staging and
 * merging leaves nothing behind. What is pending is found by table reads (the manifests, the staged
 * checkpoints, the merged markers: no job), and the merged batches are recorded by an append once the
 * script has run — so a flush's only job is its script, and a flush with nothing to merge has none.
 */
export class StagedFlusher {
  /** Flushes begun in this process; the number of the latest one that merged everything it found. */
  #begun = 0;
  #lastDone = -1;

  /**
   * `onBegin` is told when a flush begins (before its pending read: every append finished by then is in
   * it) and returns what to call once that flush has merged everything it found.
   */
  constructor(
    private readonly session: BigQuerySession,
    private readonly settings: DestinationSettings,
    /** Records batches merged (StagingAppender.markMerged). */
    private readonly markMerged: (batches: readonly string[], at: Date) => Promise<void>,
    private readonly onBegin: () => () => void = () => () => {},
    /** Records sightings folded (StagingAppender.markFolded). */
    private readonly markFolded: (
      folded: readonly { batch: string; table: string }[],
    ) => Promise<void> = async () => {},
    /** Age at which an unfolded sighting is folded by the next flush that runs. */
    private readonly foldAfterMs = FOLD_AFTER_MS,
    /** Whose turn it is to write: this destination's own, or its shared tables' (sharedTablesGate). */
    private readonly gate = new WriteGate(),
  ) {}

  /** Whether rows of `tables` are staged and not merged (table reads of the manifests: no job). */
  async rowsPending(tables: readonly string[]): Promise<boolean> {
    const pending = await unmergedBatches(this.session, await mergedBatches(this.session));
    return pending.some(({ manifest }) =>
      manifest.counts.some((c) => c.op === 'row' && c.table !== null && tables.includes(c.table)),
    );
  }

  /**
   * Flushes everything staged; serialized with every other flush of this process. With `counts`, the
   * merge counts what it inserts and updates (two reads per table more: for callers that report them).
   */
  flush(options: { counts?: boolean; fold?: FoldRequest } = {}): Promise<FlushReport> {
    const counting = options.counts === true;
    const asked = this.ticket();
    return this.exclusive(() =>
      counting || options.fold !== undefined
        ? this.#flushAll(counting, options.fold ?? [])
        : this.flushSince(asked),
    );
  }

  /** Inside an exclusive write: a flush that also folds the sightings of `fold` (a deletion's table). */
  flushFolding(fold: FoldRequest): Promise<FlushReport> {
    return this.#flushAll(false, fold);
  }

  /** Now, for flushSince: a flush begun after this call carries a number at least as large. */
  ticket(): number {
    return this.#begun;
  }

  /**
   * Inside an exclusive write: flushes, unless a flush begun since `ticket` (the caller's request) merged
   * everything it found — it read what was pending after the request, so it merged what the caller needs.
   * Requests that queue up behind one flush (the reference snapshots' deletions, which end together) share
   * the next one instead of each paying a pending read and a script.
   */
  flushSince(ticket: number): Promise<FlushReport> {
    if (this.#lastDone >= ticket) return Promise.resolve({ batches: 0, merges: 0, tables: {}, folded: [] });
    return this.#flushAll(false, []);
  }

  /**
   * Runs `write` when no flush or other exclusive write of this process runs (the deletions: a flush, then
   * their script, with no other writer of their tables in between), so this process is one writer per table.
   */
  exclusive<T>(write: () => Promise<T>): Promise<T> {
    return this.gate.run(write);
  }

  async #flushAll(counts: boolean, fold: FoldRequest): Promise<FlushReport> {
    const seq = this.#begun++;
    const merged = this.onBegin();
    const report = await this.#mergeAllPending(counts, fold);
    this.#lastDone = Math.max(this.#lastDone, seq);
    merged();
    return report;
  }

  async #mergeAllPending(counts: boolean, fold: FoldRequest): Promise<FlushReport> {
    const report: FlushReport = { batches: 0, merges: 0, tables: {}, folded: [] };
    for (;;) {
      // Table reads, in this order: the merged markers, then the staged checkpoints, then the manifests. A
      // checkpoint is appended after its page's rows and their manifest, so the rows of every checkpoint
      // read here are in the manifests read next; a batch merged by another process after the first read
      // is merged again, to the same result.
      const merged = await mergedBatches(this.session);
      const checkpoints = firstBatches(
        await unmergedStagedCheckpoints(this.session, merged),
        BATCHES_PER_FLUSH,
      );
      const folded = await foldedSightings(this.session);
      const manifests = await stagedManifests(this.session);
      const pendingBatches = (await unmergedBatches(this.session, merged, manifests)).slice(
        0,
        BATCHES_PER_FLUSH,
      );
      const pending = pendingOfManifests(pendingBatches);
      const unfolded = unfoldedOf(manifests, merged, folded);
      const stampMs = this.#stamp().getTime();
      const foldNow = this.#tablesToFold(unfolded, pendingBatches, fold, stampMs);
      if (
        pending.length === 0 &&
        checkpoints.length === 0 &&
        !foldNow.some((t) => unfolded.some((u) => u.table === t))
      )
        break;
      const batches = [...new Set(pending.map((p) => p.batch))];
      const checkpointBatches = [...new Set(checkpoints.map((c) => c.batch))];
      const folding: Folding = {
        stampMs,
        listed: pendingBatches,
        unfolded,
        fold: foldNow,
      };
      await this.#merge(batches, pending, checkpoints, folding, report, counts);
      report.batches += batches.length + checkpointBatches.length;
      report.merges += 1;
      if (batches.length < BATCHES_PER_FLUSH && checkpointBatches.length < BATCHES_PER_FLUSH) break;
      fold = [];
    }
    return report;
  }

  /**
   * The stamp sightings merged by this flush stand for (recorded on their merged markers): not earlier than
   * any reading of the warehouse's clock taken before (a deletion's `since`), or the test clock.
   */
  #stamp(): Date {
    return this.settings.serverClock ? this.session.warehouseTimeNotBefore() : this.settings.clock();
  }

  /**
   * Tables whose sightings this flush folds — those asked for, and those with one a day old — of the tables
   * with sightings: unfolded ones of earlier flushes, or listed by the batches this one merges.
   */
  #tablesToFold(
    unfolded: readonly UnfoldedSighting[],
    pending: readonly UnmergedBatch[],
    fold: FoldRequest,
    stampMs: number,
  ): string[] {
    const sighted = new Set([
      ...unfolded.map((u) => u.table),
      ...pending.flatMap(({ manifest }) => Object.keys(manifest.seen ?? {})),
    ]);
    const due = new Set<string>(fold === 'all' ? sighted : fold);
    for (const u of unfolded) if (stampMs - u.atMs >= this.foldAfterMs) due.add(u.table);
    return [...due].filter((t) => sighted.has(t));
  }

  async #merge(
    batches: readonly string[],
    pending: readonly PendingRow[],
    checkpoints: readonly StagedCheckpoint[],
    folding: Folding,
    report: FlushReport,
    counting: boolean,
  ) {
    const place = this.session;
    const now = this.settings.serverClock ? 'CURRENT_TIMESTAMP()' : timestampLiteral(this.settings.clock());
    const count = (op: string) => {
      const by = new Map<TableName, number>();
      for (const p of pending)
        if (p.op === op && p.table_name)
          by.set(p.table_name as TableName, (by.get(p.table_name as TableName) ?? 0) + Number(p.n));
      return by;
    };
    const rows = count('row');
    const docs = (op: string) =>
      pending
        .filter((p) => p.op === op && p.entry_doc !== null)
        .sort((a, b) => Number(a.entry_seq) - Number(b.entry_seq))
        .map((p) => JSON.parse(p.entry_doc!) as unknown);
    const rowTables = TABLE_NAMES.filter((t) => rows.has(t));
    const statements: string[] = [];
    rowTables.forEach((t, i) => {
      statements.push(mergeStagedSql(place, this.settings.spec(t), batches, now, counting ? i : null));
    });
    const folds = this.#folds(folding);
    for (const [t, groups] of folds.inline)
      statements.push(...foldSightingsSql(place, this.settings.spec(t), groups));
    const rejected = rejectedList(docs('rejected') as RejectedItem[]);
    // Open entries can be resolved only in tables that have some (a table read; usually none): the guard
    // that looks for them names `_rejected` and `_staging`, 20 MB a flush with rows.
    const resolvable = await this.#tablesWithOpenRejections(rowTables, rejected);
    statements.push(...rejectedStagedSql(place, resolvable, batches, rejected, now));
    const sightings = schemaChangeList([
      { table: 'tickets', rows: [], schemaChanges: docs('schema_change') as SchemaChangeSighting[] },
    ] as WriteBatch[]);
    statements.push(schemaChangeStatements(place, sightings, now));
    // The checkpoints of `_staging_checkpoints` (inline when few, else read there by the statement): a
    // stored later one is kept.
    const checkpointBatches = [...new Set(checkpoints.map((c) => c.batch))];
    if (checkpointBatches.length > 0)
      statements.push(
        stagedCheckpointMergeSql(
          place,
          checkpointBatches,
          checkpoints.map((c) => c.checkpoint),
        ),
      );
    const runs = docs('run') as SyncRunRecord[];
    if (runs.length > 0) statements.push(`${ledgerUpsertSql(this.session, SYSTEM_TABLES._sync_runs, runs)};`);
    // The audit's verdicts of every unit since the last flush: one upsert, not one per unit.
    const audits = docs('audit') as AuditRecord[];
    if (audits.length > 0) statements.push(`${ledgerUpsertSql(this.session, SYSTEM_TABLES._audit, audits)};`);
    for (const t of rowTables) await this.settings.hooks.beforeMerge?.(t);
    const counts = await this.#runScript(statements, counting ? rowTables.length : 0);
    await this.markMerged([...batches, ...checkpointBatches], new Date(folding.stampMs));
    await this.markFolded(folds.pairs);
    for (const t of folds.inline.keys()) if (!report.folded.includes(t)) report.folded.push(t);
    rowTables.forEach((t, i) => {
      const before = report.tables[t] ?? { staged: 0, inserted: 0, updated: 0 };
      report.tables[t] = {
        staged: before.staged + (rows.get(t) ?? 0),
        inserted: before.inserted + Number(counts?.[`inserted_${i}`] ?? 0),
        updated: before.updated + Number(counts?.[`updated_${i}`] ?? 0),
      };
    });
  }

  /**
   * The sightings this flush folds: a batch's seen ids listed in its manifest wait (sightings.ts) unless
   * their table is folded now — then with the unfolded ones of earlier batches, each at its stamp.
   */
  #folds(folding: Folding) {
    const fold = new Set(folding.fold);
    const inline = new Map<TableName, ReturnType<typeof foldGroups>>();
    const pairs: { batch: string; table: string }[] = [];
    for (const t of TABLE_NAMES) {
      if (!fold.has(t)) continue;
      const thisFlush = folding.listed.flatMap(({ batch, manifest }) =>
        (manifest.seen?.[t]?.length ?? 0) > 0
          ? [{ batch, ids: manifest.seen![t]!, atMs: folding.stampMs }]
          : [],
      );
      const earlier = folding.unfolded.filter((u) => u.table === t);
      if (thisFlush.length + earlier.length === 0) continue;
      inline.set(t, foldGroups([...thisFlush, ...earlier]));
      for (const s of [...thisFlush, ...earlier]) pairs.push({ batch: s.batch, table: t });
    }
    return { inline, pairs };
  }

  /** Of `tables`, those with open `_rejected` entries, read or set aside in this flush's batches. */
  async #tablesWithOpenRejections(tables: readonly TableName[], rejected: readonly RejectedItem[]) {
    if (tables.length === 0) return [];
    const open = new Set<string>(rejected.map((item) => item.table));
    for (const r of await openRejectionsByTableReads(this.session)) open.add(r.table_name);
    return tables.filter((t) => open.has(t));
  }

  /**
   * The flush's script: its statements, then (with `counted` tables) the counts its merges declared. A
   * flush with no statement (batches of entries that change nothing) runs no job: a script bills 10 MB.
   * A flush whose statements pass BigQuery's query length (a big fold) runs as several scripts, in order:
   * each statement is idempotent, and the batches are recorded merged only after the last script.
   */
  async #runScript(statements: readonly string[], counted: number): Promise<Record<string, unknown>> {
    const body = statements.filter((s) => s.length > 0);
    if (body.length === 0 && counted === 0) return {};
    const ids = Array.from({ length: counted }, (_, i) => i);
    const declare = ids
      .map((i) => `DECLARE inserted_${i} INT64 DEFAULT 0;\nDECLARE updated_${i} INT64 DEFAULT 0;`)
      .join('\n');
    const select = ids.map((i) => `inserted_${i}, updated_${i}`).join(', ') || '0 AS none';
    const frame = (mark: string, part: readonly string[]) =>
      `${mark}\n${declare}\n${part.join('\n')}\nSELECT ${select};`;
    const parts = packStatements(body, SCRIPT_CHARS - frame(CONTINUED_FLUSH_MARK, []).length);
    // Every script declares every count (cheap) and returns them; a merge sets its own in one: the sum.
    const totals: Record<string, number> = {};
    for (const [i, part] of parts.entries()) {
      const [counts] = await this.session.script<Record<string, unknown>>(
        frame(i === 0 ? FLUSH_SCRIPT_MARK : CONTINUED_FLUSH_MARK, part),
      );
      for (const [k, v] of Object.entries(counts ?? {})) totals[k] = (totals[k] ?? 0) + Number(v ?? 0);
    }
    return totals;
  }
}

/** What a flush knows of sightings (sightings.ts) when it merges. */
interface Folding {
  /** The stamp of this flush's merged markers, which its batches' sightings stand for. */
  readonly stampMs: number;
  /** The batches merged, by their manifests. */
  readonly listed: readonly UnmergedBatch[];
  /** Sightings of batches merged earlier, not folded. */
  readonly unfolded: readonly UnfoldedSighting[];
  /** Tables whose sightings this flush folds. */
  readonly fold: readonly string[];
}

/**
 * The first line of every flush script: what tells a flush apart in a job log (the tests' proxies kill a
 * worker on it).
 */
export const FLUSH_SCRIPT_MARK = '-- support-sync: flush';
/** The first line of a flush's further scripts (when its statements do not fit one query). */
const CONTINUED_FLUSH_MARK = '-- support-sync: continued flush';

/** Batches staged, by their manifests: per batch the rows and seen ids counted per table, the small entries whole. */
function pendingOfManifests(list: readonly UnmergedBatch[]): PendingRow[] {
  const rows: PendingRow[] = [];
  for (const { batch, manifest } of list) {
    for (const c of manifest.counts)
      if (c.op === 'row' || c.op === 'seen')
        rows.push({ batch, op: c.op, table_name: c.table, entry_doc: null, entry_seq: 0, n: c.n });
    for (const e of manifest.entries)
      rows.push({ batch, op: e.op, table_name: null, entry_doc: e.doc, entry_seq: e.seq, n: 1 });
  }
  return rows;
}

/**
 * The upsert of a ledger table by its key (the ledger's own statement, sql/ledger.ts), values as literals;
 * `records` in staging order: of one key, the last staged wins.
 */
function ledgerUpsertSql(
  session: BigQuerySession,
  table: (typeof SYSTEM_TABLES)['_sync_runs' | '_audit'],
  records: readonly object[],
): string {
  const keyOf = (r: Record<string, unknown>) => table.primaryKey.map((k) => String(r[k])).join('\u0000');
  const latest = [...new Map(records.map((r) => [keyOf(r as Record<string, unknown>), r] as const)).values()];
  return session.dialect.upsert(
    table.name,
    table.primaryKey,
    table.columns.map((c) => c.name),
    latest.map((r) =>
      table.columns.map((c) =>
        bindLiteral(((r as Record<string, unknown>)[c.name] ?? null) as ParamValue, c.type),
      ),
    ),
  );
}

/** The staged checkpoints of the first `limit` batches (in staging order). */
function firstBatches(staged: readonly StagedCheckpoint[], limit: number): StagedCheckpoint[] {
  const kept = new Set<string>();
  return staged.filter((c) => {
    if (!kept.has(c.batch) && kept.size >= limit) return false;
    kept.add(c.batch);
    return true;
  });
}
