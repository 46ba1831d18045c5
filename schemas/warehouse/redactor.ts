import { createHmac } from 'node:crypto';
import type { Secret } from '../secret.js';
import { type ColumnAction, type ColumnPolicy, type PolicyRule, pathStartsWith } from './column-policy.js';
import type { TableName } from './table-names.js';
import { rowContentHash, type TableSpec, type WarehouseRow } from './table-spec.js';
import { canonicalJson } from './values.js';

/** What a hash rule stores: 64 lowercase hex characters (status counts a column's other values as plain). */
const HEX_DIGEST = /^[0-9a-f]{64}$/;

/**
 * Row inputs re-derived from what the warehouse stores (its `_raw`) rather than read from the source: their
 * fields may already be hashed, by the rule or one before it, and a hash of a hash would no longer join.
 * Kept by identity, so the inputs' type (each table's `toRow` input) stays the source's.
 */
const RESTATED = new WeakSet<object>();

/**
 * Marks a row input as re-derived from a stored `_raw` (see Redactor.spec): a hash rule keeps a value that
 * already has a hash's form, as `status` counts it applied.
 */
export function restated<T extends object>(input: T): T {
  RESTATED.add(input);
  return input;
}

/**
 * The column policy applied: a row (its typed columns and `_raw`) or a raw item set aside, with every field
 * a rule names hashed or removed. Rows are redacted right after `toRow`, inside the table spec a destination
 * writes with, so no write path can skip it and `_content_hash` is the hash of what is stored: a re-read
 * under the same policy compares equal.
 *
 * Hash: HMAC-SHA-256 keyed with SYNC_HASH_KEY over the value's text (UTF-8; a number or boolean as its
 * JSON text, an object or array as canonical JSON), lowercase hex — equal values hash equally in every
 * table, so hashed columns still join. Null stays null. Drop: the typed column is null and the field is
 * removed from `_raw`.
 */
export class Redactor {
  readonly #rules: ReadonlyMap<TableName, readonly PolicyRule[]>;
  readonly #key: Secret | null;

  /** `key` is required when a rule hashes (the configuration checks it; this refuses to run without). */
  constructor(policy: ColumnPolicy, key: Secret | null) {
    const rules = new Map<TableName, PolicyRule[]>();
    for (const rule of policy) rules.set(rule.table, [...(rules.get(rule.table) ?? []), rule]);
    if (key === null && policy.some((r) => r.action === 'hash'))
      throw new Error('column policy: a rule hashes but no hash key (SYNC_HASH_KEY) was given');
    this.#rules = rules;
    this.#key = key;
  }

  /** Whether any rule applies to `table`. */
  covers(table: TableName): boolean {
    return this.#rules.has(table);
  }

  /** The spec whose rows come out redacted (the spec itself when no rule names its table). */
  spec<I>(spec: TableSpec<I>): TableSpec<I> {
    const rules = this.#rules.get(spec.name);
    if (rules === undefined) return spec;
    return {
      ...spec,
      toRow: (input) => {
        const row = spec.toRow(input);
        const keepHashed = typeof input === 'object' && input !== null && RESTATED.has(input);
        for (const rule of rules) this.#applyToRow(spec, rule, row, keepHashed);
        row['_content_hash'] = rowContentHash(row);
        return row;
      },
    };
  }

  /** A raw item of `table` (one set aside for `_rejected`) with the table's rules applied. */
  raw(table: TableName, raw: unknown): unknown {
    let out = raw;
    for (const rule of this.#rules.get(table) ?? []) out = this.#applyAt(out, rule.path, rule.action, false);
    return out;
  }

  /** The hash the policy stores for `value`: HMAC-SHA-256 of its text, lowercase hex; null for null. */
  hash(value: unknown): string | null {
    if (value === null || value === undefined) return null;
    if (this.#key === null) throw new Error('column policy: no hash key (SYNC_HASH_KEY)');
    const text = typeof value === 'string' ? value : canonicalJson(value);
    return createHmac('sha256', this.#key.reveal()).update(text, 'utf8').digest('hex');
  }

  #applyToRow(spec: TableSpec<unknown>, rule: PolicyRule, row: WarehouseRow, keepHashed: boolean): void {
    for (const c of spec.columns) {
      if (c.path === undefined || !(c.name in row)) continue;
      if (pathStartsWith(c.path, rule.path))
        row[c.name] = this.#replace(row[c.name], rule.action, keepHashed) ?? null;
      else if (pathStartsWith(rule.path, c.path))
        row[c.name] =
          this.#applyAt(row[c.name], rule.path.slice(c.path.length), rule.action, keepHashed) ?? null;
    }
    row['_raw'] = this.#applyAt(row['_raw'], rule.path, rule.action, keepHashed);
  }

  /**
   * What a field becomes: its hash, or nothing (undefined: removed) when dropped. `keepHashed` (a row
   * re-derived from what is stored): a value already of a hash's form is the hash.
   */
  #replace(value: unknown, action: ColumnAction, keepHashed: boolean): unknown {
    if (action === 'drop') return undefined;
    if (keepHashed && typeof value === 'string' && HEX_DIGEST.test(value)) return value;
    return this.hash(value);
  }

  /**
   * `value` with the field at `path` replaced (a copy along the path; the input is not changed). Arrays on
   * the way apply the rest of the path to each element. A bare id where the path expects an object
   * holding `id` stands for that object (the reader's rule for the contact, schemas/api/open.ts
   * `openObject`), so it is the field.
   */
  #applyAt(value: unknown, path: readonly string[], action: ColumnAction, keepHashed: boolean): unknown {
    if (Array.isArray(value)) return value.map((v) => this.#applyAt(v, path, action, keepHashed) ?? null);
    if (value === null || typeof value !== 'object') {
      const bareId = path.length === 1 && path[0] === 'id' && typeof value !== 'object';
      return bareId ? this.#replace(value, action, keepHashed) : value;
    }
    const [key, ...rest] = path as [string, ...string[]];
    if (!Object.hasOwn(value, key)) return value;
    const out: Record<string, unknown> = { ...(value as Record<string, unknown>) };
    const next =
      rest.length === 0
        ? this.#replace(out[key], action, keepHashed)
        : this.#applyAt(out[key], rest, action, keepHashed);
    if (next === undefined) delete out[key];
    else out[key] = next;
    return out;
  }
}
