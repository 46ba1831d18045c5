import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { restartedCheckpoint } from '../../activities/checkpoints.js';
import { omittedRaw } from '../../connectors/bigquery/sql.js';
import { checkpointTagOf } from '../../connectors/cursor-tag.js';
import type { Destination, DestinationHooks, TableSpecOverrides } from '../../connectors/destination.js';
import { encodeStateKey, THREAD_QUEUE_STREAM } from '../../schemas/state-key.js';
import {
  canonicalTimestamp,
  contentHashOf,
  type RejectedItem,
  type ReportSnapshotInput,
  reportSnapshotId,
  reportSnapshotValues,
  type SchemaChangeSighting,
  TABLES,
  type TableName,
  WarehouseRowError,
} from '../../schemas/warehouse.js';
import type { SqlDialect } from '../../schemas/warehouse-views.js';
import { streamFreshness, warehouseNewest } from '../../worker/freshness.js';
import { agent, at, input, message, olderSpec, survey, ticket, view, writeBatch } from './fixtures.js';

/**
 * What a destination test file provides to the conformance suite: fresh storage, destinations on it, and
 * a way to look at tables (the Destination interface itself has no row reader).
 */
export interface ConformanceHarness {
  /** A destination on the suite's storage (prepare() not yet called). */
  create(options?: {
    hooks?: DestinationHooks;
    clock?: () => Date;
    tables?: TableSpecOverrides;
  }): Promise<Destination>;
  /** All rows of a table, timestamps as canonical strings, JSON parsed, ordered by primary key. */
  readRows(table: TableName): Promise<Record<string, unknown>[]>;
  /** Column names of a table as the warehouse has them. */
  columns(table: TableName): Promise<string[]>;
  /** Runs one statement as the warehouse's own client (to build state an older version wrote). */
  execute(sql: string): Promise<void>;
  /** Drops a column (to simulate a table created by an older version of the model). */
  dropColumn(table: TableName, column: string): Promise<void>;
  /** How many concurrent writers the concurrency test runs. */
  readonly concurrency: number;
  /**
   * The destination stages pages and merges them at the next flush (BigQuery's Storage Write API), where
   * PostgreSQL copies them in the page's transaction.
   */
  readonly staged: boolean;
  /** Size of the very long text (characters). */
  readonly longTextLength: number;
  /**
   * In shared tables (SYNC_WAREHOUSE_LAYOUT), the workspace the suite's destinations write: a row the suite
   * inserts itself carries it, and it is left out of the rows the suite reads back.
   */
  readonly workspace?: string;
  teardown(): Promise<void>;
}

const typed = (row: Record<string, unknown> | undefined) => {
  if (!row) return row;
  const { _synced_at: _s, ...rest } = row;
  return rest;
};

/** The spec's content hash, computed here independently: SHA-256 of JSON with keys sorted at every depth. */
function expectedHash(row: Record<string, unknown>): string {
  const sorted = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sorted)
      : v !== null && typeof v === 'object'
        ? Object.fromEntries(
            Object.keys(v)
              .sort()
              .map((k) => [k, sorted((v as Record<string, unknown>)[k])]),
          )
        : v;
  const { _synced_at: _s, _deleted_at: _d, _content_hash: _h, ...content } = row;
  return createHash('sha256')
    .update(JSON.stringify(sorted(content)))
    .digest('hex');
}

/**
 * The `_rejected` rows of some item keys, as `select` returns them (how status and summaries read them),
 * without the `workspace_id` of shared tables (the workspace's own rows: `table` reads no other).
 */
async function rejectedRows(dest: Destination, keys: readonly string[]) {
  const rows = await dest.select(
    (d) =>
      `SELECT * FROM ${d.table('_rejected')} WHERE item_key IN (${keys.map((k) => d.string(k)).join(', ')}) ORDER BY table_name, item_key`,
  );
  return rows.map(({ workspace_id: _workspace, ...row }) => row);
}

/** A destination whose writes fail after staging, before the merge (a crash mid-batch). */
const crashingAfterStaging = (h: ConformanceHarness) =>
  h.create({
    hooks: {
      beforeMerge: () => {
        throw new Error('injected crash after staging');
      },
    },
  });

/** A new-field sighting of run `run-1` on the tickets stream. */
const sighting = (overrides: Partial<SchemaChangeSighting> = {}): SchemaChangeSighting => ({
  table: 'tickets',
  fieldPath: 'sla_breached_at',
  kind: 'new_field',
  observed: '',
  expected: null,
  jsonType: 'string',
  example: '"2026-01-01T00:00:00Z"',
  label: null,
  stream: 'tickets',
  runId: 'run-1',
  ...overrides,
});

/** The `_schema_changes` rows whose field path carries a test's tag. */
async function changesOf(dest: Destination, tag: string) {
  return (await dest.bookkeeping.listSchemaChanges()).filter((r) => r.field_path.includes(tag));
}

const rejection = (overrides: Partial<RejectedItem> = {}): RejectedItem => {
  const itemId = overrides.itemId === undefined ? crypto.randomUUID() : overrides.itemId;
  return {
    table: 'tickets',
    itemKey: itemId ?? `sha256:${crypto.randomUUID()}`,
    itemId,
    stream: 'tickets',
    scope: 'sweep',
    pageCursor: 'cur_1',
    reason: 'field status: invalid option "escalated"',
    raw: { id: itemId, status: 'escalated', nested: { keys: ['b', 'a'] } },
    ...overrides,
  };
};

