import type { Bookkeeping, StateReads } from '../connectors/destination.js';
import { prepareOnce } from '../connectors/prepare-once.js';
import { succeededWorkflowIds } from '../connectors/queries/runs.js';
import { oldestTicketCreatedAt } from '../connectors/queries/tickets.js';
import { planWindows } from '../connectors/support-api/index.js';
import type { TicketsInput } from '../schemas/child-inputs.js';
import { HISTORY_MARGIN_MS, type SyncMode, type SyncSettings } from '../schemas/run-input.js';
import { decodeStateKey, decodeStateKeyOf, encodeStateKey, type StateKey } from '../schemas/state-key.js';
import {
  EXPORT_PASSES,
  EXPORT_STREAMS,
  type ExportPass,
  FIRST_READ_COVERED_BY,
  type StreamName,
} from '../schemas/streams.js';
import type { SyncRunRecord, TableName } from '../schemas/warehouse.js';
import { writeBusinessCalendar } from './business-hours/write.js';
import { laterInstant, readState, restartedCheckpoint } from './checkpoints.js';
import type { ActivityDeps } from './deps.js';

export interface RunPlan {
  /** What the tickets stream does this run (see TicketsInput); null when tickets are not synced. */
  tickets: Pick<TicketsInput, 'head' | 'headFloor' | 'sweep' | 'queueAllThreads'> | null;
  passes: {
    pass: ExportPass;
    windows: { windowStart: string; windowEnd: string }[];
    advanceHighWaterMark: boolean;
    /**
     * Another pass reads this one's range from the history's start (FIRST_READ_COVERED_BY): `windows` are
     * only the windows queued for a re-read, and the mark follows the covering pass's.
     */
    coveredBy?: ExportPass;
    /**
     * It would be covered if the history starts no later than the oldest ticket, which the ticket sweep of
     * this run has yet to find: plan it again after the sweep (`windows` are its own, if it is not).
     */
    coverPending?: true;
  }[];
  /**
   * Where the exports' history starts (SYNC_START_DATE, or the oldest ticket minus HISTORY_MARGIN_MS).
   * Null: not known yet — the first complete ticket sweep finds it; the exports are planned after it.
   */
  historyStart: string | null;
}

/**
 * What planning reads of the warehouse, and nothing else: the run plans with it, and so does the `plan`
 * command (forecast/), which must not write.
 */
export interface PlanningReads {
  destination: Pick<StateReads, 'readCheckpoint' | 'listCheckpoints' | 'select'> & {
    readonly bookkeeping: Pick<Bookkeeping, 'openRejections'>;
  };
}

/**
 * Creates or migrates the destination's tables once per worker process (connectors/prepare-once.ts: the
 * preflight in the same process counts); then, every run, rewrites the
 * business calendar the views read (the business-hours file, or none: activities/business-hours/write.ts),
 * so that it follows the file and reaches ahead of the run.
 */
export function prepareDestination(deps: ActivityDeps) {
  return async () => {
    await prepareOnce(deps.destination);
    const written = await writeBusinessCalendar(
      deps.destination,
      deps.businessHours,
      deps.now?.() ?? new Date(),
    );
    if (deps.businessHours) deps.logger.debug(written, 'business calendar written');
  };
}

/**
 * Decides what a run reads, from the destination's checkpoints:
 *  - tickets (incremental): the sweep of the whole list, continued or begun, within the run's list budget;
 *    plus a head pass down to the high-water mark minus the look-back (and the thread look-back) when a
 *    sweep begun earlier is continued, since the sweep is then somewhere below the newest tickets;
 *  - tickets (full refresh): a sweep begun again, without a budget, queueing every thread;
 *  - tickets (backfill/replay): a head pass down to the range's start, no sweep;
 *  - exports: from each pass's mark minus the look-back (first run: the history start) up to `now`;
 *    full refresh: from the history start; backfill: the given range, without moving any mark. Ranges are
 *    cut into adjacent windows of at most `windowMs` (≤ 90 × 24 h).
 */
