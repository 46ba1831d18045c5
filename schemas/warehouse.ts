import { createHash } from 'node:crypto';
import { z } from 'zod';
import {
  Agent,
  AgentSession,
  CsatSurvey,
  Message,
  MetricCatalogEntry,
  ReportResult,
  Tag,
  Team,
  Ticket,
  Timestamp,
  View,
} from './api/index.js';

/**
 * The warehouse model: one table spec per warehouse table, derived from the API's zod schemas (columns are
 * computed by walking the object shapes, never restated), plus the two bookkeeping tables `_sync_state`
 * (checkpoints) and `_sync_runs`. Both destinations (PostgreSQL, BigQuery) build their DDL, staging and
 * merge from these specs. Every table and column is documented in docs/warehouse.md.
 */

// ---------------------------------------------------------------------------------------------------------
// Column types and timestamps
// ---------------------------------------------------------------------------------------------------------

/** Logical column types; each destination maps them (see its type map). */
export const ColumnType = z.enum(['string', 'integer', 'float', 'boolean', 'timestamp', 'json']);
export type ColumnType = z.infer<typeof ColumnType>;

export interface ColumnSpec {
  readonly name: string;
  readonly type: ColumnType;
  readonly nullable: boolean;
  readonly description: string;
  /**
   * Path of the value inside the item that `_raw` holds (derived columns), e.g. ['contact', 'email']. A
   * migration that adds the column fills existing rows from `_raw` along it; computed columns have none.
   */
  readonly path?: readonly string[];
  /** Allowed values when the source field is an enum (documentation only; the column stays a string). */
  readonly enumValues?: readonly string[];
}

const ISO_RE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:?\d{2})$/i;

/**
 * An ISO 8601 instant in the one form the warehouse stores and returns: UTC, microseconds,
 * `YYYY-MM-DDTHH:MM:SS.ffffffZ`. Equal instants give equal strings, and string order is time order, so
 * versions can be compared as strings. Input that is not an ISO instant is returned unchanged (the row
 * schema then reports it with the offending field).
 */
export function canonicalTimestamp(value: string | Date): string {
  if (value instanceof Date) return `${value.toISOString().slice(0, 23)}000Z`;
  const m = ISO_RE.exec(value);
  if (!m) return value;
  const [, y, mo, d, h, mi, s, frac = '', zone = 'Z'] = m;
  let offsetMin = 0;
  if (zone.toUpperCase() !== 'Z') {
    const sign = zone.startsWith('-') ? -1 : 1;
    const digits = zone.slice(1).replace(':', '');
    offsetMin = sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2, 4)));
  }
  const ms =
    Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s)) - offsetMin * 60_000;
  if (Number.isNaN(ms)) return value;
  return `${new Date(ms).toISOString().slice(0, 19)}.${frac.padEnd(6, '0').slice(0, 6)}Z`;
}

/** Compares two stored versions (canonical or any ISO instant): negative, 0 or positive; null is oldest. */
export function compareVersions(a: string | null, b: string | null): number {
  if (a === b) return 0;
  if (a === null) return -1;
  if (b === null) return 1;
  const ca = canonicalTimestamp(a);
  const cb = canonicalTimestamp(b);
  return ca < cb ? -1 : ca > cb ? 1 : 0;
}

/**
 * Strings the warehouses cannot hold are made storable the same way in every destination: U+0000 (which
 * PostgreSQL rejects in text and jsonb) and lone UTF-16 surrogates become U+FFFD. Everything else,
 * including astral characters and very long texts, is kept as is.
 */
export function storableString(value: string): string {
  const s = value as string & { isWellFormed(): boolean; toWellFormed(): string }; // ES2024, in Node 20
  const wellFormed = s.isWellFormed() ? value : s.toWellFormed();
  return wellFormed.includes('\u0000') ? wellFormed.replaceAll('\u0000', '\uFFFD') : wellFormed;
}

/** Deep copy of a JSON value with every string (keys included) made storable. */
export function storableJson(value: unknown): unknown {
  if (typeof value === 'string') return storableString(value);
  if (Array.isArray(value)) return value.map(storableJson);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) if (v !== undefined) out[storableString(k)] = storableJson(v);
    return out;
  }
  if (typeof value === 'number' && !Number.isFinite(value)) return null;
  return value;
}

// ---------------------------------------------------------------------------------------------------------
// Deriving columns from zod schemas
// ---------------------------------------------------------------------------------------------------------

interface ZodInternals {
  _zod: { def: { type: string; [k: string]: unknown }; bag: Record<string, unknown> };
}
const internals = (schema: unknown) => (schema as ZodInternals)._zod;

interface Leaf {
  type: ColumnType;
  nullable: boolean;
  enumValues?: readonly string[];
  /** Set when the leaf is a (non-flattened) object: its shape, for optional flattening. */
  shape?: Record<string, unknown>;
}

/** Maps one zod schema to a column type: wrappers set nullability, composites become JSON. */
function leafOf(schema: unknown): Leaf {
  const { def, bag } = internals(schema);
  switch (def.type) {
    case 'optional':
    case 'nullable':
      return { ...leafOf(def['innerType']), nullable: true };
    case 'default':
    case 'prefault':
    case 'readonly':
    case 'catch':
      return leafOf(def['innerType']);
    case 'pipe':
      return leafOf(def['out']);
    case 'string':
      return { type: def['format'] === 'datetime' ? 'timestamp' : 'string', nullable: false };
    case 'number': {
      const format = bag['format'] ?? (schema as { format?: string | null }).format;
      const isInt = format === 'safeint' || format === 'int32' || format === 'uint32' || format === 'int64';
      return { type: isInt ? 'integer' : 'float', nullable: false };
    }
    case 'bigint':
      return { type: 'integer', nullable: false };
    case 'boolean':
      return { type: 'boolean', nullable: false };
    case 'enum':
      return {
        type: 'string',
        nullable: false,
        enumValues: Object.values(def['entries'] as Record<string, string>),
      };
    case 'literal': {
      const values = def['values'] as unknown[];
      const first = values[0];
      const type: ColumnType =
        typeof first === 'number' ? 'float' : typeof first === 'boolean' ? 'boolean' : 'string';
      return { type, nullable: values.includes(null) };
    }
    case 'object':
      return { type: 'json', nullable: false, shape: def['shape'] as Record<string, unknown> };
    default:
      // array, record, union, tuple, unknown, any: kept whole as JSON
      return { type: 'json', nullable: false };
  }
}

