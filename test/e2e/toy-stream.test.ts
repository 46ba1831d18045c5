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

/** The one new file: a reference stream copying the workspace's tags into a table of its own. */
const TOY_STREAM = `import { fetchTagsPage } from '../connectors/support-api/paginate.js';
import { Tag } from '../schemas/api/directory.js';
import { defineStream } from './define.js';
import { referenceTable } from './reference.js';

export const toyTags = defineStream({
  name: 'toy_tags',
  kind: 'reference',
  table: 'toy_tags',
  routeClass: 'directory',
  endpoint: 'GET /tags',
  scope: 'tags:read',
  fetch: (client, read, cursor) => fetchTagsPage(client, { cursor, limit: read.limit }),
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
    copy = mkdtempSync(join(tmpdir(), 'support-sync-toy-'));
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
    writeFileSync(join(copy, 'streams/toy-tags.ts'), TOY_STREAM);

    companion = await startCompanion({ seed: 7, tickets: 10, rateLimits: false });
    const databaseUrl = await freshDatabase('e2e_toy_stream');
    db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    env = {
      SUPPORT_API_URL: companion.baseUrl,
      SUPPORT_API_KEY: companion.keys.admin,
      DESTINATION_URL: databaseUrl,
      TEMPORAL_ADDRESS: testTemporalAddress(),
      TEMPORAL_TASK_QUEUE: `toy-stream-${Date.now().toString(36)}`,
      SUPPORT_API_RATE_LIMITS: 'off',
      SYNC_STREAMS: 'tags,toy_tags',
      LOG_LEVEL: 'warn',
    };
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

    await run(
      process.execPath,
      [join(ROOT, 'node_modules/typescript/bin/tsc'), '--noEmit', '-p', 'tsconfig.json'],
      {
        cwd: copy,
      },
    );

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
