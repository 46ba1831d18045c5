import { randomBytes } from 'node:crypto';
import { BigQuery } from '@google-cloud/bigquery';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BigQueryDestination,
  type BigQueryDestinationOptions,
  emulatorClientOptions,
} from '../../connectors/bigquery/destination.js';
import { checkpointTagOf, cursorTagOf } from '../../connectors/cursor-tag.js';
import type { Destination, RunScope, WriteBatch } from '../../connectors/destination.js';
import { DestinationSettings } from '../../connectors/settings.js';
import { canonicalTimestamp } from '../../schemas/warehouse.js';
import { type BigQueryEmulator, startBigQueryEmulator } from '../../scripts/bigquery-emulator.js';
import { type BigQueryQuotaProxy, startBigQueryQuotaProxy } from '../support/bigquery-quota-proxy.js';
import { at, input, message, sighting, ticket, writeBatch } from './fixtures.js';

/** The page path's write: one batch staged, with the page's run when given. */
const stage = (dest: Destination, batch: WriteBatch, scope: RunScope = {}) =>
  dest.writeTables([batch], undefined, { stage: true, ...scope });

/**
 * BigQuery's staged write path (connectors/bigquery/staged-writer.ts, flush.ts) through the quota proxy in
 * enforce mode: pages cost no job, a flush merges every staged batch per table with the version rule, and
 * a flush that dies or runs twice changes nothing it should not.
 */
