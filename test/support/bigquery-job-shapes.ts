/**
 * What a request to the BigQuery REST API does to which tables, read from the request itself: the DML
 * statements, DDL and billed child statements of a query or script, the destination of a load job, the
 * table of a `tables.*` or `tabledata.insertAll` call. The quota proxy counts per table from these shapes;
 * the parsing is ours, tolerant of what it does not know (a name it cannot tell is a table is checked
 * against the tables the proxy has seen, see bigquery-quota-ledger.ts).
 */

export type StatementKind = 'merge' | 'update' | 'delete' | 'truncate' | 'insert';
export const MUTATING: ReadonlySet<StatementKind> = new Set(['merge', 'update', 'delete', 'truncate']);

/** A DML statement and the table it writes. */
export interface DmlStatement {
  readonly kind: StatementKind;
  readonly table: string;
  /**
   * Inside `IF … END IF`: it runs only when the condition holds, which the request does not say (the
   * write path guards its `_rejected` UPDATE so that it does not touch the table on most pages).
   */
  readonly conditional: boolean;
}

/**
 * A statement BigQuery runs (and bills) as a job of its own: the query, or one child job of a script. Its
 * names are candidates: whatever follows FROM, JOIN, USING, INTO, UPDATE, MERGE… (a column after
 * `EXTRACT(DAY FROM`, a CTE) is sorted out by the ledger, which knows the dataset's tables.
 */
export interface ChildStatement {
  readonly kind: StatementKind | 'select';
  /** Tables it reads (the target too for UPDATE, DELETE and MERGE, which join it). */
  readonly reads: readonly string[];
  /** The table it writes (DML). */
  readonly writes?: string;
  /** DML that bills the whole target besides what it reads (UPDATE, DELETE, MERGE with UPDATE/DELETE). */
  readonly billsTarget: boolean;
  readonly conditional: boolean;
}

/** A DDL statement on a table (a table metadata operation). */
export interface DdlStatement {
  readonly kind: 'create' | 'alter' | 'drop';
  readonly table: string;
}

/** What one submitted job does to which tables. */
export interface JobShape {
  readonly kind: 'query' | 'load' | 'other';
  /** DML statements, in order, with the table each one writes. */
  readonly statements: readonly DmlStatement[];
  /** A `BEGIN TRANSACTION` script. */
  readonly transaction: boolean;
  /** Load jobs: the destination table. */
  readonly loadTable?: string;
  /** DDL statements, in order. */
  readonly ddl: readonly DdlStatement[];
  /** The statements BigQuery bills, each as its own job (a script's child jobs). */
  readonly children: readonly ChildStatement[];
  /** Query jobs: the length of the query's text in characters, comments and white space included. */
  readonly queryLength?: number;
}

