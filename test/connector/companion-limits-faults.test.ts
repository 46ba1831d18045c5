import { afterEach, describe, expect, it } from 'vitest';
import type { CompanionHandle } from '../../companion/index.js';
import { RateLimitedError, SupportApiError, TransportError } from '../../connectors/support-api/errors.js';
import { fetchTicketsPage } from '../../connectors/support-api/paginate.js';
import { RateGovernor } from '../../connectors/support-api/rate-governor.js';
import { collectItems, iterateTickets } from '../support/iterate.js';
import { clientFor, companion } from './support/companion.js';

let handle: CompanionHandle | undefined;
const clients: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  await handle?.stop();
  handle = undefined;
});

function expectedTicketIds(h: CompanionHandle) {
  return h.world.tickets
    .filter((t) => t.orgId === h.world.orgA.id && t.deletedAt === null)
    .map((t) => t.id)
    .sort();
}

describe('rate limits of the companion (compressed windows)', () => {
  it('alone on the key: a crawl under 5 requests / 2 s gets zero 429s and every page', async () => {
    handle = await companion({
      seed: 3,
      tickets: 90,
      rateLimitWindowMs: 2000,
      rateLimitOverrides: { list: 5 },
    });
    const { client } = clientFor(handle);
    clients.push(client);
    const items = await collectItems(iterateTickets(client, { limit: 10 }));
    expect(items.map((t) => t.id).sort()).toEqual(expectedTicketIds(handle));
    const log = handle.requestLog.filter((e) => e.routeClass === 'list');
    expect(log.filter((e) => e.status === 429)).toHaveLength(0);
    const stats = client.governor.classStats('list');
    expect(stats).toMatchObject({ rateLimited: 0, limit: 5, windowMs: 2000 });
    expect(stats.waits).toBeGreaterThan(0);
  });

  it('two concurrent crawls sharing one governor (same key, one process): zero 429s', async () => {
    handle = await companion({
      seed: 3,
      tickets: 60,
      rateLimitWindowMs: 2000,
      rateLimitOverrides: { list: 6 },
    });
    const governor = new RateGovernor();
    const a = clientFor(handle, 'admin', { governor }).client;
    const b = clientFor(handle, 'admin', { governor }).client;
    clients.push(a, b);
    const [x, y] = await Promise.all([
      collectItems(iterateTickets(a, { limit: 10 })),
      collectItems(iterateTickets(b, { limit: 10 })),
    ]);
    expect(x.map((t) => t.id).sort()).toEqual(expectedTicketIds(handle));
    expect(y.map((t) => t.id).sort()).toEqual(expectedTicketIds(handle));
    expect(handle.requestLog.filter((e) => e.status === 429)).toHaveLength(0);
  });

  it('a competing process on the same key causes 429s: waited out per Retry-After, zero lost pages', async () => {
    handle = await companion({
      seed: 3,
      tickets: 60,
      rateLimitWindowMs: 2000,
      rateLimitOverrides: { list: 4 },
    });
    // separate governors = separate processes
    const a = clientFor(handle).client;
    const b = clientFor(handle).client;
    clients.push(a, b);
    const [x, y] = await Promise.all([
      collectItems(iterateTickets(a, { limit: 10 })),
      collectItems(iterateTickets(b, { limit: 10 })),
    ]);
    expect(x.map((t) => t.id).sort()).toEqual(expectedTicketIds(handle));
    expect(y.map((t) => t.id).sort()).toEqual(expectedTicketIds(handle));
    const limited = handle.requestLog.filter((e) => e.status === 429).length;
    expect(limited).toBeGreaterThan(0);
    expect(a.governor.classStats('list').rateLimited + b.governor.classStats('list').rateLimited).toBe(
      limited,
    );
  });

  it('throw mode: a spent window throws RateLimitedError with the delay for Temporal', async () => {
    handle = await companion({
      seed: 3,
      tickets: 30,
      rateLimitWindowMs: 4000,
      rateLimitOverrides: { analytics: 2 },
    });
    const { client } = clientFor(handle, 'admin', { rateLimitMode: 'throw', maxRateWaitMs: 0 });
    clients.push(client);
    const win = { by: 'sent' as const, from: '2025-01-01T00:00:00Z', before: '2025-01-02T00:00:00Z' };
    const { fetchCsatPage } = await import('../../connectors/support-api/paginate.js');
    const err = await (async () => {
      for (let i = 0; i < 5; i++) await fetchCsatPage(client, win);
    })().catch((e) => e);
    expect(err).toBeInstanceOf(RateLimitedError);
    expect(err.routeClass).toBe('analytics');
    expect(err.retryAfterMs).toBeGreaterThan(0);
    expect(err.retryAfterMs).toBeLessThanOrEqual(4000 + 100);
    expect(handle.requestLog.filter((e) => e.status === 429)).toHaveLength(0);
  });
});

