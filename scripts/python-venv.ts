/**
 * A pinned Python tool in a virtualenv of its own under the machine's cache (~/.cache/support-sync, or
 * SUPPORT_SYNC_CACHE): found or made once per machine, its packages from PyPI. The BigQuery emulator
 * (scripts/bigquery-emulator.ts) and dbt (scripts/dbt.ts) are provisioned this way.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { childEnvironment } from '../embedded/child-env.js';
import type { StepStarter } from '../embedded/step-progress.js';

const execFileAsync = promisify(execFile);

export interface VenvTool {
  /** The tool's name in log lines (`dbt`, `bqemulator`). */
  readonly name: string;
  /** The cache folder, named by the pinned versions: another pin is another folder. */
  readonly folder: string;
  /** The Python versions the packages support, inclusive, as `[major, minor]`. */
  readonly python: { readonly min: [number, number]; readonly max?: [number, number] };
  /** The interpreters tried, in order. */
  readonly candidates: readonly string[];
  /** What pip installs (pinned requirements). */
  readonly packages: readonly string[];
  /** The virtualenv's executable whose presence, with the ready mark, means provisioned (`bin/dbt`). */
  readonly executable: string;
  /** Written into the cache folder after the install, before the ready mark (a launcher script). */
  readonly afterInstall?: (folder: string) => Promise<void>;
}

export function venvCacheDir(folder: string): string {
  return join(process.env['SUPPORT_SYNC_CACHE'] ?? join(homedir(), '.cache', 'support-sync'), folder);
}

async function findPython(tool: VenvTool): Promise<string> {
  const [minMajor, minMinor] = tool.python.min;
  const max = tool.python.max;
  const check = `import sys; print(int((${minMajor}, ${minMinor}) <= sys.version_info[:2]${max ? ` <= (${max[0]}, ${max[1]})` : ''}))`;
  for (const candidate of tool.candidates) {
    try {
      const { stdout } = await execFileAsync(candidate, ['-c', check], { env: childEnvironment() });
      if (stdout.trim() === '1') return candidate;
    } catch {
      // not installed
    }
  }
  const range = `${minMajor}.${minMinor}${max ? `–${max[0]}.${max[1]}` : '+'}`;
  throw new Error(`${tool.name} needs Python ${range} on PATH (tried ${tool.candidates.join(', ')})`);
}

/** Distributions installed in a virtualenv (its *.dist-info folders). */
async function countInstalled(venv: string): Promise<number> {
  const lib = join(venv, 'lib');
  let n = 0;
  for (const python of await readdir(lib).catch(() => [] as string[]))
    n += (await readdir(join(lib, python, 'site-packages')).catch(() => [] as string[])).filter((f) =>
      f.endsWith('.dist-info'),
    ).length;
  return n;
}

/** Provisions the tool if needed (idempotent); returns the path of its `executable`. */
export async function provisionVenv(
  tool: VenvTool,
  log: (line: string) => void = () => undefined,
  step?: StepStarter,
): Promise<string> {
  const dir = venvCacheDir(tool.folder);
  const venv = join(dir, 'venv');
  const executable = join(venv, tool.executable);
  const ready = join(dir, '.ready');
  if (existsSync(ready) && existsSync(executable)) return executable;
  const started = Date.now();
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const system = await findPython(tool);
  log(`${tool.name}: creating a virtualenv with ${system} in ${dir}`);
  await execFileAsync(system, ['-m', 'venv', venv], { env: childEnvironment() });
  const installing = step?.(`installing ${tool.packages.join(' ')} from PyPI into ${dir} (first time)`);
  const progress = setInterval(() => {
    // How far along: the packages pip has put into the virtualenv so far.
    void countInstalled(venv).then((n) => installing?.update(`${n} packages installed`));
  }, 2000);
  progress.unref();
  try {
    await execFileAsync(
      join(venv, 'bin', 'python'),
      ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', ...tool.packages],
      // pip's own settings (PIP_INDEX_URL, proxies) and the program basics, not the sync's keys.
      { maxBuffer: 64 * 1024 * 1024, env: childEnvironment() },
    );
  } catch (err) {
    installing?.fail((err as Error).message.split('\n')[0]!);
    throw err;
  } finally {
    clearInterval(progress);
  }
  installing?.end();
  await tool.afterInstall?.(dir);
  await writeFile(ready, `${new Date().toISOString()}\n`);
  log(`${tool.name}: provisioned in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  return executable;
}
