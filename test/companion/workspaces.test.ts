import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCompanion, startWorkspaces, type WorkspacesHandle } from '../../companion/index.js';
import { api } from './helpers.js';

/** What `api` needs of one workspace of a companion serving many. */
const at = (fleet: WorkspacesHandle, id: string) => ({
  baseUrl: fleet.baseUrl,
  keys: fleet.workspace(id).keys,
});

describe('many workspaces on one port: routed by key, with colliding ids and ticket numbers', () => {
  let fleet: WorkspacesHandle;
  beforeAll(async () => {
    fleet = await startWorkspaces({
      workspaces: [
        { id: 'north', seed: 1, tickets: 60, rateLimits: false },
        { id: 'south', seed: 2, tickets: 90, rateLimits: false },
        // north's seed and size: the same world, yet its keys, cursors and uploads are its own
        { id: 'twin', seed: 1, tickets: 60, rateLimits: false },
      ],
    });
  });
  afterAll(() => fleet.stop());

  it('serves each workspace its own world: the same ticket number and the same id, different tickets', async () => {
    const n = await api(at(fleet, 'north'), 'GET', '/tickets/1');
    const s = await api(at(fleet, 'south'), 'GET', '/tickets/1');
    expect([n.status, s.status]).toEqual([200, 200]);
    expect(n.body.data.id).toBe(s.body.data.id);
    expect(n.body.data.created_at).not.toBe(s.body.data.created_at);
    for (const [ws, body] of [
      ['north', n.body],
      ['south', s.body],
    ] as const) {
      const t = fleet.workspace(ws).world.ticketByNumber(1);
      expect(body.data.created_at).toBe(new Date(t?.createdAt ?? 0).toISOString());
    }
    // Whole pages: every id north lists, south lists too (the id space is shared), ticket by ticket different.
    const page = async (ws: string) =>
      (await api(at(fleet, ws), 'GET', '/tickets', { query: { limit: 100 } })).body.data as {
        id: string;
        number: number;
        created_at: string;
      }[];
    const [north, south] = [await page('north'), await page('south')];
    expect(north).toHaveLength(60);
    expect(south).toHaveLength(90);
    const southById = new Map(south.map((t) => [t.id, t]));
    expect(north.every((t) => southById.get(t.id)?.number === t.number)).toBe(true);
    expect(north.filter((t) => southById.get(t.id)?.created_at === t.created_at)).toEqual([]);
    const msgs = async (ws: string) =>
      ((await api(at(fleet, ws), 'GET', '/tickets/1/messages')).body.data as { id: string }[]).map(
        (m) => m.id,
      );
    expect(await msgs('north')).toContain((await msgs('south'))[0]);
  });

  it('answers a ticket number only the other workspace has with 404, and refuses its cursors', async () => {
    expect((await api(at(fleet, 'south'), 'GET', '/tickets/75')).status).toBe(200);
    const n = await api(at(fleet, 'north'), 'GET', '/tickets/75');
    expect([n.status, n.body.code]).toEqual([404, 'TICKET_NOT_FOUND']);
    const first = await api(at(fleet, 'north'), 'GET', '/tickets', { query: { limit: 10 } });
    const cursor = first.body.pagination.next_cursor as string;
    expect((await api(at(fleet, 'north'), 'GET', '/tickets', { query: { limit: 10, cursor } })).status).toBe(
      200,
    );
    for (const other of ['south', 'twin']) {
      const replayed = await api(at(fleet, other), 'GET', '/tickets', { query: { limit: 10, cursor } });
      expect([other, replayed.status, replayed.body.code]).toEqual([other, 400, 'VALIDATION_ERROR']);
    }
  });

  it('refuses a wrong key whatever workspace it resembles, and keys no other workspace or companion holds', async () => {
    for (const id of ['north', 'south', 'twin']) {
      const keys = fleet.workspace(id).keys;
      const wrong = `${keys.admin.slice(0, -4)}0000`;
      const r = await api({ baseUrl: fleet.baseUrl, keys }, 'GET', '/tickets', { key: wrong });
      expect([r.status, r.body.code]).toEqual([401, 'INVALID_API_KEY']);
      const none = await api({ baseUrl: fleet.baseUrl, keys }, 'GET', '/tickets', { key: null });
      expect([none.status, none.body.code]).toEqual([401, 'API_KEY_REQUIRED']);
    }
    // The key a companion of one workspace with north's seed would hand out reaches nothing here.
    const alone = await startCompanion({ seed: 1, tickets: 60, rateLimits: false });
    try {
      const r = await api(at(fleet, 'north'), 'GET', '/tickets', { key: alone.keys.admin });
      expect(r.status).toBe(401);
    } finally {
      await alone.stop();
    }
    const all = [...fleet.workspaces.values()].flatMap((w) => Object.values(w.keys));
    expect(new Set(all).size).toBe(all.length);
    // Health and unknown routes answer without a key.
    const health = await api(at(fleet, 'north'), 'GET', '/health', { key: null });
    expect(health.status).toBe(200);
    expect((await api(at(fleet, 'north'), 'GET', '/nowhere', { key: null })).status).toBe(404);
  });

  it('revokes a key in one workspace and leaves the other workspaces, and its other keys, served', async () => {
    const north = at(fleet, 'north');
    fleet.workspace('north').world.revokeKey('readonly');
    const revoked = await api(north, 'GET', '/tickets', { key: north.keys.readonly });
    expect([revoked.status, revoked.body.code]).toEqual([401, 'INVALID_API_KEY']);
    expect((await api(north, 'GET', '/tickets')).status).toBe(200);
    const twin = at(fleet, 'twin');
    expect((await api(twin, 'GET', '/tickets', { key: twin.keys.readonly })).status).toBe(200);
  });

  it('keeps an attachment in its workspace: the upload URL, the confirm and the file are its own', async () => {
    const north = at(fleet, 'north');
    const u = await api(north, 'POST', '/attachments/upload-url', {
      body: { file_name: 'note.txt', mime_type: 'text/plain', size: 5 },
    });
    expect(u.status).toBe(200);
    const put = await request(u.body.data.upload_url, {
      method: 'PUT',
      body: 'hello',
      headers: { 'content-type': 'text/plain' },
    });
    expect([put.statusCode, await put.body.text()]).toEqual([200, 'OK']);
    const id = u.body.data.id as string;
    expect((await api(at(fleet, 'south'), 'POST', `/attachments/${id}/confirm`)).status).toBe(404);
    expect((await api(north, 'POST', `/attachments/${id}/confirm`)).status).toBe(200);
    const file = await request(u.body.data.public_url as string);
    expect([file.statusCode, await file.body.text()]).toEqual([200, 'hello']);
    const elsewhere = await request(
      (u.body.data.public_url as string).replace('/files/north/', '/files/south/'),
    );
    expect([elsewhere.statusCode, await elsewhere.body.text()]).toEqual([404, 'Not found']);
  });
});

