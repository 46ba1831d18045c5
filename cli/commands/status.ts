import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseBigQueryUrl } from '../../connectors/bigquery/url.js';
import type { Destination } from '../../connectors/destination.js';
import { openRejectedItems } from '../../connectors/queries/rejected.js';
import { terminalJson, terminalLines } from '../../connectors/support-api/index.js';
import { DATA_DIR } from '../../embedded/data-dir.js';
import type { EmbeddedPostgres } from '../../embedded/postgres.js';
import { embeddedWarehouse } from '../../embedded/warehouse.js';
import { type AuditTableResult, tableResult } from '../../schemas/audit.js';
import type { Config } from '../../schemas/config.js';
import { decodeStateKey, decodeThreadFailure, encodeStateKey } from '../../schemas/state-key.js';
import {
  type Checkpoint,
  type Freshness,
  type ReconciliationRecord,
  SYSTEM_TABLE_NAMES,
} from '../../schemas/warehouse.js';
import { DEFAULT_WORKSPACE } from '../../schemas/workspaces.js';
import { destinationFromConfig } from '../../worker/compose.js';
import { isConfigured } from '../../worker/config.js';
import { streamFreshness } from '../../worker/freshness.js';
import { createLogger } from '../../worker/logger.js';
import { auditTableLines } from '../display/audit.js';
import { columnPolicyChecks, columnPolicyLines } from '../display/column-policy.js';
import { failedWindowLines, uncoveredFailures } from '../display/failed-windows.js';
import { durationText, freshnessLines } from '../display/freshness.js';
import { RECENT_SCHEMA_CHANGES, schemaChangeLines } from '../display/schema-changes.js';
import { reportFailure, withConfig } from './context.js';

const pad = (s: unknown, n: number) => String(s ?? '').padEnd(n);

/**
 * The staleness bounds of tickets and threads: how old the oldest unverified state in the warehouse can be
 * (a ticket's state is verified when a list page served it, a thread when a read of it completed), and
 * where the sweep of the ticket list is.
 */
export function describeFreshness(f: Freshness, sweep: Checkpoint | null, now: number) {
  const age = (at: string | null) => (at ? lag(at, now) : 'never');
  const sweepText = !sweep
    ? 'not begun'
    : sweep.status === 'complete'
      ? `complete (${sweep.pages} pages, begun ${sweep.high_water_mark}); the next run begins a new one`
      : `under way: page ${sweep.pages} (begun ${sweep.high_water_mark}, ${age(sweep.high_water_mark)} ago)`;
  const lines = [
    `Ticket sweep: ${sweepText}`,
    f.tickets.oldestVerifiedAt
      ? `Tickets: ${f.tickets.live} live; every ticket's state verified within the last ${age(f.tickets.oldestVerifiedAt)} (oldest verification ${f.tickets.oldestVerifiedAt})`
      : `Tickets: ${f.tickets.live} live; none verified yet`,
    f.threads.oldestVerifiedAt
      ? `Threads: every thread read within the last ${age(f.threads.oldestVerifiedAt)} (oldest read ${f.threads.oldestVerifiedAt})${f.threads.unread > 0 ? `, except ${f.threads.unread} never read completely (queued or failed)` : ''}`
      : `Threads: ${f.threads.unread} of ${f.threads.live} not read yet`,
  ];
  return {
    lines,
    json: {
      sweep: sweep ? { status: sweep.status, pages: sweep.pages, begun_at: sweep.high_water_mark } : null,
      tickets: { live: f.tickets.live, oldest_verified_at: f.tickets.oldestVerifiedAt },
      threads: {
        live: f.threads.live,
        unread: f.threads.unread,
        oldest_verified_at: f.threads.oldestVerifiedAt,
      },
    },
  };
}

/** Lag of a high-water mark behind now, human-readable. */
function lag(mark: string | null, now: number): string {
  if (!mark) return 'never synced';
  const minutes = Math.round((now - Date.parse(mark)) / 60_000);
  if (minutes < 120) return `${minutes} min`;
  const hours = Math.round(minutes / 60);
  return hours < 72 ? `${hours} h` : `${Math.round(hours / 24)} d`;
}

