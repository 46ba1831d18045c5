import type { StateAddress } from '../../schemas/state-key.js';
import {
  byText,
  type Checkpoint,
  type CheckpointStatus,
  Freshness,
  OpenRejections,
  type StoredVersion,
  type TableSpec,
} from '../../schemas/warehouse.js';
import { DestinationError } from '../errors.js';
import {
  type KeyValue,
  STATE_TABLES,
  type StateTable,
  stateColumnsOf,
  stateTableNamed,
  stateTableOf,
} from '../state-tables.js';
import { limitClause, parsedRows, type SqlSession, statement } from './dialect.js';

/*
 * The reads of what the warehouse holds and how far the sync got (the state tables, `_rejected`), written
 * once against the dialect: the same SQL and the same normalized rows on every destination.
 */

/** Which checkpoints to read: every condition given must hold. */
export interface CheckpointQuery {
  readonly stream?: string | undefined;
  readonly status?: CheckpointStatus | undefined;
  /** At most this many, in (stream, scope) order. */
  readonly limit?: number | undefined;
}

/** The checkpoint at `at`, from the state table that holds its key. */
export async function readCheckpointAt(
  session: SqlSession,
  context: string,
  at: StateAddress,
): Promise<Checkpoint | null> {
  const table = stateTableOf(at);
  const [checkpoint] = await readStateTable(session, context, table, { key: table.keyOf(at)! });
  return checkpoint ?? null;
}

/**
 * The checkpoints of every state table but the thread queue (`_sync_state`, `_reread_queue`), in
 * (stream, scope) order; a re-read entry's stream is its pass.
 */
export async function readCheckpoints(
  session: SqlSession,
  context: string,
  { limit, ...where }: CheckpointQuery,
): Promise<Checkpoint[]> {
  const tables = STATE_TABLES.filter((t) => t.streamColumn !== null);
  const lists = [];
  for (const table of tables) lists.push(await readStateTable(session, context, table, { ...where, limit }));
  return lists
    .flat()
    .sort((a, b) => byText(a.stream, b.stream) || byText(a.scope, b.scope))
    .slice(0, limit);
}

/** Which thread-queue entries to read: every condition given must hold. */
export interface ThreadQueueQuery {
  readonly status?: CheckpointStatus | undefined;
  /** Ticket numbers from `from` to `to`, both included (the key's index: a batch's threads). */
  readonly ticketNumbers?: { readonly from: number; readonly to: number } | undefined;
  /** At most this many, in ticket-number order. */
  readonly limit?: number | undefined;
}

/** `_thread_queue` rows as the checkpoints of their `thread` keys, in ticket-number order. */
export function readThreadQueue(
  session: SqlSession,
  context: string,
  query: ThreadQueueQuery,
): Promise<Checkpoint[]> {
  return readStateTable(session, context, stateTableNamed('_thread_queue'), query);
}

/** Rows of one state table as checkpoints, in key order: by its key, its stream column, its status. */
async function readStateTable(
  session: SqlSession,
  context: string,
  table: StateTable,
  where: CheckpointQuery & {
    readonly key?: readonly KeyValue[];
    readonly ticketNumbers?: ThreadQueueQuery['ticketNumbers'];
  },
): Promise<Checkpoint[]> {
  const d = session.dialect;
  const query = statement(d, (bind) => {
    const value = (v: KeyValue) => (typeof v === 'number' ? bind(v, 'integer') : bind(v, 'string'));
    const conditions = [
      ...(where.key ?? []).map((v, i) => `${d.ident(table.keyColumns[i]!)} = ${value(v)}`),
      ...(where.stream !== undefined && table.streamColumn !== null
        ? [`${d.ident(table.streamColumn)} = ${bind(where.stream, 'string')}`]
        : []),
      ...(where.status === undefined ? [] : [`status = ${bind(where.status, 'string')}`]),
      ...(where.ticketNumbers === undefined
        ? []
        : [
            `${d.ident('ticket_number')} BETWEEN ${bind(where.ticketNumbers.from, 'integer')} AND ${bind(where.ticketNumbers.to, 'integer')}`,
          ]),
    ];
    const filter = conditions.length > 0 ? ` WHERE ${conditions.join(' AND ')}` : '';
    return `SELECT ${stateColumnsOf(table)
      .map((c) => d.ident(c))
      .join(', ')} FROM ${d.table(table.name)}${filter}
      ORDER BY ${table.keyColumns.map((c) => d.ident(c)).join(', ')}${limitClause(where.limit)}`;
  });
  return parsedRows(session, context, query, (row) => table.checkpointOf(row));
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