export function planRun(deps: PlanningReads) {
  return async (input: {
    mode: SyncMode;
    streams: StreamName[];
    settings: SyncSettings;
    now: string;
    range?: { from: string; before: string };
    /**
     * The ticket sweep could not complete, so the history start is unknown: plan the exports from a
     * provisional start instead of not at all (a ticket problem must not cost surveys and sessions).
     */
    historyFallback?: boolean;
    /** The oldest ticket as the caller's own sweep found it (the forecast's), when the warehouse has none. */
    oldestTicket?: string;
    /**
     * Planning again a pass whose cover was pending (`coverPending`): the covering pass started where it
     * did at the run's first plan, though its mark may have moved since; only the oldest ticket is new.
     */
    coverPendingSinceStart?: true;
  }): Promise<RunPlan> => {
    const { destination } = deps;
    const { settings, mode } = input;
    const known = await findHistoryStart(deps, settings);
    const provisional = known === null && input.historyFallback === true;
    const historyStart = provisional ? await provisionalHistoryStart(deps, input.now) : known;
    const lowerBound = async (stream: string): Promise<string | null> => {
      if (input.range) return input.range.from;
      if (historyStart === null) return null;
      if (mode === 'full_refresh') return historyStart;
      const mark = (await readState(destination, { kind: 'high_water_mark', stream }))?.high_water_mark;
      if (!mark) return historyStart;
      return new Date(
        Math.max(Date.parse(mark) - settings.lookbackMs, Date.parse(historyStart)),
      ).toISOString();
    };

    /**
     * Whether another pass covers `pass` over [from, now) (FIRST_READ_COVERED_BY): both start at the history
     * start, and that start is no later than the oldest ticket — known once a sweep completed; before it,
     * pending when this run sweeps the tickets.
     */
    const firstReadCover = async (pass: ExportPass, from: string) => {
      const by = FIRST_READ_COVERED_BY[pass];
      if (!by || historyStart === null || from !== historyStart) return null;
      if (!input.coverPendingSinceStart && (await lowerBound(by)) !== from) return null;
      const oldest =
        (await readState(destination, { kind: 'oldest_ticket' }))?.high_water_mark ?? input.oldestTicket;
      if (!oldest) return input.streams.includes('tickets') ? { by, covered: false, pending: true } : null;
      return Date.parse(historyStart) <= Date.parse(oldest) ? { by, covered: true, pending: false } : null;
    };

    let tickets: RunPlan['tickets'] = null;
    if (input.streams.includes('tickets')) {
      const mark = (await readState(destination, { kind: 'high_water_mark', stream: 'tickets' }))
        ?.high_water_mark;
      const headFloor = mark ? new Date(Date.parse(mark) - settings.lookbackMs).toISOString() : null;
      const threadFloor = new Date(Date.parse(input.now) - settings.threadLookbackMs).toISOString();
      if (mode === 'backfill' || mode === 'replay') {
        tickets = {
          head: { since: input.range?.from ?? threadFloor },
          headFloor: null,
          sweep: null,
          queueAllThreads: false,
        };
      } else if (mode === 'full_refresh') {
        tickets = {
          head: null,
          headFloor: null,
          sweep: { restart: true, maxPages: null },
          queueAllThreads: true,
        };
      } else {
        const sweep = await readState(destination, { kind: 'sweep' });
        const continuing = sweep?.status === 'running' && sweep.pages > 0;
        // A sweep begun now starts at the newest ticket, so it is its own head pass.
        const since = headFloor && Date.parse(headFloor) < Date.parse(threadFloor) ? headFloor : threadFloor;
        tickets = {
          head: continuing ? { since } : null,
          headFloor,
          // The first sweep finds where the history starts: it must complete, whatever the budget.
          sweep: { restart: false, maxPages: historyStart === null ? null : settings.sweepPagesPerRun },
          queueAllThreads: false,
        };
      }
    }
    const passes: RunPlan['passes'] = [];
    for (const stream of EXPORT_STREAMS) {
      if (!input.streams.includes(stream)) continue;
      for (const pass of EXPORT_PASSES[stream]) {
        const from = await lowerBound(pass);
        if (from === null) continue; // planned once the sweep has found the history's start
        const to = input.range?.before ?? input.now;
        const planned =
          Date.parse(from) < Date.parse(to) ? planWindows({ from, to, maxWindowMs: settings.windowMs }) : [];
        // Scheduled runs also re-read the earlier windows that hold items set aside (`_rejected`), so an
        // item the source fixes (or the connector learns to read) comes in without a manual replay.
        const retried = input.range ? [] : await windowsWithRejected(deps, pass, from);
        // And the windows the audit queued for a re-read (a row of them differed from the source).
        const queued = input.range ? [] : await windowsQueuedForReread(deps, pass);
        // A provisional start may be too late: the mark stays, so the first run that knows the real start
        // reads the whole history.
        const advanceHighWaterMark = mode !== 'backfill' && mode !== 'replay' && !provisional;
        const cover = advanceHighWaterMark && !input.range ? await firstReadCover(pass, from) : null;
        passes.push({
          pass,
          windows: distinctWindows([...retried, ...queued, ...(cover?.covered ? [] : planned)]),
          advanceHighWaterMark,
          ...(cover?.covered ? { coveredBy: cover.by } : {}),
          ...(cover?.pending ? { coverPending: true as const } : {}),
        });
      }
    }
    return { tickets, passes, historyStart };
  };
}

