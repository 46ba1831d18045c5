import type { z } from 'zod';
import type { AuditUnit } from '../schemas/audit.js';
import type { StreamFacts, StreamKind } from '../schemas/streams.js';
import type { StreamTable } from '../schemas/warehouse/table-spec.js';

/**
 * A stream's definition: everything the sync knows of one stream, declared in one module (streams/<name>.ts)
 * and listed once in the registry (streams/registry.ts). The generic machinery — the page path, the table
 * catalog, freshness, the audit, preflight, the forecast — reads these declarations; none of it names a
 * stream. A definition is data and plain functions only, on the ground floor with schemas/: workflows import
 * the registry, so a stream module imports neither node built-ins nor network clients. How a page is asked
 * for is declared (`PageSpec`); the connector turns the declaration into a request
 * (connectors/support-api/stream-pages.ts).
 */

/** What a page of a whole list (reference streams, tickets) needs besides its cursor. */
export interface ListRead {
  readonly limit: number;
}
/** What a page of an export window needs besides its cursor: the window `[from, before)`. */
export interface WindowRead {
  readonly limit: number;
  readonly from: string;
  readonly before: string;
  /** Ask for the stream's extras (its definition's `extras`), when it has any. */
  readonly extras: boolean;
}
/** What a page of a ticket's thread needs besides its cursor. */
export interface ThreadRead {
  readonly ticketNumber: number;
}

/**
 * How a page of the stream (or pass) is asked for: `GET` of its endpoint, each `:name` segment filled with
 * the read's field of that name, with the page's cursor and limit and these.
 */
export interface PageSpec<R> {
  /** What an item of the page is (its `data` entries). */
  readonly item: z.ZodType;
  /** What the page's `meta` is, where the endpoint answers one. */
  readonly meta?: z.ZodType;
  /** Query parameters besides the cursor, the limit and (an export's) window. */
  readonly query?: (read: R) => Readonly<Record<string, string | undefined>>;
  /** The page size the stream always asks for (a thread: the most the API serves); else the read's. */
  readonly limit?: number;
  /** The largest page size the endpoint takes: a larger one is refused before any request. */
  readonly maxLimit?: number;
}

/** An export pass's page: a window `[from, before)` under the names the endpoint gives it. */
export interface WindowPageSpec extends PageSpec<WindowRead> {
  /** The window's parameters; `from` and `before` unless said otherwise. */
  readonly window?: { readonly from: string; readonly before: string };
}

/** How an export pass's items are placed in time and what their number follows between windows (forecast). */
export interface PassForecast {
  /** The column the export filters on (by its UTC day the warehouse's items are placed). */
  readonly dateColumn: string;
  /** What the pass's volume follows: the tickets created (a survey is sent on a ticket) or the calendar. */
  readonly basis: 'tickets' | 'days';
}

/** An export pass: its page and its forecast basis. */
export interface PassDefinition {
  readonly page: WindowPageSpec;
  readonly forecast: PassForecast;
  /**
   * Another pass of the stream whose read from the history's start returns every item this one would over
   * the same range: on a first read this pass reads nothing and its high-water mark follows that pass's.
   */
  readonly firstReadCoveredBy?: string;
  /**
   * A full refresh re-reads every item of this pass since the start date: afterwards, rows of the table
   * within that range (by the pass's `forecast.dateColumn`) it did not receive are marked deleted. Older
   * rows were not re-read and stay as they are.
   */
  readonly fullRefreshMarksUnseen?: boolean;
}

interface Common<T extends z.ZodObject> {
  readonly name: string;
  /** The table's declaration; null where the table is built elsewhere (the report tables hold query results). */
  readonly warehouse: StreamTable<T> | null;
  /**
   * The field of its items that says how recent an item is, the same on the API item and in the warehouse
   * column: how far the warehouse lags the source (schemas/freshness.ts). None for streams read whole.
   */
  readonly freshness?: keyof z.infer<T> & string;
  /**
   * How stale `_synced_at` may grow before the table's dbt source freshness warns and errs: tables every
   * run refreshes (the sweep, the threads, the export windows). None: no freshness check (a stalled sync
   * does not show in the table's `_synced_at`).
   */
  readonly freshnessTarget?: { readonly warnHours: number; readonly errorHours: number };
  /** How the field-level audit re-reads a row of the table; none: not audited. */
  readonly audit?: AuditUnit;
  /**
   * Its rows belong to a ticket (by `ticket_id`) and are marked deleted when their ticket is (in the runs
   * that select the stream); `revive`: also unmarked when the ticket is back (the source serves the rows
   * exactly while their ticket exists, so nothing re-reads them otherwise).
   */
  readonly followsTicketDeletion?: { readonly revive: boolean };
}

/**
 * What a stream reads only when the run asks (`SyncSettings.csatIncludeComments`, `SYNC_CSAT_COMMENTS`):
 * its fetchers see `extras` in their read, and preflight names the scope asking needs.
 */
export interface StreamExtras {
  /** What the extras are, for preflight's answer (`CSAT comments`). */
  readonly what: string;
  /** The key scope asking for them needs besides the stream's own. */
  readonly scope: `${string}:read`;
  /** How to read the stream without them when the key lacks that scope. */
  readonly without: string;
}

type Entry<K extends StreamKind> = StreamFacts &
  (K extends 'export'
    ? { readonly kind: K; readonly passes: readonly [string, ...string[]] }
    : { readonly kind: K; readonly passes?: never });

/** A stream's definition, by kind: an export has passes, each with its page; the others one page. */
export type StreamDefinition<T extends z.ZodObject = z.ZodObject> =
  | (Common<T> &
      Entry<'export'> & {
        readonly passDefinitions: { readonly [pass: string]: PassDefinition };
        readonly extras?: StreamExtras;
      })
  | (Common<T> &
      Entry<'reference'> & {
        readonly page: PageSpec<ListRead>;
        /** One unpaginated answer holds the whole list: one request per run, whatever the page size. */
        readonly unpaginated?: boolean;
      })
  | (Common<T> & Entry<'tickets'> & { readonly page: PageSpec<ListRead> })
  | (Common<T> & Entry<'threads'> & { readonly page: PageSpec<ThreadRead> })
  | (Common<T> & Entry<'report'>);

/**
 * Checks a definition against its kind and keeps its literal types (names, passes, table) for the registry.
 * An export's pass definitions must name exactly its passes, and a freshness stamp must be a field of the
 * table's items: both are checked when the registry is built (schemas/streams.ts).
 */
export function defineStream<const D extends StreamDefinition>(definition: D): D {
  return definition;
}