/**
 * The latest reconciliation: counts, the tie-out per metric (how many periods agree, move, are explained or
 * differ), then every mismatch with its context (a warning, spec 2.11 rule 3).
 */
function reconciliationLines(rows: ReconciliationRecord[]): string[] {
  if (rows.length === 0) return ['Reconciliation: none yet (runs that sync tickets end with one)'];
  const count = (status: string, of = rows) => of.filter((r) => r.status === status).length;
  const mismatches = rows.filter((r) => r.status === 'mismatch');
  const lines = [
    `Reconciliation (run ${rows[0]!.run_id}, ${rows[0]!.checked_at}): ${count('equal')} equal, ${mismatches.length} mismatch${mismatches.length === 1 ? '' : 'es'}, ${count('skipped')} skipped, ${count('moving')} moving, ${count('explained')} explained`,
  ];
  const metrics = [...new Set(rows.map((r) => r.metric))].filter((m) => !m.startsWith('view_count:'));
  for (const metric of metrics) {
    const of = rows.filter((r) => r.metric === metric);
    const parts = (['equal', 'moving', 'explained', 'mismatch', 'skipped'] as const)
      .map((s) => [s, count(s, of)] as const)
      .filter(([, n]) => n > 0)
      .map(([s, n]) => `${n} ${s}`);
    lines.push(
      `  tie-out ${pad(metric, 32)}${pad(`${of.length} period${of.length === 1 ? '' : 's'}`, 12)}${parts.join(', ')}`,
    );
  }
  for (const r of mismatches)
    lines.push(
      `  MISMATCH ${pad(r.metric, 34)}${pad(r.period, 12)}source ${pad(r.source_value, 8)}warehouse ${r.warehouse_value}`,
    );
  if (mismatches.length) lines.push(`  (warning, not an error: ${mismatches[0]!.note})`);
  return lines;
}

/**
 * `status`: what the destination knows — the last runs and windows (from _sync_runs), the high-water mark
 * and lag of every stream, windows still running or failed, the size of the thread queue, items set aside
 * and the recent schema changes.
 */
export async function statusCommand(opts: {
  config?: string;
  json?: boolean;
  failed?: boolean;
  runs: number;
  /** `--workspace`: the workspace of SYNC_WORKSPACES_FILE whose warehouse is read. */
  workspace?: string;
}): Promise<number> {
  // Status reads only the warehouse: the source settings may be absent. Without DESTINATION_URL it reads the
  // main job's embedded warehouse in .data/postgres, if there is one.
  const overrides: Record<string, string> = {};
  const given = (name: string) => isConfigured(name, opts.config);
  if (!given('SUPPORT_API_URL')) overrides['SUPPORT_API_URL'] = 'https://source.not-needed.invalid';
  if (!given('SUPPORT_API_KEY')) overrides['SUPPORT_API_KEY'] = 'not-needed';
  // It checks the column policy's columns, never hashes: a role without the hash key can ask too.
  if (!given('SYNC_HASH_KEY')) overrides['SYNC_HASH_KEY'] = 'not-needed-by-status'.padEnd(32, '.');
  let embedded: EmbeddedPostgres | undefined;
  // The running demo's --config file names its warehouse: never a second server on the same data directory.
  if (!given('DESTINATION_URL') && existsSync(join(DATA_DIR, 'postgres', 'PG_VERSION'))) {
    embedded = await embeddedWarehouse(createLogger('warn'));
    overrides['DESTINATION_URL'] = embedded.url;
  }
  try {
    return await statusOf(opts, overrides);
  } finally {
    await embedded?.stop();
  }
}

