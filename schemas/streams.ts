import { z } from 'zod';
import type { PassDefinition, StreamDefinition } from '../streams/define.js';
import { STREAM_DEFINITIONS } from '../streams/registry.js';

/**
 * The stream registry: every stream's definition (streams/<name>.ts, listed in streams/registry.ts) by name,
 * and what derives from it. A definition says what kind of stream it is, the warehouse table it fills, the
 * route class of its requests (which picks its task queue, and so its share of the rate budget), the
 * endpoint it reads, the API key scope that needs, an export's passes, its pages, its table's
 * declaration, its freshness stamp and its audit unit. Everything that names streams derives from here:
 * `StreamName` (CLI `--streams`, `_sync_runs.stream`, the `SyncStream` search attribute), the reference
 * streams, the export passes and their stream, the class of every read endpoint
 * (connectors/support-api/route-classes.ts), the page fetchers (activities/fetchers.ts), the table catalog
 * (schemas/warehouse), freshness, the audit, the preflight probes and the forecast.
 *
 * Adding a stream of a kind that exists is its module plus one line in streams/registry.ts; a new kind also
 * needs its workflow lane (workflows/run/). Data only: workflows import it.
 */

/** Route classes the sync's reads use; each has its own task queue and its own share of the key's budget. */
export const STREAM_ROUTE_CLASSES = ['list', 'detail', 'analytics', 'directory'] as const;
export type StreamRouteClass = (typeof STREAM_ROUTE_CLASSES)[number];

/**
 * How a stream is read:
 *  - `reference`: a full snapshot every run (one workflow per stream); rows it did not return are deleted;
 *  - `tickets`: the sweep of the whole ticket list (architecture decision 4);
 *  - `threads`: ticket threads, from the queue the ticket pages fill;
 *  - `export`: time windows (≤ 90 × 24 h) per pass, each pass with its own high-water mark;
 *  - `report`: the saved report queries (REPORT_QUERIES), one snapshot each per run.
 */
export type StreamKind = 'reference' | 'tickets' | 'threads' | 'export' | 'report';

export interface StreamFacts {
  /** Warehouse table the stream fills (schemas/warehouse). */
  readonly table: string;
  readonly routeClass: StreamRouteClass;
  /** Method and path under `/public/v1` of the request its pages make; `:name` stands for one path segment. */
  readonly endpoint: `${'GET' | 'POST'} /${string}`;
  /** API key scope the endpoint needs (spec 4). */
  readonly scope: `${string}:read`;
  /**
   * Report and export endpoints answer only a key linked to a support agent (spec 5.8) with these dashboard
   * permissions (spec 4.13, 4.14); preflight names them when the source refuses a stream.
   */
  readonly agent?: { readonly dashboardPermissions: readonly string[] };
}

/** One entry of the registry: an export names its passes, other kinds have none. */
export type StreamEntry =
  | (StreamFacts & { readonly kind: Exclude<StreamKind, 'export'>; readonly passes?: never })
  | (StreamFacts & { readonly kind: 'export'; readonly passes: readonly [string, ...string[]] });

export type StreamRegistry = Readonly<Record<string, StreamEntry>>;

/** The field by which the rows of a stream that follows ticket deletion name their ticket. */
export const TICKET_FOREIGN_KEY = 'ticket_id';

/** The registry, by name, in STREAM_DEFINITIONS' order: every stream's definition (streams/<name>.ts). */
export const STREAMS = registryOf(STREAM_DEFINITIONS);

function isItemField(definition: StreamDefinition, field: string): boolean {
  return definition.warehouse !== null && field in definition.warehouse.schema.shape;
}

