import { readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/*
 * Throwaway PostgreSQL clusters (startEmbeddedPostgres without a data folder: tests, benches) live in the
 * system temp folder as `support-sync-pg-<pid>-<hex>` and are removed when their owner stops them. A
 * process killed before that (a bench stopped with `kill`, an OOM, a CI timeout) leaves hundreds of
 * megabytes behind for good; the next throwaway cluster removes those whose owner and server are gone.
 */

/** The folder name of a throwaway cluster made by process `pid`. */
export const throwawayClusterName = (pid: number, suffix: string) => `support-sync-pg-${pid}-${suffix}`;

const THROWAWAY = /^support-sync-pg-(\d+)-[0-9a-f]+$/;

/** Whether a process `pid` exists (EPERM: it does, another user's). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The server process of a cluster (the first line of postmaster.pid), if it has one written. */
async function serverPid(cluster: string): Promise<number | null> {
  const text = await readFile(join(cluster, 'postmaster.pid'), 'utf8').catch(() => null);
  const pid = Number(text?.split('\n')[0]);
  return Number.isInteger(pid) && pid > 0 ? pid : null;
}

/**
 * Removes the throwaway clusters in `folder` whose making process has exited and whose server (if it
 * wrote a postmaster.pid) is not running; returns the folders removed. A recycled pid keeps a folder: the
 * safe side.
 */
export async function removeAbandonedClusters(folder = tmpdir()): Promise<string[]> {
  const names = await readdir(folder).catch(() => [] as string[]);
  const removed: string[] = [];
  for (const name of names) {
    const owner = THROWAWAY.exec(name)?.[1];
    if (owner === undefined || alive(Number(owner))) continue;
    const cluster = join(folder, name);
    const server = await serverPid(cluster);
    if (server !== null && alive(server)) continue;
    await rm(cluster, { recursive: true, force: true });
    await rm(`${cluster}.password`, { force: true });
    removed.push(cluster);
  }
  return removed;
}
