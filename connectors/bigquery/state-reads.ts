import { decodeStateKeyOf } from '../../schemas/state-key.js';
import { BatchManifest } from '../../schemas/warehouse/staging.js';
import {
  byText,
  Checkpoint,
  type CheckpointUpdate,
  canonicalTimestamp,
  OpenRejections,
  SCHEMA_CHANGE_KEY,
  SchemaChangeRecord,
  SYSTEM_TABLES,
} from '../../schemas/warehouse.js';
import type { SchemaChangeFilter } from '../sql/schema-changes.js';
import { STATE_TABLES, stateColumnsOf } from '../state-tables.js';
import type { BigQuerySession } from './session.js';
import { STAGING_RETENTION_DAYS } from './staging.js';

/*
 * Checkpoint reads without a query job: `_sync_state`, `_staging_checkpoints` and `_staging_merged` are read
 * whole by table reads (tabledata.list: no job, no bytes billed, no 10 MB floor), and the latest staged,
 * unmerged checkpoint of a scope is laid over the merged one in memory — what a query of the same three
 * tables would compute for 30 MB a read (the 10 MB floor per table). The three tables hold one row per scope, per
 * staged checkpoint and per staged batch of the last week: small next to the data tables.
 */

/** A staged checkpoint not merged yet, with its batch and its order of staging. */
export interface StagedCheckpoint {
  readonly batch: string;
  readonly seq: number;
  readonly checkpoint: CheckpointUpdate & { updated_at: string };
}

const DAY_MS = 24 * 60 * 60 * 1000;

/** Batches recorded merged, each with when (its flush's stamp, ms): what a pending sighting stands for. */
export type MergedBatches = ReadonlyMap<string, number>;

/** The batches flushes recorded merged (read first: see unmergedStagedCheckpoints). */
export async function mergedBatches(session: BigQuerySession): Promise<MergedBatches> {
  const merged = new Map<string, number>();
  for (const r of await session.readTable(session.staging.merged, ['batch', 'merged_at'])) {
    const batch = String(r['batch']);
    // A batch merged twice (a flush that died before its marker, run again) stands for the first stamp.
    const at = Date.parse(String(r['merged_at']));
    merged.set(batch, Math.min(merged.get(batch) ?? at, at));
  }
  return merged;
}

/**
 * The staged checkpoints not merged yet, in staging order. The merged markers are read first (`merged`, or
 * read here): a batch marked after that read was merged into `_sync_state` before its marker, so a reader
 * that reads `_sync_state` after this sees it either staged here or merged there — never neither.
 */
export async function unmergedStagedCheckpoints(
  session: BigQuerySession,
  merged?: MergedBatches,
): Promise<StagedCheckpoint[]> {
  const done = merged ?? (await mergedBatches(session));
  const since = Date.now() - STAGING_RETENTION_DAYS * DAY_MS;
  return (await session.readTable(session.staging.checkpoints, ['batch', 'seq', 'staged_at', 'doc']))
    .filter((r) => !done.has(String(r['batch'])) && Date.parse(String(r['staged_at'])) >= since)
    .map((r) => {
      const doc = JSON.parse(String(r['doc'])) as StagedCheckpoint['checkpoint'];
      return { batch: String(r['batch']), seq: Number(r['seq']), checkpoint: doc };
    })
    .sort((a, b) => a.seq - b.seq);
}

/** A batch of `_staging` not merged yet, by its manifest. */
export interface UnmergedBatch {
  readonly batch: string;
  readonly seq: number;
  readonly manifest: BatchManifest;
}

/** Every manifest of the retention (`_staging_batches`, a table read), in staging order. */
export async function stagedManifests(session: BigQuerySession): Promise<UnmergedBatch[]> {
  const since = Date.now() - STAGING_RETENTION_DAYS * DAY_MS;
  const out: UnmergedBatch[] = [];
  for (const r of await session.readTable(session.staging.batches, ['batch', 'seq', 'staged_at', 'doc'])) {
    const batch = String(r['batch']);
    if (Date.parse(String(r['staged_at'])) < since) continue;
    const parsed = BatchManifest.safeParse(JSON.parse(String(r['doc'])));
    if (!parsed.success)
      throw new Error(
        `${session.staging.batches}: the manifest of batch ${batch} is not one this version reads: ${parsed.error.message}`,
      );
    out.push({ batch, seq: Number(r['seq']), manifest: parsed.data });
  }
  return out.sort((a, b) => a.seq - b.seq);
}

/**
 * The batches of `_staging` not merged yet, by table reads of their manifests (`_staging_batches`), in
 * staging order; `merged` read before (a manifest is appended before its batch's checkpoints, so every
 * checkpoint read after `merged` has its manifest here). `manifests`: read already.
 */