/** What the type checker cannot see wrong in a definition, or null. */
function definitionProblem(
  definition: StreamDefinition,
  registry: Record<string, StreamDefinition>,
): string | null {
  if (Object.hasOwn(registry, definition.name)) return 'another stream has that name';
  if (definition.kind === 'export') {
    const defined = Object.keys(definition.passDefinitions).sort().join(', ');
    if (defined !== [...definition.passes].sort().join(', ')) {
      return `passes ${definition.passes.join(', ')} but pass definitions for ${defined}`;
    }
    for (const [pass, { firstReadCoveredBy, fullRefreshMarksUnseen, forecast }] of Object.entries(
      definition.passDefinitions,
    )) {
      if (firstReadCoveredBy !== undefined && !definition.passes.includes(firstReadCoveredBy)) {
        return `pass ${pass} is covered by ${firstReadCoveredBy}, no pass of the stream`;
      }
      if (fullRefreshMarksUnseen === true && !isItemField(definition, forecast.dateColumn)) {
        return `pass ${pass} marks unseen rows by ${forecast.dateColumn}, no field of its items`;
      }
    }
  }
  const stamp = 'freshness' in definition ? definition.freshness : undefined;
  if (stamp !== undefined && !isItemField(definition, stamp)) {
    return `its freshness stamp ${stamp} is no field of its items`;
  }
  const target = definition.freshnessTarget;
  if (target !== undefined && !(target.warnHours > 0 && target.warnHours <= target.errorHours)) {
    return `its freshness target warns after ${target.warnHours} h and errs after ${target.errorHours} h`;
  }
  if (definition.followsTicketDeletion !== undefined && !isItemField(definition, TICKET_FOREIGN_KEY)) {
    return `it follows ticket deletion but its items have no ${TICKET_FOREIGN_KEY}`;
  }
  return null;
}

/** A list of definitions as a registry keyed by their names, in the list's order. */
export function registryOf<const L extends readonly StreamDefinition[]>(
  definitions: L,
): { readonly [D in L[number] as D['name']]: D } {
  const registry: Record<string, StreamDefinition> = {};
  for (const definition of definitions) {
    const problem = definitionProblem(definition, registry);
    if (problem !== null) throw new TypeError(`stream ${JSON.stringify(definition.name)}: ${problem}`);
    registry[definition.name] = definition;
  }
  return registry as { readonly [D in L[number] as D['name']]: D };
}

type Streams = typeof STREAMS;

// ---------------------------------------------------------------------------------------------------------
// Derived from a registry (functions, so that a test can hand them a registry with a toy stream)

/** The registry's stream names, in its order. */
export function namesOf<R extends StreamRegistry>(registry: R): (keyof R & string)[] {
  return Object.keys(registry) as (keyof R & string)[];
}

/** Names of the streams of one kind. */
export type StreamsOfKind<R extends StreamRegistry, K extends StreamKind> = {
  [S in keyof R & string]: R[S]['kind'] extends K ? S : never;
}[keyof R & string];

export function streamsOfKind<R extends StreamRegistry, K extends StreamKind>(
  registry: R,
  kind: K,
): StreamsOfKind<R, K>[] {
  return namesOf(registry).filter((s): s is StreamsOfKind<R, K> => registry[s]!.kind === kind);
}

/** The passes of the export streams, in the registry's order. */
export function passesOf(registry: StreamRegistry): string[] {
  return Object.values(registry).flatMap((entry) => entry.passes ?? []);
}

/** The export stream a pass belongs to. */
export function streamOfPassIn<R extends StreamRegistry>(registry: R, pass: string): keyof R & string {
  const stream = namesOf(registry).find((s) => registry[s]!.passes?.includes(pass));
  if (stream === undefined) throw new TypeError(`no export stream has the pass ${JSON.stringify(pass)}`);
  return stream;
}

/**
 * A comma-separated list of stream names (`SYNC_STREAMS`, `--streams`) as the registry's names in its
 * order, each once; or the problem, naming the bad name and the valid ones.
 */
export function streamListIn<R extends StreamRegistry>(
  registry: R,
  text: string,
): { streams: (keyof R & string)[] } | { problem: string } {
  const known = namesOf(registry);
  const names = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = names.find((name) => !known.includes(name));
  if (unknown !== undefined) return { problem: `unknown stream "${unknown}" (streams: ${known.join(', ')})` };
  if (names.length === 0) return { problem: `names no stream (streams: ${known.join(', ')})` };
  return { streams: known.filter((s) => names.includes(s)) };
}

/** The key scopes a set of streams needs, sorted. */
export function scopesOf(registry: StreamRegistry, streams: readonly string[]): string[] {
  return [...new Set(streams.map((s) => registry[s]!.scope))].sort();
}

// ---------------------------------------------------------------------------------------------------------
// Derived from STREAMS

/** Streams as users name them (CLI `--streams`, `_sync_runs.stream`, the `SyncStream` search attribute). */
export type StreamName = keyof Streams;
export const StreamName = z.enum(namesOf(STREAMS) as [StreamName, ...StreamName[]]);
export const ALL_STREAMS = StreamName.options;

/** `SYNC_STREAMS` / `--streams`: see streamListIn. */
export function streamList(text: string): { streams: StreamName[] } | { problem: string } {
  return streamListIn(STREAMS, text);
}

