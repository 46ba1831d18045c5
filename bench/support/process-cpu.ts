/**
 * CPU seconds spent by a process tree (the bench and everything it started: worker processes, the Temporal
 * dev server, PostgreSQL and its backends), read from /proc. Per live process, its own user and system time
 * plus that of its children it has reaped (a PostgreSQL backend that exited is in the postmaster's); a
 * process reaped between two readings moves into its parent's, so a difference of two readings is what the
 * tree spent between them. Linux only: elsewhere `available` is false and every reading is 0.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** USER_HZ: the unit of /proc/<pid>/stat's times, 100 on every Linux architecture Node runs on. */
const TICKS_PER_SECOND = 100;

interface ProcStat {
  pid: number;
  ppid: number;
  comm: string;
  ticks: number;
}

function readStat(pid: number): ProcStat | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name is in parentheses and may hold spaces: the fields start after its last ')'.
    const close = text.lastIndexOf(')');
    const fields = text.slice(close + 2).split(' ');
    const n = (i: number) => Number(fields[i]);
    // Fields 4 (ppid) and 14–17 (utime, stime, cutime, cstime) of proc(5), counted from the state at 3.
    const comm = text.slice(text.indexOf('(') + 1, close);
    return { pid, ppid: n(1), comm, ticks: n(11) + n(12) + n(13) + n(14) };
  } catch {
    return null;
  }
}

export const processCpuAvailable = (() => {
  try {
    readFileSync('/proc/self/stat');
    return true;
  } catch {
    return false;
  }
})();

/**
 * CPU seconds of the tree rooted at `root` (default: this process), as of now, by branch: `self` for the
 * root's own, and each direct child's subtree under its command name (two worker processes add up under
 * `node`, PostgreSQL and its backends under `postgres`, the dev server under `temporal`).
 */
export function treeCpuSeconds(root = process.pid): Record<string, number> {
  if (!processCpuAvailable) return {};
  const stats: ProcStat[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const s = readStat(Number(name));
    if (s) stats.push(s);
  }
  const children = new Map<number, ProcStat[]>();
  for (const s of stats) children.set(s.ppid, [...(children.get(s.ppid) ?? []), s]);
  const subtree = (top: ProcStat) => {
    let ticks = 0;
    const stack = [top];
    while (stack.length > 0) {
      const s = stack.pop() as ProcStat;
      ticks += s.ticks;
      stack.push(...(children.get(s.pid) ?? []));
    }
    return ticks;
  };
  const self = stats.find((s) => s.pid === root);
  const out: Record<string, number> = { self: (self?.ticks ?? 0) / TICKS_PER_SECOND };
  for (const child of children.get(root) ?? [])
    out[child.comm] = (out[child.comm] ?? 0) + subtree(child) / TICKS_PER_SECOND;
  return out;
}

/** What the tree spent since `before` (a reading of treeCpuSeconds), by branch, and in all. */
export function cpuSince(before: Record<string, number>, root = process.pid): Record<string, number> {
  const now = treeCpuSeconds(root);
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(now)) out[k] = Math.max(v - (before[k] ?? 0), 0);
  out['total'] = Object.values(out).reduce((a, b) => a + b, 0);
  return out;
}