describe('BigQuery staged writes', () => {
  let emulator: BigQueryEmulator;
  let proxy: BigQueryQuotaProxy;
  let bq: BigQuery;
  const datasetId = `staging_${randomBytes(4).toString('hex')}`;
  const create = (options: Omit<BigQueryDestinationOptions, 'projectId' | 'datasetId'> = {}) =>
    new BigQueryDestination({
      projectId: emulator.projectId,
      datasetId,
      apiEndpoint: proxy.endpoint,
      storageEndpoint: emulator.grpcEndpoint,
      ...options,
    });

  beforeAll(async () => {
    emulator = await startBigQueryEmulator();
    proxy = await startBigQueryQuotaProxy(emulator.endpoint, { enforce: true, minJobMs: 200 });
    bq = new BigQuery({ projectId: emulator.projectId, ...emulatorClientOptions(emulator.endpoint) });
    const dest = create();
    await dest.prepare();
    await dest.close();
  }, 600_000);
  afterAll(async () => {
    await proxy?.stop();
    await emulator?.stop();
  });

  const tableReads = (table: string) => proxy.report().tables[table]?.tableReads ?? 0;

  const liveTicket = async (id: string) => {
    const [rows] = (await bq.query({
      query: `SELECT _deleted_at IS NULL AS live FROM \`${datasetId}\`.tickets WHERE id = @id`,
      params: { id },
    })) as unknown as [{ live: boolean }[]];
    return rows[0]?.live;
  };

  /** A checkpoint of `stream`/`scope`: running at `cursor`, or complete when the cursor is null. */
  const checkpointOf = (stream: string, scope: string, cursor: string | null, pages: number) => ({
    stream,
    scope,
    cursor,
    high_water_mark: null,
    status: cursor === null ? ('complete' as const) : ('running' as const),
    pages,
    rows: 0,
  });

  const rowsOf = async (table: string, ids: readonly string[]) => {
    const [rows] = await bq.query({
      query: `SELECT id, subject, updated_at, _synced_at FROM \`${datasetId}\`.\`${table}\` WHERE id IN UNNEST(@ids) ORDER BY id`,
      params: { ids },
    });
    return (rows as Record<string, unknown>[]).map((r) => ({
      id: r['id'],
      subject: r['subject'],
      updated_at: canonicalTimestamp(String((r['updated_at'] as { value: string }).value)),
    }));
  };

  it('stages pages without a job; one flush merges them with one MERGE per table, latest version per id', async () => {
    const dest = create();
    const a = ticket({ ticket_number: 1, updated_at: at(1), subject: 'a v1' });
    const b = ticket({ ticket_number: 2, updated_at: at(1), subject: 'b v1' });
    const m = message({ ticket_number: 1, ticket_id: a.id });
    proxy.reset();
    const checkpoint = (n: number, cursor: string | null) => ({
      stream: 'tickets',
      scope: 'staged-1',
      cursor,
      high_water_mark: null,
      status: cursor === null ? ('complete' as const) : ('running' as const),
      pages: n,
      rows: n,
    });
    await stage(dest, { table: 'tickets', rows: [input(a), input(b)], checkpoint: checkpoint(1, 'c1') });
    // The same ids again, newer for a, and an older version of b fetched later: b keeps its newer version.
    await stage(dest, {
      table: 'tickets',
      rows: [
        input({ ...a, updated_at: at(5), subject: 'a v2' }),
        input({ ...b, updated_at: at(0), subject: 'b v0' }),
      ],
      checkpoint: checkpoint(2, 'c2'),
    });
    await stage(dest, { table: 'ticket_messages', rows: [input(m)] });
    expect(proxy.report().queryJobs + proxy.report().loadJobs).toBe(0);
    // The checkpoint staged last is the one read, before any flush: from memory with the workflow's tag …
    expect(
      await dest.readCheckpoint('tickets', 'staged-1', { lastSeenTag: cursorTagOf('c2') }),
    ).toMatchObject({ cursor: 'c2', pages: 2 });
    expect(proxy.report().queryJobs).toBe(0);
    // … and from the warehouse (staged over `_sync_state`) by another process.
    const other = create();
    expect(await other.readCheckpoint('tickets', 'staged-1')).toMatchObject({ cursor: 'c2', pages: 2 });
    expect(await rowsOf('tickets', [a.id, b.id])).toEqual([]);

    proxy.reset();
    await other.flushStaged(); // whoever staged them
    const report = proxy.report();
    expect(report.violations).toEqual([]);
    // One script: what is pending is read from the manifests, and the batches are recorded merged by an
    // append — before, a query of `_staging` and `_staging_merged` and an INSERT (30 MB a flush).
    expect(report.queryJobs).toBe(1);
    expect(tableReads('_staging_batches')).toBe(1);
    expect(report.tables['_staging_merged']).toMatchObject({ jobs: 0, readJobs: 0 });
    // No open `_rejected` entry (a table read says so): the script does not look for entries to resolve.
    expect(report.tables['_rejected']).toMatchObject({ readJobs: 0, tableReads: 1 });
    expect(report.tables['tickets']).toMatchObject({ mutatingDml: 1, peakConcurrentMutatingDml: 1 });
    expect(report.tables['ticket_messages']).toMatchObject({ mutatingDml: 1 });
    expect(report.tables['_sync_state']).toMatchObject({ mutatingDml: 1 });
    expect(report.loadJobs).toBe(0);
    const merged = await rowsOf('tickets', [a.id, b.id]);
    expect(merged).toEqual(
      [
        { id: a.id, subject: 'a v2', updated_at: canonicalTimestamp(at(5)) },
        { id: b.id, subject: 'b v1', updated_at: canonicalTimestamp(at(1)) },
      ].sort((x, y) => (x.id < y.id ? -1 : 1)),
    );
    // Nothing left: a second flush reads what is pending (table reads) and runs no job at all.
    proxy.reset();
    await dest.flushStaged();
    expect(proxy.report().queryJobs).toBe(0);
    // An older version staged after the merge never overwrites the newer row.
    await stage(dest, { table: 'tickets', rows: [input({ ...a, updated_at: at(2), subject: 'a old' })] });
    await dest.flushStaged();
    expect((await rowsOf('tickets', [a.id]))[0]).toMatchObject({ subject: 'a v2' });
    await Promise.all([dest.close(), other.close()]);
  });

  it("a tickets page and its sightings (ticket_observations) are one staged append, merged by one flush's script", async () => {
    const dest = create();
    const t = ticket({ ticket_number: 7, updated_at: at(1), status: 'open' });
    const sightingOf = (item: typeof t, observed: number) => ({
      ticket: item,
      observed_at: at(observed),
      first_seen: observed === 2,
      repair: false,
    });
    proxy.reset();
    await dest.writeTables(
      [
        { table: 'tickets', rows: [input(t)] },
        { table: 'ticket_observations', rows: [sightingOf(t, 2)] },
      ],
      undefined,
      { stage: true },
    );
    const resolved = { ...t, status: 'resolved' as const, updated_at: at(3), resolved_at: at(3) };
    await dest.writeTables(
      [
        { table: 'tickets', rows: [input(resolved)] },
        { table: 'ticket_observations', rows: [sightingOf(resolved, 4)] },
      ],
      undefined,
      { stage: true },
    );
    // The same page again (a retried activity): one row per (ticket, version, state) still.
    await dest.writeTables(
      [
        { table: 'tickets', rows: [input(resolved)] },
        { table: 'ticket_observations', rows: [sightingOf(resolved, 4)] },
      ],
      undefined,
      { stage: true },
    );
    expect(proxy.report().queryJobs + proxy.report().loadJobs).toBe(0);
    await dest.flushStaged();
    expect(proxy.report().queryJobs).toBe(1);
    expect(proxy.report().violations).toEqual([]);
    const [rows] = await bq.query({
      query: `SELECT status, valid_from_precision, is_resolution FROM \`${datasetId}\`.ticket_history WHERE ticket_id = @id ORDER BY valid_from`,
      params: { id: t.id },
    });
    expect(rows).toEqual([
      { status: 'open', valid_from_precision: 'first_seen', is_resolution: false },
      { status: 'resolved', valid_from_precision: 'resolved_at', is_resolution: true },
    ]);
    await dest.close();
  });

  it("a flush of thousands of checkpoints and a fold of many sightings stay within BigQuery's query length", async () => {
    // A full sync's flush carries a queue checkpoint per ticket, and a fold every id a run saw again. Inline
    // in the script they made a query of over a megabyte (1.1 MB for 5,000 tickets), which BigQuery refuses
    // (1,024K characters) and the proxy refuses with it; the emulator spent minutes parsing each.
    const dest = create();
    const queue = Array.from({ length: 6000 }, (_, i) => ({
      ...checkpointOf('ticket_messages', `long-queue-${i}`, null, 1),
      high_water_mark: '2026-11-05T12:12:40.707Z',
    }));
    await stage(dest, { table: 'tickets', rows: [], checkpoint: queue });
    const seen = Array.from(
      // Long ids, so that fewer of them pass a megabyte (the emulator parses every literal).
      { length: 6000 },
      (_, i) => `message-${String(i).padStart(8, '0')}-${'x'.repeat(180)}`,
    );
    await stage(dest, { table: 'ticket_messages', rows: [], seen });
    proxy.reset();
    await dest.flushStaged();
    // `query` folds every sighting first: 1.2 MB of ids, several statements.
    await dest.query('SELECT 1 AS one');
    const report = proxy.report();
    expect(report.violations).toEqual([]);
    expect(report.tables['ticket_messages']?.mutatingDml ?? 0).toBeGreaterThan(1);
    const other = create();
    expect(await other.readCheckpoint('ticket_messages', 'long-queue-5999')).toMatchObject({
      status: 'complete',
      high_water_mark: '2026-11-05T12:12:40.707Z',
    });
    const [stored] = await dest.query(
      `SELECT COUNT(*) AS n FROM \`${datasetId}\`._sync_state WHERE STARTS_WITH(scope, 'long-queue-')`,
    );
    expect(Number(stored!['n'])).toBe(6000);
    await Promise.all([dest.close(), other.close()]);
  });

  it('a flush that dies before marking its batches merged is run again whole, changing nothing twice', async () => {
    let crash = true;
    const crashing = create({
      hooks: {
        beforeMerge: () => {
          if (crash) throw new Error('injected crash before the merge');
        },
      },
    });
    const t = ticket({ ticket_number: 3, updated_at: at(3), subject: 'kept' });
    await stage(crashing, { table: 'tickets', rows: [input(t)] });
    await expect(crashing.flushStaged()).rejects.toThrow(/injected crash/);
    expect(await rowsOf('tickets', [t.id])).toEqual([]);
    crash = false;
    // A retried page stages its rows again: harmless.
    await stage(crashing, { table: 'tickets', rows: [input(t)] });
    await crashing.flushStaged();
    await crashing.flushStaged();
    expect(await rowsOf('tickets', [t.id])).toEqual([
      { id: t.id, subject: 'kept', updated_at: canonicalTimestamp(at(3)) },
    ]);
    const [counted] = (await bq.query(
      `SELECT COUNT(*) AS n FROM \`${datasetId}\`.tickets WHERE id = '${t.id}'`,
    )) as [{ n: number }[]];
    expect(counted).toEqual([{ n: 1 }]);
    expect(proxy.report().violations).toEqual([]);
    await crashing.close();
  });

  it('a flush that dies after its script, before recording its batches merged, merges them again to the same result', async () => {
    let crash = true;
    const crashing = create({
      hooks: {
        beforeMarkMerged: () => {
          if (crash) throw new Error('injected crash after the merge');
        },
      },
    });
    const other = create();
    const t = ticket({ ticket_number: 4, updated_at: at(4), subject: 'once' });
    await stage(crashing, {
      table: 'tickets',
      rows: [input(t)],
      checkpoint: { ...checkpointOf('tickets', 'crash-after', 'c1', 1), high_water_mark: null },
    });
    await expect(crashing.flushStaged()).rejects.toThrow(/injected crash after/);
    // Merged, not recorded merged: the batch and its checkpoint are still pending, for any process.
    expect(await rowsOf('tickets', [t.id])).toHaveLength(1);
    expect(await other.readCheckpoint('tickets', 'crash-after')).toMatchObject({ cursor: 'c1' });
    crash = false;
    // A newer version merged in between is never undone by merging the old batch again.
    await stage(other, {
      table: 'tickets',
      rows: [input({ ...t, updated_at: at(6), subject: 'newer' })],
    });
    await other.flushStaged();
    await crashing.flushStaged();
    expect(await rowsOf('tickets', [t.id])).toEqual([
      { id: t.id, subject: 'newer', updated_at: canonicalTimestamp(at(6)) },
    ]);
    proxy.reset();
    await crashing.flushStaged();
    expect(proxy.report().queryJobs).toBe(0);
    await Promise.all([crashing.close(), other.close()]);
  });

  it('a checkpoint held in memory is not used when the workflow saw another cursor', async () => {
    const a = create();
    const b = create();
    const cp = (cursor: string, pages: number) => checkpointOf('exports', 'w1', cursor, pages);
    await a.writeTables([], [cp('p1', 1)]);
    // The next page ran on another worker, which staged page 2.
    await b.writeTables([], [cp('p2', 2)]);
    expect(await a.readCheckpoint('exports', 'w1', { lastSeenTag: cursorTagOf('p2') })).toMatchObject({
      cursor: 'p2',
      pages: 2,
    });
    await Promise.all([a.close(), b.close()]);
  });

  it("a thread's first page reads its queue entry from the listing that returned it, never a stale one", async () => {
    const a = create();
    const b = create();
    // A queued thread: running, from its first page.
    const entry = (scope: string, pages: number) => ({
      ...checkpointOf('ticket_messages', scope, null, pages),
      status: 'running' as const,
    });
    await b.writeTables([], [entry('901', 0), entry('902', 0)]);
    proxy.reset();
    // One listing of the queue, as listQueuedThreadCheckpoints reads it: table reads, no query …
    const listed = await a.listCheckpoints({ threadQueue: true, status: 'running' });
    const tag = (scope: string) => checkpointTagOf(listed.find((cp) => cp.scope === scope)!);
    expect(proxy.report().queryJobs).toBe(0);
    expect(tableReads('_sync_state')).toBe(1);
    // … and the first page of each listed thread reads its entry with no read at all.
    for (const scope of ['901', '902'])
      expect(await a.readCheckpoint('ticket_messages', scope, { lastSeenTag: tag(scope) })).toMatchObject({
        scope,
        cursor: null,
        status: 'running',
      });
    expect(tableReads('_sync_state')).toBe(1);
    // Another process holds nothing it listed: it reads.
    expect(await b.readCheckpoint('ticket_messages', '901', { lastSeenTag: tag('901') })).toMatchObject({
      scope: '901',
    });
    expect(tableReads('_sync_state')).toBe(2);
    // This process wrote the entry since it listed it (a retried first page that staged page 1): the tag no
    // longer matches what it holds, and the warehouse says where the thread is.
    await a.writeTables([], [{ ...entry('902', 1), cursor: 'm1' }]);
    expect(await a.readCheckpoint('ticket_messages', '902', { lastSeenTag: tag('902') })).toMatchObject({
      cursor: 'm1',
      pages: 1,
    });
    expect(tableReads('_sync_state')).toBe(3);
    expect(proxy.report().queryJobs).toBe(0);
    await Promise.all([a.close(), b.close()]);
  });

  it('checkpoints are read by table reads, with no query job: the latest staged over the merged, in any process', async () => {
    const a = create();
    const b = create();
    const cp = (cursor: string, pages: number) => ({
      ...checkpointOf('exports', 'tr1', cursor, pages),
      high_water_mark: '2026-01-01T00:00:00.000000Z',
    });
    await a.writeTables([], [cp('p1', 1)]);
    await a.flushStaged();
    const [merged] = (await bq.query(
      `SELECT cursor, pages FROM \`${datasetId}\`.\`_sync_state\` WHERE stream = 'exports' AND scope = 'tr1'`,
    )) as [Record<string, unknown>[]];
    // The flush merged the checkpoint staged in `_staging_checkpoints`.
    expect(merged).toEqual([{ cursor: 'p1', pages: 1 }]);
    await a.writeTables([], [cp('p2', 2)]);
    await a.writeTables([], [cp('p3', 3)]);
    proxy.reset();
    // Another process (holding nothing): page 3, staged and not merged, over page 1 merged; appends through
    // the Storage Write API are visible to tabledata.list at once.
    expect(await b.readCheckpoint('exports', 'tr1')).toMatchObject({ cursor: 'p3', pages: 3 });
    expect((await b.listCheckpoints({ stream: 'exports' })).filter((c) => c.scope === 'tr1')).toEqual([
      expect.objectContaining({ scope: 'tr1', cursor: 'p3', high_water_mark: '2026-01-01T00:00:00.000000Z' }),
    ]);
    expect(proxy.report().queryJobs).toBe(0);
    expect(tableReads('_staging_checkpoints')).toBe(2);
    // Merged: `_sync_state` says page 3, and so does a read.
    await b.flushStaged();
    expect(await a.readCheckpoint('exports', 'tr1')).toMatchObject({ cursor: 'p3', pages: 3 });
    await Promise.all([a.close(), b.close()]);
  });

  it('the rolling re-read lists stale threads by table reads, with no query job: queued since or deleted, not listed', async () => {
    // Threads 801–803 read completely a day ago (a test clock stamps their entries), their tickets live.
    const dayAgo = new Date(Date.now() - 24 * 60 * 60 * 1000);
    const before = create({ clock: () => dayAgo });
    const tickets = [801, 802, 803].map((n) => ticket({ ticket_number: n, updated_at: at(n) }));
    await stage(before, { table: 'tickets', rows: tickets.map(input) });
    await before.writeTables(
      [],
      ['801', '802', '803'].map((s) => checkpointOf('ticket_messages', s, null, 1)),
    );
    await before.flushStaged();
    await before.close();
    const a = create();
    const b = create();
    const verifiedBefore = new Date(Date.now() - 60 * 60 * 1000);
    const stale = async (dest: BigQueryDestination, limit: number) =>
      (await dest.bookkeeping.staleThreads(verifiedBefore, limit)).filter((s) => s.startsWith('80'));
    expect(await stale(a, 1000)).toEqual(['801', '802', '803']);
    proxy.reset();
    // The re-read queues two of them (as queueThreadsToReverify does: staged, not merged) and lists again,
    // two at a time: the third is next, and no flush ran for it — before, every listing after a queueing
    // flushed (a pending read and a script), so a run's flushes grew with how often it listed.
    await a.writeTables(
      [],
      [
        { ...checkpointOf('ticket_messages', '801', null, 0), status: 'running' as const },
        { ...checkpointOf('ticket_messages', '802', null, 0), status: 'running' as const },
      ],
    );
    expect(await stale(a, 1000)).toEqual(['803']);
    expect(await a.bookkeeping.staleThreads(verifiedBefore, 1)).toEqual(['803']);
    // No job at all: before, each listing was a query of `_sync_state` and `tickets` (20 MB at least).
    expect(proxy.report().queryJobs).toBe(0);
    // Another process sees the same (the staged entries are read from the warehouse, not from memory) …
    expect(await stale(b, 1000)).toEqual(['803']);
    // … and a thread read to its end since its listing (complete now) is not stale either.
    await b.writeTables([], [checkpointOf('ticket_messages', '803', null, 2)]);
    expect(await stale(a, 1000)).toEqual([]);
    expect(proxy.report().queryJobs).toBe(0);
    expect(proxy.report().violations).toEqual([]);
    // Merged, the answer is the same.
    await a.flushStaged();
    expect(await stale(b, 1000)).toEqual([]);
    // A thread of a ticket marked deleted is not stale: its ticket is gone.
    await b.writeTables([], [checkpointOf('ticket_messages', '802', null, 2)]);
    await b.flushStaged();
    expect(await stale(a, 1000)).toEqual([]);
    const later = new Date(Date.now() + 60 * 60 * 1000);
    expect((await a.bookkeeping.staleThreads(later, 1000)).filter((s) => s.startsWith('80'))).toEqual([
      '803',
      '802',
    ]);
    await a.markDeleted({ table: 'tickets', ids: [tickets[1]!.id] }, new Date());
    expect((await a.bookkeeping.staleThreads(later, 1000)).filter((s) => s.startsWith('80'))).toEqual([
      '803',
    ]);
    await Promise.all([a.close(), b.close()]);
  });

  it('schema changes are listed by a table read, with no query job, newest first seen first', async () => {
    const dest = create();
    await writeBatch(dest, {
      table: 'tickets',
      rows: [],
      schemaChanges: [sighting('drift-run-1', 'drift_a')],
    });
    await writeBatch(dest, {
      table: 'tickets',
      rows: [],
      schemaChanges: [sighting('drift-run-2', 'drift_b')],
    });
    proxy.reset();
    const drift = (await dest.bookkeeping.listSchemaChanges()).filter((r) =>
      r.field_path.startsWith('drift_'),
    );
    expect(drift.map((r) => r.field_path)).toEqual(['drift_b', 'drift_a']);
    expect(
      (await dest.bookkeeping.listSchemaChanges({ firstRunId: 'drift-run-1' })).map((r) => r.field_path),
    ).toEqual(['drift_a']);
    expect(proxy.report().queryJobs).toBe(0);
    expect(tableReads('_schema_changes')).toBe(2);
    await dest.close();
  });

  it("the warehouse's clock is read from a job of the last minute, else by a query", async () => {
    const dest = create();
    proxy.reset();
    // No job yet in this process: a query reads the clock.
    const first = await dest.currentTime();
    expect(proxy.report().queryJobs).toBe(1);
    // That job read it: the next reading is its creation time, no query — never later than the warehouse's now.
    const again = await dest.currentTime();
    expect(proxy.report().queryJobs).toBe(1);
    const [[now]] = (await bq.query('SELECT CURRENT_TIMESTAMP() AS t')) as [{ t: { value: string } }[]];
    expect(again.getTime()).toBeLessThanOrEqual(Date.parse(now!.t.value));
    expect(Math.abs(again.getTime() - first.getTime())).toBeLessThan(60_000);
    await dest.close();
  });

  it('open rejections are read by a table read, with no query job', async () => {
    const dest = create();
    const scope = `2035-03-01T00:00:00.000Z/${crypto.randomUUID()}`;
    const item = {
      table: 'ticket_messages' as const,
      itemKey: crypto.randomUUID(),
      itemId: null,
      stream: 'ticket_messages.thread',
      scope,
      pageCursor: null,
      reason: 'field status: invalid',
      raw: { n: 1 },
    };
    await writeBatch(dest, { table: 'ticket_messages', rows: [], rejected: [item] });
    proxy.reset();
    const open = (await dest.bookkeeping.openRejections()).filter((r) => r.scope === scope);
    expect(open).toEqual([
      { table_name: 'ticket_messages', stream: 'ticket_messages.thread', scope, items: 1 },
    ]);
    // Before: a query of `_rejected` (10 MB) for each pass planned and for the threads at a run's start.
    expect(proxy.report().queryJobs).toBe(0);
    await dest.close();
  });

  it("the audit's sample, the threads in transit and the saved views are read by table reads, with no query job", async () => {
    const dest = create();
    const t = ticket({ ticket_number: 9101, updated_at: at(9101) });
    const queued = message({ ticket_id: t.id, ticket_number: 9101, status: 'queued' });
    await writeBatch(dest, { table: 'tickets', rows: [input(t)] });
    await writeBatch(dest, { table: 'ticket_messages', rows: [input(queued)] });
    proxy.reset();
    const sample = await dest.bookkeeping.auditSample('tickets', 'created_at', `run-${t.id}`, 1000);
    // The seed as the query gives it (a canonical timestamp), in the query's order (conformance checks it).
    expect(sample.find((s) => s.id === t.id)).toEqual({
      id: t.id,
      ticketNumber: null,
      at: canonicalTimestamp(t.created_at),
    });
    const live = await dest.liveRows('ticket_messages', ['ticket_number', 'status']);
    expect(live).toContainEqual({ ticket_number: 9101, status: 'queued' });
    expect(Object.keys(live[0]!).sort()).toEqual(['status', 'ticket_number']);
    // The audit's stored rows: every column, by ids, by a ticket number, by a range of a timestamp.
    const columns = new DestinationSettings({}).spec('tickets').columns.map((c) => c.name);
    const byId = await dest.liveRows('tickets', columns, { kind: 'in', column: 'id', values: [t.id] });
    const byNumber = await dest.liveRows('ticket_messages', ['id'], {
      kind: 'in',
      column: 'ticket_number',
      values: [9101],
    });
    const inRange = await dest.liveRows('tickets', ['id'], {
      kind: 'range',
      column: 'updated_at',
      from: at(9101),
      until: at(9102),
    });
    const after = await dest.liveRows('tickets', ['id'], {
      kind: 'range',
      column: 'updated_at',
      from: at(9100),
      until: at(9101),
    });
    // Before: a query each (10 MB): four samples, the messages in transit, the views and the audit's rows.
    expect(proxy.report().queryJobs).toBe(0);
    expect(byNumber).toEqual([{ id: queued.id }]);
    expect(inRange).toEqual([{ id: t.id }]);
    expect(after).toEqual([]);
    // What a query of the same row gives (JSON columns parsed, timestamps canonical).
    const queried = await dest.select(
      (d) =>
        `SELECT ${columns.map((c) => `t.${d.ident(c)}`).join(', ')} FROM ${d.table('tickets')} t WHERE t.id = ${d.string(t.id)}`,
    );
    expect(byId).toEqual(queried);
    await dest.close();
  });

  it('a deletion or cascade that finds nothing to mark runs no job on its tables: table reads tell it (doc §15.5)', async () => {
    const dest = create();
    const t = ticket({ ticket_number: 811, updated_at: at(811) });
    const m = message({ ticket_id: t.id, ticket_number: 811 });
    await stage(dest, { table: 'tickets', rows: [input(t)] });
    await stage(dest, { table: 'ticket_messages', rows: [input(m)] });
    await dest.flushStaged();
    proxy.reset();
    // No ticket is deleted: nothing to cascade — and only seen ids are staged (threads read on meanwhile),
    // which a cascade does not depend on: no flush either, so no job at all.
    await stage(dest, { table: 'ticket_messages', rows: [], seen: [m.id] });
    const cascade = { child: 'ticket_messages', foreignKey: 'ticket_id', parent: 'tickets' } as const;
    expect(await dest.markDeleted({ cascade: { ...cascade, revive: true } }, new Date())).toEqual({
      marked: 0,
      revived: 0,
    });
    expect(proxy.report().queryJobs).toBe(0);
    await dest.flushStaged();
    proxy.reset();
    // Every ticket was received after the epoch: nothing to mark; an id that is not stored: nothing either.
    expect(await dest.markDeleted({ table: 'tickets', notSeenSince: new Date(0) }, new Date())).toBe(0);
    expect(await dest.markDeleted({ table: 'tickets', ids: ['no-such-ticket'] }, new Date())).toBe(0);
    const named = (table: string) =>
      (proxy.report().tables[table]?.jobs ?? 0) + (proxy.report().tables[table]?.readJobs ?? 0);
    // Before, each was a script whose count named its tables: 10 MB per table, for nothing.
    expect(named('tickets')).toBe(0);
    expect(named('ticket_messages')).toBe(0);
    expect(tableReads('tickets')).toBe(2);
    expect(await liveTicket(t.id)).toBe(true);
    // One that finds a row runs its script and marks it (and the other tests' tickets: one dataset); the
    // cascade follows, then revives the message with its ticket.
    const liveMessage = async () => {
      const [rows] = (await bq.query({
        query: `SELECT _deleted_at IS NULL AS live FROM \`${datasetId}\`.ticket_messages WHERE id = @id`,
        params: { id: m.id },
      })) as unknown as [{ live: boolean }[]];
      return rows[0]?.live;
    };
    expect(
      await dest.markDeleted({ table: 'tickets', notSeenSince: new Date(Date.now() + 60_000) }, new Date()),
    ).toBeGreaterThan(0);
    expect(await liveTicket(t.id)).toBe(false);
    expect(
      (await dest.markDeleted({ cascade: { ...cascade, revive: false } }, new Date())).marked,
    ).toBeGreaterThan(0);
    expect(await liveMessage()).toBe(false);
    expect(await dest.markDeleted({ cascade: { ...cascade, revive: false } }, new Date())).toEqual({
      marked: 0,
      revived: 0,
    });
    // A message of the deleted ticket staged since: the cascade flushes first, and marks it.
    const late = message({ ticket_id: t.id, ticket_number: 811 });
    await stage(dest, { table: 'ticket_messages', rows: [input(late)] });
    expect((await dest.markDeleted({ cascade: { ...cascade, revive: false } }, new Date())).marked).toBe(1);
    await stage(dest, { table: 'tickets', rows: [input({ ...t, updated_at: at(812) })] });
    expect((await dest.markDeleted({ cascade: { ...cascade, revive: true } }, new Date())).revived).toBe(2);
    expect(await liveMessage()).toBe(true);
    expect(proxy.report().violations).toEqual([]);
    await dest.close();
  });

  it('flushes asked for while another waits share it; one asked for after a flush began runs its own', async () => {
    const dest = create();
    const a = ticket({ ticket_number: 821, updated_at: at(821), subject: 'v821' });
    const b = ticket({ ticket_number: 822, updated_at: at(822), subject: 'v822' });
    await stage(dest, { table: 'tickets', rows: [input(a)] });
    proxy.reset();
    // Three at once (a window's end, a deletion, a read of merged rows): the first flush, begun after all
    // three asked, merges what each needs; the other two run nothing. Before: three pending reads. The
    // manifests are read three times: by the flush, by the deletion asking whether rows of its table are
    // pending, and by its pre-check (the sightings not folded).
    await Promise.all([
      dest.flushStaged(),
      dest.markDeleted({ table: 'tickets', notSeenSince: new Date(0) }, new Date()),
      dest.flushStaged(),
    ]);
    expect(tableReads('_staging_batches')).toBe(3);
    expect(proxy.report().queryJobs).toBe(1);
    expect(await rowsOf('tickets', [a.id])).toEqual([
      { id: a.id, subject: 'v821', updated_at: canonicalTimestamp(at(821)) },
    ]);
    // Staged after that flush began: the next request flushes again.
    await stage(dest, { table: 'tickets', rows: [input(b)] });
    await dest.flushStaged();
    expect(tableReads('_staging_batches')).toBe(4);
    expect(proxy.report().queryJobs).toBe(2);
    expect(await rowsOf('tickets', [b.id])).toHaveLength(1);
    await dest.close();
  });

  it('a row staged while a shared flush ran is merged before this process reads merged rows', async () => {
    // Staged after the flush read what was pending (its merge hook stages it): the two requests that share
    // that flush must not count it as merged, or a read of merged rows would miss this process's own row.
    let during: (() => Promise<unknown>) | null = null;
    const dest = create({
      hooks: {
        beforeMerge: async () => {
          const stage = during;
          during = null;
          await stage?.();
        },
      },
    });
    const a = ticket({ ticket_number: 831, updated_at: at(831) });
    const late = ticket({ ticket_number: 832, updated_at: at(832) });
    await stage(dest, { table: 'tickets', rows: [input(a)] });
    during = () => stage(dest, { table: 'tickets', rows: [input(late)] });
    await Promise.all([dest.flushStaged(), dest.flushStaged()]);
    expect(await rowsOf('tickets', [late.id])).toEqual([]);
    const read = await dest.query(`SELECT id FROM \`${datasetId}\`.tickets WHERE id = @id`, { id: late.id });
    expect(read).toEqual([{ id: late.id }]);
    await dest.close();
  });

  describe('the per-run version cache', () => {
    const liveOf = async (ids: readonly string[]) => {
      const [rows] = (await bq.query({
        query: `SELECT id, subject, _deleted_at IS NULL AS live, _synced_at FROM \`${datasetId}\`.tickets WHERE id IN UNNEST(@ids) ORDER BY id`,
        params: { ids },
      })) as unknown as [Record<string, unknown>[]];
      return rows.map((r) => ({
        id: r['id'],
        subject: r['subject'],
        live: r['live'],
        synced: String((r['_synced_at'] as { value: string }).value),
      }));
    };

    it('a re-read of rows stored as they are stages none of them (no merge); their _synced_at still moves', async () => {
      const dest = create();
      const a = ticket({ ticket_number: 41, updated_at: at(1), subject: 'a' });
      const b = ticket({ ticket_number: 42, updated_at: at(1), subject: 'b' });
      expect(await stage(dest, { table: 'tickets', rows: [input(a), input(b)] }, { runId: 'run-1' })).toEqual(
        {
          rows: 2,
        },
      );
      await dest.flushStaged();
      const before = await liveOf([a.id, b.id]);
      // Another process, the next run: one table read fills its cache; a changed and an unchanged row.
      const next = create();
      proxy.reset();
      const changed = { ...b, updated_at: at(2), subject: 'b v2' };
      expect(
        await stage(next, { table: 'tickets', rows: [input(a), input(changed)] }, { runId: 'run-2' }),
      ).toEqual({ rows: 1 });
      // The same rows again in the same run: both stored (or staged) as they are.
      expect(
        await stage(next, { table: 'tickets', rows: [input(a), input(changed)] }, { runId: 'run-2' }),
      ).toEqual({ rows: 0 });
      expect(proxy.report().queryJobs).toBe(0);
      expect(tableReads('tickets')).toBe(1);
      // Only a version it does not store is compared the old way: a batch without a run stages every row.
      expect(await stage(next, { table: 'tickets', rows: [input(a)] })).toEqual({ rows: 1 });
      await next.flushStaged();
      const after = await liveOf([a.id, b.id]);
      expect(after.map(({ synced: _, ...r }) => r)).toEqual(
        [
          { id: a.id, subject: 'a', live: true },
          { id: b.id, subject: 'b v2', live: true },
        ].sort((x, y) => (x.id < y.id ? -1 : 1)),
      );
      // a was seen again: its _synced_at moved although its row was not staged.
      const syncedOf = (rows: typeof before, id: string) => rows.find((r) => r.id === id)!.synced;
      expect(syncedOf(after, a.id) > syncedOf(before, a.id)).toBe(true);
      // storedVersions answers from the cache with the run id, no query.
      proxy.reset();
      const versions = await next.storedVersions('tickets', [a.id, b.id], { runId: 'run-2' });
      expect(versions.get(b.id)?.version).toBe(canonicalTimestamp(at(2)));
      expect(proxy.report().queryJobs).toBe(0);
      await Promise.all([dest.close(), next.close()]);
    });

    it('a re-read of unchanged rows runs no job: its sightings wait, the deletion check and the audit count them, a fold stamps them (doc §15.5)', async () => {
      const dest = create();
      const a = ticket({ ticket_number: 9001, updated_at: at(9001), subject: 'a' });
      const b = ticket({ ticket_number: 9002, updated_at: at(9002), subject: 'b' });
      await stage(dest, { table: 'tickets', rows: [input(a), input(b)] }, { runId: 'run-1' });
      await dest.flushStaged();
      const before = await liveOf([a.id, b.id]);
      const syncedOf = (rows: typeof before, id: string) => rows.find((r) => r.id === id)!.synced;
      // The next run, another process: a full re-read begins, and serves a again unchanged (b is gone).
      const next = create();
      await next.flushStaged();
      const since = await next.currentTime();
      proxy.reset();
      expect(await stage(next, { table: 'tickets', rows: [input(a)] }, { runId: 'run-2' })).toEqual({
        rows: 0,
      });
      await next.flushStaged();
      // Before: the flush ran an UPDATE of tickets for the one id seen (10 MB).
      expect(proxy.report().queryJobs).toBe(0);
      expect(syncedOf(await liveOf([a.id, b.id]), a.id)).toBe(syncedOf(before, a.id));
      // A reader of `_synced_at` (the audit) sees the sighting laid over the stored row.
      const [seenA] = await next.liveRows('tickets', ['_synced_at'], {
        kind: 'in',
        column: 'id',
        values: [a.id],
      });
      expect(Date.parse(String(seenA!['_synced_at']))).toBeGreaterThanOrEqual(since.getTime());
      // The refresh's deletion: b was not seen since, a was (by its sighting): b alone is marked.
      const within = { column: 'updated_at', from: new Date(at(9000)) };
      expect(await next.markDeleted({ table: 'tickets', notSeenSince: since, within }, new Date())).toBe(1);
      const after = await liveOf([a.id, b.id]);
      expect(after.map((r) => [r.id, r.live])).toEqual(
        [
          [a.id, true],
          [b.id, false],
        ].sort((x, y) => (String(x[0]) < String(y[0]) ? -1 : 1)),
      );
      // That deletion folded the sightings first: a's _synced_at is its sighting's stamp, not the fold's.
      expect(Date.parse(syncedOf(after, a.id))).toBe(Date.parse(String(seenA!['_synced_at'])));
      // Seen again, then nothing to delete: the pre-check reads the sighting, no job.
      const since2 = next.currentTime();
      expect(await stage(next, { table: 'tickets', rows: [input(a)] }, { runId: 'run-2' })).toEqual({
        rows: 0,
      });
      proxy.reset();
      expect(
        await next.markDeleted({ table: 'tickets', notSeenSince: await since2, within }, new Date()),
      ).toBe(0);
      expect(proxy.report().queryJobs).toBe(0);
      await Promise.all([dest.close(), next.close()]);
    });

    it('a sighting a day old is folded by the next flush; a reader of _synced_at by a query sees every sighting folded', async () => {
      const dest = create();
      const c = ticket({ ticket_number: 9011, updated_at: at(9011), subject: 'c' });
      await stage(dest, { table: 'tickets', rows: [input(c)] }, { runId: 'run-1' });
      await dest.flushStaged();
      const [before] = await liveOf([c.id]);
      // A clock a day and a minute ahead of the sighting's stamp: the flush after the sighting folds it.
      const next = create();
      await stage(next, { table: 'tickets', rows: [input(c)] }, { runId: 'run-2' });
      await next.flushStaged();
      expect((await liveOf([c.id]))[0]!.synced).toBe(before!.synced);
      const later = create({ clock: () => new Date(Date.now() + 24 * 60 * 60 * 1000 + 60_000) });
      proxy.reset();
      await later.flushStaged();
      expect(proxy.report().queryJobs).toBe(1);
      const [folded] = await liveOf([c.id]);
      expect(Date.parse(folded!.synced)).toBeGreaterThan(Date.parse(before!.synced));
      // Seen again; `query` (tests, status) folds before it reads.
      await stage(next, { table: 'tickets', rows: [input(c)] }, { runId: 'run-2' });
      const [queried] = await next.query(`SELECT _synced_at FROM \`${datasetId}\`.tickets WHERE id = @id`, {
        id: c.id,
      });
      expect(Date.parse(String(queried!['_synced_at']))).toBeGreaterThan(Date.parse(folded!.synced));
      await Promise.all([dest.close(), next.close(), later.close()]);
    });

    it('a table larger than the cache holds is not cached: every row is staged, versions are queried', async () => {
      const dest = create();
      const rows = [51, 52, 53, 54, 55].map((n) => ticket({ ticket_number: n, updated_at: at(1) }));
      await stage(dest, { table: 'tickets', rows: rows.map((t) => input(t)) }, { runId: 'run-7' });
      await dest.flushStaged();
      const holds = (maxRows: number) => create({ versionCacheLimits: { maxRows, pageRows: 2 } });
      // Read two rows a request, to the end: cached.
      const roomy = holds(10_000);
      proxy.reset();
      expect(
        await stage(roomy, { table: 'tickets', rows: rows.map((t) => input(t)) }, { runId: 'run-8' }),
      ).toEqual({ rows: 0 });
      expect(tableReads('tickets')).toBeGreaterThan(2);
      // Two rows: more than it holds, so it stops reading and stages them all.
      const small = holds(2);
      proxy.reset();
      expect(
        await stage(small, { table: 'tickets', rows: rows.map((t) => input(t)) }, { runId: 'run-8' }),
      ).toEqual({ rows: 5 });
      expect(tableReads('tickets')).toBe(2);
      expect((await small.storedVersions('tickets', [rows[0]!.id], { runId: 'run-8' })).size).toBe(1);
      expect(proxy.report().queryJobs).toBe(1);
      await Promise.all([dest, roomy, small].map((d) => d.close()));
    });

    it('a row marked deleted since the cache was filled is still written', async () => {
      const dest = create();
      const t = ticket({ ticket_number: 43, updated_at: at(1), subject: 'back' });
      await stage(dest, { table: 'tickets', rows: [input(t)] }, { runId: 'run-3' });
      await dest.flushStaged();
      // The cache holds t as stored; then a deletion of this process marks it.
      expect(await stage(dest, { table: 'tickets', rows: [input(t)] }, { runId: 'run-3' })).toEqual({
        rows: 0,
      });
      expect(await dest.markDeleted({ table: 'tickets', ids: [t.id] }, new Date())).toBe(1);
      expect((await liveOf([t.id]))[0]).toMatchObject({ live: false });
      // Served again, same version: written, so the merge revives it.
      expect(await stage(dest, { table: 'tickets', rows: [input(t)] }, { runId: 'run-3' })).toEqual({
        rows: 1,
      });
      await dest.flushStaged();
      expect((await liveOf([t.id]))[0]).toMatchObject({ subject: 'back', live: true });
      // A process filling its cache after the deletion holds live rows only.
      await dest.markDeleted({ table: 'tickets', ids: [t.id] }, new Date());
      const other = create();
      expect(await stage(other, { table: 'tickets', rows: [input(t)] }, { runId: 'run-4' })).toEqual({
        rows: 1,
      });
      await other.flushStaged();
      expect((await liveOf([t.id]))[0]).toMatchObject({ live: true });
      await Promise.all([dest.close(), other.close()]);
    });

    it('an item with an open _rejected entry is still written, so the entry is resolved', async () => {
      const dest = create();
      const t = ticket({ ticket_number: 44, updated_at: at(1), subject: 'fine' });
      await stage(dest, { table: 'tickets', rows: [input(t)] }, { runId: 'run-5' });
      await dest.flushStaged();
      const item = {
        table: 'tickets' as const,
        itemKey: t.id,
        itemId: t.id,
        stream: 'tickets',
        scope: 'r',
        pageCursor: null,
        reason: 'injected',
        raw: { id: t.id },
      };
      // Set aside by a page of this run (this process) …
      await stage(dest, { table: 'tickets', rows: [], rejected: [item] }, { runId: 'run-5' });
      expect(await stage(dest, { table: 'tickets', rows: [input(t)] }, { runId: 'run-5' })).toEqual({
        rows: 1,
      });
      await dest.flushStaged();
      const open = async () => {
        const [rows] = (await bq.query(
          `SELECT COUNT(*) AS n FROM \`${datasetId}\`._rejected WHERE item_id = '${t.id}' AND resolved_at IS NULL`,
        )) as [{ n: number }[]];
        return rows[0]!.n;
      };
      expect(await open()).toBe(0);
      // … or before another process filled its cache: left out of it.
      await stage(dest, { table: 'tickets', rows: [], rejected: [item] }, { runId: 'run-5' });
      await dest.flushStaged();
      expect(await open()).toBe(1);
      const other = create();
      expect(await stage(other, { table: 'tickets', rows: [input(t)] }, { runId: 'run-6' })).toEqual({
        rows: 1,
      });
      await other.flushStaged();
      expect(await open()).toBe(0);
      await Promise.all([dest.close(), other.close()]);
    });
  });

  it("the audit's verdicts are staged and merged by one upsert of _audit, whichever process recorded them", async () => {
    const units = [create(), create()];
    const record = (row: string, verdict: 'equal' | 'differs', healed = false) => ({
      run_id: 'audit-run',
      table_name: 'tickets',
      row_id: row,
      verdict,
      differences: verdict === 'differs' ? '[{"field":"subject"}]' : null,
      synced_at: at(1),
      source_version: at(1),
      healed,
      checked_at: at(2),
    });
    proxy.reset();
    // Three units on two processes; a retried unit records r2 again, healed this time (the last wins).
    await units[0]!.bookkeeping.recordAudit([record('r1', 'equal'), record('r2', 'differs')]);
    await units[1]!.bookkeeping.recordAudit([record('r3', 'equal')]);
    await units[0]!.bookkeeping.recordAudit([record('r2', 'differs', true)]);
    expect(proxy.report().queryJobs).toBe(0);
    // The unit's next read of merged rows does not flush for them (one query: the read itself).
    await units[0]!.bookkeeping.listRuns(1);
    expect(proxy.report().queryJobs).toBe(1);
    const reader = create();
    expect(await reader.bookkeeping.auditCounts({ runId: 'audit-run' })).toEqual({
      tickets: expect.objectContaining({ equal: 2, differs: 1, healed: 1 }),
    });
    const report = proxy.report();
    expect(report.tables['_audit']).toMatchObject({ mutatingDml: 1 });
    expect(report.violations).toEqual([]);
    await Promise.all([...units, reader].map((d) => d.close()));
  });
});