interface DeriveOptions {
  /** Object fields flattened into `<field>_<sub>` columns (the JSON stays in `_raw`). */
  readonly flatten?: readonly string[];
  /** Fields left out of the typed columns (still in `_raw`). */
  readonly omit?: readonly string[];
  /** Column descriptions by column name. Every derived column must have one (checked at load). */
  readonly descriptions: Readonly<Record<string, string>>;
}

/** Walks a zod object's shape into columns. Flattened objects give nullable columns if the object is. */
export function deriveColumns(
  table: string,
  objectSchema: z.ZodObject,
  options: DeriveOptions,
): ColumnSpec[] {
  const columns: ColumnSpec[] = [];
  const describe = (name: string) => {
    const d = options.descriptions[name];
    if (d === undefined) throw new Error(`warehouse: column ${table}.${name} has no description`);
    return d;
  };
  for (const [field, fieldSchema] of Object.entries(objectSchema.shape)) {
    if (options.omit?.includes(field)) continue;
    const leaf = leafOf(fieldSchema);
    if (options.flatten?.includes(field) && leaf.shape) {
      for (const [sub, subSchema] of Object.entries(leaf.shape)) {
        const subLeaf = leafOf(subSchema);
        const name = `${field}_${sub}`;
        columns.push(
          column(
            name,
            subLeaf.shape ? 'json' : subLeaf.type,
            leaf.nullable || subLeaf.nullable,
            describe(name),
            {
              path: [field, sub],
              ...(subLeaf.enumValues ? { enumValues: subLeaf.enumValues } : {}),
            },
          ),
        );
      }
      continue;
    }
    columns.push(
      column(field, leaf.type, leaf.nullable, describe(field), {
        path: [field],
        ...(leaf.enumValues ? { enumValues: leaf.enumValues } : {}),
      }),
    );
  }
  return columns;
}

function column(
  name: string,
  type: ColumnType,
  nullable: boolean,
  description: string,
  extra: { path?: readonly string[]; enumValues?: readonly string[] } = {},
): ColumnSpec {
  return { name, type, nullable, description, ...extra };
}

// ---------------------------------------------------------------------------------------------------------
// Table specs
// ---------------------------------------------------------------------------------------------------------

/**
 * How a table decides whether an incoming row replaces the stored one. Content is compared through
 * `_content_hash` (see rowContentHash), so a change the source makes without moving its version — a field
 * only `_raw` has, a value fixed in place — still reaches the warehouse.
 *  - `version`: the incoming row wins when its version column is strictly greater, or equal with a
 *    different content hash (a stored NULL hash — a row from before hashes — counts as different); an older
 *    version never overwrites a newer one;
 *  - `content`: no source version exists; the incoming row wins when its content hash differs (identical
 *    content = no-op).
 */
export type MergeRule = { readonly kind: 'version'; readonly column: string } | { readonly kind: 'content' };

export interface TableSpec<Input = unknown> {
  readonly name: TableName;
  readonly description: string;
  readonly primaryKey: readonly string[];
  readonly merge: MergeRule;
  /** Version column name (for `storedVersions`), or null for content-rule tables. */
  readonly versionColumn: string | null;
  /** Whether the table has `_deleted_at` (rows can be marked deleted, never hard-deleted). */
  readonly tracksDeletion: boolean;
  /**
   * All columns in table order: typed columns, then `_raw`, `_synced_at`, `_deleted_at` (if tracked),
   * `_content_hash` (last, where an additive migration puts it in tables created before it existed).
   */
  readonly columns: readonly ColumnSpec[];
  /**
   * Zod schema of one warehouse row (all columns but `_synced_at`/`_deleted_at`, which the destination sets;
   * `_content_hash` included).
   */
  readonly rowSchema: z.ZodObject;
  /** Zod schema of the input accepted by `toRow`. */
  readonly inputSchema: z.ZodType<Input>;
  /** Maps an input to a row, `_content_hash` included (not validated; `toValidatedRows` does that). */
  toRow(input: Input): WarehouseRow;
  /** Secondary indexes BI queries need (PostgreSQL); each an ordered list of columns. */
  readonly indexes: readonly (readonly string[])[];
  /** BigQuery layout: daily partitioning column (timestamp) and up to four clustering columns. */
  readonly partitionBy: string | null;
  readonly clusterBy: readonly string[];
}

/** A warehouse row: column name → value (timestamps canonical strings, JSON as JS values). */
export type WarehouseRow = Record<string, unknown>;

/** Input of an API-backed table: the parsed item and the JSON object as received. */
export interface ApiRowInput<T> {
  readonly item: T;
  readonly raw: unknown;
}

const apiInput = <T extends z.ZodType>(item: T) => z.object({ item, raw: z.unknown() });

const RAW = column(
  '_raw',
  'json',
  false,
  'The item exactly as received from the API (forward compatibility: fields added later are here first).',
);
const SYNCED_AT = column(
  '_synced_at',
  'timestamp',
  false,
  'When a sync last received this row from the source (set on every write, also when the content did not change).',
);
const DELETED_AT = column(
  '_deleted_at',
  'timestamp',
  true,
  'When the sync found the row gone from the source (null while it exists). Rows are never hard-deleted.',
);
const CONTENT_HASH = column(
  '_content_hash',
  'string',
  true,
  "SHA-256 (hex) of the row's content: its typed columns and _raw as canonical JSON (keys sorted). The merge compares it to see a change the version does not show; null on rows written before the column existed (they count as changed).",
);

/** Columns that are bookkeeping, not content: left out of the content hash. */
const NOT_CONTENT = new Set(['_synced_at', '_deleted_at', '_content_hash']);

/**
 * JSON with object keys sorted at every depth, so equal content gives equal text whatever order the source
 * (or a JSON round-trip) put the keys in. Undefined object members are dropped, as JSON.stringify does.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v ?? null)).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  if (typeof value === 'bigint') return JSON.stringify(value.toString());
  return JSON.stringify(value ?? null);
}

/** `_content_hash` of a row: SHA-256 hex of the canonical JSON of its data columns and `_raw`. */
export function rowContentHash(row: WarehouseRow): string {
  const content: WarehouseRow = {};
  for (const [k, v] of Object.entries(row)) if (!NOT_CONTENT.has(k)) content[k] = v;
  return createHash('sha256').update(canonicalJson(content)).digest('hex');
}

