import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { removeAbandonedClusters, throwawayClusterName } from '../../embedded/abandoned-clusters.js';

/** A pid that no process has any more: a child that has exited and been reaped. */
function exitedPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
  return Number(child.stdout.toString());
}

describe('removeAbandonedClusters (throwaway clusters left by killed processes)', () => {
  let folder: string;
  afterAll(async () => {
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  it('removes a cluster whose process and server are gone, and keeps every other one', async () => {
    folder = await mkdtemp(join(tmpdir(), 'support-sync-abandoned-'));
    const dead = exitedPid();
    const cluster = async (name: string, server?: number) => {
      await mkdir(join(folder, name));
      await writeFile(join(folder, `${name}.password`), 'secret');
      if (server !== undefined) await writeFile(join(folder, name, 'postmaster.pid'), `${server}\n/data\n`);
      return join(folder, name);
    };
    const abandoned = await cluster(throwawayClusterName(dead, 'aaaa0001'), exitedPid());
    await cluster(throwawayClusterName(process.pid, 'bbbb0002')); // its process runs (this one)
    await cluster(throwawayClusterName(dead, 'cccc0003'), process.pid); // its server still runs
    await cluster('support-sync-pg-data'); // not a throwaway name
    expect(await removeAbandonedClusters(folder)).toEqual([abandoned]);
    expect((await readdir(folder)).sort()).toEqual(
      [
        throwawayClusterName(process.pid, 'bbbb0002'),
        `${throwawayClusterName(process.pid, 'bbbb0002')}.password`,
        throwawayClusterName(dead, 'cccc0003'),
        `${throwawayClusterName(dead, 'cccc0003')}.password`,
        'support-sync-pg-data',
        'support-sync-pg-data.password',
      ].sort(),
    );
  });
});
