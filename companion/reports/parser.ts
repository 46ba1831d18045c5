/**
 * The report query language of spec 4.12: one clause per line. A small tokenizer per line and a recursive-descent
 * parser per clause; every error is a `QueryError` whose message starts with `line N:` and names the problem.
 * Semantic rules (metric support, visualization rules) live in validate.ts; this file knows only the grammar,
 * clause order and repetition.
 */

export class QueryError extends Error {
  constructor(
    readonly line: number,
    problem: string,
  ) {
    super(`line ${line}: ${problem}`);
  }
}

export const PERIODS = ['yesterday', 'today', 'this_week', 'last_week', 'this_month', 'last_month'] as const;
export type Period = (typeof PERIODS)[number];
export const GRAINS = ['hour', 'day', 'week', 'month'] as const;
export type Grain = (typeof GRAINS)[number];
export const COMPARE_MODES = ['previous_period', 'previous_year'] as const;
export type CompareMode = (typeof COMPARE_MODES)[number];
/** The chart types; with `kpi` and `data_table` they make the visualization types of spec 4.12. */
export const CHART_TYPES = ['line', 'area', 'grouped_bar', 'stacked_bar', 'horizontal_bar'] as const;
export const VIS_TYPES = ['kpi', ...CHART_TYPES, 'data_table'] as const;
export type VisType = (typeof VIS_TYPES)[number];
export const WHERE_FIELDS = ['team', 'channel', 'human_agent', 'language', 'status', 'priority'] as const;
export type WhereField = (typeof WHERE_FIELDS)[number];
/** What ticket metrics break down by; automation metrics break down by `action_type` instead (spec 4.12). */
export const TICKET_DIMENSIONS = [
  'channel',
  'team',
  'human_agent',
  'language',
  'status',
  'priority',
] as const;
export const CATEGORY_DIMENSIONS = [...TICKET_DIMENSIONS, 'action_type'] as const;
export type CategoryDimension = (typeof CATEGORY_DIMENSIONS)[number];
export type Dimension = CategoryDimension | Grain;
/** Allow-listed OPTIONS (spec 4.12) with the JSON type each takes. */
export const OPTION_TYPES = { showAverageRow: 'boolean', showLegend: 'boolean' } as const;
export const MAX_LIMIT = 1000;

export interface ParsedQuery {
  show: { ids: string[]; line: number };
  period:
    | { kind: 'during'; period: Period; line: number }
    | { kind: 'range'; since: string; until: string; line: number };
  where: Array<{ field: WhereField; op: 'is' | 'is_one_of'; values: string[]; line: number }>;
  groupBy: { dimension: Dimension; line: number } | null;
  timeseries: { grain: Grain; line: number } | null;
  compare: { mode: CompareMode; line: number } | null;
  orderBy: { field: string; direction: 'ASC' | 'DESC'; line: number } | null;
  limit: { n: number; line: number } | null;
  options: { values: Partial<Record<keyof typeof OPTION_TYPES, boolean>>; line: number } | null;
  visualize: { ids: string[]; type: VisType; line: number };
  /** Number of the last non-blank line (for "missing clause" errors). */
  lastLine: number;
}

// ------------------------------------------------------------------ tokenizer

type TokenKind = 'word' | 'comma' | 'string';
interface Token {
  kind: TokenKind;
  text: string;
  col: number;
}

const WORD_START = /[A-Za-z0-9_]/;
const WORD_CHAR = /[A-Za-z0-9_.:@+-]/;