function valueAt(item: unknown, path: readonly string[]): unknown {
  let v: unknown = item;
  for (const key of path) {
    if (v === null || v === undefined || typeof v !== 'object') return null;
    v = (v as Record<string, unknown>)[key];
  }
  return v === undefined ? null : v;
}

/** Converts an extracted value to its warehouse form; invalid values pass through for the row schema. */
function toColumnValue(type: ColumnType, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  switch (type) {
    case 'timestamp':
      return typeof value === 'string' || value instanceof Date ? canonicalTimestamp(value) : value;
    case 'string':
      return typeof value === 'string' ? storableString(value) : value;
    case 'json':
      return storableJson(value);
    default:
      return value;
  }
}

const TS_CANONICAL = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

function zodForColumn(c: ColumnSpec): z.ZodType {
  let base: z.ZodType;
  switch (c.type) {
    case 'string':
      base = z.string();
      break;
    case 'integer':
      base = z.number().int();
      break;
    case 'float':
      base = z.number();
      break;
    case 'boolean':
      base = z.boolean();
      break;
    case 'timestamp':
      base = z.string().regex(TS_CANONICAL, 'expected an ISO 8601 instant');
      break;
    case 'json':
      base = c.nullable ? z.unknown() : z.unknown().refine((v) => v !== null && v !== undefined, 'required');
      break;
  }
  return c.nullable ? base.nullable() : base;
}

interface ApiTableDef<T extends z.ZodObject> {
  name: TableName;
  description: string;
  schema: T;
  primaryKey: readonly string[];
  merge: MergeRule;
  tracksDeletion: boolean;
  derive: DeriveOptions;
  /** Columns computed from the item beyond its fields (e.g. a version), appended after the derived ones. */
  computed?: readonly (ColumnSpec & { compute: (item: z.infer<T>) => unknown })[];
  indexes: readonly (readonly string[])[];
  partitionBy: string | null;
  clusterBy: readonly string[];
}

function tableSpec<Input>(
  base: Omit<TableSpec<Input>, 'columns' | 'rowSchema' | 'versionColumn' | 'toRow'>,
  dataColumns: readonly ColumnSpec[],
  rowOf: (input: Input) => WarehouseRow,
): TableSpec<Input> {
  const columns = [
    ...dataColumns,
    RAW,
    SYNCED_AT,
    ...(base.tracksDeletion ? [DELETED_AT] : []),
    CONTENT_HASH,
  ];
  const rowColumns = [...dataColumns, RAW, CONTENT_HASH];
  const rowSchema = z.object(Object.fromEntries(rowColumns.map((c) => [c.name, zodForColumn(c)])));
  const names = new Set(columns.map((c) => c.name));
  for (const k of [...base.primaryKey, ...base.clusterBy, ...base.indexes.flat()])
    if (!names.has(k)) throw new Error(`warehouse: ${base.name} refers to unknown column ${k}`);
  if (base.merge.kind === 'version' && !names.has(base.merge.column))
    throw new Error(`warehouse: ${base.name} version column ${base.merge.column} is not a column`);
  return {
    ...base,
    columns,
    rowSchema,
    versionColumn: base.merge.kind === 'version' ? base.merge.column : null,
    // Hashed here, once for every table, so no table can forget it and writers compare like with like.
    toRow: (input) => {
      const row = rowOf(input);
      row['_content_hash'] = rowContentHash(row);
      return row;
    },
  };
}

function apiTable<T extends z.ZodObject>(def: ApiTableDef<T>): TableSpec<ApiRowInput<z.infer<T>>> {
  const derived = deriveColumns(def.name, def.schema, def.derive);
  const computed = def.computed ?? [];
  const dataColumns: ColumnSpec[] = [
    ...derived,
    ...computed.map(({ compute: _compute, ...c }) => c as ColumnSpec),
  ];
  return tableSpec<ApiRowInput<z.infer<T>>>(
    {
      name: def.name,
      description: def.description,
      primaryKey: def.primaryKey,
      merge: def.merge,
      tracksDeletion: def.tracksDeletion,
      inputSchema: apiInput(def.schema) as unknown as z.ZodType<ApiRowInput<z.infer<T>>>,
      indexes: def.indexes,
      partitionBy: def.partitionBy,
      clusterBy: def.clusterBy,
    },
    dataColumns,
    (input) => {
      const row: WarehouseRow = {};
      for (const c of derived) row[c.name] = toColumnValue(c.type, valueAt(input.item, c.path ?? [c.name]));
      for (const c of computed) row[c.name] = toColumnValue(c.type, c.compute(input.item));
      row['_raw'] = storableJson(input.raw ?? input.item);
      return row;
    },
  );
}

// --- tickets -------------------------------------------------------------------------------------------

const tickets = apiTable({
  name: 'tickets',
  description:
    'One row per ticket (GET /tickets with include=ticket_fields). Version: updated_at. Tickets gone from the source are marked with _deleted_at by a full refresh.',
  schema: Ticket,
  primaryKey: ['id'],
  merge: { kind: 'version', column: 'updated_at' },
  tracksDeletion: true,
  derive: {
    flatten: ['contact'],
    descriptions: {
      id: 'Ticket id (UUID). Primary key.',
      ticket_number: 'Human-facing ticket number (used in API paths).',
      subject: 'Subject line; null when the ticket has none.',
      status: 'Lifecycle status.',
      priority: 'Priority.',
      channel: 'Channel the ticket came in through.',
      created_at: 'When the ticket was created.',
      updated_at: 'When the ticket last changed (the version of the row).',
      tags: 'Tag names on the ticket (JSON array of strings).',
      contact_id: 'Contact id (UUID); null when the ticket has no contact.',
      contact_email: 'Contact e-mail address.',
      contact_first_name: 'Contact first name.',
      contact_last_name: 'Contact last name.',
      contact_phone: 'Contact phone number.',
      ticket_type: 'Regular ticket or side conversation.',
      parent_ticket_id: 'Parent ticket id for side conversations.',
      assignee_id: 'Assigned agent id (joins agents.id); null when unassigned.',
      team_id: 'Assigned team id (joins teams.id).',
      language: 'Detected or set language.',
      is_spam: 'Marked as spam.',
      resolved_at: 'When the ticket was last resolved.',
      ticket_fields:
        'Custom field values (JSON array of {field_id, name, type, value}); null when not requested.',
    },
  },
  indexes: [['created_at'], ['updated_at'], ['ticket_number'], ['assignee_id'], ['team_id'], ['status']],
  partitionBy: 'created_at',
  clusterBy: ['status', 'assignee_id', 'team_id', 'ticket_number'],
});

