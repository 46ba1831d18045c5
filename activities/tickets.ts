import { runScope } from '../connectors/destination.js';
import type { Page } from '../connectors/support-api/index.js';
import type { Ticket } from '../schemas/api/tickets.js';
import { decodeStateKey, encodeStateKey, type StateKey } from '../schemas/state-key.js';
import { STREAMS, TICKET_FOLLOWERS, TICKET_FOREIGN_KEY, type TicketFollower } from '../schemas/streams.js';
import {
  type Checkpoint,
  type CheckpointUpdate,
  contentHashOf,
  type StoredVersion,
} from '../schemas/warehouse.js';
import { laterInstant, nextCheckpoint, readState, restartedCheckpoint } from './checkpoints.js';
import type { ActivityDeps } from './deps.js';
import { PAGE_FETCHERS } from './fetchers.js';
import { rejectedOf, rowsOf, schemaChangesOf, setAsideCount } from './page-step.js';
import { recordedDrift } from './recorded-drift.js';
import { restatedTickets, storedNewerIds } from './restated-tickets.js';
import { PAGE_RUN_MS, type PageStore, syncPages } from './sync-page.js';
import { ticketSightings } from './ticket-sightings.js';

const TICKETS_HWM: StateKey = { kind: 'high_water_mark', stream: 'tickets' };
const TICKETS_SWEEP: StateKey = { kind: 'sweep' };
const TICKETS_OLDEST: StateKey = { kind: 'oldest_ticket' };

const sameInstant = (a: string | null | undefined, b: string) => a != null && Date.parse(a) === Date.parse(b);
const earlierInstant = (a: string | null | undefined, b: string | null | undefined): string | null =>
  !a ? (b ?? null) : !b ? a : Date.parse(a) <= Date.parse(b) ? a : b;

/**
 * A run of pages of the ticket list (newest first, with custom fields), each in one destination transaction:
 *  - rows of new or changed tickets are rewritten, each with a sighting of its tracked state in
 *    `ticket_observations` (the source of `ticket_history`) — changed by version (`updated_at` differs, or the stored
 *    row is marked deleted: it came back) or by content (equal version, different content hash: a change the
 *    source did not stamp, e.g. a tag or the contact, or a column the warehouse did not have yet); the
 *    others are only recorded as seen (`_synced_at`), so a complete sweep can tell which tickets the source
 *    stopped serving;
 *  - a ticket listed at an older version than stored is never written over the stored row; that row is
 *    derived again from its own `_raw` and rewritten where it differs (a column policy set since: see
 *    restated-tickets.ts);
 *  - the thread of every new ticket or one whose version moved is queued, and of every ticket created since
 *    `threadCutoff` (the spec does not promise that a new message moves `updated_at`), or of every ticket
 *    (`queueAll`); a content-only change does not cost a thread read;
 *  - items that break the spec's strict rules are set aside in `_rejected` (every sweep reads them again);
 *  - the scope's checkpoint moves; on the sweep's last page the workspace's oldest `created_at` is kept.
 * Done when the API has no more pages, or (a head pass) the page reaches below `stopBelow`.
 */
export function syncTicketsPages(deps: ActivityDeps) {
  return (input: TicketsPageInput) =>
    syncPages(
      deps,
      {
        stream: 'tickets',
        table: STREAMS.tickets.table,
        scope: input.scope,
        allowRestart: input.allowRestart ?? true,
        repair: input.repair === true,
        runId: input.runId ?? null,
        lastSeenTag: input.afterCursorTag,
        fetch: (cursor) => PAGE_FETCHERS.tickets(deps.client, { limit: input.pageSize }, cursor),
      },
      { maxPages: input.maxPages, maxMs: PAGE_RUN_MS },
      changedTickets(input),
    );
}

interface TicketsPageInput {
  scope: string;
  stopBelow: string | null;
  pageSize: number;
  threadCutoff: string | null;
  queueAll: boolean;
  allowRestart?: boolean;
  /** Full refresh: every row is rewritten at an equal version too, repairing whatever differs. */
  repair?: boolean;
  /** The sync run, for `_schema_changes` (absent in workflows started before it was passed down). */
  runId?: string;
  /** The tag of the cursor the workflow last saw for the scope (see Destination.readCheckpoint). */
  afterCursorTag?: string;
  /** Pages this activity reads at most (PageRunLimits). */
  maxPages: number;
}

/*
 * The decisions of a tickets page that do not write (the `plan` command's forecast makes them too, on the
 * same pages, so that it counts what the run will do rather than re-deriving it).
 */