describe('injected faults', () => {
  it('5xx, connection resets and HTML proxy pages are retried: the crawl is complete and exact', async () => {
    handle = await companion({
      seed: 5,
      tickets: 150,
      rateLimits: false,
      faults: { rate: 0.3, kinds: ['5xx', 'reset', 'html'] },
    });
    const { client, lines } = clientFor(handle, 'admin', {
      retry: { maxAttempts: 10, baseDelayMs: 5, maxDelayMs: 20 },
    });
    clients.push(client);
    const items = await collectItems(iterateTickets(client, { limit: 10 }));
    expect(items.map((t) => t.id).sort()).toEqual(expectedTicketIds(handle));
    expect(handle.requestLog.some((e) => e.status === 503)).toBe(true);
    expect(lines.filter((l) => l.includes('retrying')).length).toBeGreaterThan(0);
  });

  it('slow responses past the headers timeout are timeouts, retried', async () => {
    handle = await companion({
      seed: 5,
      tickets: 40,
      rateLimits: false,
      faults: { rate: 0.25, kinds: ['slow'], slowMs: 2500 },
    });
    const { client } = clientFor(handle, 'admin', {
      timeouts: { headersMs: 300 },
      retry: { maxAttempts: 8, baseDelayMs: 5, maxDelayMs: 20 },
    });
    clients.push(client);
    const items = await collectItems(iterateTickets(client, { limit: 10 }));
    expect(items.map((t) => t.id).sort()).toEqual(expectedTicketIds(handle));
  });

  it('every request failing is reported with its classification, after bounded attempts', async () => {
    handle = await companion({
      seed: 5,
      tickets: 10,
      rateLimits: false,
      faults: { rate: 1, kinds: ['reset'] },
    });
    const { client } = clientFor(handle, 'admin', {
      retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 2 },
    });
    clients.push(client);
    const err = await fetchTicketsPage(client).catch((e) => e);
    expect(err).toBeInstanceOf(TransportError);
    expect(err.retryable).toBe(true);
    expect(handle.requestLog.length).toBe(3);
    // a create without idempotency is not repeated after a reset (it may have been processed)
    handle.clearRequestLog();
    const channel = handle.world.orgA.channels[0]!.type;
    await expect(client.createTicket({ channel, subject: 'x' })).rejects.toBeInstanceOf(TransportError);
    expect(handle.requestLog.length).toBe(1);
  });
});