function statusOf(
  opts: { config?: string; json?: boolean; failed?: boolean; runs: number; workspace?: string },
  overrides: Record<string, string>,
): Promise<number> {
  return withConfig(
    opts,
    async (config, _logger, secrets) => {
      const destination = await destinationFromConfig(config);
      try {
        // Read-only: no prepare() (DDL), so a BI or on-call role with SELECT alone can ask. A warehouse the
        // sync never wrote says so instead of failing on a missing table.
        if (!(await destination.bookkeeping.hasLedger())) {
          process.stderr.write(
            'status: the warehouse has no support-sync tables yet (run a sync first: npm run sync -- --once)\n',
          );
          return opts.failed ? 0 : 1;
        }
        const workspace = workspaceLines(config);
        if (opts.failed) {
          const failures = uncoveredFailures(await destination.bookkeeping.listRuns(10_000), config);
          process.stdout.write(
            opts.json
              ? `${terminalJson({ workspace: config.SYNC_WORKSPACE, failed_windows: failures }, secrets)}\n`
              : `${terminalLines([...workspace, ...failedWindowLines(failures)], secrets)}\n`,
          );
          return failures.length > 0 ? 1 : 0;
        }
        const runs = await destination.bookkeeping.listRuns(opts.runs * 20);
        const checkpoints = [
          ...(await destination.listCheckpoints()),
          ...(await destination.listCheckpoints({ threadQueue: true })),
        ];
        const now = Date.now();
        const kindOf = (c: Checkpoint) => decodeStateKey(c)?.kind ?? null;
        const marks = checkpoints.filter((c) => kindOf(c) === 'high_water_mark');
        const rereads = pendingRereads(checkpoints);
        const open = checkpoints.filter(
          (c) =>
            c.status !== 'complete' && !['high_water_mark', 'thread', 'reread'].includes(kindOf(c) ?? ''),
        );
        const queuedThreads = checkpoints.filter(
          (c) => kindOf(c) === 'thread' && c.status === 'running',
        ).length;
        const sweep = checkpoints.find((c) => kindOf(c) === 'sweep') ?? null;
        const freshness = describeFreshness(await destination.bookkeeping.freshness(), sweep, now);
        const sloMs = config.SYNC_FRESHNESS_SLO;
        const streams = await streamFreshness(destination, sloMs, now);
        // The failures recorded of the threads whose queue entry is still failed (the next run queues them).
        const failedEntries = new Set(
          checkpoints.filter((c) => kindOf(c) === 'thread' && c.status === 'failed').map((c) => c.scope),
        );
        const stillFailed = runs.filter((r) => {
          const thread = r.status === 'failed' ? decodeThreadFailure(r) : null;
          return thread !== null && failedEntries.has(encodeStateKey(thread).scope);
        });
        const reconciliation = await destination.bookkeeping.listReconciliation();
        const rejected = await rejectedItems(destination);
        const columnPolicy = await columnPolicyChecks(destination, config.SYNC_COLUMN_POLICY ?? []);
        const schemaChanges = await recentSchemaChanges(destination);
        const audit = await auditOfLastDays(destination, now);
        const parents = runs.filter((r) => r.parent_run_id === null).slice(0, opts.runs);
        const windows = runs.filter((r) => r.parent_run_id !== null).slice(0, opts.runs * 3);
        if (opts.json) {
          process.stdout.write(
            `${terminalJson({ workspace: config.SYNC_WORKSPACE, runs: parents, windows, high_water_marks: marks.map((m) => ({ stream: m.stream, high_water_mark: m.high_water_mark, lag: lag(m.high_water_mark, now) })), open_scopes: open, queued_threads: queuedThreads, export_rereads: rereads.length, reconciliation, audit, freshness: freshness.json, stream_freshness: { target: durationText(sloMs), target_seconds: sloMs / 1000, streams }, rejected, column_policy: columnPolicy, schema_changes: schemaChanges, failed_threads: stillFailed }, secrets)}\n`,
          );
          return 0;
        }
        const out: string[] = [...workspace];
        out.push('Runs (newest first):');
        for (const r of parents)
          out.push(
            `  ${pad(r.run_id, 44)}${pad(r.mode, 14)}${pad(r.status, 10)}${pad(r.started_at, 30)}rows ${r.rows_written}${r.error ? `  error: ${r.error}` : ''}`,
          );
        out.push('', 'Recent windows:');
        for (const w of windows)
          out.push(
            `  ${pad(w.workflow_id, 78)}${pad(w.status, 10)}rows ${w.rows_written}${w.error ? `  ${w.error}` : ''}`,
          );
        out.push('', 'High-water marks and lag:');
        for (const m of marks)
          out.push(`  ${pad(m.stream, 26)}${pad(m.high_water_mark, 28)}lag ${lag(m.high_water_mark, now)}`);
        out.push('', `Scopes not complete (resume from their page checkpoint): ${open.length}`);
        for (const c of open.slice(0, 20))
          out.push(`  ${pad(c.stream, 26)}${pad(c.scope, 60)}${pad(c.status, 9)}pages ${c.pages}`);
        out.push(`Threads queued for the next run: ${queuedThreads}`);
        out.push(`Export windows queued for a re-read (the audit found a row differing): ${rereads.length}`);
        out.push('', 'How current the warehouse is:', ...freshness.lines.map((l) => `  ${l}`));
        out.push('', ...freshnessLines(streams, sloMs));
        if (stillFailed.length > 0) {
          out.push('', `Threads that failed (queued again by the next run): ${stillFailed.length}`);
          for (const r of stillFailed.slice(0, 20)) out.push(`  ${r.finished_at}  ${r.error}`);
        }
        out.push('', ...rejectedLines(rejected));
        out.push('', ...columnPolicyLines(columnPolicy));
        out.push('', ...schemaChangeLines(schemaChanges));
        out.push('', ...reconciliationLines(reconciliation));
        out.push('', ...auditLines(audit));
        // What the source said (field names, reasons, ids) is shown escaped, never acting on the terminal.
        process.stdout.write(`${terminalLines(out, secrets)}\n`);
        return 0;
      } catch (err) {
        const missing = missingSystemTable(err);
        if (missing === null) return reportFailure(err);
        process.stderr.write(
          `status: the warehouse has no ${missing} table yet: an older support-sync prepared it, and status runs no DDL. The next sync migrates it (npm run sync -- --once); status reads it then.\n`,
        );
        return 1;
      } finally {
        await destination.close();
      }
    },
    overrides,
    // It reads the warehouse only: a workspace whose key this machine lacks can be asked about.
    { sourceKeyNeeded: false },
  );
}

