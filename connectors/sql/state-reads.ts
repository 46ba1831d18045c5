import {
  Checkpoint,
  type CheckpointStatus,
  Freshness,
  OpenRejections,
  type StoredVersion,
  type TableSpec,
} from '../../schemas/warehouse.js';
import { DestinationError } from '../errors.js';
import { checkpointOfQueueEntry, THREAD_QUEUE_COLUMNS } from '../state-tables.js';
import { limitClause, parsedRows, type SqlSession, statement } from './dialect.js';

/*
 * The reads of what the warehouse holds and how far the sync got (`_sync_state`, `_thread_queue`), written
 * once against the dialect: the same SQL and the same normalized rows on every destination.
 */

const CHECKPOINT_COLUMNS = Object.keys(Checkpoint.shape);

/** Which checkpoints to read: every condition given must hold. */
export interface CheckpointQuery {
  readonly stream?: string | undefined;
  readonly scope?: string | undefined;
  readonly status?: CheckpointStatus | undefined;
  /** At most this many, in (stream, scope) order. */
  readonly limit?: number | undefined;
}

/** `_sync_state` rows in (stream, scope) order. */
export async function readCheckpoints(
  session: SqlSession,
  context: string,
  { limit, ...where }: CheckpointQuery,
): Promise<Checkpoint[]> {
  const d = session.dialect;
  const query = statement(d, (bind) => {
    const conditions = Object.entries(where)
      .filter(([, value]) => value !== undefined)
      .map(([column, value]) => `${d.ident(column)} = ${bind(value as string, 'string')}`);
    const filter = conditions.length > 0 ? ` WHERE ${conditions.join(' AND ')}` : '';
    return `SELECT ${CHECKPOINT_COLUMNS.map((c) => d.ident(c)).join(', ')} FROM ${d.table('_sync_state')}${filter}
      ORDER BY stream, scope${limitClause(limit)}`;
  });
  return parsedRows(session, context, query, (row) => Checkpoint.parse(row));
}

/** Which thread-queue entries to read: every condition given must hold. */
export interface ThreadQueueQuery {
  readonly ticketNumber?: number | undefined;
  readonly status?: CheckpointStatus | undefined;
  /** At most this many, in ticket-number order. */
  readonly limit?: number | undefined;
}

/** `_thread_queue` rows as the checkpoints of their `thread` keys, in ticket-number order. */
export async function readThreadQueue(
  session: SqlSession,
  context: string,
  { ticketNumber, status, limit }: ThreadQueueQuery,
): Promise<Checkpoint[]> {
  const d = session.dialect;
  const query = statement(d, (bind) => {
    const conditions = [
      ...(ticketNumber === undefined ? [] : [`ticket_number = ${bind(ticketNumber, 'integer')}`]),
      ...(status === undefined ? [] : [`status = ${bind(status, 'string')}`]),
    ];
    const filter = conditions.length > 0 ? ` WHERE ${conditions.join(' AND ')}` : '';
    return `SELECT ${THREAD_QUEUE_COLUMNS.map((c) => d.ident(c)).join(', ')} FROM ${d.table('_thread_queue')}${filter}
      ORDER BY ticket_number${limitClause(limit)}`;
  });
  return parsedRows(session, context, query, checkpointOfQueueEntry);
}

/** id → stored version and content hash of the live rows of `spec` among `ids` (see Destination). */
export async function storedVersions(
  session: SqlSession,
  spec: TableSpec<unknown>,
  ids: readonly string[],
): Promise<Map<string, StoredVersion>> {
  if (spec.primaryKey.length !== 1)
    throw new DestinationError(`storedVersions: ${spec.name} has a composite key`);
  if (ids.length === 0) return new Map();
  const d = session.dialect;
  const pk = `t.${d.ident(spec.primaryKey[0]!)}`;
  const version = spec.versionColumn
    ? `t.${d.ident(spec.versionColumn)}`
    : `CAST(NULL AS ${d.type('timestamp')})`;
  const live = spec.tracksDeletion ? ` AND t.${d.ident('_deleted_at')} IS NULL` : '';
  const query = statement(
    d,
    (bind) => `SELECT CAST(${pk} AS ${d.type('string')}) AS id, ${version} AS version,
        t.${d.ident('_content_hash')} AS hash
      FROM ${d.table(spec.name)} t WHERE ${d.isIn(pk, bind(ids, 'string_list'))}${live}`,
  );
  const text = (v: unknown) => (v ?? null) as string | null;
  const rows = await parsedRows(session, 'storedVersions', query, (r) => ({
    id: String(r['id']),
    stored: { version: text(r['version']), contentHash: text(r['hash']) },
  }));
  return new Map(rows.map((r) => [r.id, r.stored]));
}

/** Ticket numbers of live tickets whose thread was last read completely before `verifiedBefore`, oldest first. */
export async function staleThreads(
  session: SqlSession,
  verifiedBefore: Date,
  limit: number,
): Promise<string[]> {
  const d = session.dialect;
  const query = statement(
    d,
    (bind) => `SELECT q.ticket_number FROM ${d.table('_thread_queue')} q
      JOIN ${d.table('tickets')} t ON t.ticket_number = q.ticket_number AND t.${d.ident('_deleted_at')} IS NULL
      WHERE q.status = 'complete' AND q.updated_at < ${bind(verifiedBefore, 'timestamp')}
      ORDER BY q.updated_at, q.ticket_number${limitClause(limit)}`,
  );
  return parsedRows(session, 'staleThreads', query, (row) => String(row['ticket_number']));
}

/** The open items of `_rejected`, counted per table, stream and scope. */
export async function openRejections(session: SqlSession): Promise<OpenRejections[]> {
  const d = session.dialect;
  const key = ['table_name', 'stream', 'scope'].map((c) => d.ident(c)).join(', ');
  const query = statement(
    d,
    () => `SELECT ${key}, COUNT(*) AS items FROM ${d.table('_rejected')}
      WHERE ${d.ident('resolved_at')} IS NULL GROUP BY ${key} ORDER BY ${key}`,
  );
  return parsedRows(session, 'openRejections', query, (row) => OpenRejections.parse(row));
}

/** How current tickets and threads are known to be (for `status`). */
export async function freshness(session: SqlSession): Promise<Freshness> {
  const d = session.dialect;
  const tickets = statement(
    d,
    () => `SELECT COUNT(*) AS live, MIN(${d.ident('_synced_at')}) AS oldest
      FROM ${d.table('tickets')} WHERE ${d.ident('_deleted_at')} IS NULL`,
  );
  // A live ticket without a thread-queue entry was never queued: unread, like a queued one.
  const threads = statement(
    d,
    () => `SELECT COUNT(*) AS live,
        COUNT(CASE WHEN q.status IS NULL OR q.status <> 'complete' THEN 1 END) AS unread,
        MIN(CASE WHEN q.status = 'complete' THEN q.updated_at END) AS oldest
      FROM ${d.table('tickets')} t
      LEFT JOIN ${d.table('_thread_queue')} q ON q.ticket_number = t.ticket_number
      WHERE t.${d.ident('_deleted_at')} IS NULL`,
  );
  return session.withErrorMapping('freshness', async () => {
    const [t] = await session.rows(tickets);
    const [m] = await session.rows(threads);
    return Freshness.parse({
      tickets: { live: t?.['live'] ?? 0, oldestVerifiedAt: t?.['oldest'] ?? null },
      threads: {
        live: m?.['live'] ?? 0,
        unread: m?.['unread'] ?? 0,
        oldestVerifiedAt: m?.['oldest'] ?? null,
      },
    });
  });
}