function tokenize(text: string, line: number): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i] as string;
    if (c === ' ' || c === '\t') {
      i++;
    } else if (c === ',') {
      out.push({ kind: 'comma', text: ',', col: i + 1 });
      i++;
    } else if (c === '"') {
      const end = text.indexOf('"', i + 1);
      if (end < 0) throw new QueryError(line, `unterminated string starting at column ${i + 1}`);
      out.push({ kind: 'string', text: text.slice(i + 1, end), col: i + 1 });
      i = end + 1;
    } else if (WORD_START.test(c)) {
      const start = i;
      while (i < text.length && WORD_CHAR.test(text[i] as string)) i++;
      out.push({ kind: 'word', text: text.slice(start, i), col: start + 1 });
    } else {
      throw new QueryError(line, `unexpected character '${c}' at column ${i + 1}`);
    }
  }
  return out;
}

/** A cursor over one line's tokens: the primitives of the recursive descent. */
class Cursor {
  #i = 0;
  constructor(
    readonly tokens: Token[],
    readonly line: number,
  ) {}
  peek(): Token | undefined {
    return this.tokens[this.#i];
  }
  fail(problem: string): never {
    throw new QueryError(this.line, problem);
  }
  keyword(kw: string): void {
    const t = this.peek();
    if (t?.kind !== 'word' || t.text.toUpperCase() !== kw) {
      this.fail(t ? `expected ${kw}, found '${t.text}'` : `expected ${kw} at end of line`);
    }
    this.#i++;
  }
  isKeyword(kw: string): boolean {
    const t = this.peek();
    return t !== undefined && t.kind === 'word' && t.text.toUpperCase() === kw;
  }
  value(what: string): string {
    const t = this.peek();
    if (!t || t.kind === 'comma')
      this.fail(t ? `expected ${what}, found ','` : `expected ${what} at end of line`);
    this.#i++;
    return t.text;
  }
  /** `a, b, c` — one or more values separated by commas. */
  list(what: string): string[] {
    const out = [this.value(what)];
    while (this.peek()?.kind === 'comma') {
      this.#i++;
      out.push(this.value(what));
    }
    return out;
  }
  oneOf<T extends string>(allowed: readonly T[], what: string, lower = true): T {
    const raw = this.value(what);
    const v = lower ? raw.toLowerCase() : raw;
    if (!(allowed as readonly string[]).includes(v))
      this.fail(`unknown ${what} '${raw}'; expected one of ${allowed.join(', ')}`);
    return v as T;
  }
  end(): void {
    const t = this.peek();
    if (t) this.fail(`unexpected '${t.text}' at column ${t.col}`);
  }
}

// ------------------------------------------------------------------ clauses

type ClauseName =
  | 'FROM'
  | 'SHOW'
  | 'DURING'
  | 'SINCE'
  | 'WHERE'
  | 'GROUP BY'
  | 'TIMESERIES'
  | 'COMPARE TO'
  | 'ORDER BY'
  | 'LIMIT'
  | 'OPTIONS'
  | 'VISUALIZE';

/** Clause order of spec 4.12; DURING and SINCE share a rank (one of them), WHERE may repeat. */
const RANK: Record<ClauseName, number> = {
  FROM: 0,
  SHOW: 1,
  DURING: 2,
  SINCE: 2,
  WHERE: 3,
  'GROUP BY': 4,
  TIMESERIES: 5,
  'COMPARE TO': 6,
  'ORDER BY': 7,
  LIMIT: 8,
  OPTIONS: 9,
  VISUALIZE: 10,
};

const METRIC_ID = /^[a-z][a-z0-9_]*$/;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

function clauseName(c: Cursor): ClauseName {
  const t = c.peek();
  if (t?.kind !== 'word') c.fail(t ? `expected a clause keyword, found '${t.text}'` : 'empty clause');
  const first = t.text.toUpperCase();
  if (first === 'GROUP' || first === 'ORDER') {
    c.keyword(first);
    c.keyword('BY');
    return `${first} BY` as ClauseName;
  }
  if (first === 'COMPARE') {
    c.keyword('COMPARE');
    c.keyword('TO');
    return 'COMPARE TO';
  }
  if (first in RANK) {
    c.keyword(first);
    return first as ClauseName;
  }
  return c.fail(`unknown clause '${t.text}'`);
}

function metricIds(c: Cursor): string[] {
  const ids = c.list('metric id');
  const listed = new Set<string>();
  for (const id of ids) {
    if (!METRIC_ID.test(id)) c.fail(`'${id}' is not a metric id`);
    if (listed.has(id)) c.fail(`metric '${id}' is listed twice`);
    listed.add(id);
  }
  return ids;
}

function date(c: Cursor, what: string): string {
  const v = c.value(`${what} date`);
  const m = DATE.exec(v);
  if (!m) c.fail(`${what} date '${v}' is not YYYY-MM-DD`);
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const probe = new Date(Date.UTC(y, mo - 1, d));
  if (probe.getUTCFullYear() !== y || probe.getUTCMonth() !== mo - 1 || probe.getUTCDate() !== d) {
    c.fail(`${what} date '${v}' is not a calendar date`);
  }
  return v;
}

function parseOptions(rest: string, line: number): ParsedQuery['options'] {
  let json: unknown;
  try {
    json = JSON.parse(rest);
  } catch {
    throw new QueryError(line, 'OPTIONS takes a JSON object');
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new QueryError(line, 'OPTIONS takes a JSON object');
  }
  const values: Partial<Record<keyof typeof OPTION_TYPES, boolean>> = {};
  for (const [k, v] of Object.entries(json)) {
    if (!(k in OPTION_TYPES)) {
      throw new QueryError(
        line,
        `option '${k}' is not allowed; allowed: ${Object.keys(OPTION_TYPES).join(', ')}`,
      );
    }
    const want = OPTION_TYPES[k as keyof typeof OPTION_TYPES];
    if (typeof v !== want) throw new QueryError(line, `option '${k}' must be a ${want}`);
    values[k as keyof typeof OPTION_TYPES] = v as boolean;
  }
  return { values, line };
}

/** Parses a query text into clauses; throws `QueryError` naming the line on any grammar or order problem. */
export function parseQuery(text: string): ParsedQuery {
  const lines = text.split(/\r?\n/);
  const q: Partial<ParsedQuery> & { where: ParsedQuery['where'] } = { where: [] };
  let lastRank = -1;
  let lastLine = 0;
  const lineOfClause = new Map<ClauseName, number>();
  let sawFrom = false;
  for (let n = 0; n < lines.length; n++) {
    const raw = lines[n] as string;
    const line = n + 1;
    if (raw.trim() === '') continue;
    lastLine = line;
    const trimmed = raw.trim();
    // OPTIONS carries JSON: take the rest of the line verbatim rather than tokenizing it.
    const optionsMatch = /^OPTIONS\b/i.exec(trimmed);
    const c = new Cursor(optionsMatch ? tokenize('OPTIONS', line) : tokenize(trimmed, line), line);
    const name = clauseName(c);
    if (!sawFrom && name !== 'FROM')
      throw new QueryError(line, `the first clause must be FROM tickets, found ${name}`);
    const prior =
      lineOfClause.get(name) ??
      (name === 'SINCE'
        ? lineOfClause.get('DURING')
        : name === 'DURING'
          ? lineOfClause.get('SINCE')
          : undefined);
    if (prior !== undefined && name !== 'WHERE') {
      if (
        (name === 'SINCE' && lineOfClause.has('DURING')) ||
        (name === 'DURING' && lineOfClause.has('SINCE'))
      ) {
        throw new QueryError(
          line,
          `DURING and SINCE … UNTIL cannot be combined (the other is on line ${prior})`,
        );
      }
      throw new QueryError(line, `${name} may appear only once (already on line ${prior})`);
    }
    if (RANK[name] < lastRank) {
      const after = [...lineOfClause.entries()].find(([k]) => RANK[k] > RANK[name]);
      throw new QueryError(line, `${name} must come before ${after ? after[0] : 'the preceding clause'}`);
    }
    lastRank = RANK[name];
    lineOfClause.set(name, line);
    switch (name) {
      case 'FROM': {
        const ds = c.value('dataset');
        if (ds !== 'tickets') c.fail(`unknown dataset '${ds}'; the only dataset is tickets`);
        c.end();
        sawFrom = true;
        break;
      }
      case 'SHOW':
        q.show = { ids: metricIds(c), line };
        c.end();
        break;
      case 'DURING':
        q.period = { kind: 'during', period: c.oneOf(PERIODS, 'period'), line };
        c.end();
        break;
      case 'SINCE': {
        const since = date(c, 'SINCE');
        c.keyword('UNTIL');
        const until = date(c, 'UNTIL');
        c.end();
        if (until < since) c.fail(`UNTIL ${until} is before SINCE ${since}`);
        q.period = { kind: 'range', since, until, line };
        break;
      }
      case 'WHERE': {
        const field = c.oneOf(WHERE_FIELDS, 'WHERE field');
        const op = c.oneOf(['is', 'is_one_of'] as const, 'operator');
        const values = op === 'is' ? [c.value('value')] : c.list('value');
        if (op === 'is' && c.peek()?.kind === 'comma')
          c.fail(`'is' takes one value; use is_one_of for several`);
        c.end();
        q.where.push({ field, op, values, line });
        break;
      }
      case 'GROUP BY':
        q.groupBy = { dimension: c.oneOf([...CATEGORY_DIMENSIONS, ...GRAINS], 'dimension'), line };
        if (c.peek()?.kind === 'comma') c.fail('GROUP BY takes one dimension');
        c.end();
        break;
      case 'TIMESERIES':
        q.timeseries = { grain: c.oneOf(GRAINS, 'grain'), line };
        c.end();
        break;
      case 'COMPARE TO':
        q.compare = { mode: c.oneOf(COMPARE_MODES, 'comparison'), line };
        c.end();
        break;
      case 'ORDER BY': {
        const field = c.value('metric id or label');
        if (!METRIC_ID.test(field)) c.fail(`'${field}' is not a metric id or label`);
        const direction = c.oneOf(['asc', 'desc'] as const, 'direction').toUpperCase() as 'ASC' | 'DESC';
        c.end();
        q.orderBy = { field, direction, line };
        break;
      }
      case 'LIMIT': {
        const v = c.value('number');
        if (!/^\d+$/.test(v)) c.fail(`LIMIT takes a whole number, found '${v}'`);
        const n = Number(v);
        if (n < 1 || n > MAX_LIMIT) c.fail(`LIMIT ${v} is out of range; allowed 1 to ${MAX_LIMIT}`);
        c.end();
        q.limit = { n, line };
        break;
      }
      case 'OPTIONS':
        q.options = parseOptions(trimmed.slice((optionsMatch as RegExpExecArray)[0].length).trim(), line);
        break;
      case 'VISUALIZE': {
        const ids = metricIds(c);
        c.keyword('TYPE');
        const type = c.oneOf(VIS_TYPES, 'visualization type');
        c.end();
        q.visualize = { ids, type, line };
        break;
      }
    }
  }
  if (lastLine === 0) throw new QueryError(1, 'the query is empty');
  const end = lastLine;
  if (!q.show) throw new QueryError(end, 'the query has no SHOW clause');
  if (!q.period) throw new QueryError(end, 'the query needs DURING or SINCE … UNTIL');
  if (!q.visualize) throw new QueryError(end, 'the query has no VISUALIZE clause');
  return {
    show: q.show,
    period: q.period,
    where: q.where,
    groupBy: q.groupBy ?? null,
    timeseries: q.timeseries ?? null,
    compare: q.compare ?? null,
    orderBy: q.orderBy ?? null,
    limit: q.limit ?? null,
    options: q.options ?? null,
    visualize: q.visualize,
    lastLine: end,
  };
}
