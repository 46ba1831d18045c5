/**
 * Bench: a run against a source doing every misbehaviour of issue 46 at once, full size.
 *
 *   npm run bench:hostile -- [--tickets 300] [--items 6000000] [--depth 6000] [--deadline-s 600]
 *                            [--max-log-mb 5] [--without redirect,threadStall] [--metrics-peer]
 *                            [--env SETTING=value]… [--keep]
 *
 * Starts an embedded PostgreSQL and a Temporal dev server, a companion behind a proxy that does all at once
 * (test/e2e/all-at-once-source.ts: a 12 MB page of six million numbers, an endless reference list, a thread
 * probe that stalls once, one 302 whose rate-limit reset is a year away, a 6,000-deep item, a drift field
 * named with terminal escapes, the key echoed in an item and in an error, a NUL cursor, `__proto__` as a
 * key), then runs the real CLI's `sync --once` against it with its log to a file, `status`, and a second
 * `sync --once` against the behaving companion. Printed: the figures (wall time, exit, log bytes and lines,
 * sampled peak RSS, what the source did) and each check with what it found; exit 1 when a check fails.
 * `--without` leaves misbehaviours out (to see what the others do); `--env` adds settings to both runs;
 * `--keep` keeps the runs' stdout and logs (their folder is printed). Last stdout line: one JSON object.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runAllAtOnce } from '../test/e2e/all-at-once.js';
import { MISBEHAVIOURS, type Misbehaviour } from '../test/e2e/all-at-once-source.js';
import { benchFlags, log, startServices } from './support/harness.js';

const values = benchFlags(
  'npm run bench:hostile -- [--tickets 300] [--items 6000000] [--depth 6000] [--deadline-s 600] [--max-log-mb 5] [--without a,b] [--metrics-peer] [--env SETTING=value]… [--keep]',
  {
    tickets: { type: 'string', default: '300' },
    items: { type: 'string', default: '6000000' },
    depth: { type: 'string', default: '6000' },
    'deadline-s': { type: 'string', default: '600' },
    'max-log-mb': { type: 'string', default: '5' },
    without: { type: 'string', default: '' },
    'metrics-peer': { type: 'boolean', default: false },
    env: { type: 'string', multiple: true, default: [] },
    keep: { type: 'boolean', default: false },
  },
);
const without = new Set(values.without.split(',').filter(Boolean) as Misbehaviour[]);
for (const m of without)
  if (!MISBEHAVIOURS.includes(m))
    throw new Error(`--without: unknown ${m} (one of ${MISBEHAVIOURS.join(', ')})`);
const env = Object.fromEntries(
  values.env.map((pair) => {
    const at = pair.indexOf('=');
    if (at < 1) throw new Error(`--env ${pair}: expected SETTING=value`);
    return [pair.slice(0, at), pair.slice(at + 1)];
  }),
);

const workDir = mkdtempSync(join(tmpdir(), 'bench-hostile-'));
const services = await startServices();
let result: Awaited<ReturnType<typeof runAllAtOnce>>;
try {
  result = await runAllAtOnce({
    tickets: Number(values.tickets),
    seed: Number(values.seed),
    scale: { oversizedItems: Number(values.items), depth: Number(values.depth) },
    temporalAddress: services.temporal.address,
    createDatabase: (label) => services.postgres.createDatabase(label),
    workDir,
    deadlineMs: Number(values['deadline-s']) * 1000,
    maxLogBytes: Number(values['max-log-mb']) * 1024 * 1024,
    env,
    metricsPeer: values['metrics-peer'],
    without,
    progress: log,
  });
} finally {
  await services.stop();
  if (!values.keep) rmSync(workDir, { recursive: true, force: true });
}
const { checks, figures } = result;
console.log(
  `bench:hostile — ${values.tickets} tickets, ${values.items} numbers on the oversized page, depth ${values.depth}` +
    (without.size ? `, without ${[...without].join(',')}` : '') +
    (values.keep ? ` (outputs kept in ${workDir})` : ''),
);
console.table(Object.entries(figures).map(([figure, value]) => ({ figure, value })));
console.table(checks.map((c) => ({ check: c.name, verdict: c.pass ? 'pass' : 'FAIL', found: c.detail })));
const failed = checks.filter((c) => !c.pass);
for (const c of failed) console.log(`FAIL ${c.name} — breaks on: ${c.failsOn}`);
console.log(JSON.stringify({ passed: failed.length === 0, figures, checks }));
process.exitCode = failed.length ? 1 : 0;