/** Ids of the listed tickets whose version is not the stored one (new, changed, or back after deletion). */
export function versionMovedIds(
  items: readonly Pick<Ticket, 'id' | 'updated_at'>[],
  stored: ReadonlyMap<string, StoredVersion>,
): Set<string> {
  return new Set(items.filter((t) => !sameInstant(stored.get(t.id)?.version, t.updated_at)).map((t) => t.id));
}

/**
 * The listed tickets whose thread is queued: every one (`queueAll`), a new one or one whose version moved,
 * and one created since `threadCutoff` (the spec does not promise that a new message moves `updated_at`).
 */
export function threadsToQueue<T extends Pick<Ticket, 'id' | 'created_at'>>(
  items: readonly T[],
  versionMoved: ReadonlySet<string>,
  rule: { threadCutoff: string | null; queueAll: boolean },
): T[] {
  const cutoff = rule.threadCutoff === null ? Number.POSITIVE_INFINITY : Date.parse(rule.threadCutoff);
  return items.filter((t) => rule.queueAll || versionMoved.has(t.id) || Date.parse(t.created_at) >= cutoff);
}

/** A listing ends with the API's last page, or (a head pass) with the page that reaches below `stopBelow`. */
export function listingDone(
  page: { hasMore: boolean; items: readonly Pick<Ticket, 'created_at'>[] },
  stopBelow: string | null,
): boolean {
  const oldest = page.items.at(-1)?.created_at ?? null;
  const stopMs = stopBelow === null ? Number.NEGATIVE_INFINITY : Date.parse(stopBelow);
  return !page.hasMore || (oldest !== null && Date.parse(oldest) < stopMs);
}

/** How a tickets page is stored (see syncTicketsPages), and what it reports besides the page report. */
function changedTickets(input: TicketsPageInput): PageStore<
  Page<Ticket>,
  {
    listed: number;
    changed: number;
    threadsQueued: number;
    /** `created_at` of the page's newest and oldest ticket. */
    newest: string | null;
    oldest: string | null;
  }
> {
  return {
    nothing: { listed: 0, changed: 0, threadsQueued: 0, newest: null, oldest: null },
    doneAfter: (step) => listingDone(step.page, input.stopBelow),
    async write(deps, target, step, previous) {
      const { destination } = deps;
      const { page } = step;
      const stored = await destination.storedVersions(
        'tickets',
        page.items.map((t) => t.id),
        runScope(destination, target.runId),
      );
      const versionMoved = versionMovedIds(page.items, stored);
      // A ticket listed at an older version than stored: the merge keeps the stored row, so where that row
      // derived again from its `_raw` differs (a column policy set since), the derived row is written instead.
      const restated = await restatedTickets(destination, storedNewerIds(page.items, stored));
      const rows = rowsOf(page).map((r) => restated.get(r.item.id) ?? r);
      const written = destination.writtenSpec('tickets');
      const changedRows = rows.filter(
        (r) =>
          target.repair ||
          versionMoved.has(r.item.id) ||
          stored.get(r.item.id)?.contentHash !== contentHashOf('tickets', r, written),
      );
      const changed = new Set(changedRows.map((r) => r.item.id));
      const toQueue = threadsToQueue(page.items, versionMoved, input);
      const newest = page.items[0]?.created_at ?? null;
      const oldest = page.items.at(-1)?.created_at ?? null;
      const done = listingDone(page, input.stopBelow);
      const checkpoint = nextCheckpoint(previous, {
        stream: 'tickets',
        scope: target.scope,
        cursor: page.nextCursor,
        done,
        rows: changed.size,
      });
      const checkpoints: CheckpointUpdate[] = [
        checkpoint,
        ...toQueue.map((t) =>
          restartedCheckpoint({ kind: 'thread', ticketNumber: t.ticket_number }, t.updated_at),
        ),
      ];
      if (!page.hasMore && decodeStateKey({ stream: 'tickets', scope: target.scope })?.kind === 'sweep') {
        // The end of the whole list: its last ticket is the workspace's oldest.
        const known = await readState(destination, TICKETS_OLDEST);
        const oldestEver = earlierInstant(known?.high_water_mark, oldest);
        if (oldestEver !== null)
          checkpoints.push({
            ...encodeStateKey(TICKETS_OLDEST),
            cursor: null,
            high_water_mark: oldestEver,
            status: 'complete',
            pages: 0,
            rows: 0,
          });
      }
      const rejected = rejectedOf('tickets', 'tickets', target.scope, step);
      const drift = recordedDrift(deps);
      const schemaChanges = drift.unrecorded(schemaChangesOf('tickets', 'tickets', target.runId, step));
      await destination.writeTables(
        [
          {
            table: 'tickets',
            rows: changedRows,
            seen: page.items.filter((t) => !changed.has(t.id)).map((t) => t.id),
            checkpoint: checkpoints,
            rejected,
            schemaChanges,
            repair: target.repair,
          },
          ticketSightings(
            changedRows.map((r) => r.item),
            deps.now?.() ?? new Date(),
            { firstSeen: (id) => !stored.has(id), repair: target.repair },
          ),
        ],
        undefined,
        { stage: true, ...runScope(destination, target.runId) },
      );
      drift.remember(schemaChanges);
      return {
        done,
        rows: changed.size,
        rejected: setAsideCount(page),
        listed: page.items.length,
        changed: changed.size,
        threadsQueued: toQueue.length,
        newest,
        oldest,
        checkpoint,
      };
    },
  };
}