// --- ticket_messages -----------------------------------------------------------------------------------

const ticketMessages = apiTable({
  name: 'ticket_messages',
  description:
    'One row per thread item of a ticket (GET /tickets/:ticketNumber/messages). No source version: the latest sync wins when the content differs (delivery status changes over time). A full refresh re-reads every thread and sets _deleted_at on messages no longer served (e.g. of deleted tickets).',
  schema: Message,
  primaryKey: ['id'],
  merge: { kind: 'content' },
  tracksDeletion: true,
  derive: {
    descriptions: {
      id: 'Message id (UUID). Primary key.',
      ticket_id: 'Ticket id (joins tickets.id).',
      ticket_number: 'Ticket number (joins tickets.ticket_number).',
      role: 'Who wrote it: customer, agent or ai.',
      direction: 'inbound or outbound.',
      text: 'Plain-text body.',
      channel: 'Channel of the message.',
      author_name: 'Display name of the author.',
      status: 'Delivery status (queued, sent, delivered, failed or a later value). Can change.',
      created_at: 'When the message was created.',
      attachments: 'Attachments (JSON array of {id, file_name, mime_type, size, public_url}).',
    },
  },
  indexes: [['ticket_id', 'created_at'], ['ticket_number'], ['created_at']],
  partitionBy: 'created_at',
  clusterBy: ['ticket_id', 'role'],
});

// --- csat_surveys --------------------------------------------------------------------------------------

const csatVersion = (s: { submitted_at: string | null; sent_at: string }) => s.submitted_at ?? s.sent_at;

const csatSurveys = apiTable({
  name: 'csat_surveys',
  description:
    'One row per CSAT survey (GET /csat-surveys). Surveys are answered late; version: _version = coalesce(submitted_at, sent_at), which only grows (a survey is sent before it is answered). A full refresh re-reads every survey sent since the start date and marks those the export no longer serves (e.g. of deleted tickets, spec 2.7 rule 7) with _deleted_at.',
  schema: CsatSurvey,
  primaryKey: ['id'],
  merge: { kind: 'version', column: '_version' },
  tracksDeletion: true,
  derive: {
    descriptions: {
      id: 'Survey id (UUID). Primary key.',
      ticket_id: 'Ticket id (joins tickets.id).',
      ticket_number: 'Ticket number; null when unknown.',
      credited_agent_id: 'Agent credited with the survey (joins agents.id); null when unattributed.',
      credited_agent_name: 'Name of the credited agent at survey time.',
      attribution_source: 'How the agent was attributed.',
      score: 'Score 1–5; null until answered.',
      sent_at: 'When the survey was sent.',
      submitted_at: 'When the survey was answered; null until then.',
      comment: 'Free-text comment (only when the sync requests comments).',
    },
  },
  computed: [
    {
      ...column(
        '_version',
        'timestamp',
        false,
        'Row version: coalesce(submitted_at, sent_at). A later answer replaces the unanswered row.',
      ),
      compute: csatVersion,
    },
  ],
  indexes: [['sent_at'], ['submitted_at'], ['credited_agent_id'], ['ticket_id']],
  partitionBy: 'sent_at',
  clusterBy: ['credited_agent_id', 'score'],
});

// --- agent_sessions ------------------------------------------------------------------------------------

const agentSessions = apiTable({
  name: 'agent_sessions',
  description:
    'One row per agent login session (GET /agent-sessions). Open sessions change until they end; version: updated_at.',
  schema: AgentSession,
  primaryKey: ['id'],
  merge: { kind: 'version', column: 'updated_at' },
  tracksDeletion: false,
  derive: {
    descriptions: {
      id: 'Session id (UUID). Primary key.',
      agent_id: 'Agent id (joins agents.id).',
      session_start: 'When the session started.',
      session_end: 'When the session ended; null while open.',
      last_activity: 'Last activity seen in the session.',
      updated_at: 'When the record last changed (the version of the row).',
    },
  },
  indexes: [['agent_id', 'session_start'], ['session_start'], ['updated_at']],
  partitionBy: 'session_start',
  clusterBy: ['agent_id'],
});

// --- reference tables ----------------------------------------------------------------------------------

const views = apiTable({
  name: 'views',
  description:
    'Saved inbox views with their ticket counts (GET /views). No source version: the latest sync wins when the content (e.g. count) differs.',
  schema: View,
  primaryKey: ['id'],
  merge: { kind: 'content' },
  tracksDeletion: true,
  derive: {
    descriptions: {
      id: 'View id (UUID). Primary key.',
      name: 'View name.',
      count: 'Number of tickets in the view when synced.',
      filters: 'Filters (JSON array of {condition, operator, options}).',
      shared: 'Shared with the whole workspace.',
    },
  },
  indexes: [],
  partitionBy: null,
  clusterBy: [],
});

const tags = apiTable({
  name: 'tags',
  description: 'Tags of the workspace (GET /tags). Latest sync wins when the content differs.',
  schema: Tag,
  primaryKey: ['id'],
  merge: { kind: 'content' },
  tracksDeletion: true,
  derive: {
    descriptions: {
      id: 'Tag id. Primary key.',
      name: 'Tag name (as used in tickets.tags).',
      created_at: 'When the tag was created.',
    },
  },
  indexes: [['name']],
  partitionBy: null,
  clusterBy: ['name'],
});

const teams = apiTable({
  name: 'teams',
  description: 'Teams (GET /teams). Latest sync wins when the content differs.',
  schema: Team,
  primaryKey: ['id'],
  merge: { kind: 'content' },
  tracksDeletion: true,
  derive: {
    descriptions: {
      id: 'Team id. Primary key.',
      name: 'Team name.',
      agent_ids: 'Member agent ids (JSON array of strings).',
      created_at: 'When the team was created.',
    },
  },
  indexes: [],
  partitionBy: null,
  clusterBy: [],
});

const agents = apiTable({
  name: 'agents',
  description: 'Agents, human and AI (GET /agents). Latest sync wins when the content differs.',
  schema: Agent,
  primaryKey: ['id'],
  merge: { kind: 'content' },
  tracksDeletion: true,
  derive: {
    descriptions: {
      id: 'Agent id. Primary key.',
      name: 'Agent name.',
      email: 'E-mail address; null for AI agents.',
      kind: 'human or ai.',
      active: 'Whether the agent is active.',
      team_ids: 'Team ids (JSON array of strings).',
      created_at: 'When the agent was created.',
    },
  },
  indexes: [['email']],
  partitionBy: null,
  clusterBy: [],
});

