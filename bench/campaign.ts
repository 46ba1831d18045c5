/**
 * The campaign: the test suite's long scenarios at their full size.
 *
 *   npm run campaign -- [--files test/e2e/ticket-history-bigquery.test.ts,test/e2e/worker-kill.test.ts]
 *
 * `npm test` runs the scenarios that size themselves with test/support/campaign.ts (rounds of changes, worker
 * kills, warehouses) at the smallest size that still fails when their behaviour breaks; this runs the same
 * files, with the same assertions, at full size (`sized(ci, full)` gives `full`, `inCampaign()` is true).
 * Without `--files`:
 * every test file that imports test/support/campaign.ts. The files run one after the other in vitest's
 * integration project (one Temporal dev server and one PostgreSQL cluster, as in `npm test`). Printed per
 * file: tests passed and failed, and the seconds of its vitest run (the services' start included). Last
 * stdout line: one JSON object. Exit 1 when a test failed.
 */

import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CAMPAIGN_ENV } from '../test/support/campaign.js';

const USAGE = 'npm run campaign -- [--files a.test.ts,b.test.ts]';
if (process.argv.slice(2).includes('--help')) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
const { values } = parseArgs({ options: { files: { type: 'string', default: '' } } });
const log = (line: string) => process.stderr.write(`[campaign] ${line}\n`);

/** Test files that size a scenario by the campaign (they import test/support/campaign.ts). */
function campaignFiles(): string[] {
  return readdirSync('test', { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => join('test', f))
    .filter((f) => readFileSync(f, 'utf8').includes("from '../support/campaign.js'"))
    .sort();
}

const files = values.files === '' ? campaignFiles() : values.files.split(',').filter((f) => f !== '');
if (files.length === 0) throw new Error('no test file to run: none imports test/support/campaign.ts');

interface VitestJson {
  testResults: {
    name: string;
    assertionResults: { status: string; title: string; duration?: number | null }[];
  }[];
}

const out = mkdtempSync(join(tmpdir(), 'support-sync-campaign-'));
const results: { file: string; passed: number; failed: number; seconds: number }[] = [];
try {
  for (const file of files) {
    const report = join(out, 'report.json');
    log(`${file}: at campaign size`);
    const started = Date.now();
    const run = spawnSync(
      'npx',
      [
        'vitest',
        'run',
        '--project',
        'integration',
        '--reporter=verbose',
        '--reporter=json',
        `--outputFile.json=${report}`,
        file,
      ],
      { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, [CAMPAIGN_ENV]: '1' } },
    );
    const json = existsSync(report) ? (JSON.parse(readFileSync(report, 'utf8')) as VitestJson) : null;
    const entry = json?.testResults[0];
    const tests = entry?.assertionResults ?? [];
    const failedTests = tests.filter((t) => t.status === 'failed').length;
    const result = {
      file,
      passed: tests.filter((t) => t.status === 'passed').length,
      // A file that fails outside its tests (a hook, an import) counts as one failure.
      failed: run.status !== 0 && failedTests === 0 ? 1 : failedTests,
      seconds: Math.round((Date.now() - started) / 100) / 10,
    };
    results.push(result);
    rmSync(report, { force: true });
  }
} finally {
  rmSync(out, { recursive: true, force: true });
}

const width = Math.max(4, ...results.map((r) => r.file.length));
process.stdout.write(`\n${'file'.padEnd(width)}  passed  failed  seconds\n`);
for (const r of results)
  process.stdout.write(
    `${r.file.padEnd(width)}  ${String(r.passed).padStart(6)}  ${String(r.failed).padStart(6)}  ${r.seconds.toFixed(1).padStart(7)}\n`,
  );
const failed = results.reduce((a, r) => a + r.failed, 0);
process.stdout.write(`${JSON.stringify({ campaign: results, failed })}\n`);
process.exitCode = failed === 0 ? 0 : 1;
