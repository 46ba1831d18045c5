import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres } from '../../embedded/postgres.js';

/**
 * As root, the demo copies PostgreSQL's binaries to a folder under the shared temp directory where the
 * `postgres` user can run them, and reuses that copy. A folder there that another user could write (made
 * world-writable first, as an attacker on a shared machine would) is not trusted: the binaries go to a
 * private folder of the demo's own, and the server still starts.
 */
const asRoot = process.getuid?.() === 0;

describe.skipIf(!asRoot)('the embedded binaries folder, as root', () => {
  const savedTmp = process.env['TMPDIR'];
  let base: string;
  afterAll(async () => {
    if (savedTmp === undefined) delete process.env['TMPDIR'];
    else process.env['TMPDIR'] = savedTmp;
    if (base) await rm(base, { recursive: true, force: true });
  });

  it('a world-writable shared folder is not used: a private copy is, and PostgreSQL starts', async () => {
    base = await mkdtemp(join(tmpdir(), 'support-sync-shared-tmp-'));
    await chmod(base, 0o755);
    const shared = join(base, 'support-sync-postgres');
    await mkdir(shared);
    await chmod(shared, 0o777);
    process.env['TMPDIR'] = base;
    const steps: string[] = [];
    const step = (label: string) => {
      steps.push(label);
      return { end: (result?: string) => void steps.push(`end: ${result ?? ''}`) };
    };
    const server = await startEmbeddedPostgres({ dataDir: join(base, 'cluster'), step: step as never });
    try {
      const client = new pg.Client({ connectionString: server.url });
      await client.connect();
      expect((await client.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
      await client.end();
    } finally {
      await server.stop();
    }
    const copying = steps.find((s) => s.startsWith('copying the PostgreSQL binaries'))!;
    expect(copying).toContain(
      `to a private folder (${shared} is writable by its group or by others (mode 777)`,
    );
    const where = steps[steps.indexOf(copying) + 1]!;
    expect(where).toMatch(new RegExp(`^end: ${base}/support-sync-postgres-[A-Za-z0-9]+/`));
  }, 180_000);

  it('two starts at once on a fresh machine share one whole copy, and both servers run', async () => {
    const fresh = await mkdtemp(join(tmpdir(), 'support-sync-fresh-tmp-'));
    await chmod(fresh, 0o755);
    process.env['TMPDIR'] = fresh;
    // Watched while the starts copy: a version's folder that exists without its completion marker is a
    // half-written copy another start could run or delete.
    const shared = join(fresh, 'support-sync-postgres');
    const halfWritten = new Set<string>();
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        for (const version of await readdir(shared).catch(() => [] as string[]))
          if (!version.startsWith('.') && !existsSync(join(shared, version, '.complete')))
            halfWritten.add(version);
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
    })();
    try {
      const servers = await Promise.all([
        startEmbeddedPostgres({ dataDir: join(fresh, 'cluster-a') }),
        startEmbeddedPostgres({ dataDir: join(fresh, 'cluster-b') }),
      ]);
      try {
        for (const server of servers) {
          const client = new pg.Client({ connectionString: server.url });
          await client.connect();
          expect((await client.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
          await client.end();
        }
      } finally {
        await Promise.all(servers.map((s) => s.stop()));
      }
      watching = false;
      await watcher;
      expect([...halfWritten]).toEqual([]);
      const copies = await readdir(shared);
      // One version's copy, complete; no partial copy left beside it.
      expect(copies).toHaveLength(1);
      expect(await readdir(join(shared, copies[0]!))).toContain('.complete');
      expect((await readdir(fresh)).filter((f) => f.includes('.partial-'))).toEqual([]);
    } finally {
      watching = false;
      await rm(fresh, { recursive: true, force: true });
    }
  }, 180_000);
});
