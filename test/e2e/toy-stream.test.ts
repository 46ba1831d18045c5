import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CompanionHandle, startCompanion } from '../../companion/index.js';
import { cli } from '../support/cli.js';
import { freshDatabase } from '../support/postgres.js';
import { testTemporalAddress } from '../support/temporal.js';

const execFileAsync = promisify(execFile);

/** A command that must succeed; its failure says what it printed. */
async function run(file: string, args: string[], options: { cwd: string }) {
  try {
    return await execFileAsync(file, args, { ...options, maxBuffer: 64 * 1024 * 1024 });
  } catch (e) {
    const { stdout = '', stderr = '' } = e as { stdout?: string; stderr?: string };
    throw new Error(`${file} ${args.join(' ')} failed:\n${stdout}${stderr}`.slice(0, 4000));
  }
}
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** A copy of the project as git sees it (tracked and untracked files), sharing its node_modules. */
async function projectCopy(): Promise<string> {
  const copy = mkdtempSync(join(tmpdir(), 'support-sync-toy-'));
  const { stdout } = await run('git', ['ls-files', '-co', '--exclude-standard', '-z'], { cwd: ROOT });
  for (const file of stdout.split('\0').filter(Boolean)) {
    mkdirSync(dirname(join(copy, file)), { recursive: true });
    try {
      cpSync(join(ROOT, file), join(copy, file));
    } catch (e) {
      // A file git lists but the working tree lacks (deleted, not yet staged) is not part of the copy.
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
  }
  symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'), 'dir');
  return copy;
}

/** Adds one line to a file of the copy, after `after`; fails when `after` is not in it. */
function addLine(file: string, after: string, line: string): void {
  const text = readFileSync(file, 'utf8');
  if (!text.includes(after)) throw new Error(`${file} has no line ${JSON.stringify(after)}`);
  writeFileSync(file, text.replace(after, `${after}\n${line}`));
}

/** A database of its own, and the environment of a sync of `streams` from `companion` into it. */
async function syncSetup(companion: CompanionHandle, database: string, queue: string, streams: string) {
  const databaseUrl = await freshDatabase(database);
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  const env: Record<string, string> = {
    SUPPORT_API_URL: companion.baseUrl,
    SUPPORT_API_KEY: companion.keys.admin,
    DESTINATION_URL: databaseUrl,
    TEMPORAL_ADDRESS: testTemporalAddress(),
    TEMPORAL_TASK_QUEUE: `${queue}-${Date.now().toString(36)}`,
    SUPPORT_API_RATE_LIMITS: 'off',
    SYNC_STREAMS: streams,
    LOG_LEVEL: 'warn',
  };
  return { db, env };
}

/** Type-checks the copy's product code (the tests and benches do not import a stream's module). */
async function typecheck(copy: string): Promise<void> {
  await run(
    process.execPath,
    [join(ROOT, 'node_modules/typescript/bin/tsc'), '--noEmit', '-p', 'tsconfig.build.json'],
    {
      cwd: copy,
    },
  );
}

/** The one new file: a reference stream copying the workspace's tags into a table of its own. */
const TOY_STREAM = `import { Tag } from '../schemas/api/directory.js';
import { defineStream } from './define.js';
import { referenceTable } from './reference.js';

export const toyTags = defineStream({
  name: 'toy_tags',
  kind: 'reference',
  table: 'toy_tags',
  routeClass: 'directory',
  endpoint: 'GET /tags',
  scope: 'tags:read',
  page: { item: Tag },
  warehouse: referenceTable({
    description: 'A toy copy of the tags.',
    schema: Tag,
    descriptions: { id: 'Tag id.', name: 'Tag name.', created_at: 'When the tag was created.' },
  }),
});
`;

/**
 * Adding a stream of a kind that exists is one new module plus one line in streams/registry.ts: in a copy of
 * the project, a toy reference stream is added that way and nothing else, and then type-checks, syncs into
 * its own table through the real CLI, Temporal and the companion over HTTP, and is documented by the
 * warehouse reference. Without the registry line the stream is unknown.
 */
describe('a stream added as one module and one registry line', () => {
  let copy: string;
  let companion: CompanionHandle;
  let db: pg.Client;
  let env: Record<string, string>;

  beforeAll(async () => {
    copy = await projectCopy();
    writeFileSync(join(copy, 'streams/toy-tags.ts'), TOY_STREAM);

    companion = await startCompanion({ seed: 7, tickets: 10, rateLimits: false });
    ({ db, env } = await syncSetup(companion, 'e2e_toy_stream', 'toy-stream', 'tags,toy_tags'));
  }, 120_000);
  afterAll(async () => {
    await db?.end();
    await companion?.stop();
    if (copy) rmSync(copy, { recursive: true, force: true });
  });

  it('without its registry line, the stream is unknown', async () => {
    const r = await cli(['sync', '--once'], env, { cwd: copy });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/unknown stream "toy_tags"/);
  });

  it('with it, the project type-checks, syncs the stream into its table and documents the table', async () => {
    const registry = join(copy, 'streams/registry.ts');
    const text = readFileSync(registry, 'utf8');
    writeFileSync(
      registry,
      text
        .replace(
          "import { tags } from './tags.js';",
          "import { tags } from './tags.js';\nimport { toyTags } from './toy-tags.js';",
        )
        .replace('  tags,\n', '  tags,\n  toyTags,\n'),
    );
    expect(readFileSync(registry, 'utf8').split('\n').length).toBe(text.split('\n').length + 2);

    await typecheck(copy);

    const r = await cli(['sync', '--once'], env, { cwd: copy });
    expect(r.stderr).not.toMatch(/error/i);
    expect(r.code).toBe(0);
    const summary = JSON.parse(r.stdout.trim().split('\n').at(-1)!);
    expect(summary.status).toBe('succeeded');

    const rows = async (table: string) =>
      (
        await db.query(
          `SELECT id, name, created_at FROM support.${table} WHERE _deleted_at IS NULL ORDER BY id`,
        )
      ).rows;
    const toy = await rows('toy_tags');
    expect(toy.length).toBeGreaterThan(0);
    expect(toy).toEqual(await rows('tags'));

    await run(process.execPath, ['--import', 'tsx', 'scripts/warehouse-docs.ts'], { cwd: copy });
    expect(readFileSync(join(copy, 'docs/warehouse.md'), 'utf8')).toContain('### `toy_tags`');
  }, 300_000);
});

