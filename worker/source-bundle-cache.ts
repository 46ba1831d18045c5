import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';

/**
 * The bundle of the workflows' source, kept between processes that run from source: webpack costs seconds
 * of CPU at every start of a worker or `sync --once` (a test suite starts over a hundred), yet the bundle
 * changes only when a file it can include does. The key is a hash of every source file of the project
 * (not only those the bundle includes: webpack alone knows those, and a key over more files is only
 * missed more often, never wrong), of the lock file (the SDK's own workflow code) and of the entry path;
 * an edit anywhere makes the next start bundle afresh. The cache lives in node_modules/.cache, beside
 * the dependencies the bundle also came from, and keeps the newest few bundles.
 */
const SOURCE_FOLDERS = [
  'activities',
  'cli',
  'companion',
  'connectors',
  'embedded',
  'forecast',
  'schemas',
  'streams',
  'worker',
  'workflows',
];
const KEY_FILES = ['package-lock.json', 'tsconfig.json'];
const KEPT = 6;

export interface SourceBundleCache {
  /** The cached bundle of these sources, or null (none yet, or unreadable: the caller bundles). */
  read(): Promise<string | null>;
  /** Keeps `code` as the bundle of these sources; a failure to keep it only costs the next start. */
  write(code: string): Promise<void>;
}

async function sourceFiles(root: string): Promise<string[]> {
  const files: string[] = [];
  for (const folder of SOURCE_FOLDERS) {
    const entries = await readdir(join(root, folder), { recursive: true, withFileTypes: true }).catch(
      () => [],
    );
    for (const e of entries) {
      if (e.isFile() && /\.(ts|js|json)$/.test(e.name)) files.push(join(e.parentPath, e.name));
    }
  }
  for (const file of KEY_FILES) files.push(join(root, file));
  return files.sort();
}

/** The key of the bundle of `entry` from the project at `root` as its files are now. */
export async function sourceBundleKey(root: string, entry: string): Promise<string> {
  const hash = createHash('sha256').update(relative(root, entry)).update('\0');
  for (const file of await sourceFiles(root)) {
    const content = await readFile(file).catch(() => null);
    hash.update(relative(root, file)).update('\0');
    if (content !== null) hash.update(content);
    hash.update('\0');
  }
  return hash.digest('hex').slice(0, 24);
}

export async function sourceBundleCache(root: string, entry: string): Promise<SourceBundleCache> {
  const folder = join(root, 'node_modules', '.cache', 'support-sync', 'workflow-bundles');
  const file = join(folder, `${await sourceBundleKey(root, entry)}.js`);
  return {
    read: () => readFile(file, 'utf8').catch(() => null),
    async write(code) {
      try {
        await mkdir(folder, { recursive: true });
        // Whole or absent: processes starting beside each other may read it while it is written.
        const partial = `${file}.${process.pid}.partial`;
        await writeFile(partial, code);
        await rename(partial, file);
        await prune(folder);
      } catch {
        // A read-only or full disk: every start bundles, as without the cache.
      }
    },
  };
}

/** Deletes all but the KEPT newest bundles (and partial files a killed process left). */
async function prune(folder: string): Promise<void> {
  const names = await readdir(folder);
  const dated = await Promise.all(
    names.map(async (name) => ({
      name,
      at: (await stat(join(folder, name)).catch(() => null))?.mtimeMs ?? 0,
    })),
  );
  const now = Date.now();
  const stale = dated
    .filter((d) => d.name.endsWith('.js'))
    .sort((a, b) => b.at - a.at)
    .slice(KEPT)
    .concat(dated.filter((d) => d.name.endsWith('.partial') && now - d.at > 10 * 60_000));
  await Promise.all(stale.map((d) => rm(join(folder, d.name), { force: true })));
}