/**
 * The line naming the workspace whose warehouse `status` read, first: in a deployment of several workspaces
 * (SYNC_WORKSPACES_FILE, or another than `default`), never in one of a single workspace.
 */
export function workspaceLines(
  config: Pick<
    Config,
    | 'SYNC_WORKSPACE'
    | 'SYNC_WORKSPACES_FILE'
    | 'POSTGRES_SCHEMA'
    | 'DESTINATION_URL'
    | 'SYNC_WAREHOUSE_LAYOUT'
  >,
): string[] {
  if (config.SYNC_WORKSPACE === DEFAULT_WORKSPACE && config.SYNC_WORKSPACES_FILE === undefined) return [];
  const url = config.DESTINATION_URL.reveal();
  const where = `${
    url.startsWith('bigquery://')
      ? `dataset ${parseBigQueryUrl(url).datasetId}`
      : `schema ${config.POSTGRES_SCHEMA}`
  }${config.SYNC_WAREHOUSE_LAYOUT === 'shared-tables' ? ', shared tables' : ''}`;
  return [
    `Workspace: ${config.SYNC_WORKSPACE} (${where}${config.SYNC_WORKSPACE === DEFAULT_WORKSPACE ? "; the deployment's own settings" : ''})`,
    '',
  ];
}

/** The bookkeeping table an error says is missing (a warehouse this version has not prepared yet), or null. */
function missingSystemTable(err: unknown): string | null {
  const message = String((err as Error)?.message ?? err);
  if (!/does not exist|not found/i.test(message)) return null;
  return SYSTEM_TABLE_NAMES.find((name) => new RegExp(`\\b${name}\\b`).test(message)) ?? null;
}

