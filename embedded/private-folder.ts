import { lstat, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

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