const metricCatalog = apiTable({
  name: 'metric_catalog',
  description: 'The report metric catalog (GET /reports/metrics). Latest sync wins when the content differs.',
  schema: MetricCatalogEntry,
  primaryKey: ['id'],
  merge: { kind: 'content' },
  tracksDeletion: true,
  derive: {
    descriptions: {
      id: 'Metric id, e.g. tickets_created. Primary key.',
      label: 'Display label.',
      description: 'What the metric measures.',
      group: 'Catalog group.',
      dataType: 'integer or number.',
      format: 'Display format.',
      aggregation: 'How values aggregate.',
      attribution: 'Which event the metric is attributed to.',
      denominator: 'Denominator metric id for ratios.',
      snapshot: 'Whether the metric is a current snapshot rather than an event count.',
      higherIsBetter: 'Whether a higher value is better.',
    },
  },
  indexes: [],
  partitionBy: null,
  clusterBy: [],
});

// --- report snapshots ----------------------------------------------------------------------------------

/** Input of `report_snapshots`: one executed report query (POST /reports/query) and when it was taken. */
export const ReportSnapshotInput = z.object({
  query: z.string().min(1),
  timezone: z.string().min(1),
  taken_at: Timestamp,
  result: ReportResult,
});
export type ReportSnapshotInput = z.infer<typeof ReportSnapshotInput>;

/** Deterministic id of a snapshot: a hash of (query, timezone, taken_at) so re-writes are idempotent. */
export function reportSnapshotId(s: Pick<ReportSnapshotInput, 'query' | 'timezone' | 'taken_at'>): string {
  return createHash('sha256')
    .update(JSON.stringify([s.query, s.timezone, canonicalTimestamp(s.taken_at)]))
    .digest('hex')
    .slice(0, 32);
}

const reportSnapshotColumns: ColumnSpec[] = [
  column('snapshot_id', 'string', false, 'Hash of (query, timezone, taken_at). Primary key.'),
  // No paths: this table's `_raw` is the result, not the input these columns come from, so a migration
  // has nothing to fill them from.
  ...deriveColumns('report_snapshots', ReportSnapshotInput, {
    omit: ['result'],
    descriptions: {
      query: 'The report query as sent.',
      timezone: 'IANA time zone the report was computed in.',
      taken_at: 'When the snapshot was taken.',
    },
  }).map(({ path: _path, ...c }) => c),
  column('kind', 'string', false, 'Result shape: kpi, time-series, category or data_table.', {
    enumValues: ReportResult.options.map((o) => o.shape.kind.value),
  }),
  column('value_count', 'integer', false, 'Number of rows in report_snapshot_values for this snapshot.'),
];

const reportSnapshots = tableSpec<ReportSnapshotInput>(
  {
    name: 'report_snapshots',
    description:
      'One row per report query result taken by the sync. The result itself is in _raw; report_snapshot_values flattens it. Latest write wins when the content differs.',
    primaryKey: ['snapshot_id'],
    merge: { kind: 'content' },
    tracksDeletion: false,
    inputSchema: ReportSnapshotInput,
    indexes: [['taken_at'], ['query', 'taken_at']],
    partitionBy: 'taken_at',
    clusterBy: ['kind'],
  },
  reportSnapshotColumns,
  (s) => ({
    snapshot_id: reportSnapshotId(s),
    query: toColumnValue('string', s.query),
    timezone: toColumnValue('string', s.timezone),
    taken_at: toColumnValue('timestamp', s.taken_at),
    kind: s.result?.kind ?? null,
    value_count: s.result ? reportSnapshotValues(s).length : null,
    _raw: storableJson(s.result),
  }),
);

/** One flattened value of a report result (a row of `report_snapshot_values`). */
export const ReportSnapshotValue = z.object({
  snapshot_id: z.string().min(1),
  value_index: z.number().int().nonnegative(),
  taken_at: Timestamp,
  kind: z.enum(['kpi', 'time-series', 'category', 'data_table']),
  dimension_key: z.string().nullable(),
  dimension_label: z.string().nullable(),
  measure_key: z.string(),
  measure_label: z.string().nullable(),
  format: z.string().nullable(),
  value: z.number().nullable(),
});
export type ReportSnapshotValue = z.infer<typeof ReportSnapshotValue>;

/**
 * Flattens a report result into one row per number, so BI tools can chart it:
 *  - kpi: measure `value` and `previous_value` (no dimension);
 *  - time-series: one row per point × series (dimension = point date, measure = series key);
 *  - category: one row per item (dimension = item key, measure `value`);
 *  - data_table: one row per row × column (dimension = row key, measure = column measureId).
 */
export function reportSnapshotValues(s: ReportSnapshotInput): ReportSnapshotValue[] {
  const snapshot_id = reportSnapshotId(s);
  const taken_at = canonicalTimestamp(s.taken_at);
  const out: ReportSnapshotValue[] = [];
  const push = (v: Omit<ReportSnapshotValue, 'snapshot_id' | 'value_index' | 'taken_at' | 'kind'>) =>
    out.push({ snapshot_id, value_index: out.length, taken_at, kind: s.result.kind, ...v });
  const r = s.result;
  switch (r.kind) {
    case 'kpi':
      push({
        dimension_key: null,
        dimension_label: null,
        measure_key: 'value',
        measure_label: null,
        format: r.format,
        value: r.value,
      });
      push({
        dimension_key: null,
        dimension_label: null,
        measure_key: 'previous_value',
        measure_label: null,
        format: r.format,
        value: r.previousValue,
      });
      break;
    case 'time-series':
      for (const p of r.points)
        for (const series of r.series)
          push({
            dimension_key: p.date,
            dimension_label: p.label,
            measure_key: series.key,
            measure_label: series.label,
            format: r.format,
            value: p.values[series.key] ?? null,
          });
      break;
    case 'category':
      for (const item of r.items)
        push({
          dimension_key: item.key,
          dimension_label: item.label,
          measure_key: 'value',
          measure_label: null,
          format: r.format,
          value: item.value,
        });
      break;
    case 'data_table':
      for (const row of r.rows)
        for (const col of r.columns)
          push({
            dimension_key: row.key,
            dimension_label: row.label,
            measure_key: col.measureId,
            measure_label: col.label,
            format: col.format,
            value: row.values[col.measureId] ?? null,
          });
      break;
  }
  return out;
}

