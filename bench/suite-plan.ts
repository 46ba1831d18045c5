/**
 * `npx tsx bench/suite-plan.ts [--results <file>] [--forks 3] [--assume <test file>=<seconds>,…]`: how long
 * `npm test` takes with the test suite's lanes (test/support/lanes.ts) and forks, from each file's duration
 * in an earlier run: vitest's own record of the last run (node_modules/.vite/vitest/…/results.json, written
 * by every `vitest run`) or a `--reporter=json` report. The files are scheduled as test/support/lane-pool.ts
 * schedules them (the BigQuery lane one at a time, first whenever it is free; the other integration files
 * the slowest first, then the unit files), each taking its recorded time.
 *
 * What it cannot know: files beside each other share the CPU, so a file takes longer than it did alone
 * when the run needs more than the machine's cores. `--cpu-seconds` (the CPU time of the run the durations
 * came from, e.g. `/usr/bin/time` around it) adds that bound: the wall cannot be less than the CPU over the
 * cores. Last stdout line: one JSON object.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { laneOfFile } from '../test/support/lanes.js';

const USAGE =
  'npx tsx bench/suite-plan.ts [--results node_modules/.vite/vitest/<hash>/results.json | report.json] [--forks 3] [--assume file=seconds,…] [--cpu-seconds N]';
if (process.argv.includes('--help')) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
const { values } = parseArgs({
  options: {
    results: { type: 'string' },
    forks: { type: 'string', default: '3' },
    assume: { type: 'string', default: '' },
    'cpu-seconds': { type: 'string' },
  },
});

/** The results file vitest keeps of the last run, when none is named. */
function lastRunResults(): string {
  const root = join('node_modules', '.vite', 'vitest');
  const found = existsSync(root)
    ? readdirSync(root)
        .map((d) => join(root, d, 'results.json'))
        .filter((f) => existsSync(f))
    : [];
  if (found.length === 0) throw new Error(`no ${root}/*/results.json: run vitest once, or pass --results`);
  return found[0]!;
}

interface FileTime {
  file: string;
  project: string;
  seconds: number;
}

/** Each file's seconds, from vitest's results cache or a JSON report. */
function readDurations(path: string): FileTime[] {
  const data = JSON.parse(readFileSync(path, 'utf8')) as
    | { results: [string, { duration?: number }][] }
    | { testResults: { name: string; startTime: number; endTime: number }[] };
  if ('results' in data)
    return data.results.map(([key, r]) => {
      const [project, file] = [key.slice(0, key.indexOf(':')), key.slice(key.indexOf(':') + 1)];
      return { file, project, seconds: (r.duration ?? 0) / 1000 };
    });
  return data.testResults.map((r) => {
    const file = r.name.slice(r.name.indexOf('/test/') + 1);
    const project = /^test\/(foundation|destinations|e2e)\//.test(file) ? 'integration' : 'unit';
    return { file, project, seconds: (r.endTime - r.startTime) / 1000 };
  });
}

const resultsPath = values.results ?? lastRunResults();
const forks = Number(values.forks);
if (!Number.isInteger(forks) || forks < 1) throw new Error(`--forks ${values.forks}: a whole number ≥ 1`);
const times = new Map(readDurations(resultsPath).map((t) => [t.file, t]));
for (const pair of values.assume.split(',').filter((p) => p !== '')) {
  const [file, seconds] = pair.split('=');
  if (!file || !Number.isFinite(Number(seconds))) throw new Error(`--assume ${pair}: expected file=seconds`);
  const project = /^test\/(foundation|destinations|e2e)\//.test(file) ? 'integration' : 'unit';
  times.set(file, { file, project, seconds: Number(seconds) });
}
const present = [...times.values()].filter((t) => existsSync(t.file));
const slowestFirst = (a: FileTime, b: FileTime) => b.seconds - a.seconds;
const laned = present.filter((t) => laneOfFile(t.file) !== null).sort(slowestFirst);
const free = present.filter((t) => laneOfFile(t.file) === null).sort(slowestFirst);
const others = [...free.filter((t) => t.project !== 'unit'), ...free.filter((t) => t.project === 'unit')];

/** The wall of running `laned` one at a time and `others` beside them in `slots` (lane-pool.ts's rule). */
function schedule(slots: number): number {
  const lane = [...laned];
  const rest = [...others];
  let now = 0;
  let running: { end: number; inLane: boolean }[] = [];
  for (;;) {
    while (running.length < slots) {
      const inLane = !running.some((r) => r.inLane) && lane.length > 0;
      const next = inLane ? lane.shift() : rest.shift();
      if (!next) break;
      running.push({ end: now + next.seconds, inLane });
    }
    if (running.length === 0) return now;
    now = Math.min(...running.map((r) => r.end));
    running = running.filter((r) => r.end > now);
  }
}

const sum = (ts: FileTime[]) => ts.reduce((a, t) => a + t.seconds, 0);
const wall = schedule(forks);
const cpuSeconds = values['cpu-seconds'] === undefined ? undefined : Number(values['cpu-seconds']);
const cores = availableParallelism();
const cpuBound = cpuSeconds === undefined ? undefined : cpuSeconds / cores;
const missing = [...new Set(readdirSync('test', { recursive: true, encoding: 'utf8' }))]
  .map((f) => join('test', f))
  .filter((f) => f.endsWith('.test.ts') && !times.has(f));
const line = (label: string, s: number) => `${label.padEnd(44)} ${s.toFixed(0).padStart(6)} s\n`;
process.stdout.write(`durations from ${resultsPath}\n`);
process.stdout.write(line(`BigQuery lane (${laned.length} files, one at a time)`, sum(laned)));
process.stdout.write(line(`other files (${others.length})`, sum(others)));
process.stdout.write(line(`scheduled wall with ${forks} forks`, wall));
if (cpuBound !== undefined) process.stdout.write(line(`CPU over ${cores} cores`, cpuBound));
if (missing.length > 0) process.stdout.write(`no duration for (counted 0 s): ${missing.join(', ')}\n`);
process.stdout.write(
  `${JSON.stringify({
    forks,
    laneSeconds: Math.round(sum(laned)),
    otherSeconds: Math.round(sum(others)),
    scheduledWallSeconds: Math.round(wall),
    ...(cpuBound === undefined ? {} : { cpuBoundSeconds: Math.round(cpuBound) }),
    estimateSeconds: Math.round(Math.max(wall, cpuBound ?? 0)),
    missing,
  })}\n`,
);
