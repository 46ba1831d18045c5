import { createHmac, randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CompanionHandle, startCompanion } from '../../companion/index.js';
import type { RunSummary } from '../../worker/run-sync.js';
import { cli } from '../support/cli.js';
import { freshDatabase } from '../support/postgres.js';
import { testTemporalAddress } from '../support/temporal.js';
import { DAY_MS } from './harness.js';

/*
 * A column policy set after a first sync reaches the tickets the warehouse holds at a newer version than
 * the source lists. As in the demo (`npm start`): the first run syncs a living companion whose round of
 * changes was applied late (a timer firing late stamps `updated_at` then); the companion restarted from the
 * same beginning catches that round up at its scheduled instant, so it serves those tickets at an older
 * `updated_at` than the warehouse holds. The merge never writes the older version; the stored row is
 * derived again from its own `_raw` under the policy, keeping its newer version. The whole sync each time:
 * the CLI, the real Temporal server, PostgreSQL and the companion over HTTP.
 */

const SEED = 31;
const TICKETS = 40;
const INTERVAL_MS = 4000;
/** How late the first companion's round was applied (the demo's timer drifts by tens of ms to seconds). */
const LATE_MS = 700;
const KEY = randomBytes(24).toString('hex');
const POLICY = 'tickets.contact_email=hash, tickets.contact_phone=drop';
const hmac = (value: string) => createHmac('sha256', KEY).update(value, 'utf8').digest('hex');

/** A stored ticket as the checks read it: `_raw` as its JSON text, the version in epoch ms. */
export interface StoredTicket {
  id: string;
  updated_ms: number;
  content_hash: string;
  contact_email: string | null;
  contact_phone: string | null;
  raw: string;
}

/** A warehouse the CLI syncs into, and the live tickets it holds, read with its own client. */
export interface Warehouse {
  env: Record<string, string>;
  tickets(): Promise<StoredTicket[]>;
  close(): Promise<void>;
}

export async function postgresWarehouse(): Promise<Warehouse> {
  const url = await freshDatabase('e2e_policy_stored_newer');
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  return {
    env: { DESTINATION_URL: url },
    tickets: async () =>
      (
        await db.query<StoredTicket>(
          `SELECT id, (extract(epoch FROM updated_at) * 1000)::float8 AS updated_ms, _content_hash AS content_hash,
                  contact_email, contact_phone, _raw::text AS raw
           FROM support.tickets WHERE _deleted_at IS NULL ORDER BY id`,
        )
      ).rows,
    close: () => db.end(),
  };
}