describe('replica lag and writes', () => {
  it('a created ticket shows in reads only after the replica lag; reads before it do not fail', async () => {
    handle = await companion({ seed: 9, tickets: 20, rateLimits: false, replicaLagMs: 800 });
    const { client } = clientFor(handle);
    clients.push(client);
    const channel = handle.world.orgA.channels[0]!.type;
    const created = await client.createTicket({ channel, subject: 'lagging', tags: ['lag'] });
    expect(created.subject).toBe('lagging');
    const before = await collectItems(iterateTickets(client, { limit: 50 }));
    expect(before.some((t) => t.id === created.id)).toBe(false);
    await expect(client.getTicket(created.ticket_number)).rejects.toMatchObject({ code: 'TICKET_NOT_FOUND' });
    await new Promise((r) => setTimeout(r, 900));
    const after = await collectItems(iterateTickets(client, { limit: 50 }));
    expect(after.some((t) => t.id === created.id)).toBe(true);
  });

  it('create, update, send with Idempotency-Key, tag, and the attachment upload flow', async () => {
    handle = await companion({ seed: 9, tickets: 20, rateLimits: false });
    const { client } = clientFor(handle);
    clients.push(client);
    const channel = handle.world.orgA.channels[0]!.type;
    const t = await client.createTicket({ channel, subject: 'hello', contact: { email: 'c@example.com' } });
    const updated = await client.updateTicket(t.ticket_number, { status: 'resolved', priority: 'high' });
    expect(updated).toMatchObject({ status: 'resolved', priority: 'high' });
    const tag = await client.createTag({ name: 'connector-test' });
    expect(tag.name).toBe('connector-test');

    handle.clearRequestLog();
    const bytes = new TextEncoder().encode('hello, attachment\n');
    const att = await client.uploadAttachment({ fileName: 'hello.txt', mimeType: 'text/plain', bytes });
    expect(att).toMatchObject({ status: 'confirmed', size: bytes.byteLength });
    const put = handle.requestLog.find((e) => e.method === 'PUT');
    expect(put?.path.startsWith('/public/v1')).toBe(false);
    expect(put?.keyLabel ?? null).toBeNull();

    const body = { type: 'note' as const, body: 'internal', attachment_ids: [att.id] };
    const m1 = await client.sendMessage(t.ticket_number, body, { idempotencyKey: 'k-1' });
    const m2 = await client.sendMessage(t.ticket_number, body, { idempotencyKey: 'k-1' });
    expect(m2.id).toBe(m1.id);
    const conflict = await client
      .sendMessage(t.ticket_number, { ...body, body: 'other', attachment_ids: [] }, { idempotencyKey: 'k-1' })
      .catch((e) => e);
    expect(conflict).toBeInstanceOf(SupportApiError);
    expect(conflict.code).toBe('IDEMPOTENCY_KEY_CONFLICT');
  });

  it('the key never shows in logs or errors of a failing run (wrong key, faults, 429s)', async () => {
    handle = await companion({
      seed: 9,
      tickets: 20,
      rateLimitWindowMs: 2000,
      rateLimitOverrides: { list: 2 },
      faults: { rate: 0.3, kinds: ['5xx', 'html', 'reset'] },
    });
    const keys = Object.values(handle.keys);
    const { client, lines } = clientFor(handle, 'admin', {
      retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 2 },
    });
    const bad = clientFor(handle, 'admin', {});
    clients.push(client, bad.client);
    const errors: unknown[] = [];
    for (let i = 0; i < 6; i++) errors.push(await fetchTicketsPage(client, { limit: 5 }).catch((e) => e));
    const { SupportApiClient } = await import('../../connectors/support-api/client.js');
    const { Secret } = await import('../../schemas/secret.js');
    const wrong = new SupportApiClient({
      baseUrl: handle.baseUrl,
      apiKey: new Secret('sk_wrong_key_value_123'),
      logger: client.logger,
      governor: new RateGovernor(),
    });
    clients.push(wrong);
    errors.push(await fetchTicketsPage(wrong).catch((e) => e));
    const text = [
      ...lines,
      ...errors.map((e) => `${String(e)} ${JSON.stringify(e)} ${(e as Error)?.stack ?? ''}`),
    ].join('\n');
    for (const k of [...keys, 'sk_wrong_key_value_123']) expect(text).not.toContain(k);
    expect(errors.at(-1)).toMatchObject({ code: 'INVALID_API_KEY' });
  });
});
