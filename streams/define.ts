import type { z } from 'zod';
import type { SupportApiClient } from '../connectors/support-api/client.js';
import type { Page } from '../connectors/support-api/paginate.js';
import type { StreamFacts, StreamKind, StreamRouteClass } from '../schemas/streams.js';
import type { ApiTableDef } from '../schemas/warehouse/table-spec.js';

/**
 * A stream's definition: everything the sync knows of one stream, declared in one module (streams/<name>.ts)
 * and listed once in the registry (streams/registry.ts). The generic machinery — the page path, the table
 * catalog, freshness, the audit, preflight, the forecast — reads these declarations; none of it names a
 * stream. A definition is data and plain functions only: workflows import the registry, so a stream module
 * imports neither node built-ins nor network clients (its fetchers call the API's page functions with the
 * client the activity hands them).
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
  /** CSAT only: ask for comments (needs `tickets:read` besides `analytics:read`). */
  readonly includeComments: boolean;
}
/** What a page of a ticket's thread needs besides its cursor. */
export interface ThreadRead {
  readonly ticketNumber: number;
}

/** One page of the stream (or pass) from the API, with what its kind reads. */
export type Fetcher<R> = (
  client: SupportApiClient,
  read: R,
  cursor: string | null,
) => Promise<Page<unknown, unknown>>;

/**
 * The warehouse table a stream fills, as the table catalog (schemas/warehouse/tables.ts) builds it: the
 * spec's declaration without its name, which is the stream's `table`.
 */
export type StreamTable<T extends z.ZodObject = z.ZodObject> = Omit<ApiTableDef<T>, 'name'>;

/** How an export pass's items are placed in time and what their number follows between windows (forecast). */
export interface PassForecast {
  /** The column the export filters on (by its UTC day the warehouse's items are placed). */
  readonly dateColumn: string;
  /** What the pass's volume follows: the tickets created (a survey is sent on a ticket) or the calendar. */
  readonly basis: 'tickets' | 'days';
}

/** An export pass: its fetcher and its forecast basis. */
export interface PassDefinition {
  readonly fetch: Fetcher<WindowRead>;
  readonly forecast: PassForecast;
  /**
   * Another pass of the stream whose read from the history's start returns every item this one would over
   * the same range: on a first read this pass reads nothing and its high-water mark follows that pass's.
   */
  readonly firstReadCoveredBy?: string;
}

/** How the field-level audit re-reads a row of the stream's table (schemas/audit.ts). */
export interface AuditUnit {
  /**
   * `ticket`: `GET /tickets/:ticketNumber` of a sampled ticket; `thread`: the first page of a sampled
   * message's thread; `window`: the first page of a narrow export window around a sampled row's date.
   */
  readonly unit: 'ticket' | 'thread' | 'window';
  /** The route class of that one request, when it is not the stream's (a ticket by number is a detail read). */
  readonly routeClass?: StreamRouteClass;
  /** The column a sampled row's unit starts from: its ticket's number, or its date. */
  readonly seedColumn: string;
  /** `window`: the pass whose export the window reads. */
  readonly pass?: string;
  /** Progress entries of a run that must have succeeded for the run to audit the table. */
  readonly streams: readonly string[];
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
  /** How the field-level audit re-reads a row of the table; none: not audited. */
  readonly audit?: AuditUnit;
}

type Entry<K extends StreamKind> = StreamFacts &
  (K extends 'export'
    ? { readonly kind: K; readonly passes: readonly [string, ...string[]] }
    : { readonly kind: K; readonly passes?: never });

/** A stream's definition, by kind: an export has passes, each with its fetcher; the others one fetcher. */
export type StreamDefinition<T extends z.ZodObject = z.ZodObject> =
  | (Common<T> & Entry<'export'> & { readonly passDefinitions: { readonly [pass: string]: PassDefinition } })
  | (Common<T> &
      Entry<'reference'> & {
        readonly fetch: Fetcher<ListRead>;
        /** One unpaginated answer holds the whole list: one request per run, whatever the page size. */
        readonly unpaginated?: boolean;
      })
  | (Common<T> & Entry<'tickets'> & { readonly fetch: Fetcher<ListRead> })
  | (Common<T> & Entry<'threads'> & { readonly fetch: Fetcher<ThreadRead> })
  | (Common<T> & Entry<'report'>);

/**
 * Checks a definition against its kind and keeps its literal types (names, passes, table) for the registry.
 * An export's pass definitions must name exactly its passes, and a freshness stamp must be a field of the
 * table's items: both are checked when the registry is built (schemas/streams.ts).
 */
export function defineStream<const D extends StreamDefinition>(definition: D): D {
  return definition;
}
