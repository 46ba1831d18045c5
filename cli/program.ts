/**
 * support-sync command line. Every command has --help. Exit codes: 0 success, 1 the run failed (the
 * failing stream/window and API code are printed) or its preflight did (the source refused the key or a
 * selected stream: nothing was started), 2 bad configuration or usage (nothing was started),
 * 3 the run completed but the warehouse misses data (`incomplete`, worker/run-sync.ts exitCodeOf).
 */
import { Command, Option } from 'commander';
import { AUDIT_TABLE_NAMES } from '../schemas/audit.js';
import { ALL_STREAMS, ExportPass } from '../schemas/streams.js';
import {
  parseAuditSample,
  parseAuditTable,
  parseInstant,
  parseMetricsAddress,
  parseStreams,
} from './arguments.js';
import { auditCommand } from './commands/audit.js';
import { exitWith } from './commands/exit.js';
import { planCommand } from './commands/plan.js';
import { preflightCommand } from './commands/preflight.js';
import { replayCommand } from './commands/replay.js';
import { scheduleCommand } from './commands/schedule.js';
import { setupCommand } from './commands/setup.js';
import { startCommand } from './commands/start.js';
import { statusCommand } from './commands/status.js';
import { backfillCommand, syncCommand } from './commands/sync.js';
import { workerCommand } from './commands/worker.js';

const program = new Command()
  .name('support-sync')
  .description('Sync a Support API v1 workspace into PostgreSQL or BigQuery, orchestrated by Temporal.')
  .showHelpAfterError()
  .exitOverride((err) => {
    // Usage errors exit 2 like configuration errors; --help and --version exit 0.
    process.exit(err.exitCode === 0 ? 0 : 2);
  });

const configOption = new Option('--config <file>', 'YAML/JSON file of settings (environment variables win)');
const streamsOption = new Option(
  '--streams <list>',
  `comma-separated streams (default: SYNC_STREAMS, else all: ${ALL_STREAMS.join(',')})`,
).argParser(parseStreams);
const workspaceOption = new Option(
  '--workspace <id>',
  'the workspace of SYNC_WORKSPACES_FILE to act on (default: SYNC_WORKSPACE, else `default`, the settings themselves)',
);
const metricsPortOption = new Option(
  '--metrics-port <[host:]port>',
  "serve Prometheus metrics (the sync's and the Temporal SDK's) at /metrics, and probes at /healthz (up) and /readyz (polling Temporal), while this process runs a worker; on METRICS_HOST (default 127.0.0.1) unless a host is given; 0: a free port, printed",
).argParser(parseMetricsAddress);

program
  .command('start')
  .description(
    'The main job: sync the streams (SYNC_STREAMS, default all) once, using embedded defaults for whatever is not configured ' +
      '(seeded companion as source, Temporal dev server with UI, PostgreSQL in .data/), then keep the UI up until Ctrl-C',
  )
  .option('--once', 'exit after the sync instead of keeping the UI up')
  .option('--seed <n>', 'seed of the embedded companion world', (v) => Number.parseInt(v, 10), 7)
  .option('--tickets <n>', 'tickets in the embedded companion world', (v) => Number.parseInt(v, 10), 300)
  .option(
    '--rate-limit-window <seconds>',
    "length of the embedded companion's rate-limit window (the real API: 60; shorter makes the demo quicker)",
    (v) => Number.parseFloat(v),
    10,
  )
  .addOption(configOption)
  .addOption(streamsOption)
  .addOption(metricsPortOption)
  .action(async (opts) => exitWith(await startCommand(opts)));

program
  .command('sync')
  .description(
    'Run one complete sync against SUPPORT_API_URL / DESTINATION_URL; prints a JSON summary as the last stdout line',
  )
  .requiredOption('--once', 'run one sync and exit (recurring syncs: `schedule create`)')
  .option(
    '--full-refresh',
    're-read every ticket and thread and mark tickets gone from the source as deleted',
  )
  .option('--no-local-worker', 'do not run a worker in this process (a worker fleet serves the task queue)')
  .addOption(configOption)
  .addOption(streamsOption)
  .addOption(metricsPortOption)
  .addOption(workspaceOption)
  .action(async (opts) => exitWith(await syncCommand(opts)));

program
  .command('backfill')
  .description(
    'Re-read a historical range [from, to) of the export streams (and tickets created in it) without moving high-water marks',
  )
  .requiredOption('--from <date>', 'inclusive start (YYYY-MM-DD or ISO instant)', parseInstant)
  .requiredOption('--to <date>', 'exclusive end (YYYY-MM-DD or ISO instant)', parseInstant)
  .option('--force', 'also re-read the windows an earlier backfill of the range completed')
  .option('--no-local-worker', 'do not run a worker in this process')
  .addOption(configOption)
  .addOption(streamsOption)
  .addOption(metricsPortOption)
  .addOption(workspaceOption)
  .action(async (opts) => exitWith(await backfillCommand(opts)));

