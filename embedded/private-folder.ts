import { lstat, mkdtemp, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';

/**
 * Whether a folder under a shared temp directory can be trusted to hold programs the demo runs (as root
 * among them): another user could otherwise have made it first, or could write into it, and have their
 * binaries run. Trusted: a real directory (not a symlink), owned by this process's user, writable by
 * nobody else. Returns the problem, or null when trusted (or absent: it will be created).
 */
export async function untrustedFolderProblem(
  path: string,
  uid: number = process.getuid?.() ?? -1,
): Promise<string | null> {
  const info = await lstat(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return null;
    throw err;
  });
  if (info === null) return null;
  if (info.isSymbolicLink()) return `${path} is a symbolic link`;
  if (!info.isDirectory()) return `${path} is not a directory`;
  if (uid >= 0 && info.uid !== uid)
    return `${path} is owned by uid ${info.uid}, not by this user (uid ${uid})`;
  if ((info.mode & 0o022) !== 0)
    return `${path} is writable by its group or by others (mode ${(info.mode & 0o777).toString(8)})`;
  return null;
}

/** A new folder of this user's own (mode 0700 until the caller opens it up) under the temp directory. */
export function privateFolder(prefix: string): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

/** What rename(2) answers when something is already at the target (a non-empty folder, or not a folder). */
const TAKEN = new Set(['EEXIST', 'ENOTEMPTY', 'ENOTDIR', 'EISDIR']);

/**
 * Makes the folder `target` appear whole or not at all: `fill` writes a private folder beside it (same parent,
 * so the rename stays on one file system), which is then renamed into place. Nobody sees it half written, and
 * a fill that fails leaves nothing. When something is at `target` already (another process got there first),
 * it stays, ours is removed, and the answer is false: the caller checks what it found.
 */
export async function createFolderAtomically(
  target: string,
  fill: (folder: string) => Promise<void>,
): Promise<boolean> {
  const partial = await mkdtemp(join(dirname(target), `.${basename(target)}.partial-`));
  try {
    await fill(partial);
  } catch (err) {
    await rm(partial, { recursive: true, force: true });
    throw err;
  }
  try {
    await rename(partial, target);
    return true;
  } catch (err) {
    await rm(partial, { recursive: true, force: true });
    if (TAKEN.has((err as NodeJS.ErrnoException).code ?? '')) return false;
    throw err;
  }
}
