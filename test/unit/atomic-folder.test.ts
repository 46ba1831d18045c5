import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createFolderAtomically } from '../../embedded/private-folder.js';

/**
 * The shared binaries folder (embedded/postgres.ts, as root) appears whole or not at all: a start beside one
 * still copying must never run, nor delete, a half-written copy.
 */
let base: string;
beforeEach(async () => {
  base = await mkdtemp(join(tmpdir(), 'atomic-folder-'));
});
afterEach(() => rm(base, { recursive: true, force: true }));

describe('createFolderAtomically', () => {
  it('the folder is absent while it is filled, then whole', async () => {
    const target = join(base, 'bin');
    const seenWhileFilling: string[][] = [];
    expect(
      await createFolderAtomically(target, async (folder) => {
        await writeFile(join(folder, 'initdb'), 'one');
        seenWhileFilling.push(await readdir(base));
        await writeFile(join(folder, 'postgres'), 'two');
      }),
    ).toBe(true);
    expect(seenWhileFilling[0]).not.toContain('bin');
    expect((await readdir(target)).sort()).toEqual(['initdb', 'postgres']);
    expect(await readdir(base)).toEqual(['bin']);
  });

  it('a fill that fails leaves nothing behind', async () => {
    const target = join(base, 'bin');
    await expect(
      createFolderAtomically(target, async (folder) => {
        await writeFile(join(folder, 'initdb'), 'one');
        throw new Error('disk full');
      }),
    ).rejects.toThrow('disk full');
    expect(await readdir(base)).toEqual([]);
  });

  it('what another process put there first stays; ours is removed', async () => {
    const target = join(base, 'bin');
    const result = await createFolderAtomically(target, async (folder) => {
      await writeFile(join(folder, 'ours'), 'ours');
      // The other process finishes its copy while ours is being written.
      await mkdir(target);
      await writeFile(join(target, 'theirs'), 'theirs');
    });
    expect(result).toBe(false);
    expect(await readdir(target)).toEqual(['theirs']);
    expect(await readFile(join(target, 'theirs'), 'utf8')).toBe('theirs');
    expect(await readdir(base)).toEqual(['bin']);
  });
});