program
  .command('plan')
  .description(
    "Dry run: sweep the ticket list once (list budget only) and forecast what the next sync --once (--full-refresh, or a backfill) requests per route class, its windows and its wall time at the key's limits; writes nothing to the warehouse",
  )
  .option('--full-refresh', 'forecast a full refresh instead of the next incremental run')
  .option('--backfill', 'forecast a backfill of [--from, --to)')
  .option('--from <date>', 'backfill: inclusive start (YYYY-MM-DD or ISO instant)', parseInstant)
  .option('--to <date>', 'backfill: exclusive end (YYYY-MM-DD or ISO instant)', parseInstant)
  .option('--force', 'backfill: also the windows an earlier backfill of the range completed')
  .option('--json', 'print the forecast as one JSON object')
  .option('--no-save', 'do not keep the forecast for the next run to compare with')
  .addOption(configOption)
  .addOption(streamsOption)
  .addOption(workspaceOption)
  .action(async (opts) => exitWith(await planCommand(opts)));

program
  .command('replay')
  .description(
    'Re-run one window workflow (its id, <pass>/<from>/<before>, as the failure names it) with its original input',
  )
  .argument('[workflow-id]', 'the window workflow id, as shown in the Temporal UI or `status --failed`')
  .option('--stream <pass>', `the export pass (${ExportPass.options.join(', ')})`)
  .option('--window <from/before>', 'the window, FROM/BEFORE (ISO instants), with --stream')
  .option('--wait', 'print progress and wait for the result (always with a local worker)')
  .option('--no-local-worker', 'do not run a worker in this process')
  .addOption(configOption)
  .addOption(workspaceOption)
  .action(async (workflowId, opts) => exitWith(await replayCommand(workflowId, opts)));

program
  .command('worker')
  .description(
    'Run a worker for the configured Temporal cluster until SIGINT/SIGTERM (it stops polling, running activities finish their page within 30 s, then it exits 0)',
  )
  .addOption(configOption)
  .addOption(metricsPortOption)
  .action(async (opts) => exitWith(await workerCommand(opts)));

program
  .command('setup')
  .description(
    'Register what the sync needs on a Temporal cluster it did not start (the search attributes); idempotent',
  )
  .addOption(configOption)
  .action(async (opts) => exitWith(await setupCommand(opts)));

program
  .command('preflight')
  .description(
    'Probe each selected stream with one request and the destination with a read: what a run would find, without starting one (exit 0 when it can start, 1 when not)',
  )
  .option('--json', 'print JSON instead of lines')
  .addOption(configOption)
  .addOption(streamsOption)
  .addOption(workspaceOption)
  .action(async (opts) => exitWith(await preflightCommand(opts)));

program
  .command('status')
  .description('Last runs, windows, checkpoints and lag per stream, read from the destination')
  .option('--json', 'print JSON instead of tables')
  .option(
    '--failed',
    'only the failed windows not covered since, with code, request id, UI link and replay command (exit 1 if any)',
  )
  .option('--runs <n>', 'how many runs to show', (v) => Number.parseInt(v, 10), 10)
  .addOption(configOption)
  .addOption(workspaceOption)
  .action(async (opts) => exitWith(await statusCommand(opts)));

program
  .command('audit')
  .description(
    'Re-read a random sample of stored rows from the live API, compare every stored field, heal what differs (exit 3 when rows differed, 0 when none did)',
  )
  .requiredOption('--sample <n>', 'rows per table to compare (at most 1000)', parseAuditSample)
  .option('--table <table>', `only this table (${AUDIT_TABLE_NAMES.join(', ')})`, parseAuditTable)
  .option('--json', 'print the summary as JSON (last stdout line)')
  .option('--no-local-worker', 'do not run a worker in this process (a worker fleet serves the task queue)')
  .addOption(configOption)
  .action(async (opts) => exitWith(await auditCommand(opts)));

program
  .command('schedule')
  .description(
    "This deployment's Temporal schedules of recurring syncs: create or update them in place (the same: missing ones created, changed ones updated, pauses and history kept), list or delete them",
  )
  .argument('<action>', 'create | update | list | delete')
  .option('--every <duration>', 'incremental sync interval (ISO 8601, e.g. PT1H)', 'PT1H')
  .option('--full-refresh-cron <cron>', 'full refresh schedule (cron, in --timezone)', '0 3 * * *')
  .option('--timezone <iana>', 'time zone of the cron', 'UTC')
  .addOption(configOption)
  .addOption(streamsOption)
  .addOption(
    new Option(
      '--workspace <id>',
      "only this workspace's schedules (default: SYNC_WORKSPACE, else every workspace: the deployment's own and those of SYNC_WORKSPACES_FILE, whose entries may set their own `schedule`)",
    ),
  )
  .action(async (action, opts) => exitWith(await scheduleCommand(action, opts)));

await program.parseAsync(process.argv);