/** Names of the registry's streams of one kind. */
export type StreamOfKind<K extends StreamKind> = StreamsOfKind<Streams, K>;

export type ReferenceStream = StreamOfKind<'reference'>;
export const REFERENCE_STREAMS = streamsOfKind(STREAMS, 'reference') as [
  ReferenceStream,
  ...ReferenceStream[],
];
export const ReferenceStream = z.enum(REFERENCE_STREAMS);

export type ExportStream = StreamOfKind<'export'>;
export const EXPORT_STREAMS: readonly ExportStream[] = streamsOfKind(STREAMS, 'export');

/** Export passes, each with its own windows and high-water mark. */
export type ExportPass = Streams[ExportStream]['passes'][number];
export const ExportPass = z.enum(passesOf(STREAMS) as [ExportPass, ...ExportPass[]]);
export const EXPORT_PASSES: Readonly<Record<ExportStream, readonly ExportPass[]>> = Object.fromEntries(
  EXPORT_STREAMS.map((stream) => [stream, STREAMS[stream].passes]),
) as Record<string, readonly ExportPass[]> as Record<ExportStream, readonly ExportPass[]>;

/**
 * A pass whose read from the history's start another pass of its stream already covers (its definition's
 * `firstReadCoveredBy`): the covered pass then reads nothing on a first read and its mark follows the
 * covering pass's.
 */
export const FIRST_READ_COVERED_BY = Object.fromEntries(
  Object.values(STREAMS).flatMap((s) =>
    s.kind === 'export'
      ? Object.entries(s.passDefinitions as Record<string, PassDefinition>).flatMap(([pass, definition]) =>
          definition.firstReadCoveredBy === undefined ? [] : [[pass, definition.firstReadCoveredBy]],
        )
      : [],
  ),
) as Readonly<Partial<Record<ExportPass, ExportPass>>>;

/** The stream of ticket threads: the one stream of kind `threads`, read from the queue the ticket pages fill. */
export type ThreadsStream = StreamOfKind<'threads'>;
export const THREADS_STREAM: ThreadsStream = onlyOfKind('threads');

/** The one stream of a kind the run has one lane for (its workflow reads that stream's queue). */
function onlyOfKind<K extends StreamKind>(kind: K): StreamOfKind<K> {
  const [only, ...more] = streamsOfKind(STREAMS, kind);
  if (only === undefined || more.length > 0) {
    throw new TypeError(
      `the ${kind} lane reads one stream; the registry has ${[only, ...more].filter(Boolean).join(', ') || 'none'}`,
    );
  }
  return only;
}

/**
 * The passes a full refresh re-reads whole since the start date (their definition's
 * `fullRefreshMarksUnseen`), with their stream's table and the column their range is of: afterwards the
 * rows of that range the pass did not receive are marked deleted.
 */
export const FULL_REFRESH_MARKS_UNSEEN = Object.fromEntries(
  Object.values(STREAMS).flatMap((s) =>
    s.kind === 'export'
      ? Object.entries(s.passDefinitions as Record<string, PassDefinition>).flatMap(([pass, definition]) =>
          definition.fullRefreshMarksUnseen === true
            ? [[pass, { table: s.table, column: definition.forecast.dateColumn }]]
            : [],
        )
      : [],
  ),
) as Readonly<
  Partial<Record<ExportPass, { readonly table: Streams[ExportStream]['table']; readonly column: string }>>
>;

/** Streams whose rows follow their ticket's deletion (their definition's `followsTicketDeletion`). */
export type TicketFollower = {
  [S in StreamName]: Streams[S] extends { readonly followsTicketDeletion: object } ? S : never;
}[StreamName];
export const TICKET_FOLLOWERS = namesOf(STREAMS).filter(
  (s) => 'followsTicketDeletion' in STREAMS[s],
) as TicketFollower[];
export const TicketFollower = z.enum(TICKET_FOLLOWERS as [TicketFollower, ...TicketFollower[]]);

export function streamOfPass(pass: ExportPass): ExportStream {
  return streamOfPassIn(STREAMS, pass) as ExportStream;
}

/** The stream a page path's name belongs to: an export pass's stream, or the stream itself. */
export function streamOf(streamOrPass: string): StreamName {
  const parsed = StreamName.safeParse(streamOrPass);
  return parsed.success ? parsed.data : streamOfPass(ExportPass.parse(streamOrPass));
}