/**
 * Begins a sweep unless one is under way (or, with `restart`, begins again): the sweep's start is the
 * warehouse's clock now, before its first page, so every ticket it lists is stamped later.
 */
export function beginSweep(deps: ActivityDeps) {
  return async (input: { restart: boolean }) => {
    const { destination } = deps;
    const current = await readState(destination, TICKETS_SWEEP);
    const resumed = sweepUnderWay(current, input.restart);
    if (resumed) return resumed;
    const startedAt = (await destination.currentTime()).toISOString();
    await destination.writeTables([], [restartedCheckpoint(TICKETS_SWEEP, startedAt)]);
    return { startedAt, resumedAtPage: 0 };
  };
}

/** The sweep under way that a run continues (where it began, how many pages it read), or null: a new one. */
export function sweepUnderWay(
  current: Checkpoint | null,
  restart: boolean,
): { startedAt: string; resumedAtPage: number } | null {
  if (current?.status !== 'running' || restart || !current.high_water_mark) return null;
  return { startedAt: current.high_water_mark, resumedAtPage: current.pages };
}

/**
 * After a complete sweep: every ticket it did not see (not stamped since the sweep began) is gone from the
 * source and gets `_deleted_at` (never hard-deleted).
 */
export function finishSweep(deps: ActivityDeps) {
  return async () => {
    const { destination, logger } = deps;
    const sweep = await readState(destination, TICKETS_SWEEP);
    if (sweep?.status !== 'complete' || !sweep.high_water_mark) {
      throw Object.assign(new Error('the ticket sweep is not complete; refusing to mark deletions'), {
        nonRetryable: true,
      });
    }
    const now = deps.now?.() ?? new Date();
    const deleted = await destination.markDeleted(
      { table: 'tickets', notSeenSince: new Date(sweep.high_water_mark) },
      now,
    );
    if (deleted > 0) logger.info({ deleted }, 'tickets the source no longer lists marked deleted');
    return { deleted, startedAt: sweep.high_water_mark, pages: sweep.pages };
  };
}

/**
 * After the run's listing: moves the tickets high-water mark (when the run listed contiguously from the top
 * down to the previous mark's look-back), and lets the streams that follow their ticket's deletion follow it
 * (their definition's `followsTicketDeletion`; some also its return).
 * Only the `followers` the run selected: a stream left out keeps its table as it is; its rows follow in the
 * first run that selects it again (a cascade is not bounded in time).
 */
export function finishTickets(deps: ActivityDeps) {
  return async (input: { newest: string | null; followers?: readonly TicketFollower[] }) => {
    const followers = input.followers ?? TICKET_FOLLOWERS;
    const { destination } = deps;
    const current = await readState(destination, TICKETS_HWM);
    const hwm = laterInstant(current?.high_water_mark, input.newest);
    if (hwm !== current?.high_water_mark) {
      await destination.writeTables(
        [],
        [
          {
            ...encodeStateKey(TICKETS_HWM),
            cursor: null,
            high_water_mark: hwm,
            status: 'complete',
            pages: 0,
            rows: 0,
          },
        ],
      );
    }
    const now = deps.now?.() ?? new Date();
    const followed: Partial<Record<TicketFollower, { marked: number; revived: number }>> = {};
    for (const stream of followers) {
      const { table, followsTicketDeletion } = STREAMS[stream];
      followed[stream] = await destination.markDeleted(
        {
          cascade: {
            child: table,
            foreignKey: TICKET_FOREIGN_KEY,
            parent: STREAMS.tickets.table,
            revive: followsTicketDeletion.revive,
          },
        },
        now,
      );
    }
    return { highWaterMark: hwm, followed };
  };
}
