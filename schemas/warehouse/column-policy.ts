import { z } from 'zod';
import type { ColumnSpec } from './derive.js';
import { STREAM_TABLE_NAMES, TableName } from './table-names.js';
import { TABLES } from './tables.js';

/**
 * The column policy (SYNC_COLUMN_POLICY): which fields of which table are hashed or dropped before anything
 * is written. A rule names a field of the API item — by its column (`tickets.contact_email`) or by its place
 * in `_raw` (`tickets._raw.contact.name`, for fields the typed columns do not read) — and reaches it
 * wherever the warehouse would hold it: `_raw`, every typed column read from it, and `_rejected`.
 * Parsed and checked here against the table specs; applied by `schemas/warehouse/redactor.ts`.
 */

export const ColumnAction = z.enum(['hash', 'drop']);
export type ColumnAction = z.infer<typeof ColumnAction>;

/** One rule: the item field at `path` (as in `_raw`) of `table` is hashed or dropped. */
export const PolicyRule = z.object({
  table: TableName,
  path: z.array(z.string().min(1)).min(1),
  action: ColumnAction,
  /** The entry as written, for messages (`tickets.contact_email=hash`). */
  entry: z.string(),
});
export type PolicyRule = z.infer<typeof PolicyRule>;

export const ColumnPolicy = z.array(PolicyRule);
export type ColumnPolicy = z.infer<typeof ColumnPolicy>;

/**
 * Columns a rule may rewrite as a whole: the typed copies of fields the API leaves open (nullable, read
 * from a path of the item). The strict ones — ids, ticket numbers, timestamps, closed sets, versions — are
 * what the sync itself keys, merges, cascades and windows by, and hold no personal data.
 */
export function policyColumns(table: TableName): ColumnSpec[] {
  const spec = TABLES[table];
  return spec.columns.filter(
    (c) =>
      c.path !== undefined &&
      c.nullable &&
      !c.name.startsWith('_') &&
      !spec.primaryKey.includes(c.name) &&
      c.name !== spec.versionColumn,
  );
}

/** Tables a policy can name: those mirroring API items (the report tables hold aggregates, not items). */
export const POLICY_TABLES = STREAM_TABLE_NAMES.filter((t) => policyColumns(t).length > 0);

/** Whether `path` begins with `prefix` (equal paths included). */
export const pathStartsWith = (path: readonly string[], prefix: readonly string[]): boolean =>
  prefix.length <= path.length && prefix.every((key, i) => path[i] === key);

/**
 * The typed columns a rule on the item field at `path` rewrites as a whole: those holding the field (or
 * lying inside it). A rule deeper than a column edits that column's JSON, or leaves a scalar column as it
 * is (it holds no such field).
 */
export function columnsReplaced(table: TableName, path: readonly string[]): ColumnSpec[] {
  return TABLES[table].columns.filter((c) => c.path !== undefined && pathStartsWith(c.path, path));
}

/**
 * Why a rule cannot be applied as written, or null: every column it rewrites must be one a policy may
 * rewrite, and a hashed column must be text, so it keeps its type and stays joinable.
 */
function ruleProblem(table: TableName, path: readonly string[], action: ColumnAction): string | null {
  const allowed = new Set(policyColumns(table).map((c) => c.name));
  for (const c of columnsReplaced(table, path)) {
    if (!allowed.has(c.name))
      return `${table}.${c.name} cannot be hashed or dropped: the API defines it strictly (an id, number, timestamp or closed set), and the sync and the BI views rely on such columns`;
    if (action === 'hash' && c.type !== 'string')
      return `${table}.${c.name} is a ${c.type} column: only text columns can be hashed (drop it instead)`;
  }
  return null;
}

const ENTRY_RE = /^([A-Za-z0-9_]+)\.([A-Za-z0-9_.]+)=([A-Za-z]+)$/;
const RAW_PREFIX = '_raw.';

/**
 * SYNC_COLUMN_POLICY: entries `<table>.<column>=hash|drop` or `<table>._raw.<field>[.<field>…]=hash|drop`,
 * separated by commas or white space (one per line in a YAML block works). Each problem names its entry
 * and lists what is valid. An empty text is no policy.
 */
export const ColumnPolicyText = z.string().transform((text, ctx): ColumnPolicy => {
  const rules: ColumnPolicy = [];
  const ruleByTarget = new Map<string, PolicyRule>();
  const problem = (entry: string, message: string) =>
    ctx.addIssue({ code: 'custom', message: `"${entry}": ${message}` });
  for (const entry of text.split(/[\s,]+/).filter(Boolean)) {
    const m = ENTRY_RE.exec(entry);
    if (!m) {
      problem(entry, 'expected <table>.<column>=hash|drop or <table>._raw.<field>=hash|drop');
      continue;
    }
    const [, tableName, target, actionName] = m as unknown as [string, string, string, string];
    const table = POLICY_TABLES.find((t) => t === tableName);
    if (table === undefined) {
      problem(
        entry,
        `no table ${tableName} with columns a policy can name; tables: ${POLICY_TABLES.join(', ')}`,
      );
      continue;
    }
    const action = ColumnAction.safeParse(actionName.toLowerCase());
    if (!action.success) {
      problem(entry, `unknown action ${actionName}; actions: ${ColumnAction.options.join(', ')}`);
      continue;
    }
    const path = pathOf(table, target);
    if (path === null) {
      const names = policyColumns(table).map((c) => c.name);
      problem(
        entry,
        `${table} has no column ${target} a policy can name; columns: ${names.join(', ')} (or _raw.<field> for a field only _raw holds)`,
      );
      continue;
    }
    const why = ruleProblem(table, path, action.data);
    if (why !== null) {
      problem(entry, why);
      continue;
    }
    const key = `${table}\u0000${path.join('\u0000')}`;
    const earlier = ruleByTarget.get(key);
    if (earlier !== undefined) {
      if (earlier.action !== action.data) problem(entry, `contradicts the earlier entry "${earlier.entry}"`);
      continue;
    }
    const rule: PolicyRule = { table, path, action: action.data, entry };
    ruleByTarget.set(key, rule);
    rules.push(rule);
  }
  return rules;
});

/** The item path a rule's target names: a column's source path, or the dotted path after `_raw.`. */
function pathOf(table: TableName, target: string): string[] | null {
  if (target.startsWith(RAW_PREFIX)) {
    const path = target.slice(RAW_PREFIX.length).split('.');
    return path.every((key) => key.length > 0) ? path : null;
  }
  if (target.includes('.')) return null;
  const column = TABLES[table].columns.find((c) => c.name === target);
  return column?.path ? [...column.path] : null;
}