/** A new export endpoint's API schema: a toy export of the agents' logins, its window named its own way. */
const TOY_SCHEMA = `import { z } from 'zod';
import { Timestamp, Uuid } from './common.js';
import { EXPORT_PAGE_LIMIT } from './exports.js';

export const ToyLogin = z.looseObject({ id: Uuid, agent_id: z.string().min(1), logged_in_at: Timestamp });

export const ToyLoginQuery = z.strictObject({
  logged_from: Timestamp,
  logged_before: Timestamp,
  limit: z.coerce.number().int().min(1).max(EXPORT_PAGE_LIMIT.max).optional(),
  cursor: z.string().min(1).optional(),
});
`;

/** Its companion route: the logins starting in the window, in (start, id) order, keyset-paged. */
const TOY_ROUTE = `import { EXPORT_PAGE_LIMIT } from '../../schemas/api/index.js';
import { ToyLoginQuery } from '../../schemas/api/toy-logins.js';
import { keyedRoute, parseQuery, type Route } from '../http/context.js';
import { iso } from '../http/instants.js';
import { keysetPage } from '../rules/paging.js';
import { inWindow, parseWindow } from '../rules/windows.js';
import type { CompanionState } from '../state.js';
import type { SessionRecord } from '../world/index.js';

export function toyLoginRoutes(s: CompanionState): Route[] {
  return [
    keyedRoute('GET', '/toy-logins', 'analytics', 'analytics:read', (ctx, key) => {
      const q = parseQuery(ctx, ToyLoginQuery);
      const w = parseWindow(q.logged_from, q.logged_before, ['logged_from', 'logged_before']);
      const limit = q.limit ?? EXPORT_PAGE_LIMIT.default;
      const filters = { logged_from: q.logged_from, logged_before: q.logged_before };
      const page = keysetPage(s, 'toy-logins', key, filters, limit, q.cursor);
      const out: SessionRecord[] = [];
      for (const r of s.world.sessions) {
        if (r.start * 1000 >= w.beforeUs) break;
        if (r.orgId !== key.orgId || r.visibleAt > s.world.settings.realNow()) continue;
        if (!inWindow(r.start * 1000, w) || !page.follows(r.start, r.id)) continue;
        out.push(r);
        if (out.length > limit) break;
      }
      return page.reply(
        out,
        (r) => ({ id: r.id, agent_id: r.agentId, logged_in_at: iso(r.start) }),
        (r) => [r.start, r.id],
      );
    }),
  ];
}
`;