describe('per-workspace rate limits and life', () => {
  it('counts each workspace against its own limits', async () => {
    const fleet = await startWorkspaces({
      workspaces: [
        { id: 'small', seed: 3, tickets: 20, rateLimitOverrides: { list: 3 } },
        { id: 'large', seed: 4, tickets: 40, rateLimitOverrides: { list: 5 } },
      ],
    });
    try {
      const small = at(fleet, 'small');
      const large = at(fleet, 'large');
      for (let i = 0; i < 3; i++) expect((await api(small, 'GET', '/tickets')).status).toBe(200);
      const over = await api(small, 'GET', '/tickets');
      expect([over.status, over.body.code]).toEqual([429, 'RATE_LIMIT_EXCEEDED']);
      const other = await api(large, 'GET', '/tickets');
      expect(other.status).toBe(200);
      expect([other.headers['x-ratelimit-limit'], other.headers['x-ratelimit-remaining']]).toEqual([
        '5',
        '4',
      ]);
      // Each workspace's requests are in its own log, nowhere else.
      expect(fleet.workspace('small').requestLog.map((r) => r.status)).toEqual([200, 200, 200, 429]);
      expect(fleet.workspace('large').requestLog.map((r) => r.status)).toEqual([200]);
    } finally {
      await fleet.stop();
    }
  });

  it('lets one workspace live while the other stays as it was, byte for byte', async () => {
    const fleet = await startWorkspaces({
      workspaces: [
        { id: 'busy', seed: 5, tickets: 30, rateLimits: false, live: { intervalMs: 40, changesPerTick: 5 } },
        { id: 'quiet', seed: 6, tickets: 30, rateLimits: false },
      ],
    });
    try {
      const snapshot = async (id: string) =>
        JSON.stringify((await api(at(fleet, id), 'GET', '/tickets', { query: { limit: 100 } })).body.data);
      const [busy0, quiet0] = [await snapshot('busy'), await snapshot('quiet')];
      const quietTickets = fleet.workspace('quiet').world.tickets.length;
      await new Promise((r) => setTimeout(r, 400));
      expect(fleet.workspace('busy').live.running).toBe(true);
      expect(fleet.workspace('quiet').live.running).toBe(false);
      expect(await snapshot('busy')).not.toBe(busy0);
      expect(await snapshot('quiet')).toBe(quiet0);
      expect(fleet.workspace('quiet').world.tickets.length).toBe(quietTickets);
      // A round applied by hand in one workspace reaches only it too.
      fleet.workspace('busy').live.tick(10);
      expect(await snapshot('quiet')).toBe(quiet0);
    } finally {
      await fleet.stop();
    }
  });
});

describe('npm run companion -- --workspaces <file>', () => {
  it('prints one JSON line: base_url, the first workspace keys as keys, and every workspace by id', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'companion-ws-'));
    const file = join(dir, 'workspaces.yaml');
    writeFileSync(
      file,
      'workspaces:\n  - id: alpha\n    tickets: 25\n  - id: beta\n    tickets: 45\n    seed: 9\n',
    );
    // The companion's own process (not npx's, whose SIGTERM would leave its child serving after the test).
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'companion/cli.ts', '--workspaces', file, '--rate-limits', 'off'],
      { stdio: ['ignore', 'pipe', 'ignore'] },
    );
    try {
      const line = await new Promise<string>((resolve, reject) => {
        createInterface({ input: child.stdout }).once('line', resolve);
        child.once('exit', (code) => reject(new Error(`companion exited ${code}`)));
      });
      const out = JSON.parse(line) as {
        base_url: string;
        keys: Record<string, string>;
        workspaces: Record<string, { keys: Record<string, string> }>;
      };
      expect(Object.keys(out.workspaces)).toEqual(['alpha', 'beta']);
      expect(out.keys).toEqual(out.workspaces['alpha']?.keys);
      const count = async (key: string | undefined) => {
        const r = await api({ baseUrl: out.base_url, keys: out.keys }, 'GET', '/tickets', {
          query: { limit: 100 },
          key: key ?? null,
        });
        return (r.body.data as unknown[]).length;
      };
      expect(await count(out.workspaces['alpha']?.keys['admin'])).toBe(25);
      expect(await count(out.workspaces['beta']?.keys['admin'])).toBe(45);
    } finally {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
    }
  }, 60_000);
});