const reportSnapshotValueColumns = deriveColumns('report_snapshot_values', ReportSnapshotValue, {
  descriptions: {
    snapshot_id: 'Snapshot (joins report_snapshots.snapshot_id). Primary key with value_index.',
    value_index: 'Position of the value in the flattened result. Primary key with snapshot_id.',
    taken_at: 'When the snapshot was taken (copied for partitioning and filtering).',
    kind: 'Result shape of the snapshot.',
    dimension_key: 'Point date (time-series), item key (category) or row key (data_table); null for kpi.',
    dimension_label: 'Display label of the dimension value.',
    measure_key: 'Series key (time-series), column measureId (data_table), or value / previous_value.',
    measure_label: 'Display label of the measure.',
    format: 'Display format of the value.',
    value: 'The number; null when the result has no value for this cell.',
  },
});

const reportSnapshotValuesTable = tableSpec<ReportSnapshotValue>(
  {
    name: 'report_snapshot_values',
    description:
      'Report results flattened to one row per number (see reportSnapshotValues). Latest write wins when the content differs.',
    primaryKey: ['snapshot_id', 'value_index'],
    merge: { kind: 'content' },
    tracksDeletion: false,
    inputSchema: ReportSnapshotValue,
    indexes: [['taken_at']],
    partitionBy: 'taken_at',
    clusterBy: ['snapshot_id', 'measure_key'],
  },
  reportSnapshotValueColumns,
  (v) => {
    const row: WarehouseRow = {};
    for (const c of reportSnapshotValueColumns)
      row[c.name] = toColumnValue(c.type, (v as Record<string, unknown>)[c.name]);
    row['_raw'] = storableJson(v);
    return row;
  },
);

// ---------------------------------------------------------------------------------------------------------
// The catalog
// ---------------------------------------------------------------------------------------------------------

export const TABLE_NAMES = [
  'tickets',
  'ticket_messages',
  'csat_surveys',
  'agent_sessions',
  'views',
  'tags',
  'teams',
  'agents',
  'metric_catalog',
  'report_snapshots',
  'report_snapshot_values',
] as const;
/** A data table written through `Destination.writeBatch`. */
export const TableName = z.enum(TABLE_NAMES);

/** Tables that mirror an API stream item by item (the report tables hold snapshots of query results). */
export const STREAM_TABLE_NAMES = TABLE_NAMES.filter(
  (t): t is Exclude<(typeof TABLE_NAMES)[number], 'report_snapshots' | 'report_snapshot_values'> =>
    t !== 'report_snapshots' && t !== 'report_snapshot_values',
);
export type TableName = z.infer<typeof TableName>;

/** Bookkeeping tables, written through the destination's checkpoint, run and batch methods. */
export const SYSTEM_TABLE_NAMES = ['_sync_state', '_sync_runs', '_reconciliation', '_rejected'] as const;
export type SystemTableName = (typeof SYSTEM_TABLE_NAMES)[number];

/** The input type `writeBatch` accepts for each table. */
export interface RowInputs {
  tickets: ApiRowInput<Ticket>;
  ticket_messages: ApiRowInput<Message>;
  csat_surveys: ApiRowInput<CsatSurvey>;
  agent_sessions: ApiRowInput<AgentSession>;
  views: ApiRowInput<View>;
  tags: ApiRowInput<Tag>;
  teams: ApiRowInput<Team>;
  agents: ApiRowInput<Agent>;
  metric_catalog: ApiRowInput<MetricCatalogEntry>;
  report_snapshots: ReportSnapshotInput;
  report_snapshot_values: ReportSnapshotValue;
}
export type WarehouseRowInput<T extends TableName = TableName> = RowInputs[T];

export const TABLES: { readonly [T in TableName]: TableSpec<RowInputs[T]> } = {
  tickets,
  ticket_messages: ticketMessages,
  csat_surveys: csatSurveys,
  agent_sessions: agentSessions,
  views,
  tags,
  teams,
  agents,
  metric_catalog: metricCatalog,
  report_snapshots: reportSnapshots,
  report_snapshot_values: reportSnapshotValuesTable,
};

export function tableSpecOf<T extends TableName>(name: T): TableSpec<RowInputs[T]> {
  const spec = TABLES[name];
  if (!spec) throw new Error(`warehouse: unknown table ${String(name)}`);
  return spec;
}