/** The last segment of a (possibly backquoted, dotted) table path: `ds`.`t` / `p.ds.t` → t. */
export function tableOf(path: string): string {
  const parts = path
    .replace(/`/g, '')
    .split('.')
    .filter((p) => p.length > 0);
  return parts[parts.length - 1] ?? path;
}

/** Removes comments and string literals, so their text cannot look like statements. */
function stripSql(sql: string): string {
  return sql
    .replace(/--[^\n]*/g, ' ')
    .replace(/\/\*[\s\S]*?\*\//g, ' ')
    .replace(/'(?:\\.|[^'\\])*'/g, "''")
    .replace(/"(?:\\.|[^"\\])*"/g, '""');
}

const REF = String.raw`(\`[^\`]+\`(?:\.\`[^\`]+\`)*|[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)*)`;
/** Words that follow FROM/INTO/UPDATE… without being a table (`UPDATE SET`, `INSERT ROW`, `INTO VALUES`). */
const NOT_A_TABLE = new Set(['SET', 'ROW', 'VALUES', 'WHEN', 'SELECT', 'WHERE', 'AS', 'ON', 'INTO', 'FROM']);
// The name is matched ahead (not consumed), so that `DELETE FROM t` and `INSERT INTO t` find t after their
// second keyword; it must end where the name ends and not open a call (`UNNEST(`).
const TABLE_REF = new RegExp(
  String.raw`\b(FROM|JOIN|USING|INTO|UPDATE|MERGE|INSERT|DELETE|TABLE)\s+(?=${REF}(?![\w.\`-])(?!\s*\())`,
  'gi',
);

/** The names a statement reads or writes (candidates: see ChildStatement). Clauses after THEN are not. */
function referencedNames(statement: string): string[] {
  const names: string[] = [];
  for (const m of statement.matchAll(TABLE_REF)) {
    const name = m[2]!;
    if (NOT_A_TABLE.has(name.toUpperCase())) continue;
    // `WHEN MATCHED THEN UPDATE SET` / `THEN DELETE` / `THEN INSERT (…)`: clauses of a MERGE, not tables.
    if (/THEN\s+$/i.test(statement.slice(Math.max(0, m.index - 12), m.index))) continue;
    const table = tableOf(name);
    if (!names.includes(table)) names.push(table);
  }
  return names;
}

const DML_HEAD = /^(MERGE|UPDATE|DELETE|TRUNCATE|INSERT)\b\s*(?:INTO\s+|FROM\s+|TABLE\s+)?/i;
const DDL_HEAD = new RegExp(
  String.raw`^(CREATE|ALTER|DROP)\s+(?:OR\s+REPLACE\s+)?(?:TEMP\s+|TEMPORARY\s+)?(?:MATERIALIZED\s+)?(?:TABLE|VIEW)\s+(?:IF\s+(?:NOT\s+)?EXISTS\s+)?${REF}`,
  'i',
);

const ROUTINE_HEAD =
  /^(CREATE|DROP)\s+(?:OR\s+REPLACE\s+)?(?:TEMP\s+|TEMPORARY\s+)?(?:TABLE\s+)?(?:FUNCTION|PROCEDURE)\b/i;

/** One statement of a script, at its place: conditional when inside an IF. */
function shapeStatement(
  text: string,
  conditional: boolean,
  out: { statements: DmlStatement[]; ddl: DdlStatement[]; children: ChildStatement[] },
): void {
  if (/^(BEGIN|COMMIT|ROLLBACK|END)\b/i.test(text)) return;
  // A routine (a table function: the views of shared tables) is no table: no table's metadata changes.
  if (ROUTINE_HEAD.test(text)) return;
  const ddl = DDL_HEAD.exec(text);
  if (ddl) {
    out.ddl.push({ kind: ddl[1]!.toLowerCase() as DdlStatement['kind'], table: tableOf(ddl[2]!) });
    return;
  }
  const dml = DML_HEAD.exec(text);
  const names = referencedNames(text);
  if (dml) {
    const kind = dml[1]!.toLowerCase() as StatementKind;
    const target = new RegExp(`^${REF}`).exec(text.slice(dml[0].length));
    if (!target) return;
    const table = tableOf(target[1]!);
    out.statements.push({ kind, table, conditional });
    // INSERT reads only its sources; the others join their target.
    const reads = kind === 'insert' ? names.filter((n) => n !== table) : names;
    const billsTarget =
      kind === 'update' ||
      kind === 'delete' ||
      (kind === 'merge' && /\bTHEN\s+(UPDATE|DELETE)\b/i.test(text));
    out.children.push({ kind, reads, writes: table, billsTarget, conditional });
    return;
  }
  // DECLARE … DEFAULT (SELECT …), SET x = (SELECT …), SELECT …: a query of its own when it reads a table.
  if (names.length > 0) out.children.push({ kind: 'select', reads: names, billsTarget: false, conditional });
}

/**
 * The statements of a query or script, in order: DML with its table, DDL, and the child statements it is
 * billed for. `IF cond THEN … END IF` is followed: the condition is a child statement, the body conditional.
 */
export function shapeOfQuery(sql: string): JobShape {
  const text = stripSql(sql);
  const out = {
    statements: [] as DmlStatement[],
    ddl: [] as DdlStatement[],
    children: [] as ChildStatement[],
  };
  let depth = 0;
  for (const raw of text.split(';')) {
    // A block's BEGIN (not BEGIN TRANSACTION) opens no statement: what follows it is the first one.
    let piece = raw.trim().replace(/^BEGIN\b(?!\s+TRANSACTION)\s*/i, '');
    if (piece.length === 0) continue;
    if (/^END\s+IF\b/i.test(piece)) {
      depth = Math.max(0, depth - 1);
      continue;
    }
    // `IF cond THEN stmt`, `ELSEIF cond THEN stmt`, `ELSE stmt`: the condition runs where the IF is.
    const branch = /^(IF|ELSEIF|ELSE\s+IF)\b([\s\S]*?)\bTHEN\b/i.exec(piece);
    if (branch) {
      if (/^IF\b/i.test(piece)) depth++;
      shapeStatement(`SELECT ${branch[2]!}`, depth > 1 || !/^IF\b/i.test(piece), out);
      piece = piece.slice(branch[0].length).trim();
    } else if (/^ELSE\b/i.test(piece)) piece = piece.slice(4).trim();
    if (piece.length > 0) shapeStatement(piece, depth > 0, out);
  }
  return {
    kind: 'query',
    ...out,
    transaction: /\bBEGIN\s+TRANSACTION\b/i.test(text),
    queryLength: sql.length,
  };
}

export interface JobConfiguration {
  query?: { query?: string };
  load?: {
    destinationTable?: { tableId?: string };
    schema?: { fields?: readonly { name: string; type?: string }[] };
  };
}
export interface JobResource {
  jobReference?: { jobId?: string };
  configuration?: JobConfiguration;
}

export function shapeOfJob(configuration: JobConfiguration | undefined): JobShape {
  if (configuration?.query?.query) return shapeOfQuery(configuration.query.query);
  const loadTable = configuration?.load?.destinationTable?.tableId;
  const none = { statements: [], transaction: false, ddl: [], children: [] };
  if (loadTable) return { kind: 'load', ...none, loadTable };
  return { kind: 'other', ...none };
}

/** Splits a multipart body (a load job's upload) into its parts' bodies. */
export function multipartParts(body: string, contentType: string): string[] {
  const boundary = /boundary="?([^";]+)"?/i.exec(contentType)?.[1];
  if (!boundary) return [];
  return body
    .split(`--${boundary}`)
    .slice(1)
    .filter((part) => !part.startsWith('--'))
    .map((part) => {
      const blank = part.search(/\r?\n\r?\n/);
      return blank < 0
        ? ''
        : part
            .slice(blank)
            .replace(/^\r?\n\r?\n/, '')
            .replace(/\r?\n$/, '');
    });
}

/** The job resource inside a `jobs.insert` body (JSON, or the first part of a multipart upload). */
export function jobResourceOf(body: string, contentType: string): JobResource | undefined {
  try {
    if (contentType.startsWith('multipart/')) {
      const [metadata] = multipartParts(body, contentType);
      return metadata ? (JSON.parse(metadata) as JobResource) : undefined;
    }
    return JSON.parse(body) as JobResource;
  } catch {
    return undefined;
  }
}

/** What an HTTP request to the REST API is, for counting: its method and route with ids left out. */
export type RequestKind =
  | { readonly kind: 'jobs.insert' | 'jobs.query' }
  | { readonly kind: 'tables.insert' }
  | { readonly kind: 'tables.patch' | 'tables.update' | 'tables.delete'; readonly table: string }
  | { readonly kind: 'tabledata.insertAll' | 'tabledata.list'; readonly table: string }
  | { readonly kind: 'other' };

/** Classifies a request by method and path (`/bigquery/v2` and `/upload` prefixes allowed). */
export function requestKindOf(method: string, url: string): RequestKind {
  const path = (url.split('?')[0] ?? '').replace(/^\/upload/, '').replace(/^\/bigquery\/v2/, '');
  if (method === 'POST' && /^\/projects\/[^/]+\/jobs\/?$/.test(path)) return { kind: 'jobs.insert' };
  if (method === 'POST' && /^\/projects\/[^/]+\/queries\/?$/.test(path)) return { kind: 'jobs.query' };
  if (method === 'POST' && /^\/projects\/[^/]+\/datasets\/[^/]+\/tables\/?$/.test(path))
    return { kind: 'tables.insert' };
  const table = /^\/projects\/[^/]+\/datasets\/[^/]+\/tables\/([^/]+)(\/insertAll|\/data)?\/?$/.exec(path);
  if (table) {
    const name = decodeURIComponent(table[1]!);
    if (table[2] === '/data')
      return method === 'GET' ? { kind: 'tabledata.list', table: name } : { kind: 'other' };
    if (table[2]) return method === 'POST' ? { kind: 'tabledata.insertAll', table: name } : { kind: 'other' };
    if (method === 'PATCH') return { kind: 'tables.patch', table: name };
    if (method === 'PUT') return { kind: 'tables.update', table: name };
    if (method === 'DELETE') return { kind: 'tables.delete', table: name };
  }
  return { kind: 'other' };
}

/** A request's route for the census, ids replaced by a star: `GET /projects/{id}/jobs/{id}` → `…/jobs/*`. */
export function routeOf(method: string, url: string): string {
  const path = (url.split('?')[0] ?? '')
    .replace(/^(\/upload)?\/bigquery\/v2/, '$1')
    .replace(/\/(projects|datasets|tables|jobs|queries|routines|models)\/[^/]+/g, '/$1/*');
  return `${method} ${path}`;
}