/**
 * Earlier windows (`<from>/<before>` scopes starting before `from`, which the planned windows do not cover
 * whole) of a pass with unresolved `_rejected` items.
 */
async function windowsWithRejected(
  deps: PlanningReads,
  pass: string,
  from: string,
): Promise<{ windowStart: string; windowEnd: string }[]> {
  const open = (await deps.destination.bookkeeping.openRejections()).filter((r) => r.stream === pass);
  return [...new Set(open.map((r) => r.scope))]
    .flatMap((scope) => {
      const key = decodeStateKeyOf('window', { stream: pass, scope });
      return key ? [{ windowStart: key.from, windowEnd: key.before }] : [];
    })
    .filter((w) => Date.parse(w.windowStart) < Date.parse(from))
    .sort((a, b) => Date.parse(a.windowStart) - Date.parse(b.windowStart));
}

/**
 * Windows of a pass the audit queued for a re-read (`reread` keys, held in `_reread_queue`) whose own
 * scope has not completed since they were queued: the entry clears itself when a run has read the window,
 * with no second write that a crash could lose. From the pass's checkpoints, compared here (a destination
 * may answer that list without a query; a join of the two state tables cannot).
 */
async function windowsQueuedForReread(
  deps: PlanningReads,
  pass: string,
): Promise<{ windowStart: string; windowEnd: string }[]> {
  const entries = await deps.destination.listCheckpoints({ stream: pass });
  const completedAt = new Map(
    entries.filter((cp) => cp.status === 'complete').map((cp) => [cp.scope, Date.parse(cp.updated_at)]),
  );
  return (
    entries
      .flatMap((q) => {
        const key = q.status === 'running' ? decodeStateKeyOf('reread', q) : null;
        return key ? [{ key, queuedAt: Date.parse(q.updated_at) }] : [];
      })
      // Cleared when the window's own scope completed at or after the entry was queued.
      .filter(({ key, queuedAt }) => {
        const completed = completedAt.get(encodeStateKey({ ...key, kind: 'window' }).scope);
        return completed === undefined || completed < queuedAt;
      })
      .map(({ key }) => ({ windowStart: key.from, windowEnd: key.before }))
      .filter((w) => Date.parse(w.windowStart) < Date.parse(w.windowEnd))
      .sort((a, b) => Date.parse(a.windowStart) - Date.parse(b.windowStart))
  );
}

/** Each window once: its workflow id is derived from its bounds, so two alike would be one child twice. */
function distinctWindows<W extends { windowStart: string; windowEnd: string }>(windows: readonly W[]): W[] {
  return [...new Map(windows.map((w) => [`${w.windowStart}/${w.windowEnd}`, w])).values()];
}

/**
 * Where the exports start when no complete sweep has found the history's start yet: the oldest ticket the
 * warehouse holds (the failed sweep got that far), else now, minus HISTORY_MARGIN_MS.
 */
async function provisionalHistoryStart(deps: PlanningReads, now: string): Promise<string> {
  const created = await oldestTicketCreatedAt(deps.destination);
  const oldest = created === null ? Number.NaN : Date.parse(created);
  return new Date((Number.isFinite(oldest) ? oldest : Date.parse(now)) - HISTORY_MARGIN_MS).toISOString();
}

/** SYNC_START_DATE, else the oldest ticket a complete sweep listed minus HISTORY_MARGIN_MS, else null. */
async function findHistoryStart(deps: PlanningReads, settings: SyncSettings): Promise<string | null> {
  if (settings.startDate) return settings.startDate;
  const oldest = await readState(deps.destination, { kind: 'oldest_ticket' });
  if (!oldest?.high_water_mark) return null;
  return new Date(Date.parse(oldest.high_water_mark) - HISTORY_MARGIN_MS).toISOString();
}

/**
 * Starts a scope: a scope that a previous run completed (a replayed window, a re-run) is read again from
 * its start; one left running by a crash resumes from its page checkpoint.
 */