/** The destination conformance suite (CloudQuery's writer suite, dlt's per-destination merge tests). */
export function destinationConformance(name: string, makeHarness: () => Promise<ConformanceHarness>): void {
  describe(`${name} destination conformance`, () => {
    let h: ConformanceHarness;
    let dest: Destination;
    beforeAll(async () => {
      h = await makeHarness();
      dest = await h.create();
      await dest.prepare();
    });
    afterAll(async () => {
      await dest?.close();
      await h?.teardown();
    });

    it('prepare() is idempotent and creates every table with typed columns', async () => {
      await dest.prepare();
      const cols = await h.columns('tickets');
      for (const c of [
        'id',
        'ticket_number',
        'updated_at',
        'contact_email',
        'ticket_fields',
        '_raw',
        '_synced_at',
        '_deleted_at',
      ])
        expect(cols).toContain(c);
      expect(await h.columns('report_snapshot_values')).toContain('measure_key');
    });

    it('writes typed columns, flattened contact, _raw, and the checkpoint in one batch', async () => {
      const t = ticket({ ticket_number: 1 });
      const result = await writeBatch(dest, {
        table: 'tickets',
        rows: [input(t)],
        checkpoint: {
          stream: 'tickets',
          scope: 'w1',
          cursor: 'c1',
          high_water_mark: t.updated_at,
          status: 'running',
          pages: 1,
          rows: 1,
        },
      });
      expect(result).toEqual({ received: 1, inserted: 1, updated: 0, unchanged: 0 });
      const row = (await h.readRows('tickets')).find((r) => r['id'] === t.id)!;
      expect(row['ticket_number']).toBe(1);
      expect(row['contact_email']).toBe('jane.doe@example.com');
      expect(row['updated_at']).toBe('2025-03-01T10:00:00.000000Z');
      expect(row['tags']).toEqual(['shipping', 'damaged']);
      expect(row['is_spam']).toBe(false);
      expect(row['_raw']).toEqual(JSON.parse(JSON.stringify(t)));
      expect(row['_deleted_at']).toBeNull();
      const cp = await dest.readCheckpoint('tickets', 'w1');
      expect(cp).toMatchObject({ cursor: 'c1', status: 'running', pages: 1, rows: 1 });
      expect(cp?.high_water_mark).toBe(t.updated_at);
      expect(await dest.listCheckpoints({ stream: 'tickets' })).toHaveLength(1);
      expect(await dest.readCheckpoint('tickets', 'nope')).toBeNull();
    });

    it('idempotent re-write: the same batch twice changes nothing', async () => {
      const batch = [ticket({ ticket_number: 2 }), ticket({ ticket_number: 3 })].map(input);
      expect(await writeBatch(dest, { table: 'tickets', rows: batch })).toMatchObject({ inserted: 2 });
      const before = (await h.readRows('tickets')).map(typed);
      expect(await writeBatch(dest, { table: 'tickets', rows: batch })).toEqual({
        received: 2,
        inserted: 0,
        updated: 0,
        unchanged: 2,
      });
      expect((await h.readRows('tickets')).map(typed)).toEqual(before);
      const msgs = [message(), message()].map(input);
      await writeBatch(dest, { table: 'ticket_messages', rows: msgs });
      expect(await writeBatch(dest, { table: 'ticket_messages', rows: msgs })).toMatchObject({
        unchanged: 2,
      });
    });

    it('out-of-order versions: older never overwrites newer; equal wins only when the content differs', async () => {
      const id = crypto.randomUUID();
      const v2 = ticket({ id, ticket_number: 10, status: 'resolved', updated_at: at(20) });
      const v1 = ticket({ id, ticket_number: 10, status: 'open', updated_at: at(10) });
      await writeBatch(dest, { table: 'tickets', rows: [input(v2)] });
      expect(await writeBatch(dest, { table: 'tickets', rows: [input(v1)] })).toMatchObject({ unchanged: 1 });
      // Same version, different content: the source changed the ticket without stamping it.
      const equalButDifferent = ticket({
        id,
        ticket_number: 10,
        status: 'need_more_info',
        updated_at: at(20),
      });
      expect(await writeBatch(dest, { table: 'tickets', rows: [input(equalButDifferent)] })).toMatchObject({
        updated: 1,
      });
      // Same version, same content: nothing to do.
      expect(await writeBatch(dest, { table: 'tickets', rows: [input(equalButDifferent)] })).toMatchObject({
        unchanged: 1,
      });
      let row = (await h.readRows('tickets')).find((r) => r['id'] === id)!;
      expect(row['status']).toBe('need_more_info');
      // One batch holding both versions (any order) keeps the newest.
      const v3 = ticket({ id, ticket_number: 10, status: 'closed', updated_at: at(30) });
      expect(await writeBatch(dest, { table: 'tickets', rows: [input(v3), input(v1)] })).toMatchObject({
        updated: 1,
        unchanged: 1,
      });
      row = (await h.readRows('tickets')).find((r) => r['id'] === id)!;
      expect(row['status']).toBe('closed');
      expect((await dest.storedVersions('tickets', [id, 'missing'])).get(id)).toEqual({
        version: canonicalTimestamp(at(30)),
        contentHash: contentHashOf('tickets', input(v3)),
      });
      expect((await dest.storedVersions('tickets', [id, crypto.randomUUID()])).size).toBe(1);
    });

    it('late survey answers replace the unanswered row (version coalesce(submitted_at, sent_at))', async () => {
      const sent = survey();
      const answered = { ...sent, score: 4, submitted_at: '2025-03-05T08:00:00.654321Z', comment: 'ok' };
      await writeBatch(dest, { table: 'csat_surveys', rows: [input(sent)] });
      expect(await writeBatch(dest, { table: 'csat_surveys', rows: [input(answered)] })).toMatchObject({
        updated: 1,
      });
      expect(await writeBatch(dest, { table: 'csat_surveys', rows: [input(sent)] })).toMatchObject({
        unchanged: 1,
      });
      const row = (await h.readRows('csat_surveys')).find((r) => r['id'] === sent.id)!;
      expect(row).toMatchObject({
        score: 4,
        submitted_at: '2025-03-05T08:00:00.654321Z',
        _version: '2025-03-05T08:00:00.654321Z',
      });
      expect((await dest.storedVersions('csat_surveys', [sent.id])).get(sent.id)?.version).toBe(
        '2025-03-05T08:00:00.654321Z',
      );
    });

    it('content-rule tables: the latest sync wins when content differs (message delivery status)', async () => {
      const m = message({ status: 'queued' });
      await writeBatch(dest, { table: 'ticket_messages', rows: [input(m)] });
      expect(
        await writeBatch(dest, { table: 'ticket_messages', rows: [input({ ...m, status: 'delivered' })] }),
      ).toMatchObject({ updated: 1 });
      const row = (await h.readRows('ticket_messages')).find((r) => r['id'] === m.id)!;
      expect(row['status']).toBe('delivered');
      expect((await dest.storedVersions('ticket_messages', [m.id])).get(m.id)).toEqual({
        version: null,
        contentHash: contentHashOf('ticket_messages', input({ ...m, status: 'delivered' })),
      });
    });

    it('changes seen by content: _content_hash is the hash of the row; a change only _raw shows is written', async () => {
      const t = ticket({ ticket_number: 11, updated_at: at(40) });
      await writeBatch(dest, { table: 'tickets', rows: [input(t)] });
      let row = (await h.readRows('tickets')).find((r) => r['id'] === t.id)!;
      expect(row['_content_hash']).toMatch(/^[0-9a-f]{64}$/);
      expect(row['_content_hash']).toBe(expectedHash(row));
      expect(row['_content_hash']).toBe(contentHashOf('tickets', input(t)));
      // Key order does not matter (canonical JSON)...
      const raw = input(t).raw as Record<string, unknown>;
      const reordered = { item: t, raw: Object.fromEntries(Object.entries(raw).reverse()) };
      expect(await writeBatch(dest, { table: 'tickets', rows: [reordered] })).toMatchObject({ unchanged: 1 });
      // ...but a field only _raw has does, at the same version.
      const extended = { item: t, raw: { ...raw, sla_policy: { name: 'gold' } } };
      expect(await writeBatch(dest, { table: 'tickets', rows: [extended] })).toMatchObject({ updated: 1 });
      row = (await h.readRows('tickets')).find((r) => r['id'] === t.id)!;
      expect((row['_raw'] as Record<string, unknown>)['sla_policy']).toEqual({ name: 'gold' });
      expect(row['_content_hash']).toBe(contentHashOf('tickets', extended));
      expect(await writeBatch(dest, { table: 'tickets', rows: [extended] })).toMatchObject({ unchanged: 1 });
      // An older version never wins, whatever its content.
      const older = ticket({ ...t, subject: 'older', updated_at: at(39) });
      expect(await writeBatch(dest, { table: 'tickets', rows: [input(older)] })).toMatchObject({
        unchanged: 1,
      });
      expect((await h.readRows('tickets')).find((r) => r['id'] === t.id)!['subject']).toBe(t.subject);
    });

    it('a stored row without a content hash (written before hashes) counts as changed, on both rules', async () => {
      const hashless = await h.create({
        tables: {
          tickets: olderSpec(TABLES.tickets, [], { hashless: true }),
          ticket_messages: olderSpec(TABLES.ticket_messages, [], { hashless: true }),
        },
      });
      const t = ticket({ ticket_number: 12 });
      const m = message();
      await writeBatch(hashless, { table: 'tickets', rows: [input(t)] });
      await writeBatch(hashless, { table: 'ticket_messages', rows: [input(m)] });
      await hashless.close();
      expect((await dest.storedVersions('tickets', [t.id])).get(t.id)).toEqual({
        version: canonicalTimestamp(t.updated_at),
        contentHash: null,
      });
      // The same item again, same version and content: rewritten once, to store its hash.
      for (const [table, item] of [
        ['tickets', t],
        ['ticket_messages', m],
      ] as const) {
        expect(await writeBatch(dest, { table, rows: [input(item as never)] })).toMatchObject({ updated: 1 });
        expect(await writeBatch(dest, { table, rows: [input(item as never)] })).toMatchObject({
          unchanged: 1,
        });
        const row = (await h.readRows(table)).find((r) => r['id'] === item.id)!;
        expect(row['_content_hash']).toBe(expectedHash(row));
      }
    });

    // A destination that stages through the Storage Write API makes a batch durable whole when it is
    // staged: a crash before the merge then loses nothing, and the next flush merges rows and checkpoint.
    it('a crash between staging and merge leaves the batch all or nothing (nothing visible, or all once flushed)', async () => {
      const cp = {
        stream: 'tickets',
        scope: 'crash',
        cursor: 'before',
        high_water_mark: null,
        status: 'running' as const,
        pages: 1,
        rows: 1,
      };
      await writeBatch(dest, { table: 'tickets', rows: [], checkpoint: cp });
      const crashing = await crashingAfterStaging(h);
      const t = ticket({ ticket_number: 20 });
      await expect(
        writeBatch(crashing, {
          table: 'tickets',
          rows: [input(t)],
          checkpoint: { ...cp, cursor: 'after', pages: 2 },
        }),
      ).rejects.toThrow(/injected crash/);
      await crashing.close();
      expect((await h.readRows('tickets')).some((r) => r['id'] === t.id)).toBe(false);
      if (h.staged) {
        expect(await dest.readCheckpoint('tickets', 'crash')).toMatchObject({ cursor: 'after', pages: 2 });
        await dest.flushStaged();
        expect((await h.readRows('tickets')).some((r) => r['id'] === t.id)).toBe(true);
      } else
        expect(await dest.readCheckpoint('tickets', 'crash')).toMatchObject({ cursor: 'before', pages: 1 });
    });

    it('a row that breaks the table schema fails the whole batch, naming table, id and field', async () => {
      const cp = {
        stream: 'tickets',
        scope: 'bad',
        cursor: 'c0',
        high_water_mark: null,
        status: 'running' as const,
        pages: 0,
        rows: 0,
      };
      await writeBatch(dest, { table: 'tickets', rows: [], checkpoint: cp });
      const good = ticket({ ticket_number: 30 });
      const bad = ticket({ ticket_number: 'thirty' as unknown as number });
      const err = await writeBatch(dest, {
        table: 'tickets',
        rows: [input(good), input(bad)],
        checkpoint: { ...cp, cursor: 'c1' },
      }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(WarehouseRowError);
      expect((err as Error).message).toContain('tickets');
      expect((err as Error).message).toContain(bad.id);
      expect((err as Error).message).toContain('ticket_number');
      const badTime = ticket({ updated_at: 'yesterday' });
      await expect(writeBatch(dest, { table: 'tickets', rows: [input(badTime)] })).rejects.toThrow(
        /updated_at/,
      );
      const ids = new Set((await h.readRows('tickets')).map((r) => r['id']));
      expect(ids.has(good.id)).toBe(false);
      expect(await dest.readCheckpoint('tickets', 'bad')).toMatchObject({ cursor: 'c0' });
    });

    it('concurrent writers to the same table neither deadlock nor lose updates', async () => {
      const ids: string[] = Array.from({ length: 40 }, () => crypto.randomUUID());
      const writers = Array.from({ length: h.concurrency }, async (_, w) => {
        const d = await h.create();
        try {
          for (let round = 0; round < 3; round++) {
            // Each writer writes every id, in its own order, with versions that interleave across writers.
            const order = w % 2 === 0 ? ids : [...ids].reverse();
            const rows = order.map((id, i) =>
              input(
                ticket({
                  id,
                  ticket_number: 100 + i,
                  subject: `w${w} r${round}`,
                  updated_at: at(round * 10 + w),
                }),
              ),
            );
            await writeBatch(d, { table: 'tickets', rows });
          }
        } finally {
          await d.close();
        }
      });
      await Promise.all(writers);
      const rows = (await h.readRows('tickets')).filter((r) => ids.includes(r['id'] as string));
      expect(rows).toHaveLength(ids.length);
      const newest = `w${h.concurrency - 1} r2`;
      for (const r of rows) {
        expect(r['subject']).toBe(newest);
        expect(r['updated_at']).toBe(canonicalTimestamp(at(20 + h.concurrency - 1)));
      }
    });

    it('JSON and unicode edge cases round-trip (NUL and lone surrogates become U+FFFD)', async () => {
      const weird =
        'tab\there\nnewline\r\nCRLF \\backslash\\ "quotes" \'single\' 😀 𝄞 é ü 中文 עברית \u200b zero-width';
      const t = ticket({
        ticket_number: 40,
        subject: `${weird} NUL:\u0000 lone:\ud800 end`,
        tags: ['a\tb', 'c\\nd', '{"json":"in a tag"}', '😀'],
        ticket_fields: [
          { field_id: 'k"ey', name: 'ключ\\', type: 'text', value: '\\u0000 literal, not NUL' },
          { field_id: 'n', name: 'number', type: 'number', value: 1.5e-7 },
          { field_id: 'e', name: 'empty', type: 'multi_select', value: [] },
          { field_id: 'z', name: 'null', type: 'text', value: null },
        ],
      });
      const raw = { ...JSON.parse(JSON.stringify(t)), future_field: { nested: [{ deep: true }, null, 'x'] } };
      await writeBatch(dest, { table: 'tickets', rows: [{ item: t, raw }] });
      const row = (await h.readRows('tickets')).find((r) => r['id'] === t.id)!;
      expect(row['subject']).toBe(`${weird} NUL:\uFFFD lone:\uFFFD end`);
      expect(row['tags']).toEqual(t.tags);
      expect(row['ticket_fields']).toEqual(t.ticket_fields);
      expect((row['_raw'] as Record<string, unknown>)['future_field']).toEqual({
        nested: [{ deep: true }, null, 'x'],
      });
      // Re-writing the same weird content is still a no-op.
      expect(await writeBatch(dest, { table: 'tickets', rows: [{ item: t, raw }] })).toMatchObject({
        unchanged: 1,
      });
    });

    it('very long texts are stored whole', async () => {
      const long =
        `${'Lorem ipsum dolor sit amet, 😀 consectetur\n'.repeat(Math.ceil(h.longTextLength / 43))}`.slice(
          0,
          h.longTextLength,
        );
      const t = ticket({ ticket_number: 50, subject: long });
      const m = message({ text: long.slice(0, 10_000) });
      await writeBatch(dest, { table: 'tickets', rows: [input(t)] });
      await writeBatch(dest, { table: 'ticket_messages', rows: [input(m)] });
      const row = (await h.readRows('tickets')).find((r) => r['id'] === t.id)!;
      expect((row['subject'] as string).length).toBe(long.length);
      expect(row['subject']).toBe(long);
      const mrow = (await h.readRows('ticket_messages')).find((r) => r['id'] === m.id)!;
      expect(mrow['text']).toBe(m.text);
    });

    it('additive migration: a column missing from an existing table with data is added by prepare()', async () => {
      const t = ticket({ ticket_number: 60 });
      await writeBatch(dest, { table: 'tickets', rows: [input(t)] });
      await h.dropColumn('tickets', 'language');
      expect(await h.columns('tickets')).not.toContain('language');
      const fresh = await h.create();
      await fresh.prepare();
      expect(await h.columns('tickets')).toContain('language');
      const before = (await h.readRows('tickets')).find((r) => r['id'] === t.id)!;
      expect(before['language']).toBe('en'); // filled from _raw by the migration
      expect(before['subject']).toBe(t.subject);
      await writeBatch(fresh, {
        table: 'tickets',
        rows: [input({ ...t, language: 'fr', updated_at: at(90) })],
      });
      expect((await h.readRows('tickets')).find((r) => r['id'] === t.id)!['language']).toBe('fr');
      await fresh.close();
    });

    it('migration: a column added to a table with rows is filled from _raw, typed; computed columns stay null', async () => {
      // Tables as an older model had them: agents without four columns (nor content hashes), views without
      // `count`, report values without `value`; rows written by that older sync.
      const dropped = {
        agents: ['email', 'active', 'team_ids', 'created_at'],
        views: ['count'],
        report_snapshot_values: ['value'],
      } as const;
      for (const [table, columns] of Object.entries(dropped))
        for (const c of columns) await h.dropColumn(table as TableName, c);
      const old = await h.create({
        tables: {
          agents: olderSpec(TABLES.agents, dropped.agents),
          views: olderSpec(TABLES.views, dropped.views),
          report_snapshot_values: olderSpec(TABLES.report_snapshot_values, dropped.report_snapshot_values),
        },
      });
      const a = agent({ created_at: '2024-05-01T10:30:00.250+02:00' });
      const noEmail = agent({ email: null, active: false, team_ids: [] });
      const badTime = agent();
      const v = view({ count: 12 });
      const snap: ReportSnapshotInput = {
        query: 'migration test kpi',
        timezone: 'UTC',
        taken_at: '2025-04-01T00:00:00Z',
        result: { kind: 'kpi', format: 'percent', value: 0.8125, previousValue: null },
      };
      const values = reportSnapshotValues(snap);
      await writeBatch(old, {
        table: 'agents',
        rows: [
          input(a),
          input(noEmail),
          // `_raw` is what the migration reads: a value that does not fit the type stays null.
          { item: badTime, raw: { ...(input(badTime).raw as object), created_at: 'last tuesday' } },
        ],
      });
      await writeBatch(old, { table: 'views', rows: [input(v)] });
      await writeBatch(old, { table: 'report_snapshot_values', rows: values });
      await old.close();
      await h.dropColumn('agents', '_content_hash');

      const fresh = await h.create();
      await fresh.prepare();
      const agents = new Map((await h.readRows('agents')).map((r) => [r['id'], r]));
      expect(agents.get(a.id)).toMatchObject({
        email: a.email,
        active: true,
        team_ids: a.team_ids,
        created_at: '2024-05-01T08:30:00.250000Z',
        _content_hash: null, // computed: no path in the item, nothing to fill it from
      });
      expect(agents.get(noEmail.id)).toMatchObject({ email: null, active: false, team_ids: [] });
      expect(agents.get(badTime.id)).toMatchObject({ created_at: null, email: badTime.email });
      const viewRow = (await h.readRows('views')).find((r) => r['id'] === v.id)!;
      expect(viewRow['count']).toBe(12);
      const valueRows = (await h.readRows('report_snapshot_values')).filter(
        (r) => r['snapshot_id'] === values[0]!.snapshot_id,
      );
      expect(valueRows.map((r) => r['value'])).toEqual([0.8125, null]);
      // The next read rewrites migrated rows once (their hashes were computed without these columns, or
      // not at all), then they are stable again.
      expect(await writeBatch(fresh, { table: 'agents', rows: [input(a)] })).toMatchObject({ updated: 1 });
      expect(await writeBatch(fresh, { table: 'views', rows: [input(v)] })).toMatchObject({ updated: 1 });
      expect(await writeBatch(fresh, { table: 'views', rows: [input(v)] })).toMatchObject({ unchanged: 1 });
      const rewritten = (await h.readRows('agents')).find((r) => r['id'] === a.id)!;
      expect(rewritten['_content_hash']).toBe(contentHashOf('agents', input(a)));
      await fresh.close();
    });

    it('marks deleted rows, by id and not-seen-since, and revives rows that come back', async () => {
      let now = new Date('2030-01-01T00:00:00Z');
      const d = await h.create({ clock: () => now });
      const [a, b, c] = [
        ticket({ ticket_number: 70 }),
        ticket({ ticket_number: 71 }),
        ticket({ ticket_number: 72 }),
      ];
      await writeBatch(d, { table: 'tickets', rows: [a, b, c].map(input) });
      now = new Date('2030-01-02T00:00:00Z');
      const refreshStart = now;
      // Full refresh sees a and b (b unchanged), not c.
      await writeBatch(d, { table: 'tickets', rows: [input(a), input(b)] });
      const deletedAt = new Date('2030-01-02T01:00:00Z');
      const cp = {
        stream: 'tickets',
        scope: 'full',
        cursor: null,
        high_water_mark: null,
        status: 'complete' as const,
        pages: 1,
        rows: 2,
      };
      const n = await d.markDeleted(
        { table: 'tickets', notSeenSince: refreshStart, checkpoint: cp },
        deletedAt,
      );
      const mine = async () =>
        (await h.readRows('tickets')).filter((r) => [a.id, b.id, c.id].includes(r['id'] as string));
      expect(n).toBeGreaterThanOrEqual(1);
      const rows = await mine();
      expect(rows.find((r) => r['id'] === c.id)!['_deleted_at']).toBe(canonicalTimestamp(deletedAt));
      expect(rows.find((r) => r['id'] === b.id)!['_deleted_at']).toBeNull();
      expect(await d.readCheckpoint('tickets', 'full')).toMatchObject({ status: 'complete' });
      expect(await d.markDeleted({ table: 'tickets', ids: [a.id] }, deletedAt)).toBe(1);
      expect(await d.markDeleted({ table: 'tickets', ids: [a.id] }, deletedAt)).toBe(0);
      // a comes back (same version): revived.
      await writeBatch(d, { table: 'tickets', rows: [input(a)] });
      expect((await mine()).find((r) => r['id'] === a.id)!['_deleted_at']).toBeNull();
      await expect(d.markDeleted({ table: 'agent_sessions', ids: ['x'] }, deletedAt)).rejects.toThrow(
        /does not track deletions/,
      );
      await d.close();
    });

    it('seen ids move _synced_at without rewriting; a sweep then marks exactly the unseen rows', async () => {
      let now = new Date('2031-01-01T00:00:00Z');
      const d = await h.create({ clock: () => now });
      const [a, b, c] = [
        ticket({ ticket_number: 80 }),
        ticket({ ticket_number: 81 }),
        ticket({ ticket_number: 82 }),
      ];
      await writeBatch(d, { table: 'tickets', rows: [a, b, c].map(input) });
      // `_synced_at` as a reader of the destination sees it (BigQuery folds sightings into the column lazily,
      // connectors/bigquery/sightings.ts, and lays the rest over what it reads); deleted rows as stored.
      const mine = async () => {
        const ids = [a.id, b.id, c.id];
        const live = new Map(
          (await d.liveRows('tickets', ['id', '_synced_at'], { kind: 'in', column: 'id', values: ids })).map(
            (r) => [r['id'] as string, r['_synced_at']],
          ),
        );
        return new Map(
          (await h.readRows('tickets'))
            .filter((r) => ids.includes(r['id'] as string))
            .map((r) => [
              r['id'] as string,
              live.has(r['id'] as string) ? { ...r, _synced_at: live.get(r['id'] as string) } : r,
            ]),
        );
      };
      now = new Date('2031-01-02T00:00:00Z');
      const sweepStart = now;
      const changedB = { ...b, status: 'resolved' as const, updated_at: '2031-01-01T12:00:00.000Z' };
      const cp = {
        stream: 'tickets',
        scope: 'sweep',
        cursor: null,
        high_water_mark: null,
        status: 'complete' as const,
        pages: 1,
        rows: 2,
      };
      // A page: b changed (rewritten), a unchanged (only seen); c is not served any more.
      await writeBatch(d, { table: 'tickets', rows: [input(changedB)], seen: [a.id], checkpoint: cp });
      // A page with nothing changed at all still records what it saw, with its checkpoint.
      await writeBatch(d, { table: 'tickets', rows: [], seen: [a.id], checkpoint: { ...cp, pages: 2 } });
      let rows = await mine();
      expect(rows.get(a.id)!['_synced_at']).toBe(canonicalTimestamp(sweepStart));
      expect(rows.get(a.id)!['_raw']).toEqual(JSON.parse(JSON.stringify(a)));
      expect(rows.get(b.id)!['status']).toBe('resolved');
      expect(await d.readCheckpoint('tickets', 'sweep')).toMatchObject({ pages: 2 });
      const deletedAt = new Date('2031-01-02T01:00:00Z');
      expect(
        await d.markDeleted({ table: 'tickets', notSeenSince: sweepStart }, deletedAt),
      ).toBeGreaterThanOrEqual(1);
      rows = await mine();
      expect(rows.get(c.id)!['_deleted_at']).toBe(canonicalTimestamp(deletedAt));
      expect(rows.get(a.id)!['_deleted_at']).toBeNull();
      // A deleted row is not a stored version any more: when it comes back it counts as new.
      expect((await d.storedVersions('tickets', [a.id, c.id])).has(c.id)).toBe(false);
      expect((await d.storedVersions('tickets', [a.id, c.id])).has(a.id)).toBe(true);
      await d.close();
    });

    it('children follow a deleted parent; surveys (revive) come back with it, messages do not', async () => {
      const now = new Date('2032-01-01T00:00:00Z');
      const d = await h.create({ clock: () => now });
      const parent = ticket({ ticket_number: 90 });
      const m = message({ ticket_id: parent.id, ticket_number: 90 });
      const sv = survey({ ticket_id: parent.id, ticket_number: 90 });
      await writeBatch(d, { table: 'tickets', rows: [input(parent)] });
      await writeBatch(d, { table: 'ticket_messages', rows: [input(m)] });
      await writeBatch(d, { table: 'csat_surveys', rows: [input(sv)] });
      const deletedAt = new Date('2032-01-01T01:00:00Z');
      await d.markDeleted({ table: 'tickets', ids: [parent.id] }, deletedAt);
      const messages = {
        child: 'ticket_messages',
        foreignKey: 'ticket_id',
        parent: 'tickets',
        revive: false,
      } as const;
      const surveys = {
        child: 'csat_surveys',
        foreignKey: 'ticket_id',
        parent: 'tickets',
        revive: true,
      } as const;
      expect(await d.markDeleted({ cascade: messages }, deletedAt)).toMatchObject({ marked: 1 });
      expect(await d.markDeleted({ cascade: surveys }, deletedAt)).toMatchObject({ marked: 1 });
      const deletedOf = async (table: 'ticket_messages' | 'csat_surveys', id: string) =>
        (await h.readRows(table)).find((r) => r['id'] === id)!['_deleted_at'];
      expect(await deletedOf('ticket_messages', m.id)).toBe(canonicalTimestamp(deletedAt));
      expect(await deletedOf('csat_surveys', sv.id)).toBe(canonicalTimestamp(deletedAt));
      // The ticket is restored in the source and listed again.
      await writeBatch(d, { table: 'tickets', rows: [input(parent)] });
      expect(await d.markDeleted({ cascade: surveys }, deletedAt)).toMatchObject({ marked: 0, revived: 1 });
      expect(await d.markDeleted({ cascade: messages }, deletedAt)).toMatchObject({ marked: 0, revived: 0 });
      expect(await deletedOf('csat_surveys', sv.id)).toBeNull();
      expect(await deletedOf('ticket_messages', m.id)).toBe(canonicalTimestamp(deletedAt));
      await expect(
        d.markDeleted({ cascade: { ...messages, foreignKey: 'no_such_column' } }, deletedAt),
      ).rejects.toThrow(/does not exist/);
      await d.close();
    });

    it('stale threads come oldest read first, live tickets only; freshness bounds what is verified', async () => {
      let now = new Date('2033-01-01T00:00:00Z');
      const d = await h.create({ clock: () => now });
      const [x, y, z, q] = [91001, 91002, 91003, 91004].map((n) => ticket({ ticket_number: n }));
      await writeBatch(d, { table: 'tickets', rows: [x, y, z, q].map((t) => input(t!)) });
      const queued = (n: number, status: 'running' | 'complete') => ({
        stream: 'ticket_messages',
        scope: String(n),
        cursor: null,
        high_water_mark: null,
        status,
        pages: 1,
        rows: 1,
      });
      await d.writeTables([], [queued(91002, 'complete')]);
      now = new Date('2033-01-01T01:00:00Z');
      await d.writeTables([], [queued(91001, 'complete'), queued(91003, 'complete')]);
      await d.writeTables([], [queued(91004, 'running')]);
      // A batch's entries in one listing: only the scopes asked for, whatever else lies in their range.
      const batch = await d.listCheckpoints({ threadQueue: true, scopes: ['91004', '91001', '91999'] });
      expect(batch.map((cp) => `${cp.scope} ${cp.status}`)).toEqual(['91001 complete', '91004 running']);
      expect(await d.listCheckpoints({ threadQueue: true, scopes: [] })).toEqual([]);
      await d.markDeleted({ table: 'tickets', ids: [z!.id] }, now);
      const stale = await d.bookkeeping.staleThreads(new Date('2033-01-01T02:00:00Z'), 1000);
      const mineOnly = stale.filter((s) => s.startsWith('9100'));
      expect(mineOnly).toEqual(['91002', '91001']);
      expect(
        (await d.bookkeeping.staleThreads(new Date('2033-01-01T00:30:00Z'), 1000)).filter((s) =>
          s.startsWith('9100'),
        ),
      ).toEqual(['91002']);
      const f = await d.bookkeeping.freshness();
      expect(f.tickets.live).toBeGreaterThanOrEqual(3);
      expect(f.tickets.oldestVerifiedAt).not.toBeNull();
      expect(f.threads.unread).toBeGreaterThanOrEqual(1); // 91004 is still queued
      expect(Date.parse(f.threads.oldestVerifiedAt!)).toBeLessThanOrEqual(Date.parse('2033-01-01T00:00:00Z'));
      await d.close();
    });

    it('a queue entry read with the tag its listing returned is the one listed, or the one written since', async () => {
      const d = await h.create();
      const entry = (pages: number, cursor: string | null) => ({
        stream: 'ticket_messages',
        scope: '92001',
        cursor,
        high_water_mark: null,
        status: 'running' as const,
        pages,
        rows: 0,
      });
      await d.writeTables([], [entry(0, null)]);
      const [listed] = (await d.listCheckpoints({ threadQueue: true, status: 'running' })).filter(
        (cp) => cp.scope === '92001',
      );
      expect(listed).toMatchObject(entry(0, null));
      const tag = checkpointTagOf(listed!);
      expect(await d.readCheckpoint('ticket_messages', '92001', { lastSeenTag: tag })).toEqual(listed);
      // A first page that staged page 1 and was retried: the retry reads page 1's checkpoint, not the listed one.
      await d.writeTables([], [entry(1, 'm1')]);
      expect(await d.readCheckpoint('ticket_messages', '92001', { lastSeenTag: tag })).toMatchObject(
        entry(1, 'm1'),
      );
      await d.close();
    });

    it('keeps re-read entries in _reread_queue and lists them with the pass', async () => {
      let d!: SqlDialect;
      await dest.select((dialect) => {
        d = dialect;
        return 'SELECT 1 AS one';
      });
      const pass = 'layout.reread';
      const w = (day: number) => `2024-06-0${day}T00:00:00Z`;
      const rereadScope = (day: number) =>
        encodeStateKey({ kind: 'reread', pass, from: w(day), before: w(day + 1) }).scope;
      const windowScope = (day: number) =>
        encodeStateKey({ kind: 'window', pass, from: w(day), before: w(day + 1) }).scope;
      // Rows of _sync_state: the window of the pass, and a report query whose name looks like a re-read
      // scope (a report key: it stays there).
      const workspace = h.workspace === undefined ? '' : `${d.string(h.workspace)}, `;
      const row = (stream: string, scope: string, status: string, at: string) =>
        `(${workspace}${d.string(stream)}, ${d.string(scope)}, NULL, CAST(NULL AS ${d.type('string')}), ${d.string(status)}, 0, 0, ${d.timestamp(at)})`;
      await h.execute(
        `INSERT INTO ${d.target('_sync_state')} (${workspace && 'workspace_id, '}stream, scope, cursor, high_water_mark, status, pages, ${d.ident('rows')}, updated_at) VALUES
        ${row(pass, windowScope(1), 'complete', '2024-06-04T00:00:00Z')},
        ${row('report_snapshots', rereadScope(1), 'complete', '2024-06-04T00:00:00Z')}`,
      );
      const queue = async () =>
        (
          await dest.select(
            (q) => `SELECT pass, window_start, window_end, status FROM ${q.table('_reread_queue')}
              WHERE pass = ${q.string(pass)} ORDER BY window_start`,
          )
        ).map((r) => `${r['status']} ${r['window_start']}`);
      const left = async () =>
        (
          await dest.select(
            (q) => `SELECT stream, scope FROM ${q.table('_sync_state')}
              WHERE stream IN (${q.string(pass)}, ${q.string('report_snapshots')}) ORDER BY stream, scope`,
          )
        ).map((r) => `${r['stream']} ${r['scope']}`);
      const kept = [`${pass} ${windowScope(1)}`, `report_snapshots ${rereadScope(1)}`];

      await dest.writeTables(
        [],
        [
          restartedCheckpoint({ kind: 'reread', pass, from: w(1), before: w(2) }),
          { ...restartedCheckpoint({ kind: 'reread', pass, from: w(3), before: w(4) }), status: 'complete' },
        ],
      );
      // A re-read entry staged and not merged yet (BigQuery; PostgreSQL writes it at once) reaches the queue too.
      const staged = await h.create();
      await staged.writeTables(
        [
          {
            table: 'tickets',
            rows: [],
            checkpoint: restartedCheckpoint({ kind: 'reread', pass, from: w(5), before: w(6) }),
          },
        ],
        undefined,
        { stage: true },
      );
      await staged.close();
      await dest.flushStaged();
      expect(await queue()).toEqual([`running ${w(1)}`, `complete ${w(3)}`, `running ${w(5)}`]);
      expect(await left()).toEqual(kept);

      // Readers see the entries as checkpoints of the pass, beside its windows, in (stream, scope) order.
      const after = await h.create();
      try {
        const listed = (await after.listCheckpoints({ stream: pass })).map((c) => `${c.status} ${c.scope}`);
        expect(listed).toEqual(
          [
            `complete ${windowScope(1)}`,
            `running ${rereadScope(1)}`,
            `complete ${rereadScope(3)}`,
            `running ${rereadScope(5)}`,
          ].sort((a, b) => (a.split(' ')[1]! < b.split(' ')[1]! ? -1 : 1)),
        );
        expect(await after.readCheckpoint(pass, rereadScope(1))).toMatchObject({ status: 'running' });
        expect(await after.readCheckpoint('report_snapshots', rereadScope(1))).toMatchObject({
          status: 'complete',
        });
        // Written now, an entry lands in the queue, never in _sync_state.
        await after.writeTables(
          [],
          [
            {
              ...restartedCheckpoint({ kind: 'reread', pass, from: w(1), before: w(2) }),
              status: 'complete',
            },
          ],
        );
        await after.flushStaged();
        expect((await queue())[0]).toBe(`complete ${w(1)}`);
        expect(await left()).toEqual(kept);
      } finally {
        await after.close();
      }
    });

    it('a full refresh over a range marks only unseen rows inside that range deleted', async () => {
      let now = new Date('2030-01-01T00:00:00Z');
      const d = await h.create({ clock: () => now });
      const old = survey({ sent_at: '2025-01-01T00:00:00.000001Z' });
      const gone = survey({ sent_at: '2025-03-02T00:00:00.000001Z' });
      const kept = survey({ sent_at: '2025-03-03T00:00:00.000001Z' });
      await writeBatch(d, { table: 'csat_surveys', rows: [old, gone, kept].map(input) });
      now = new Date('2030-01-02T00:00:00Z');
      const refreshStart = now;
      // The refresh re-read surveys sent since 2025-03-01 and saw only `kept`.
      await writeBatch(d, { table: 'csat_surveys', rows: [input(kept)] });
      const deletedAt = new Date('2030-01-02T01:00:00Z');
      const n = await d.markDeleted(
        {
          table: 'csat_surveys',
          notSeenSince: refreshStart,
          within: {
            column: 'sent_at',
            from: new Date('2025-03-01T00:00:00Z'),
          },
        },
        deletedAt,
      );
      expect(n).toBeGreaterThanOrEqual(1); // other tests' surveys share the table
      const rows = (await h.readRows('csat_surveys')).filter((r) =>
        [old.id, gone.id, kept.id].includes(r['id'] as string),
      );
      const deleted = (id: string) => rows.find((r) => r['id'] === id)!['_deleted_at'];
      expect(deleted(gone.id)).toBe(canonicalTimestamp(deletedAt));
      expect(deleted(old.id)).toBeNull();
      expect(deleted(kept.id)).toBeNull();
      await expect(
        d.markDeleted(
          {
            table: 'csat_surveys',
            notSeenSince: refreshStart,
            within: {
              column: 'score',
              from: now,
            },
          },
          deletedAt,
        ),
      ).rejects.toThrow(/not a timestamp column/);
      await d.close();
    });

    it('a full refresh never flags rows of a scope it did not read (unlessUnread)', async () => {
      let now = new Date('2034-01-01T00:00:00Z');
      const d = await h.create({ clock: () => now });
      const [read, failed, queued] = [93001, 93002, 93003];
      const msgs = [read, failed, queued].map((n) => message({ ticket_number: n }));
      await writeBatch(d, { table: 'ticket_messages', rows: msgs.map(input) });
      now = new Date('2034-01-02T00:00:00Z');
      const refreshStart = now;
      const queue = (n: number, status: 'running' | 'complete' | 'failed') => ({
        stream: THREAD_QUEUE_STREAM,
        scope: String(n),
        cursor: null,
        high_water_mark: null,
        status,
        pages: 0,
        rows: 0,
      });
      // This refresh read thread 93001 (its message is gone from it); 93002 failed, 93003 is still queued.
      await d.writeTables([], [queue(read, 'complete'), queue(failed, 'failed'), queue(queued, 'running')]);
      const deletedAt = new Date('2034-01-02T01:00:00Z');
      const guard = { column: 'ticket_number' };
      await d.markDeleted(
        { table: 'ticket_messages', notSeenSince: refreshStart, unlessUnread: guard },
        deletedAt,
      );
      const deleted = async () =>
        new Map(
          (await h.readRows('ticket_messages'))
            .filter((r) => msgs.some((m) => m.id === r['id']))
            .map((r) => [r['ticket_number'], r['_deleted_at']]),
        );
      expect(await deleted()).toEqual(
        new Map([
          [read, canonicalTimestamp(deletedAt)],
          [failed, null],
          [queued, null],
        ]),
      );
      // Once the failed thread is read (its message still not served), the next refresh flags it.
      await d.writeTables([], [queue(failed, 'complete')]);
      await d.markDeleted(
        { table: 'ticket_messages', notSeenSince: refreshStart, unlessUnread: guard },
        deletedAt,
      );
      expect((await deleted()).get(failed)).toBe(canonicalTimestamp(deletedAt));
      expect((await deleted()).get(queued)).toBeNull();
      await expect(
        d.markDeleted(
          {
            table: 'ticket_messages',
            notSeenSince: refreshStart,
            unlessUnread: {
              column: 'attachments',
            },
          },
          deletedAt,
        ),
      ).rejects.toThrow(/not an integer column/);
      await d.close();
    });

    it('_rejected: items set aside commit with the page, are counted when seen again, resolved when stored', async () => {
      let now = new Date('2035-01-01T00:00:00Z');
      const d = await h.create({ clock: () => now });
      const stamp = () => canonicalTimestamp(now);
      const stored = ticket({ ticket_number: 94001 });
      const later = rejection({ itemId: crypto.randomUUID() }); // stored by a later batch
      const keyless = rejection({ itemId: null, reason: 'no id', raw: { subject: 'no id', n: 1 } });
      const other = rejection({ table: 'ticket_messages', stream: 'ticket_messages', itemId: later.itemId });
      const cp = {
        stream: 'tickets',
        scope: 'rejects',
        cursor: 'cur_2',
        high_water_mark: null,
        status: 'running' as const,
        pages: 1,
        rows: 1,
      };
      await writeBatch(d, {
        table: 'tickets',
        rows: [input(stored)],
        rejected: [later, keyless],
        checkpoint: cp,
      });
      await writeBatch(d, { table: 'ticket_messages', rows: [], rejected: [other] });
      const keys = [later.itemKey, keyless.itemKey];
      let rows = await rejectedRows(d, keys);
      expect(rows).toHaveLength(3);
      const ticketEntry = rows.find((r) => r['table_name'] === 'tickets' && r['item_key'] === later.itemKey);
      expect(ticketEntry).toEqual({
        table_name: 'tickets',
        item_key: later.itemKey,
        item_id: later.itemId,
        stream: 'tickets',
        scope: 'sweep',
        page_cursor: 'cur_1',
        reason: later.reason,
        raw: later.raw,
        first_seen_at: stamp(),
        last_seen_at: stamp(),
        times_seen: 1,
        resolved_at: null,
      });
      expect(rows.find((r) => r['item_key'] === keyless.itemKey)).toMatchObject({
        item_id: null,
        raw: keyless.raw,
      });
      expect(await d.readCheckpoint('tickets', 'rejects')).toMatchObject({ cursor: 'cur_2' });

      // Seen again, on a batch that holds only rejections and a checkpoint: counted, details updated.
      const first = stamp();
      now = new Date('2035-01-02T00:00:00Z');
      const again = {
        ...later,
        reason: 'field status: still "escalated"',
        scope: 'head/x',
        pageCursor: null,
      };
      await writeBatch(d, {
        table: 'tickets',
        rows: [],
        rejected: [again],
        checkpoint: { ...cp, cursor: 'cur_3' },
      });
      rows = await rejectedRows(d, [later.itemKey]);
      expect(rows.find((r) => r['table_name'] === 'tickets')).toMatchObject({
        reason: again.reason,
        scope: 'head/x',
        page_cursor: null,
        first_seen_at: first,
        last_seen_at: stamp(),
        times_seen: 2,
        resolved_at: null,
      });
      expect(await d.readCheckpoint('tickets', 'rejects')).toMatchObject({ cursor: 'cur_3' });

      // The item is stored after all (the source fixed it): the tickets entry is resolved, in that batch;
      // the entry of another table with the same id is not.
      now = new Date('2035-01-03T00:00:00Z');
      const fixed = ticket({ id: later.itemId!, ticket_number: 94002 });
      await writeBatch(d, { table: 'tickets', rows: [input(fixed)] });
      rows = await rejectedRows(d, [later.itemKey]);
      expect(rows.find((r) => r['table_name'] === 'tickets')!['resolved_at']).toBe(stamp());
      expect(rows.find((r) => r['table_name'] === 'ticket_messages')!['resolved_at']).toBeNull();
      const open = await d.select(
        (q) =>
          `SELECT COUNT(*) AS n FROM ${q.table('_rejected')} WHERE resolved_at IS NULL AND item_key IN (${keys.map((k) => q.string(k)).join(', ')})`,
      );
      expect(open[0]!['n']).toBe(2); // keyless (tickets) and the ticket_messages entry

      // Rejected once more: open again.
      now = new Date('2035-01-04T00:00:00Z');
      await writeBatch(d, { table: 'tickets', rows: [], rejected: [later] });
      rows = await rejectedRows(d, [later.itemKey]);
      expect(rows.find((r) => r['table_name'] === 'tickets')).toMatchObject({
        times_seen: 3,
        resolved_at: null,
      });
      await d.close();
    });

    it('openRejections counts the open items per table, stream and scope; resolved items are left out', async () => {
      const d = await h.create();
      const scope = `2035-02-01T00:00:00.000Z/${crypto.randomUUID()}`;
      const a = rejection({ scope });
      const b = rejection({ scope });
      const m = rejection({ table: 'ticket_messages', stream: 'ticket_messages.thread', scope });
      await writeBatch(d, { table: 'tickets', rows: [], rejected: [a, b] });
      await writeBatch(d, { table: 'ticket_messages', rows: [], rejected: [m] });
      const ours = async () =>
        (await d.bookkeeping.openRejections())
          .filter((r) => r.scope === scope)
          .sort((x, y) => x.table_name.localeCompare(y.table_name));
      expect(await ours()).toEqual([
        { table_name: 'ticket_messages', stream: 'ticket_messages.thread', scope, items: 1 },
        { table_name: 'tickets', stream: 'tickets', scope, items: 2 },
      ]);
      // b is stored after all: its entry is resolved and no longer counted.
      await writeBatch(d, {
        table: 'tickets',
        rows: [input(ticket({ id: b.itemId!, ticket_number: 94011 }))],
      });
      expect(await ours()).toEqual([
        { table_name: 'ticket_messages', stream: 'ticket_messages.thread', scope, items: 1 },
        { table_name: 'tickets', stream: 'tickets', scope, items: 1 },
      ]);
      await d.close();
    });

    it('probeWrite proves a run can write, and leaves nothing behind a run would see', async () => {
      const d = await h.create();
      expect(await d.probeWrite()).toBe('probed');
      expect(await d.probeWrite()).toBe('probed'); // nothing left behind that a second probe would trip on
      await d.close();
    });

    it('_rejected takes 300 large items of one batch (more than one query holds), and an item too large for any', async () => {
      const d = await h.create();
      const scope = `large/${crypto.randomUUID()}`;
      // ~2.7 KB of JSON each, not plain text (a BigQuery literal of it is base64, a third longer): 300 of them
      // pass BigQuery's query length in one statement.
      const body = "Ünïcode line with 'quotes' and \\ backslashes\n".repeat(62);
      const items = Array.from({ length: 300 }, (_, i) =>
        rejection({ scope, raw: { id: `large-${i}`, status: 'escalated', body } }),
      );
      expect(JSON.stringify(items[0]!.raw).length).toBeGreaterThan(2_700);
      // One item whose JSON alone passes a query's length: its entry is written, its raw replaced by its size.
      const huge = rejection({ scope, raw: { id: 'huge', body: body.repeat(500) } });
      await writeBatch(d, { table: 'tickets', rows: [], rejected: [...items, huge] });
      const rows = await d.select(
        (q) =>
          `SELECT item_key, reason, raw FROM ${q.table('_rejected')} WHERE scope = ${q.string(scope)} ORDER BY item_key`,
      );
      expect(rows).toHaveLength(301);
      const byKey = new Map(rows.map((r) => [r['item_key'] as string, r]));
      for (const item of items) expect(byKey.get(item.itemKey)!['raw']).toEqual(item.raw);
      const hugeRaw = byKey.get(huge.itemKey)!['raw'];
      expect(hugeRaw).toEqual(h.staged ? omittedRaw(JSON.stringify(huge.raw).length) : huge.raw);
      expect((await d.bookkeeping.openRejections()).filter((r) => r.scope === scope)).toEqual([
        { table_name: 'tickets', stream: 'tickets', scope, items: 301 },
      ]);
      await d.close();
    }, 300_000);

    it('_rejected is written with its batch or not at all; a bad rejected item fails without its content', async () => {
      const cp = {
        stream: 'tickets',
        scope: 'rejects-crash',
        cursor: 'before',
        high_water_mark: null,
        status: 'running' as const,
        pages: 1,
        rows: 0,
      };
      await writeBatch(dest, { table: 'tickets', rows: [], checkpoint: cp });
      const crashing = await crashingAfterStaging(h);
      const lost = rejection();
      await expect(
        writeBatch(crashing, {
          table: 'tickets',
          rows: [input(ticket({ ticket_number: 95001 }))],
          rejected: [lost],
          checkpoint: { ...cp, cursor: 'after' },
        }),
      ).rejects.toThrow(/injected crash/);
      await crashing.close();
      if (h.staged) {
        // Staged whole: the item set aside and the checkpoint are merged by the next flush, with the row.
        expect(await dest.readCheckpoint('tickets', 'rejects-crash')).toMatchObject({ cursor: 'after' });
        await dest.flushStaged();
        expect(await rejectedRows(dest, [lost.itemKey])).toHaveLength(1);
      } else {
        expect(await rejectedRows(dest, [lost.itemKey])).toEqual([]);
        expect(await dest.readCheckpoint('tickets', 'rejects-crash')).toMatchObject({ cursor: 'before' });
      }
      const unchanged = await dest.readCheckpoint('tickets', 'rejects-crash');
      const secret = 'raw-content-must-not-leak';
      const bad = { ...rejection({ raw: { secret } }), stream: '' };
      const err = (await writeBatch(dest, {
        table: 'tickets',
        rows: [],
        rejected: [bad],
        checkpoint: { ...cp, cursor: 'bad' },
      }).catch((e: unknown) => e)) as Error;
      expect(err).toBeInstanceOf(Error);
      expect(err.message).toMatch(/rejected item 0: field stream/);
      expect(`${err.message} ${err.stack}`).not.toContain(secret);
      expect(await rejectedRows(dest, [bad.itemKey])).toEqual([]);
      expect(await dest.readCheckpoint('tickets', 'rejects-crash')).toMatchObject({
        cursor: unchanged?.cursor,
      });
    });

    it('_schema_changes: drift commits with its page, once per key, counted once per run', async () => {
      let now = new Date('2036-01-01T00:00:00Z');
      const d = await h.create({ clock: () => now });
      const stamp = () => canonicalTimestamp(now);
      const tag = crypto.randomUUID().slice(0, 8);
      const field = sighting({ fieldPath: `sla_breached_at_${tag}`, runId: 'run-1' });
      const role = sighting({
        table: 'ticket_messages',
        stream: 'ticket_messages',
        fieldPath: `role_${tag}`,
        kind: 'new_enum_value',
        observed: 'end_user',
        expected: 'customer, agent, ai',
        jsonType: 'string',
        example: '"end_user"',
        runId: 'run-1',
      });
      const custom = sighting({
        fieldPath: `ticket_fields.fld_${tag}`,
        kind: 'new_custom_field',
        jsonType: 'number',
        example: '12',
        label: 'Refund amount',
        runId: 'run-1',
      });
      const cp = {
        stream: 'tickets',
        scope: `drift-${tag}`,
        cursor: 'c1',
        high_water_mark: null,
        status: 'running' as const,
        pages: 1,
        rows: 1,
      };
      await writeBatch(d, {
        table: 'tickets',
        rows: [input(ticket({ ticket_number: 96001 }))],
        schemaChanges: [field, custom, { ...field, example: '"later on the page"' }],
        checkpoint: cp,
      });
      await writeBatch(d, { table: 'ticket_messages', rows: [], schemaChanges: [role] });
      const first = stamp();
      let rows = await changesOf(d, tag);
      expect(rows).toHaveLength(3);
      expect(rows.find((r) => r.field_path === field.fieldPath)).toEqual({
        table_name: 'tickets',
        field_path: field.fieldPath,
        kind: 'new_field',
        observed: '',
        expected: null,
        json_type: 'string',
        example: '"later on the page"',
        label: null,
        stream: 'tickets',
        first_seen_at: first,
        last_seen_at: first,
        first_run_id: 'run-1',
        last_run_id: 'run-1',
        runs_seen: 1,
      });
      expect(rows.find((r) => r.kind === 'new_enum_value')).toMatchObject({
        table_name: 'ticket_messages',
        observed: 'end_user',
        expected: 'customer, agent, ai',
        runs_seen: 1,
      });
      expect(await d.readCheckpoint('tickets', cp.scope)).toMatchObject({ cursor: 'c1' });

      // More pages of the same run: nothing moves (the run counts once, its first sighting stands).
      now = new Date('2036-01-01T00:05:00Z');
      await writeBatch(d, {
        table: 'tickets',
        rows: [],
        schemaChanges: [{ ...field, example: '"second page"' }, custom],
        checkpoint: { ...cp, cursor: 'c2' },
      });
      expect(await changesOf(d, tag)).toEqual(rows);
      expect(await d.readCheckpoint('tickets', cp.scope)).toMatchObject({ cursor: 'c2' });

      // The next run sees them again: counted, latest example; first sighting and label kept. A sighting
      // of another observed value is a row of its own.
      now = new Date('2036-01-02T00:00:00Z');
      await d.writeTables(
        [
          {
            table: 'tickets',
            rows: [],
            schemaChanges: [
              { ...field, runId: 'run-2', example: '"2036-01-02T00:00:00Z"', stream: 'tickets.head' },
              { ...custom, runId: 'run-2', label: 'Renamed' },
            ],
          },
          {
            table: 'ticket_messages',
            rows: [],
            schemaChanges: [{ ...role, runId: 'run-2', observed: 'requester' }],
          },
        ],
        { ...cp, cursor: 'c3' },
      );
      rows = await changesOf(d, tag);
      expect(rows).toHaveLength(4);
      expect(rows.find((r) => r.field_path === field.fieldPath)).toMatchObject({
        example: '"2036-01-02T00:00:00Z"',
        stream: 'tickets.head',
        first_seen_at: first,
        last_seen_at: stamp(),
        first_run_id: 'run-1',
        last_run_id: 'run-2',
        runs_seen: 2,
      });
      expect(rows.find((r) => r.kind === 'new_custom_field')).toMatchObject({
        label: 'Refund amount',
        runs_seen: 2,
      });
      expect(rows.filter((r) => r.kind === 'new_enum_value').map((r) => [r.observed, r.runs_seen])).toEqual(
        expect.arrayContaining([
          ['end_user', 1],
          ['requester', 1],
        ]),
      );
      expect(
        (await d.bookkeeping.listSchemaChanges({ firstRunId: 'run-2' })).map((r) => r.observed),
      ).toContain('requester');

      // A new field seen with another JSON type than before: a type change of its own (counted per run).
      now = new Date('2036-01-02T12:00:00Z');
      await writeBatch(d, {
        table: 'tickets',
        rows: [],
        schemaChanges: [{ ...field, runId: 'run-3', jsonType: 'number', example: '42' }],
      });
      rows = await changesOf(d, tag);
      expect(rows.find((r) => r.kind === 'type_change')).toMatchObject({
        field_path: field.fieldPath,
        observed: 'number',
        expected: 'string (as seen before)',
        example: '42',
        first_run_id: 'run-3',
        runs_seen: 1,
      });
      expect(rows.find((r) => r.kind === 'new_field' && r.field_path === field.fieldPath)).toMatchObject({
        json_type: 'number',
        runs_seen: 3,
      });

      // A page without a run id (a workflow started before runs were passed down) only adds new keys.
      now = new Date('2036-01-03T00:00:00Z');
      const unknownRun = sighting({ fieldPath: `source_${tag}`, runId: null });
      await writeBatch(d, {
        table: 'tickets',
        rows: [],
        schemaChanges: [{ ...field, runId: null }, unknownRun],
      });
      rows = await changesOf(d, tag);
      expect(rows.find((r) => r.kind === 'new_field' && r.field_path === field.fieldPath)).toMatchObject({
        runs_seen: 3,
      });
      expect(rows.find((r) => r.field_path === unknownRun.fieldPath)).toMatchObject({
        first_run_id: null,
        runs_seen: 1,
        first_seen_at: stamp(),
      });
      await d.close();
    });

    it('_schema_changes is written with its batch or not at all', async () => {
      const tag = crypto.randomUUID().slice(0, 8);
      const crashing = await crashingAfterStaging(h);
      await expect(
        writeBatch(crashing, {
          table: 'tickets',
          rows: [input(ticket({ ticket_number: 96101 }))],
          schemaChanges: [sighting({ fieldPath: `lost_${tag}` })],
        }),
      ).rejects.toThrow(/injected crash/);
      await crashing.close();
      expect(await changesOf(dest, tag)).toEqual([]);
      const err = (await writeBatch(dest, {
        table: 'tickets',
        rows: [],
        schemaChanges: [sighting({ fieldPath: '' })],
      }).catch((e: unknown) => e)) as Error;
      expect(err.message).toMatch(/schema change 0: field fieldPath/);
    });

    it('report snapshots: one row per snapshot and one value row per number', async () => {
      const snap: ReportSnapshotInput = {
        query: 'tickets_created by day last 7 days',
        timezone: 'Europe/Paris',
        taken_at: '2025-03-01T10:00:00+01:00',
        result: {
          kind: 'time-series',
          format: 'count',
          series: [
            { key: 'email', label: 'E-mail' },
            { key: 'chat', label: 'Chat' },
          ],
          points: [
            { date: '2025-02-28', label: 'Feb 28', values: { email: 3, chat: 1 } },
            { date: '2025-03-01', label: 'Mar 1', values: { email: 5 } },
          ],
        },
      };
      const values = reportSnapshotValues(snap);
      expect(values).toHaveLength(4);
      await writeBatch(dest, { table: 'report_snapshots', rows: [snap] });
      expect(await writeBatch(dest, { table: 'report_snapshot_values', rows: values })).toMatchObject({
        inserted: 4,
      });
      expect(await writeBatch(dest, { table: 'report_snapshot_values', rows: values })).toMatchObject({
        unchanged: 4,
      });
      const id = reportSnapshotId(snap);
      const s = (await h.readRows('report_snapshots')).find((r) => r['snapshot_id'] === id)!;
      expect(s).toMatchObject({
        kind: 'time-series',
        value_count: 4,
        taken_at: '2025-03-01T09:00:00.000000Z',
      });
      const v = (await h.readRows('report_snapshot_values')).filter((r) => r['snapshot_id'] === id);
      expect(v.map((r) => [r['dimension_key'], r['measure_key'], r['value']])).toEqual([
        ['2025-02-28', 'email', 3],
        ['2025-02-28', 'chat', 1],
        ['2025-03-01', 'email', 5],
        ['2025-03-01', 'chat', null],
      ]);
    });

    it('records runs (upsert by run_id) and lists the most recent first', async () => {
      const base = {
        parent_run_id: null,
        workflow_id: 'sync/1',
        stream: null,
        window_start: null,
        window_end: null,
        mode: 'incremental' as const,
        finished_at: null,
        pages: 0,
        rows_written: 0,
        requests: 0,
        error: null,
      };
      await dest.bookkeeping.recordRun({
        ...base,
        run_id: 'r1',
        status: 'running',
        started_at: '2025-03-01T10:00:00Z',
      });
      await dest.bookkeeping.recordRun({
        ...base,
        run_id: 'r2',
        status: 'running',
        started_at: '2025-03-02T10:00:00Z',
      });
      await dest.bookkeeping.recordRun({
        ...base,
        run_id: 'r1',
        status: 'failed',
        started_at: '2025-03-01T10:00:00Z',
        finished_at: '2025-03-01T10:05:00.5Z',
        pages: 3,
        rows_written: 250,
        requests: 4,
        error: 'tickets/2025-01-01/2025-03-31: VALIDATION_ERROR (request_id req_1)',
        stream: 'tickets',
        window_start: '2025-01-01T00:00:00Z',
        window_end: '2025-03-31T00:00:00Z',
      });
      const runs = await dest.bookkeeping.listRuns(10);
      expect(runs.map((r) => r.run_id)).toEqual(['r2', 'r1']);
      expect(runs[1]).toMatchObject({
        status: 'failed',
        pages: 3,
        rows_written: 250,
        finished_at: '2025-03-01T10:05:00.500000Z',
      });
      expect(await dest.bookkeeping.listRuns(1)).toHaveLength(1);
    });

    it("the audit's sample: live rows by MD5 of id and seed, the same order on every warehouse", async () => {
      await writeBatch(dest, {
        table: 'tickets',
        rows: [40, 41, 42, 43, 44].map((n) => input(ticket({ ticket_number: n }))),
      });
      const live = (await h.readRows('tickets')).filter((r) => r['_deleted_at'] === null);
      const expected = (seed: string) =>
        live
          .map((r) => ({ id: String(r['id']), n: r['ticket_number'] as number }))
          .sort((a, b) => {
            const [ka, kb] = [a, b].map((x) => createHash('md5').update(`${x.id}${seed}`).digest('hex'));
            return ka! < kb! ? -1 : ka! > kb! ? 1 : 0;
          })
          .slice(0, 4)
          .map((x) => ({ id: x.id, ticketNumber: x.n, at: null }));
      expect(await dest.bookkeeping.auditSample('tickets', 'ticket_number', 'run-a', 4)).toEqual(
        expected('run-a'),
      );
      expect(await dest.bookkeeping.auditSample('tickets', 'ticket_number', 'run-b', 4)).toEqual(
        expected('run-b'),
      );
      const [byDate] = await dest.bookkeeping.auditSample('tickets', 'created_at', 'run-a', 1);
      expect(byDate).toEqual({ id: expected('run-a')[0]!.id, ticketNumber: null, at: expect.any(String) });
    });

    it('_audit: results upserted by (run, table, row), counted per table and verdict', async () => {
      const record = (row_id: string, verdict: 'equal' | 'differs' | 'changed_since', healed = false) => ({
        run_id: 'audit-1',
        table_name: 'tickets',
        row_id,
        verdict,
        differences: verdict === 'equal' ? null : '[{"field":"status","source":"open","warehouse":"closed"}]',
        synced_at: at(5),
        source_version: at(1),
        healed,
        checked_at: at(10),
      });
      await dest.bookkeeping.recordAudit([
        record('a', 'differs', true),
        record('b', 'equal'),
        record('c', 'changed_since'),
      ]);
      await dest.bookkeeping.recordAudit([
        record('b', 'equal'),
        { ...record('d', 'equal'), table_name: 'csat_surveys' },
      ]);
      const counts = await dest.bookkeeping.auditCounts({ runId: 'audit-1' });
      expect(counts).toEqual({
        csat_surveys: {
          equal: 1,
          differs: 0,
          missing_in_warehouse: 0,
          missing_in_source: 0,
          changed_since: 0,
          healed: 0,
        },
        tickets: {
          equal: 1,
          differs: 1,
          missing_in_warehouse: 0,
          missing_in_source: 0,
          changed_since: 1,
          healed: 1,
        },
      });
      expect(await dest.bookkeeping.auditCounts({ since: new Date(at(11)) })).toEqual({});
      expect(Object.keys(await dest.bookkeeping.auditCounts({ since: new Date(at(0)) }))).toEqual([
        'csat_surveys',
        'tickets',
      ]);
      const [stored] = await dest.select(
        (d) => `SELECT differences, healed FROM ${d.table('_audit')} WHERE row_id = ${d.string('a')}`,
      );
      expect(JSON.parse(String(stored!['differences']))).toEqual([
        { field: 'status', source: 'open', warehouse: 'closed' },
      ]);
      expect(stored!['healed']).toBe(true);
    });

    it('freshness per stream: newest live stamps, items set aside, the last complete read (status, metrics)', async () => {
      // Last: it leaves runs in the shared ledger. Stamps in 2090, later than every other test's rows.
      const d = await h.create();
      const newest = survey({ sent_at: '2090-01-02T00:00:00.000001Z' });
      const gone = survey({ sent_at: '2090-01-03T00:00:00Z' });
      await writeBatch(d, {
        table: 'csat_surveys',
        rows: [newest, gone, survey({ sent_at: '2090-01-01T00:00:00Z' })].map(input),
        rejected: [
          rejection({
            table: 'csat_surveys',
            stream: 'csat_surveys.sent',
            raw: { id: 'x', sent_at: '2090-01-02T06:00:00Z', score: 9 },
          }),
          rejection({ table: 'csat_surveys', stream: 'csat_surveys.sent', raw: { sent_at: 'garbage' } }),
        ],
      });
      await d.markDeleted({ table: 'csat_surveys', ids: [gone.id] }, new Date('2090-01-04T00:00:00Z'));
      await writeBatch(d, {
        table: 'tickets',
        rows: [input(ticket({ updated_at: '2090-02-01T00:00:00Z' }))],
      });
      const window = {
        parent_run_id: 'fresh-run',
        workflow_id: 'csat_surveys.sent/a/b',
        stream: 'csat_surveys',
        window_start: null,
        window_end: null,
        mode: 'incremental' as const,
        started_at: '2090-01-05T00:00:00Z',
        pages: 1,
        rows_written: 1,
        requests: 1,
        error: null,
      };
      await d.bookkeeping.recordRun({
        ...window,
        run_id: 'fresh-1',
        status: 'succeeded',
        finished_at: '2090-01-05T00:10:00Z',
      });
      // Neither a failed window nor a backfill's says the stream is current.
      await d.bookkeeping.recordRun({
        ...window,
        run_id: 'fresh-2',
        status: 'failed',
        finished_at: '2090-01-06T00:00:00Z',
      });
      await d.bookkeeping.recordRun({
        ...window,
        run_id: 'fresh-3',
        mode: 'backfill',
        status: 'succeeded',
        finished_at: '2090-01-07T00:00:00Z',
      });
      const stored = await warehouseNewest(d);
      expect(stored.csat_surveys).toBe(Date.parse('2090-01-02T00:00:00.000Z'));
      expect(stored.tickets).toBe(Date.parse('2090-02-01T00:00:00Z'));
      const now = Date.parse('2090-01-05T01:10:00Z');
      const streams = await streamFreshness(d, 2 * 3_600_000, now);
      expect(streams.find((s) => s.stream === 'csat_surveys')).toMatchObject({
        source_newest: '2090-01-02T06:00:00.000Z',
        warehouse_newest: '2090-01-02T00:00:00.000Z',
        lag_seconds: 6 * 3600,
        last_read_at: '2090-01-05T00:10:00.000Z',
        read_age_seconds: 3600,
        over_slo: true,
        reasons: ['lag'],
      });
      await d.close();
    });
  });
}