/** The schema changes first seen most recently; null on a warehouse without `_schema_changes` (older sync). */
async function recentSchemaChanges(destination: Destination) {
  try {
    return await destination.bookkeeping.listSchemaChanges({ limit: RECENT_SCHEMA_CHANGES });
  } catch (err) {
    // status runs no DDL: a warehouse an older version prepared has no such table until the next sync.
    if (missingSystemTable(err) === '_schema_changes') return null;
    throw err;
  }
}

/**
 * Export windows the audit queued for a re-read that no run has read since: the entry's window has not
 * completed after it was queued (the rule the planner applies, activities/bookkeeping.ts).
 */
function pendingRereads(checkpoints: readonly Checkpoint[]): Checkpoint[] {
  const completedAt = new Map(
    checkpoints.filter((c) => c.status === 'complete').map((c) => [`${c.stream} ${c.scope}`, c.updated_at]),
  );
  return checkpoints.filter((c) => {
    const key = decodeStateKey(c);
    if (key?.kind !== 'reread' || c.status !== 'running') return false;
    const window = encodeStateKey({ ...key, kind: 'window' });
    const read = completedAt.get(`${window.stream} ${window.scope}`);
    return read === undefined || Date.parse(read) < Date.parse(c.updated_at);
  });
}

/** How far back `status` sums the audit's results (every run's sample adds to the evidence). */
const AUDIT_STATUS_DAYS = 30;

/**
 * The audit's results of the last AUDIT_STATUS_DAYS days per table: rows re-read from the live API, the
 * share that differed and its 95 % upper bound. A warehouse from before the audit has no `_audit` yet.
 */
async function auditOfLastDays(destination: Destination, now: number) {
  const since = new Date(now - AUDIT_STATUS_DAYS * 24 * 60 * 60 * 1000);
  try {
    const counts = await destination.bookkeeping.auditCounts({ since });
    const tables: Record<string, AuditTableResult> = Object.fromEntries(
      Object.entries(counts).map(([table, c]) => [table, tableResult(c)]),
    );
    return { since: since.toISOString(), tables };
  } catch (err) {
    if (/does not exist|not found/i.test(String((err as Error).message ?? err)))
      return { since: since.toISOString(), tables: {} };
    throw err;
  }
}

function auditLines(audit: Awaited<ReturnType<typeof auditOfLastDays>>): string[] {
  if (Object.keys(audit.tables).length === 0)
    return ['Audit: none yet (every run ends with one: SYNC_AUDIT_SHARE; or `audit --sample N`)'];
  return [
    `Audit (rows re-read from the live API in the last ${AUDIT_STATUS_DAYS} days; 95 % upper bound: exact, Clopper-Pearson; 1 - 0.05^(1/n) ≈ 3/n when none of n differ):`,
    ...auditTableLines(audit.tables),
  ];
}

/** Items set aside in `_rejected` and not stored since: per table the count, and the newest few. */
async function rejectedItems(destination: Destination) {
  const rows = await openRejectedItems(destination);
  const byTable: Record<string, number> = {};
  for (const r of rows) byTable[String(r['table_name'])] = (byTable[String(r['table_name'])] ?? 0) + 1;
  return { by_table: byTable, items: rows.slice(0, 20) };
}

function rejectedLines(rejected: Awaited<ReturnType<typeof rejectedItems>>): string[] {
  const tables = Object.entries(rejected.by_table);
  if (tables.length === 0) return ['Items set aside (_rejected): none'];
  return [
    `Items set aside (_rejected; read again by every run until they can be stored): ${tables.map(([t, n]) => `${t} ${n}`).join(', ')}`,
    ...rejected.items.map(
      (r) =>
        `  ${pad(String(r['table_name']), 18)}${pad(String(r['item_key']), 40)}${pad(`${r['stream']} ${r['scope']}`, 70)}${r['reason']}`,
    ),
  ];
}