function beginScope(deps: ActivityDeps) {
  return async (input: { stream: string; scope: string }) => {
    const key = requireKey(input);
    const previous = await readState(deps.destination, key);
    if (previous?.status !== 'complete') return { resumedAtPage: previous?.pages ?? 0 };
    await deps.destination.writeTables([], [restartedCheckpoint(key, previous.high_water_mark)]);
    return { resumedAtPage: 0 };
  };
}

/** Moves a stream's high-water mark forward (never backwards). */
export function advanceHighWaterMark(deps: ActivityDeps) {
  return async (input: { stream: string; value: string }) => {
    const key: StateKey = { kind: 'high_water_mark', stream: input.stream };
    const current = await readState(deps.destination, key);
    const next = laterInstant(current?.high_water_mark, input.value);
    if (next === current?.high_water_mark) return { highWaterMark: next };
    await deps.destination.writeTables(
      [],
      [
        {
          ...encodeStateKey(key),
          cursor: null,
          high_water_mark: next,
          status: 'complete',
          pages: 0,
          rows: 0,
        },
      ],
    );
    return { highWaterMark: next };
  };
}

/**
 * The warehouse's clock now: every row this run receives afterwards gets a later `_synced_at` (stamped by
 * the same clock), so it bounds exactly what a complete re-read did not receive.
 */
export function deletionCutoff(deps: ActivityDeps) {
  return async (): Promise<string> => (await deps.destination.currentTime()).toISOString();
}

/**
 * After a complete re-read of a table (or of the part `within` bounds: surveys sent since the start date),
 * marks the rows it did not receive as deleted. Rows are never removed.
 */
export function markUnseenDeleted(deps: ActivityDeps) {
  return async (input: { table: TableName; since: string; within?: { column: string; from: string } }) => {
    const now = deps.now?.() ?? new Date();
    const deleted = await deps.destination.markDeleted(
      {
        table: input.table,
        notSeenSince: new Date(input.since),
        within: input.within ? { column: input.within.column, from: new Date(input.within.from) } : undefined,
      },
      now,
    );
    if (deleted > 0) deps.logger.info({ table: input.table, deleted }, 'marked rows gone from the source');
    return { deleted };
  };
}

/** Of these window workflow ids, those with a succeeded attempt in `_sync_runs` (a backfill skips them). */
export function succeededWindows(deps: PlanningReads) {
  return async (input: { workflowIds: string[] }): Promise<string[]> => {
    return succeededWorkflowIds(deps.destination, input.workflowIds);
  };
}

/**
 * A window's `running` row in `_sync_runs`, and the scope it reads begun (beginScope) when it reads one:
 * one activity where the record and the scope's start were two (each costs the workflow history events).
 */
export function beginWindow(deps: ActivityDeps) {
  const record = recordRun(deps);
  const begin = beginScope(deps);
  return async (input: { run: SyncRunRecord; scope?: { stream: string; scope: string } }) => {
    await record(input.run);
    return input.scope ? begin(input.scope) : { resumedAtPage: 0 };
  };
}

/**
 * A window's closing `succeeded` row, after what its pages staged is merged when it wrote rows (BigQuery's
 * staged write path; a no-op elsewhere), so that `succeeded` means "its rows are in the tables": one
 * activity where the flush and the record were two.
 */
export function finishWindow(deps: ActivityDeps) {
  const record = recordRun(deps);
  return async (input: { run: SyncRunRecord; flush: boolean }) => {
    if (input.flush) await deps.destination.flushStaged();
    await record(input.run);
  };
}

/** Upserts a run or window row in `_sync_runs`. */
export function recordRun(deps: ActivityDeps) {
  return async (run: SyncRunRecord) => {
    await deps.destination.bookkeeping.recordRun(run);
    deps.observer?.runRecorded(run);
  };
}

/**
 * Merges what the pages staged (BigQuery: the Storage Write API appends) into their tables: a window does it
 * before it records itself succeeded. Any process's staged batches, one flush at a time per process.
 */
export function flushStaged(deps: ActivityDeps) {
  return async (): Promise<void> => {
    // A destination that merges every write at once has nothing staged (DestinationCapabilities).
    if (deps.destination.capabilities.stagesWrites) await deps.destination.flushStaged();
  };
}

/** The key of a scope a workflow begins (its activity input stays the row's address, as histories hold it). */
function requireKey(at: { stream: string; scope: string }): StateKey {
  const key = decodeStateKey(at);
  if (key === null)
    throw new Error(
      `no _sync_state key has stream ${JSON.stringify(at.stream)} and scope ${JSON.stringify(at.scope)}`,
    );
  return key;
}