/** The scenario on the warehouse `open` makes (named `name`). */
export function describeStoredNewer(name: string, open: () => Promise<Warehouse>): void {
  describe(`column policy set later, ${name}: tickets stored newer than listed are rewritten too`, () => {
    let warehouse: Warehouse;
    const taskQueue = `policy-stored-newer-${randomBytes(3).toString('hex')}`;
    // The world began a minute ago (companion clock), so nothing it serves is in the sync's future.
    const began = Date.now() - 60_000;
    const companions: CompanionHandle[] = [];

    /**
     * The demo's living companion started at companion-clock instant `at` (its timer stopped: rounds by hand),
     * and how to move its clock.
     */
    async function companionAt(at: number) {
      let clock = at;
      const handle = await startCompanion({
        seed: SEED,
        tickets: TICKETS,
        rateLimits: false,
        now: () => new Date(clock),
        live: { intervalMs: INTERVAL_MS, changesPerTick: 6, since: new Date(began) },
      });
      handle.live.stop();
      companions.push(handle);
      return {
        handle,
        setClock: (ms: number) => {
          clock = ms;
        },
      };
    }

    const sync = async (companion: CompanionHandle, policy: string | null) => {
      const result = await cli(['sync', '--once'], {
        SUPPORT_API_URL: companion.baseUrl,
        SUPPORT_API_KEY: companion.keys.admin,
        ...warehouse.env,
        TEMPORAL_ADDRESS: testTemporalAddress(),
        TEMPORAL_TASK_QUEUE: taskQueue,
        SUPPORT_API_RATE_LIMITS: 'off',
        SYNC_START_DATE: new Date(began - 200 * DAY_MS).toISOString(),
        ...(policy === null ? {} : { SYNC_COLUMN_POLICY: policy, SYNC_HASH_KEY: KEY }),
      });
      expect(result.code, result.stderr.slice(-2000)).toBe(0);
      return JSON.parse(result.stdout.trim().split('\n').at(-1)!) as RunSummary;
    };

    const storedTickets = () => warehouse.tickets();
    /** The contact's e-mail and whether it has a phone, in a stored `_raw`. */
    const rawContact = (row: StoredTicket) => {
      const contact = (JSON.parse(row.raw) as { contact?: Record<string, unknown> | null }).contact ?? null;
      return { email: contact?.['email'] ?? null, hasPhone: contact !== null && 'phone' in contact };
    };

    /** Ids of tickets `companion` lists at an older `updated_at` than stored, with both instants. */
    function listedOlder(companion: CompanionHandle, stored: readonly StoredTicket[]) {
      const world = companion.world;
      return stored.flatMap((row) => {
        const record = world.tickets.find((t) => t.id === row.id);
        if (!record || record.deletedAt !== null) return [];
        const listed = record.updatedAt;
        return listed < row.updated_ms ? [{ id: row.id, stored: row.updated_ms, listed }] : [];
      });
    }

    let newer: { id: string; stored: number; listed: number }[] = [];
    let second: RunSummary;

    beforeAll(async () => {
      warehouse = await open();
      // First run: started as the world began; its round due at `began + INTERVAL_MS` applied late (a timer
      // firing late); synced without a policy.
      const first = await companionAt(began);
      first.setClock(began + INTERVAL_MS + LATE_MS);
      first.handle.live.tick();
      await sync(first.handle, null);
      await first.handle.stop();
      // Second run: the companion restarted catches the round up at its own instant; the policy is set.
      const { handle: restarted } = await companionAt(began + INTERVAL_MS + LATE_MS);
      newer = listedOlder(restarted, await storedTickets());
      second = await sync(restarted, POLICY);
    });

    afterAll(async () => {
      await warehouse?.close();
      for (const c of companions) await c.stop();
    });

    it('the restarted source lists some tickets at an older version than the warehouse holds', () => {
      expect(newer.length).toBeGreaterThan(0);
      for (const n of newer) expect(n.stored - n.listed).toBe(LATE_MS);
      expect(second.status).toBe('succeeded');
    });

    /** Each stored ticket's e-mail column against HMAC(key, the contact's e-mail in the world): hashed once. */
    function notHashedOnce(companion: CompanionHandle, rows: readonly StoredTicket[]) {
      const world = companion.world;
      return rows.filter((r) => {
        const record = world.tickets.find((t) => t.id === r.id)!;
        const email = record.contactId ? world.contact(record.contactId)?.email : null;
        return r.contact_email !== (email ? hmac(email) : null) || rawContact(r).email !== r.contact_email;
      });
    }

    it('every live ticket follows the policy, those stored newer included, at their newer version', async () => {
      const rows = await storedTickets();
      expect(notHashedOnce(companions.at(-1)!, rows).map((r) => r.id)).toEqual([]);
      expect(rows.filter((r) => r.contact_phone !== null || rawContact(r).hasPhone).map((r) => r.id)).toEqual(
        [],
      );
      for (const n of newer) {
        const row = rows.find((r) => r.id === n.id)!;
        // Never older over newer: the row keeps the version it had.
        expect(row.updated_ms).toBe(n.stored);
      }
      expect(rows.filter((r) => r.contact_email !== null).length).toBeGreaterThan(20);
    });

    it('status: every stored row follows the policy; a third run leaves the rows stored newer as they are', async () => {
      const status = await cli(['status', '--json'], {
        ...warehouse.env,
        SYNC_COLUMN_POLICY: POLICY,
      });
      expect(status.code, status.stderr).toBe(0);
      const checks = (JSON.parse(status.stdout) as { column_policy: { rows_not_applied: number }[] })
        .column_policy;
      expect(checks.map((c) => c.rows_not_applied)).toEqual([0, 0]);
      const before = await storedTickets();
      const restarted = companions.at(-1)!;
      await sync(restarted, POLICY);
      const after = await storedTickets();
      // Derived again from a `_raw` already under the policy, a row stored newer is what is stored (a hash
      // already applied is not hashed again): same content, same version.
      expect(after).toEqual(before);
      expect(notHashedOnce(restarted, after).map((r) => r.id)).toEqual([]);
    });
  });
}
