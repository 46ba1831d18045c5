import { Checkpoint, type CheckpointUpdate, canonicalTimestamp } from '../../schemas/warehouse.js';
import type { BigQuerySession } from './session.js';
import { MERGED_TABLE, STAGED_CHECKPOINTS_TABLE, STAGING_RETENTION_DAYS } from './staging.js';

/*
 * Checkpoint reads without a query job: `_sync_state`, `_staging_checkpoints` and `_staging_merged` are read
 * whole by table reads (tabledata.list: no job, no bytes billed, no 10 MB floor), and the latest staged,
 * unmerged checkpoint of a scope is laid over the merged one in memory — what a query of the same three
 * tables computed before, for 30 MB a read (the 10 MB floor per table). The three tables hold one row per scope, per
 * staged checkpoint and per staged batch of the last week: small next to the data tables.
 */

/** A staged checkpoint not merged yet, with its batch and its order of staging. */
export interface StagedCheckpoint {
  readonly batch: string;
  readonly seq: number;
  readonly checkpoint: CheckpointUpdate & { updated_at: string };
}

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * The staged checkpoints not merged yet, in staging order. The merged markers are read first: a batch
 * marked after that read was merged into `_sync_state` before its marker, so a reader that reads
 * `_sync_state` after this sees it either staged here or merged there — never neither.
 */
export async function unmergedStagedCheckpoints(session: BigQuerySession): Promise<StagedCheckpoint[]> {
  const merged = new Set((await session.readTable(MERGED_TABLE, ['batch'])).map((r) => String(r['batch'])));
  const since = Date.now() - STAGING_RETENTION_DAYS * DAY_MS;
  return (await session.readTable(STAGED_CHECKPOINTS_TABLE, ['batch', 'seq', 'staged_at', 'doc']))
    .filter((r) => !merged.has(String(r['batch'])) && Date.parse(String(r['staged_at'])) >= since)
    .map((r) => {
      const doc = JSON.parse(String(r['doc'])) as CheckpointUpdate & { updated_at: string };
      return { batch: String(r['batch']), seq: Number(r['seq']), checkpoint: doc };
    })
    .sort((a, b) => a.seq - b.seq);
}

/**
 * Scopes of `stream` whose latest staged, unmerged checkpoint is not a complete read from before
 * `before`: queued, running or failed since, or completed at or after it.
 */
export async function scopesStagedSince(
  session: BigQuerySession,
  stream: string,
  before: Date,
): Promise<Set<string>> {
  const latest = new Map<string, StagedCheckpoint['checkpoint']>();
  for (const { checkpoint } of await unmergedStagedCheckpoints(session))
    if (checkpoint.stream === stream) latest.set(checkpoint.scope, checkpoint);
  const scopes = new Set<string>();
  for (const [scope, cp] of latest)
    if (cp.status !== 'complete' || Date.parse(cp.updated_at) >= before.getTime()) scopes.add(scope);
  return scopes;
}

/** Every checkpoint as a reader sees it: `_sync_state` with the latest staged, unmerged one of a scope over it. */
export async function checkpointsByTableReads(session: BigQuerySession): Promise<Checkpoint[]> {
  const staged = await unmergedStagedCheckpoints(session);
  const stored = await session.readTable('_sync_state', [
    'stream',
    'scope',
    'cursor',
    'high_water_mark',
    'status',
    'pages',
    'rows',
    'updated_at',
  ]);
  const byKey = new Map<string, Checkpoint>();
  for (const row of stored) {
    const cp = Checkpoint.parse(row);
    byKey.set(keyOf(cp.stream, cp.scope), cp);
  }
  for (const { checkpoint } of staged)
    byKey.set(
      keyOf(checkpoint.stream, checkpoint.scope),
      Checkpoint.parse({ ...checkpoint, updated_at: canonicalTimestamp(checkpoint.updated_at) }),
    );
  return [...byKey.values()];
}

const keyOf = (stream: string, scope: string) => `${stream}\u0000${scope}`;