export async function unmergedBatches(
  session: BigQuerySession,
  merged: MergedBatches,
  manifests?: readonly UnmergedBatch[],
): Promise<UnmergedBatch[]> {
  return (manifests ?? (await stagedManifests(session))).filter(({ batch }) => !merged.has(batch));
}

/**
 * Every checkpoint as a reader sees it: those of the state tables with the latest staged, unmerged one of a
 * scope over them.
 */
export async function checkpointsByTableReads(session: BigQuerySession): Promise<Checkpoint[]> {
  const staged = await unmergedStagedCheckpoints(session);
  const stored: Checkpoint[] = [];
  for (const table of STATE_TABLES)
    for (const row of await session.readTable(table.name, stateColumnsOf(table)))
      stored.push(table.checkpointOf(row));
  const byKey = new Map<string, Checkpoint>();
  for (const cp of stored) byKey.set(keyOf(cp.stream, cp.scope), cp);
  for (const { checkpoint } of staged)
    byKey.set(
      keyOf(checkpoint.stream, checkpoint.scope),
      Checkpoint.parse({ ...checkpoint, updated_at: canonicalTimestamp(checkpoint.updated_at) }),
    );
  return [...byKey.values()];
}

const keyOf = (stream: string, scope: string) => `${stream}\u0000${scope}`;

/**
 * The open items of `_rejected` per table, stream and scope, by a table read (a query would bill 10 MB for a
 * table of a few rows). Only what a flush merged: what is staged counts from the next flush on.
 */
export async function openRejectionsByTableReads(session: BigQuerySession): Promise<OpenRejections[]> {
  const counts = new Map<string, OpenRejections>();
  for (const row of await session.readTable('_rejected', ['table_name', 'stream', 'scope', 'resolved_at'])) {
    if (row['resolved_at'] !== null && row['resolved_at'] !== undefined) continue;
    const where = {
      table_name: String(row['table_name']),
      stream: String(row['stream']),
      scope: String(row['scope']),
    };
    const key = Object.values(where).join('\u0000');
    counts.set(key, { ...where, items: (counts.get(key)?.items ?? 0) + 1 });
  }
  return [...counts.keys()].sort(byText).map((key) => OpenRejections.parse(counts.get(key)));
}

/**
 * Ticket numbers of live tickets whose thread was last read completely before `before`, oldest read first
 * (then by ticket number), by table reads: the queue as a checkpoint read sees it (the staged entries over
 * `_thread_queue`, so a thread queued or read again since is not stale, whoever staged it) and the live
 * tickets' numbers. A query would name `_thread_queue` and `tickets` (20 MB at least), and the rolling
 * re-read lists several times a run.
 */
export async function staleThreadsByTableReads(
  session: BigQuerySession,
  before: Date,
  limit: number,
): Promise<string[]> {
  const candidates = (await checkpointsByTableReads(session)).flatMap((cp) => {
    const key = decodeStateKeyOf('thread', cp);
    return key && cp.status === 'complete' && Date.parse(cp.updated_at) < before.getTime()
      ? [{ ...cp, ticketNumber: key.ticketNumber }]
      : [];
  });
  if (candidates.length === 0 || limit <= 0) return [];
  const live = new Set(
    (await session.readTable('tickets', ['ticket_number', '_deleted_at']))
      .filter((row) => row['_deleted_at'] === null || row['_deleted_at'] === undefined)
      .map((row) => Number(row['ticket_number'])),
  );
  return candidates
    .filter((cp) => live.has(cp.ticketNumber))
    .sort((a, b) => Date.parse(a.updated_at) - Date.parse(b.updated_at) || a.ticketNumber - b.ticketNumber)
    .slice(0, limit)
    .map((cp) => cp.scope);
}

/**
 * `_schema_changes` by a table read (one row per distinct change: small), as listSchemaChanges orders and
 * filters it — newest first seen first, then by key — instead of a query (10 MB each time a run ends).
 */
export async function schemaChangesByTableRead(
  session: BigQuerySession,
  filter: SchemaChangeFilter = {},
): Promise<SchemaChangeRecord[]> {
  const columns = SYSTEM_TABLES._schema_changes.columns.map((c) => c.name);
  const records = (await session.readTable('_schema_changes', columns))
    .map((row) => SchemaChangeRecord.parse(row))
    .filter((r) => filter.firstRunId === undefined || r.first_run_id === filter.firstRunId)
    .sort(
      (a, b) =>
        Date.parse(b.first_seen_at) - Date.parse(a.first_seen_at) ||
        SCHEMA_CHANGE_KEY.reduce((order, k) => order || byText(a[k], b[k]), 0),
    );
  return filter.limit === undefined ? records : records.slice(0, filter.limit);
}
