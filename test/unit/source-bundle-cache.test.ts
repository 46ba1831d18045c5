import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sourceBundleCache, sourceBundleKey } from '../../worker/source-bundle-cache.js';

/** A start from source reuses the bundle of the same sources, and only of the same sources. */
let root: string;
let entry: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'bundle-cache-'));
  await mkdir(join(root, 'workflows'), { recursive: true });
  await mkdir(join(root, 'schemas', 'api'), { recursive: true });
  entry = join(root, 'workflows', 'index.ts');
  await writeFile(entry, 'export * from "./sync-run.js";');
  await writeFile(join(root, 'schemas', 'api', 'ticket.ts'), 'export const a = 1;');
  await writeFile(join(root, 'package-lock.json'), '{}');
});
afterEach(() => rm(root, { recursive: true, force: true }));

describe('the source bundle cache', () => {
  it('gives back what was kept for the same sources', async () => {
    expect(await (await sourceBundleCache(root, entry)).read()).toBeNull();
    await (await sourceBundleCache(root, entry)).write('bundle one');
    expect(await (await sourceBundleCache(root, entry)).read()).toBe('bundle one');
  });

  it('misses after an edit to any source file, a new file, the lock file, or for another entry', async () => {
    const before = await sourceBundleKey(root, entry);
    await writeFile(join(root, 'schemas', 'api', 'ticket.ts'), 'export const a = 2;');
    const edited = await sourceBundleKey(root, entry);
    expect(edited).not.toBe(before);
    await writeFile(join(root, 'schemas', 'api', 'added.ts'), '');
    const added = await sourceBundleKey(root, entry);
    expect(added).not.toBe(edited);
    await writeFile(join(root, 'package-lock.json'), '{"lockfileVersion":3}');
    const locked = await sourceBundleKey(root, entry);
    expect(locked).not.toBe(added);
    expect(await sourceBundleKey(root, join(root, 'workflows', 'other.ts'))).not.toBe(locked);
    // Files outside the source folders (tests, docs) do not make it miss.
    await mkdir(join(root, 'test'));
    await writeFile(join(root, 'test', 'a.test.ts'), '');
    expect(await sourceBundleKey(root, entry)).toBe(locked);
  });

  it('keeps the newest few bundles, whole', async () => {
    for (let i = 0; i < 9; i++) {
      await writeFile(join(root, 'schemas', 'api', 'ticket.ts'), `export const a = ${i};`);
      await (await sourceBundleCache(root, entry)).write(`bundle ${i}`);
    }
    const kept = await readdir(join(root, 'node_modules', '.cache', 'support-sync', 'workflow-bundles'));
    expect(kept.length).toBe(6);
    expect(kept.every((name) => name.endsWith('.js'))).toBe(true);
    expect(await (await sourceBundleCache(root, entry)).read()).toBe('bundle 8');
  });
});
