import { chmod, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { untraversableFolders } from '../../embedded/postgres.js';

// As root the embedded server runs as `postgres`; a clone under a 0700 folder failed deep in initdb
// ("could not open …pwfile: Permission denied"). The check names the folders before anything starts.
describe('untraversableFolders', () => {
  const other = { uid: 65534, gid: 65534 }; // nobody: neither owner nor group of the test's folders
  let root: string;
  afterAll(async () => {
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('names each existing folder above the cluster that another user cannot search', async () => {
    root = await mkdtemp(join(tmpdir(), 'support-sync-folders-'));
    await mkdir(join(root, 'clone', '.data'), { recursive: true });
    await chmod(root, 0o700);
    await chmod(join(root, 'clone'), 0o755);
    await chmod(join(root, 'clone', '.data'), 0o750);
    const cluster = join(root, 'clone', '.data', 'pg', 'not-yet');
    expect(await untraversableFolders(cluster, other)).toEqual([join(root, 'clone', '.data'), root]);
    await chmod(root, 0o711);
    await chmod(join(root, 'clone', '.data'), 0o755);
    expect(await untraversableFolders(cluster, other)).toEqual([]);
  });
});