/** Its module: an export of one pass whose request is derived from its endpoint (no fetch function of its own). */
const TOY_EXPORT = `import { ToyLogin } from '../schemas/api/toy-logins.js';
import { defineStream } from './define.js';

export const toyLogins = defineStream({
  name: 'toy_logins',
  kind: 'export',
  table: 'toy_logins',
  routeClass: 'analytics',
  endpoint: 'GET /toy-logins',
  scope: 'analytics:read',
  passes: ['toy_logins'],
  passDefinitions: {
    toy_logins: {
      page: { item: ToyLogin, window: { from: 'logged_from', before: 'logged_before' } },
      forecast: { dateColumn: 'logged_in_at', basis: 'days' },
    },
  },
  warehouse: {
    description: 'A toy export of the agent logins.',
    schema: ToyLogin,
    primaryKey: ['id'],
    merge: { kind: 'content' },
    tracksDeletion: false,
    derive: {
      descriptions: { id: 'Session id.', agent_id: 'Agent id.', logged_in_at: 'When the agent logged in.' },
    },
    indexes: [],
    partitionBy: 'logged_in_at',
    clusterBy: [],
  },
  freshness: 'logged_in_at',
  freshnessTarget: { warnHours: 6, errorHours: 24 },
});
`;

/**
 * Adding an export stream with a new endpoint is its API schema, its module, its companion route and one
 * line in streams/registry.ts: in a copy of the project, a toy export is added that way and nothing else
 * (the companion's route list gets the route's line), and then type-checks and syncs into its own table
 * through the real CLI, Temporal and the copy's companion over HTTP, window by window.
 */
describe('an export stream with a new endpoint added as its schema, module, route and registry line', () => {
  let copy: string;
  let companion: CompanionHandle;
  let db: pg.Client;
  let env: Record<string, string>;

  beforeAll(async () => {
    copy = await projectCopy();
    writeFileSync(join(copy, 'schemas/api/toy-logins.ts'), TOY_SCHEMA);
    writeFileSync(join(copy, 'companion/routes/toy-logins.ts'), TOY_ROUTE);
    writeFileSync(join(copy, 'streams/toy-logins.ts'), TOY_EXPORT);
    const routeList = join(copy, 'companion/workspace.ts');
    addLine(
      routeList,
      "import { viewRoutes } from './routes/views.js';",
      "import { toyLoginRoutes } from './routes/toy-logins.js';",
    );
    addLine(routeList, '      ...exportRoutes(state),', '      ...toyLoginRoutes(state),');
    const registry = join(copy, 'streams/registry.ts');
    addLine(registry, "import { views } from './views.js';", "import { toyLogins } from './toy-logins.js';");
    addLine(registry, '  agentSessions,', '  toyLogins,');

    const copied = (await import(join(copy, 'companion/index.ts'))) as {
      startCompanion: typeof startCompanion;
    };
    companion = await copied.startCompanion({ seed: 7, tickets: 10, rateLimits: false });
    ({ db, env } = await syncSetup(
      companion,
      'e2e_toy_export',
      'toy-export',
      'tickets,agent_sessions,toy_logins',
    ));
  }, 120_000);
  afterAll(async () => {
    await db?.end();
    await companion?.stop();
    if (copy) rmSync(copy, { recursive: true, force: true });
  });

  it('type-checks and syncs every login of the history into its table, as the sessions export has them', async () => {
    await typecheck(copy);
    const r = await cli(['sync', '--once'], env, { cwd: copy });
    expect(r.stderr).not.toMatch(/error/i);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout.trim().split('\n').at(-1)!).status).toBe('succeeded');

    const logins = (
      await db.query(
        `SELECT l.id, l.agent_id, l.logged_in_at, s.agent_id AS session_agent, s.session_start
         FROM support.toy_logins l LEFT JOIN support.agent_sessions s ON s.id = l.id ORDER BY l.id`,
      )
    ).rows;
    expect(logins.length).toBeGreaterThan(0);
    for (const login of logins) {
      expect(login.session_agent).toBe(login.agent_id);
      expect(login.session_start).toEqual(login.logged_in_at);
    }
    // The pass ran in windows of its own and moved its own high-water mark.
    const windows = await db.query(
      `SELECT count(*)::int AS n FROM support._sync_runs WHERE stream = 'toy_logins' AND status = 'succeeded'`,
    );
    expect(windows.rows[0].n).toBeGreaterThan(0);
    const mark = await db.query(
      `SELECT high_water_mark FROM support._sync_state WHERE stream = 'toy_logins' AND scope = 'hwm'`,
    );
    expect(mark.rows[0]?.high_water_mark).toBeTruthy();
  }, 300_000);
});
