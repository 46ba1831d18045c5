import { type Page, SupportApiError } from '../../connectors/support-api/index.js';
import {
  AUDIT_PAGE_SIZE,
  AUDIT_TABLES,
  type AuditSeed,
  type AuditUnitResult,
  type WindowTable,
} from '../../schemas/audit.js';
import { STREAMS, THREADS_STREAM } from '../../schemas/streams.js';
import type { WarehouseRow } from '../../schemas/warehouse.js';
import { readState, restartedCheckpoint } from '../checkpoints.js';
import type { ActivityDeps } from '../deps.js';
import { PAGE_FETCHERS } from '../fetchers.js';
import { rowsOf } from '../page-step.js';
import { TRANSIT_STATUSES } from '../threads.js';
import { judge, later, type Served } from './judge.js';
import { takePrefetched } from './prefetch.js';
import { idIn, settle, storedRows } from './settle.js';

/*
 * The audit's units, each ONE request of its route class (so each runs on that class's task queue, paced
 * with the fleet): read a sampled row from the live API, compare it and its neighbours on the same page
 * with the warehouse, heal what differs, record every verdict in `_audit`.
 */

/** What a read of a ticket gives, or null for a ticket the source no longer serves (a 404 is an answer). */
async function unlessGone<T>(read: Promise<T>): Promise<T | null> {
  try {
    return await read;
  } catch (err) {
    if (err instanceof SupportApiError && err.code === 'TICKET_NOT_FOUND') return null;
    throw err;
  }
}

/** `GET /tickets/:ticketNumber?include=ticket_fields` of a sampled ticket. */
export function auditTicket(deps: ActivityDeps) {
  return async (input: { runId: string; seed: AuditSeed }): Promise<AuditUnitResult> => {
    const table = 'tickets';
    const ticketNumber = requireTicketNumber(input.seed);
    const stored =
      takePrefetched(input.runId, table, input.seed.id) ??
      (await storedRows(deps, table, idIn([input.seed.id])));
    const fresh = await unlessGone(deps.client.readTicket(ticketNumber, { includeTicketFields: true }));
    const sweptAt = await sweepBegan(deps);
    const judged = judge(deps.destination.writtenSpec(table), fresh ? [fresh] : [], stored, {
      rawKeys: 'common',
      versionColumn: 'updated_at',
      readAt: syncedAt,
      readThrough: null,
      // Listed by the current sweep and 404 now: deleted since; that sweep (or the next) marks it. (In a
      // workspace swept across runs, tickets the running sweep has not reached count as missing: the
      // conservative side.)
      goneSince: (row) => later(syncedAt(row), sweptAt),
    });
    // A ticket rewritten here is not rewritten by the sweep (its version no longer moves): its thread is
    // queued as the sweep would have queued it.
    const queue = fresh ? [restartedCheckpoint({ kind: 'thread', ticketNumber }, fresh.item.updated_at)] : [];
    const compared = await settle(deps, { runId: input.runId, table, judged, queue });
    return { compared, coveredFrom: null, coveredUntil: null };
  };
}

/** The first page of a sampled message's thread: every message on it, and every stored one it covers. */
export function auditThread(deps: ActivityDeps) {
  return async (input: { runId: string; seed: AuditSeed }): Promise<AuditUnitResult> => {
    const table = STREAMS[THREADS_STREAM].table;
    const ticketNumber = requireTicketNumber(input.seed);
    const fetched: Page<unknown, unknown> | null = await unlessGone(
      PAGE_FETCHERS[THREADS_STREAM](deps.client, { ticketNumber }, null),
    );
    // Items nested past the warehouse's depth cap are set aside by the reader (parse.ts), as the sync
    // stores them: they are compared not at all.
    const page = fetched;
    const served = page ? (rowsOf(page) as Served[]) : [];
    // Oldest first: with more pages, the page covers the messages created before its last one.
    const last = page?.hasMore ? (served.at(-1)?.item as { created_at?: string } | undefined) : undefined;
    const coveredUntil = last?.created_at ? Date.parse(last.created_at) : Number.POSITIVE_INFINITY;
    const rejected = new Set(page?.rejected.map((r) => r.itemId) ?? []);
    const all =
      takePrefetched(input.runId, table, String(ticketNumber)) ??
      (await storedRows(deps, table, { kind: 'in', column: 'ticket_number', values: [ticketNumber] }));
    const servedIds = new Set(served.map((s) => s.item.id));
    const stored = within(
      all,
      (id, row) =>
        servedIds.has(id) || (!rejected.has(id) && Date.parse(String(row['created_at'])) < coveredUntil),
    );
    // The warehouse's last complete read of the thread; a thread queued (or failed) is known to be stale.
    const entry = await readState(deps.destination, { kind: 'thread', ticketNumber });
    const readAt = entry?.status === 'complete' ? entry.updated_at : null;
    const judged = judge(deps.destination.writtenSpec(table), served, stored, {
      rawKeys: 'all',
      versionColumn: 'created_at',
      readAt: () => readAt,
      readThrough: readAt,
      // A delivery status still in transit moves on without a stamp; requeueUnsettledThreads re-reads it.
      unsettled: (row, differences) =>
        differences.every((d) => d.field === 'status') &&
        (TRANSIT_STATUSES as readonly unknown[]).includes(row['status']),
      // Served by the thread's last read and not now: deleted since (only a full refresh marks those).
      goneSince: (row) => later(syncedAt(row), readAt),
    });
    const queue = [restartedCheckpoint({ kind: 'thread', ticketNumber })];
    const compared = await settle(deps, { runId: input.runId, table, judged, queue });
    return { compared, coveredFrom: null, coveredUntil: null };
  };
}