/** A row that breaks its table's schema. Names the table, the row's id and the field. */
export class WarehouseRowError extends Error {
  override readonly name = 'WarehouseRowError';
  constructor(
    readonly table: TableName,
    readonly rowId: string,
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${table} row ${rowId}: field ${field}: ${problem}`);
  }
}

/**
 * Maps inputs to rows and validates each against the table's row schema (the model's, or `spec` when a
 * destination was given another). Throws WarehouseRowError on the first bad row (the whole batch is
 * rejected before anything is written).
 */
export function toValidatedRows<T extends TableName>(
  table: T,
  inputs: readonly RowInputs[T][],
  spec: TableSpec<RowInputs[T]> | TableSpec<unknown> = tableSpecOf(table),
): WarehouseRow[] {
  const rows: WarehouseRow[] = [];
  for (const input of inputs) {
    let row: WarehouseRow;
    try {
      row = spec.toRow(input);
    } catch (err) {
      throw new WarehouseRowError(table, guessId(input), '(row)', (err as Error).message);
    }
    const parsed = spec.rowSchema.safeParse(row);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const id = spec.primaryKey.map((k) => String(row[k] ?? '?')).join('/');
      throw new WarehouseRowError(table, id, issue.path.join('.') || '(row)', issue.message);
    }
    rows.push(row);
  }
  return rows;
}

/**
 * What a warehouse holds for one row, as `storedVersions` returns it: the version (canonical ISO string;
 * null for content-rule tables) and the content hash (null for rows written before hashes existed). A
 * writer compares both with the incoming item to decide what to rewrite.
 */
export const StoredVersion = z.object({
  version: z.string().nullable(),
  contentHash: z.string().nullable(),
});
export type StoredVersion = z.infer<typeof StoredVersion>;

/**
 * The `_content_hash` an input would be stored with — the same computation `writeBatch` does, so a writer
 * can tell a content-only change from an unchanged item before writing (compare with `StoredVersion`).
 */
export function contentHashOf<T extends TableName>(table: T, input: RowInputs[T]): string {
  return tableSpecOf(table).toRow(input)['_content_hash'] as string;
}

function guessId(input: unknown): string {
  const i = input as { item?: { id?: unknown }; id?: unknown } | null;
  return String(i?.item?.id ?? i?.id ?? '?');
}

/** Primary-key string of a row (components joined by U+001F), used for de-duplication and ordering. */
export function rowKey(spec: TableSpec<unknown>, row: WarehouseRow): string {
  return spec.primaryKey.length === 1
    ? String(row[spec.primaryKey[0]!])
    : spec.primaryKey.map((k) => String(row[k])).join('\u001f');
}

/**
 * Keeps one row per primary key (the one with the greatest version; the last one for content-rule tables),
 * so a merge never touches a target row twice in one statement.
 */
export function dedupeRows(spec: TableSpec<unknown>, rows: readonly WarehouseRow[]): WarehouseRow[] {
  const byKey = new Map<string, WarehouseRow>();
  const version = spec.versionColumn;
  for (const row of rows) {
    const key = rowKey(spec, row);
    const prev = byKey.get(key);
    if (
      prev === undefined ||
      version === null ||
      compareVersions(row[version] as string | null, prev[version] as string | null) >= 0
    )
      byKey.set(key, row);
  }
  return [...byKey.values()];
}

// ---------------------------------------------------------------------------------------------------------
// Checkpoints and runs
// ---------------------------------------------------------------------------------------------------------

export const CheckpointStatus = z.enum(['running', 'complete', 'failed']);
export type CheckpointStatus = z.infer<typeof CheckpointStatus>;

/** A row of `_sync_state`: how far one stream got in one scope (window key, ticket id, or "all"). */
export const Checkpoint = z.object({
  stream: z.string().min(1),
  scope: z.string().min(1),
  cursor: z.string().nullable(),
  high_water_mark: z.string().nullable(),
  status: CheckpointStatus,
  pages: z.number().int().nonnegative(),
  rows: z.number().int().nonnegative(),
  updated_at: Timestamp,
});
export type Checkpoint = z.infer<typeof Checkpoint>;

/** What a writer sends: a checkpoint without `updated_at` (the destination sets it). */
export const CheckpointUpdate = Checkpoint.omit({ updated_at: true });
export type CheckpointUpdate = z.infer<typeof CheckpointUpdate>;

/**
 * `_sync_state` stream of the thread queue: one checkpoint per ticket (scope = ticket number), `running`
 * while its thread is to be read, `complete` (with `updated_at` = when) once read.
 */
export const THREAD_QUEUE_STREAM = 'ticket_messages';

/**
 * How current the warehouse's tickets and threads are known to be (read by `status`). A ticket's state is
 * verified when a list page served it (`_synced_at`, touched even when unchanged); a thread when its last
 * read completed (the thread-queue checkpoint's `updated_at`).
 */
export const Freshness = z.object({
  tickets: z.object({
    live: z.number().int().nonnegative(),
    /** Oldest `_synced_at` of a live ticket: no ticket state in the warehouse is older than this. */
    oldestVerifiedAt: Timestamp.nullable(),
  }),
  threads: z.object({
    live: z.number().int().nonnegative(),
    /** Live tickets whose thread was never read completely (queued, or in flight). */
    unread: z.number().int().nonnegative(),
    /** Oldest completed thread read of a live ticket. */
    oldestVerifiedAt: Timestamp.nullable(),
  }),
});
export type Freshness = z.infer<typeof Freshness>;

export const SyncMode = z.enum(['incremental', 'full_refresh', 'backfill', 'replay']);
export const SyncRunStatus = z.enum(['running', 'succeeded', 'incomplete', 'failed']);

/** A row of `_sync_runs`: one run or one window. `error` never contains secrets. */
export const SyncRunRecord = z.object({
  run_id: z.string().min(1),
  parent_run_id: z.string().nullable(),
  workflow_id: z.string().min(1),
  stream: z.string().nullable(),
  window_start: Timestamp.nullable(),
  window_end: Timestamp.nullable(),
  mode: SyncMode,
  status: SyncRunStatus,
  started_at: Timestamp,
  finished_at: Timestamp.nullable(),
  pages: z.number().int().nonnegative(),
  rows_written: z.number().int().nonnegative(),
  requests: z.number().int().nonnegative(),
  error: z.string().nullable(),
});
export type SyncRunRecord = z.infer<typeof SyncRunRecord>;

export const ReconciliationStatus = z.enum(['equal', 'mismatch', 'skipped']);
export type ReconciliationStatus = z.infer<typeof ReconciliationStatus>;

/**
 * A row of `_reconciliation`: one number the source reports (e.g. `new_tickets` of one day from the report
 * API, or a saved view's `count`) next to the same number computed from the warehouse. A mismatch is a
 * warning, not a failure: report data can be incomplete or awaiting update (spec 2.11 rule 3), and a view's
 * count can lag the inbox (spec 2.4). `skipped` says what could not be compared honestly, and why.
 */
export const ReconciliationRecord = z.object({
  run_id: z.string().min(1),
  metric: z.string().min(1),
  period: z.string().min(1),
  source_value: z.number().nullable(),
  warehouse_value: z.number().nullable(),
  status: ReconciliationStatus,
  note: z.string().nullable(),
  checked_at: Timestamp,
});
export type ReconciliationRecord = z.infer<typeof ReconciliationRecord>;

/**
 * An item the sync set aside instead of storing — what a writer sends in `WriteBatch.rejected`. The page it
 * came from is still written and its checkpoint moves, so one bad item cannot stop a sync; the item waits in
 * `_rejected` until a later batch stores a row with its id.
 */
export const RejectedItem = z.object({
  /** Table the item was meant for. */
  table: TableName,
  /** Identity of the entry: the item id when it has one, else a hash of the raw item (see rejectedItemKey). */
  itemKey: z.string().min(1),
  itemId: z.string().min(1).nullable(),
  stream: z.string().min(1),
  /** The window or scope being read (a checkpoint scope). */
  scope: z.string().min(1),
  /** The cursor the page was fetched with (null: the first page). */
  pageCursor: z.string().nullable(),
  /** Why it was set aside; never secrets. */
  reason: z.string().min(1),
  /** The item exactly as received. */
  raw: z.unknown(),
});
export type RejectedItem = z.infer<typeof RejectedItem>;

/** `itemKey` of a rejected item: its id when it has one, else `sha256:<hex>` of its canonical JSON. */
export function rejectedItemKey(itemId: string | null | undefined, raw: unknown): string {
  if (itemId) return itemId;
  return `sha256:${createHash('sha256').update(canonicalJson(raw)).digest('hex')}`;
}

/** A row of `_rejected`: one set-aside item, upserted by (table_name, item_key) each time it is seen. */
export const RejectedRecord = z.object({
  table_name: z.string().min(1),
  item_key: z.string().min(1),
  item_id: z.string().nullable(),
  stream: z.string().min(1),
  scope: z.string().min(1),
  page_cursor: z.string().nullable(),
  reason: z.string(),
  raw: z.unknown(),
  first_seen_at: Timestamp,
  last_seen_at: Timestamp,
  times_seen: z.number().int().positive(),
  resolved_at: Timestamp.nullable(),
});
export type RejectedRecord = z.infer<typeof RejectedRecord>;

/** Columns of the bookkeeping tables, for DDL and docs (derived from the zod schemas above). */
export const SYSTEM_TABLES: {
  readonly [T in SystemTableName]: {
    readonly name: T;
    readonly description: string;
    readonly primaryKey: readonly string[];
    readonly columns: readonly ColumnSpec[];
  };
} = {
  _sync_state: {
    name: '_sync_state',
    description:
      'Checkpoints: one row per (stream, scope), written in the same transaction as the rows of the page it describes.',
    primaryKey: ['stream', 'scope'],
    columns: deriveColumns('_sync_state', Checkpoint, {
      descriptions: {
        stream: 'Stream name (tickets, ticket_messages, csat_surveys, …).',
        scope:
          'What the checkpoint covers: a window key "<from>/<before>"; for tickets "sweep" (the sweep of the whole list; high_water_mark = when it began), "head/<before>" (a run\'s pass over the newest tickets), "hwm" (newest created_at synced), "oldest" (oldest created_at listed: where the history starts); for ticket_messages a ticket number (the thread queue: running = to read, complete = read at updated_at, failed = retried by the next run).',
        cursor: 'API cursor of the next page to fetch; null when the scope is complete or not started.',
        high_water_mark: 'Highest source timestamp seen in the scope (ISO 8601), if the stream has one.',
        status: 'running, complete or failed.',
        pages: 'Pages written in this scope so far.',
        rows: 'Rows written in this scope so far.',
        updated_at: 'When the checkpoint was last written.',
      },
    }),
  },
  _sync_runs: {
    name: '_sync_runs',
    description:
      'One row per sync run or window workflow, upserted by run_id while it runs and when it ends.',
    primaryKey: ['run_id'],
    columns: deriveColumns('_sync_runs', SyncRunRecord, {
      descriptions: {
        run_id: 'Run id (Temporal run id or our own). Primary key.',
        parent_run_id: 'The run this window belongs to; null for a top-level run.',
        workflow_id: 'Temporal workflow id (e.g. tickets/<from>/<before>).',
        stream: 'Stream of a window run; null for a top-level run.',
        window_start: 'Window start (inclusive); null when not windowed.',
        window_end: 'Window end (exclusive); null when not windowed.',
        mode: 'incremental, full_refresh, backfill or replay.',
        status:
          'running, succeeded, incomplete (every stream ran but items were set aside or threads failed; see error) or failed.',
        started_at: 'When the run started.',
        finished_at: 'When the run ended; null while running.',
        pages: 'Pages fetched.',
        rows_written: 'Rows written.',
        requests:
          'HTTP requests sent to the API, retries included (each activity counts its own attempts; a window of a stream is one route class; a run adds its windows and its reconciliation).',
        error: 'Failure summary (API code, request id, stream/window); never secrets.',
      },
    }),
  },
  _reconciliation: {
    name: '_reconciliation',
    description:
      "What the sync holds compared with the source's own numbers, after each run that synced tickets: the report API's new_tickets per day (UTC) against the warehouse's tickets by created_at day, and each saved view's count against the warehouse where its filters can be computed there. A mismatch is a warning with its context (report data can be incomplete or awaiting update, spec 2.11 rule 3), never a failed run; `status` lists mismatches.",
    primaryKey: ['run_id', 'metric', 'period'],
    columns: deriveColumns('_reconciliation', ReconciliationRecord, {
      descriptions: {
        run_id: 'Run the check followed. Primary key with metric and period.',
        metric: 'What was compared: new_tickets, or view_count:<view name>.',
        period: 'Day (YYYY-MM-DD, UTC) for daily metrics; "now" for current counts.',
        source_value: "The source's number (report API, view count).",
        warehouse_value: 'The same number computed from the warehouse; null when skipped.',
        status: 'equal, mismatch (a warning, see note) or skipped (not comparable honestly, see note).',
        note: 'Context: what the numbers mean and why they can differ.',
        checked_at: 'When the comparison was made.',
      },
    }),
  },
  _rejected: {
    name: '_rejected',
    description:
      "Items the sync set aside instead of storing (e.g. an item that breaks its table's schema): one row per (table_name, item_key), written in the same transaction as the page it came from, whose rows and checkpoint still commit. Seen again: last_seen_at moves and times_seen grows. Resolved (resolved_at set) when a later batch of the table stores a row with its id. Unresolved entries: `WHERE resolved_at IS NULL` (status and the run summary count them).",
    primaryKey: ['table_name', 'item_key'],
    columns: deriveColumns('_rejected', RejectedRecord, {
      descriptions: {
        table_name: 'Table the item was meant for. Primary key with item_key.',
        item_key:
          'The item id when it has one, else sha256:<hex> of the raw item. Primary key with table_name.',
        item_id: 'The item id; null when the item has none (or none could be read).',
        stream: 'Stream that read the item.',
        scope: 'Window or scope being read (the checkpoint scope).',
        page_cursor: 'Cursor the page was fetched with; null for a first page.',
        reason: 'Why the item was set aside (the failed field and rule); never secrets.',
        raw: 'The item exactly as received (its last sighting).',
        first_seen_at: 'When the sync first set the item aside.',
        last_seen_at: 'When the sync last set it aside (the batch stamp).',
        times_seen: 'How many batches set it aside.',
        resolved_at:
          'When a later batch stored a row with its id; null while unresolved (a new rejection resets it).',
      },
    }),
  },
};