/**
 * The first page of a narrow export window `[from, before)` around a sampled survey's or session's date:
 * every row on it, and every stored row whose date the page covers.
 */
export function auditWindow(deps: ActivityDeps) {
  return async (input: {
    runId: string;
    table: WindowTable;
    from: string;
    before: string;
    includeComments: boolean;
  }): Promise<AuditUnitResult> => {
    const { table, from, before } = input;
    const { pass, seedColumn } = AUDIT_TABLES[table];
    const fetch: (typeof PAGE_FETCHERS)[typeof pass] = PAGE_FETCHERS[pass];
    const page: Page<unknown, unknown> = await fetch(
      deps.client,
      { limit: AUDIT_PAGE_SIZE, from, before, extras: input.includeComments },
      null,
    );
    const served = rowsOf(page) as Served[];
    // Ordered by the date (then id): with more pages, the page covers the dates before its last row's.
    const last = page.hasMore ? (served.at(-1)?.raw[seedColumn] as string | undefined) : undefined;
    const coveredUntil = last ?? before;
    const rejected = new Set(page.rejected.map((r) => r.itemId));
    const servedIds = served.map((s) => s.item.id);
    const inRange = await storedRows(deps, table, {
      kind: 'range',
      column: seedColumn,
      from,
      until: coveredUntil,
    });
    // Sessions that began before the window but overlap it are served too.
    const byId = await storedRows(deps, table, idIn(servedIds));
    const stored = within(new Map([...inRange, ...byId]), (id) => !rejected.has(id));
    const hwm =
      (await readState(deps.destination, { kind: 'high_water_mark', stream: pass }))?.high_water_mark ?? null;
    const spec = deps.destination.writtenSpec(table);
    const ticketsSeen = await ticketsSeenBySweep(deps, [...stored.values()]);
    const judged = judge(spec, served, stored, {
      rawKeys: 'all',
      versionColumn: spec.versionColumn ?? seedColumn,
      readAt: syncedAt,
      readThrough: hwm,
      // The export serves a survey exactly while its ticket exists (spec 2.7 rule 7): a survey whose ticket
      // the current sweep listed and that is not served now lost its ticket since.
      goneSince: (row) => ticketsSeen.has(String(row['ticket_id'])),
    });
    const queue = [restartedCheckpoint({ kind: 'reread', pass, from, before })];
    const compared = await settle(deps, { runId: input.runId, table, judged, queue });
    return { compared, coveredFrom: from, coveredUntil };
  };
}

/** When the current (or last) sweep of the ticket list began: every ticket it listed is stamped later. */
async function sweepBegan(deps: ActivityDeps): Promise<string | null> {
  return (await readState(deps.destination, { kind: 'sweep' }))?.high_water_mark ?? null;
}

/** Of the tickets these rows belong to (`ticket_id`), those the current sweep listed, live in the warehouse. */
async function ticketsSeenBySweep(deps: ActivityDeps, rows: readonly WarehouseRow[]): Promise<Set<string>> {
  const ids = [...new Set(rows.flatMap((r) => (typeof r['ticket_id'] === 'string' ? [r['ticket_id']] : [])))];
  if (ids.length === 0) return new Set();
  const sweptAt = await sweepBegan(deps);
  const tickets = await storedRows(deps, 'tickets', idIn(ids));
  return new Set([...tickets].filter(([, t]) => later(syncedAt(t), sweptAt)).map(([id]) => id));
}

function requireTicketNumber(seed: AuditSeed): number {
  if (seed.ticketNumber === null) throw new Error(`audit seed ${seed.id} has no ticket number`);
  return seed.ticketNumber;
}

const syncedAt = (row: WarehouseRow) => (row['_synced_at'] as string | null) ?? null;

function within(
  rows: ReadonlyMap<string, WarehouseRow>,
  keep: (id: string, row: WarehouseRow) => boolean,
): Map<string, WarehouseRow> {
  return new Map([...rows].filter(([id, row]) => keep(id, row)));
}
