import type { ServerResponse } from 'node:http';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CompanionHandle, startCompanion } from '../../companion/index.js';
import { type CliResult, cli } from '../support/cli.js';
import { freshDatabase } from '../support/postgres.js';
import { testTemporalAddress } from '../support/temporal.js';
import { drip, type HostileProxy, startHostileProxy } from './hostile-proxy.js';

// biome-ignore lint/suspicious/noControlCharactersInRegex: what must never reach an error
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;
const DEADLINE_S = 3;

interface Summary {
  status: string;
  error?: string;
  streams: Record<string, { status: string; rows: number }>;
}

/** A list's answer, as a proxy rewrites it. */
interface ListAnswer {
  success: boolean;
  data: Record<string, unknown>[];
  pagination: { has_more: boolean; next_cursor: string | null };
}

const summaryOf = (r: CliResult) => JSON.parse(r.stdout.trim().split('\n').at(-1)!) as Summary;

/** The statuses of a stream's entries in the summary (an export has one per pass: `csat_surveys.sent` …). */
function statusesOf(summary: Summary, stream: string): string[] {
  const entries = Object.entries(summary.streams).filter(([k]) => k === stream || k.startsWith(`${stream}.`));
  expect(entries.length, `${stream} in ${Object.keys(summary.streams).join(',')}`).toBeGreaterThan(0);
  return [...new Set(entries.map(([, v]) => v.status))];
}

/**
 * `sync --once` as a user runs it, against the companion behind a proxy that answers some requests as a
 * hostile server would. Each case ends within a stated bound with a clear error or the item set aside, and
 * everything else synced; the key never shows, nor an escape sequence, nor a server's megabytes.
 */
describe('sync --once against a hostile source', () => {
  let companion: CompanionHandle;
  let proxy: HostileProxy;
  let key: string;

  beforeAll(async () => {
    companion = await startCompanion({ seed: 7, tickets: 60, rateLimits: false });
    proxy = await startHostileProxy(companion.baseUrl);
    key = companion.keys.admin;
  });
  afterAll(async () => {
    await proxy?.close();
    await companion?.stop();
  });

  async function sync(label: string, extra: Record<string, string> = {}) {
    const databaseUrl = await freshDatabase(`e2e_hostile_${label}`);
    const env = {
      SUPPORT_API_URL: proxy.url,
      SUPPORT_API_KEY: key,
      DESTINATION_URL: databaseUrl,
      TEMPORAL_ADDRESS: testTemporalAddress(),
      TEMPORAL_TASK_QUEUE: `hostile-${label}-${Date.now().toString(36)}`,
      SUPPORT_API_RATE_LIMITS: 'off',
      SYNC_THREAD_LOOKBACK: 'PT0S',
      SYNC_AUDIT_SHARE: '0',
      SUPPORT_API_REQUEST_DEADLINE: `PT${DEADLINE_S}S`,
      LOG_LEVEL: 'warn',
      ...extra,
    };
    const r = await cli(['sync', '--once'], env);
    const db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    return { r, db, databaseUrl, env };
  }

  function expectClean(r: CliResult) {
    for (const text of [r.stdout, r.stderr]) {
      expect(text).not.toContain(key);
      expect(text).not.toContain(key.slice(0, 16));
      expect(text).not.toMatch(CONTROL);
    }
  }

  it('a drip on one thread, a 5 MB error with escapes and the key, a 1 MB cursor, a redirect, an oversized page: each set aside or failed clearly, the rest synced', async () => {
    let probe: string | null = null;
    let victim: string | null = null;
    const monstrous = `\u001b[31m${'boom '.repeat(50)}${key}\u001b[0m${'x'.repeat(5 * 1024 * 1024)}`;
    proxy.misbehave = ({ path, query }, res) => {
      if (/^\/tickets\/\d+\/messages$/.test(path)) {
        probe ??= path; // the preflight's thread is answered; the next thread read stalls
        if (path !== probe) victim ??= path;
        if (path !== victim) return false;
        drip(res, 2000);
        return true;
      }
      if (query.get('limit') === '1') return false; // the preflight's probes are answered
      if (path === '/tags') {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            success: false,
            code: 'VALIDATION_ERROR',
            message: monstrous,
            request_id: `r_${key}`,
          }),
        );
        return true;
      }
      if (path === '/teams') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            success: true,
            data: [],
            pagination: { has_more: true, next_cursor: 'c'.repeat(1 << 20) },
          }),
        );
        return true;
      }
      if (path === '/views') {
        res.writeHead(302, { location: `https://elsewhere.example/login?key=${key}` }).end();
        return true;
      }
      if (path === '/agents') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ success: true, data: [], padding: 'p'.repeat(10 * 1024 * 1024) }));
        return true;
      }
      return false;
    };
    const { r, db, env } = await sync('many', { SUPPORT_API_MAX_RESPONSE_BYTES: String(8 * 1024 * 1024) });
    try {
      const summary = summaryOf(r);
      expect(r.code, r.stderr.slice(-3000)).toBe(1);
      expect(summary.status).toBe('failed');
      for (const stream of ['tickets', 'csat_surveys', 'agent_sessions', 'metric_catalog'])
        expect(statusesOf(summary, stream), stream).toEqual(['succeeded']);
      for (const stream of ['tags', 'teams', 'views', 'agents'])
        expect(statusesOf(summary, stream), stream).toEqual(['failed']);
      const error = summary.error ?? '';
      expect(error).toMatch(
        /GET \/public\/v1\/tags failed: HTTP 400 VALIDATION_ERROR: \\u001b\[31mboom boom/,
      );
      expect(error).toMatch(/field pagination\.next_cursor: Too big/);
      expect(error).toMatch(
        /HTTP 302 redirect to "https:\/\/elsewhere\.example\/login\?key=\[redacted\]" not followed/,
      );
      expect(error).toMatch(/GET \/public\/v1\/agents: HTTP 200 response body is larger than 8388608 bytes/);
      expect(error.length).toBeLessThan(6000);
      expectClean(r);
      expect(r.stderr.length).toBeLessThan(2_000_000);

      // The stalled thread is set aside (retried by the next run); every other thread and ticket is stored.
      const victimNumber = Number(victim!.split('/')[2]);
      const failed = await db.query(
        "SELECT run_id, error FROM support._sync_runs WHERE stream = 'ticket_messages' AND status = 'failed'",
      );
      expect(failed.rows.map((row) => row.run_id)).toEqual([`thread:${victimNumber}`]);
      expect(failed.rows[0].error).toMatch(/DEADLINE_EXCEEDED/);
      // `status` lists it among the threads that failed, and not among the failed windows to replay.
      const status = await cli(['status', '--json'], env);
      const shown = JSON.parse(status.stdout) as { failed_threads: { run_id: string }[] };
      expect(shown.failed_threads.map((t) => t.run_id)).toEqual([`thread:${victimNumber}`]);
      const windows = await cli(['status', '--failed', '--json'], env);
      const failedWindows = (JSON.parse(windows.stdout) as { failed_windows: { workflow_id: string }[] })
        .failed_windows;
      expect(failedWindows.length).toBeGreaterThan(0);
      expect(failedWindows.map((w) => w.workflow_id)).not.toContain(`ticket_messages/${victimNumber}`);
      const tickets = await db.query('SELECT count(*)::int AS n FROM support.tickets');
      expect(tickets.rows[0].n).toBe(60);
      const threads = await db.query(
        'SELECT count(DISTINCT ticket_number)::int AS n FROM support.ticket_messages',
      );
      expect(threads.rows[0].n).toBeGreaterThan(0);
      const stalled = await db.query(
        'SELECT count(*)::int AS n FROM support.ticket_messages WHERE ticket_number = $1',
        [victimNumber],
      );
      expect(stalled.rows[0].n).toBe(0);
      console.info(`hostile answers: exit ${r.code} after ${r.ms} ms; summary error ${error.length} chars`);
    } finally {
      await db.end();
      proxy.misbehave = null;
    }
  });

  it('a source that echoes the key in its items, names a field with terminal escapes and hands back a cursor holding NUL: nothing of it stored, printed or logged as sent', async () => {
    const EVIL_FIELD = 'evil\u001b[2J\u001b]0;PWNED\u0007';
    /** The companion's answer to the same request, rewritten by `edit`, headers kept. */
    const rewritten = (
      path: string,
      query: URLSearchParams,
      res: ServerResponse,
      edit: (body: ListAnswer) => void,
    ) => {
      void (async () => {
        const upstream = await fetch(`${companion.baseUrl}/public/v1${path}?${query}`, {
          headers: { 'cx-api-key': key, accept: 'application/json' },
        });
        const body = (await upstream.json()) as ListAnswer;
        if (body.success) edit(body);
        const headers: Record<string, string> = {};
        upstream.headers.forEach((v, k) => {
          if (!['content-length', 'content-encoding', 'transfer-encoding'].includes(k)) headers[k] = v;
        });
        res.writeHead(upstream.status, headers).end(JSON.stringify(body));
      })().catch((err) => res.writeHead(502).end(String(err)));
    };
    proxy.misbehave = ({ path, query }, res) => {
      if (query.get('limit') === '1') return false; // the preflight's probes are answered as they are
      if (path === '/tickets') {
        rewritten(path, query, res, (body) => {
          for (const t of body.data) {
            t['subject'] = `${t['subject'] ?? ''} (echo ${key})`;
            t[EVIL_FIELD] = `the key again: ${key}`;
            t[`field_${key}`] = 1;
          }
        });
        return true;
      }
      if (path === '/teams') {
        rewritten(path, query, res, (body) => {
          body.pagination = { has_more: true, next_cursor: 'next\u0000page' };
        });
        return true;
      }
      return false;
    };
    const { r, db, databaseUrl } = await sync('echo', { SYNC_SOURCE_PATIENCE: 'PT1M' });
    try {
      // Nowhere in the warehouse: no column of any table, `_raw` included, holds the key.
      const tables = await db.query(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'support' AND table_type = 'BASE TABLE'",
      );
      expect(tables.rows.length).toBeGreaterThan(5);
      for (const { table_name } of tables.rows) {
        const hits = await db.query(
          `SELECT count(*)::int AS n FROM support."${table_name}" t WHERE strpos(t::text, $1) > 0`,
          [key],
        );
        expect(hits.rows[0].n, table_name).toBe(0);
      }
      const summary = summaryOf(r) as Summary & { secrets_scrubbed?: number };
      expect(summary.status, r.stderr.slice(-3000)).toBe('failed');
      expect(statusesOf(summary, 'teams')).toEqual(['failed']);
      for (const stream of ['tickets', 'tags', 'agents'])
        expect(statusesOf(summary, stream), stream).toEqual(['succeeded']);
      // The cursor is refused as it arrives, once, with what is wrong: not written, not retried.
      expect(summary.error).toMatch(
        /GET \/public\/v1\/teams: response breaks the schema: field pagination\.next_cursor: holds a control character/,
      );
      // 60 tickets, each with the key in its subject, in a field's value and in a field's name.
      expect(summary.secrets_scrubbed).toBeGreaterThanOrEqual(3 * 60);
      expectClean(r);
      expect(r.stderr).toMatch(/the answer holds a configured secret/);

      const stored = await db.query(
        `SELECT count(*)::int AS n FROM support.tickets WHERE subject LIKE '%(echo [redacted])' AND _raw->>'field_[redacted]' = '1'`,
      );
      expect(stored.rows[0].n).toBe(60);
      // The field's name is kept, with its escapes visible; the checkpoint never took the cursor.
      const drift = await db.query('SELECT field_path FROM support._schema_changes ORDER BY field_path');
      const paths = drift.rows.map((row) => row.field_path as string);
      expect(paths).toContain('evil\\u001b[2J\\u001b]0;PWNED\\u0007');
      expect(paths.join('')).not.toMatch(CONTROL);
      const cursors = await db.query(
        "SELECT count(*)::int AS n FROM support._sync_state WHERE strpos(cursor, 'next') > 0",
      );
      expect(cursors.rows[0].n).toBe(0);

      // `status` prints the field as text: the escapes shown, never sent to the terminal.
      const status = await cli(['status'], { DESTINATION_URL: databaseUrl });
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).toContain('evil\\u001b[2J\\u001b]0;PWNED\\u0007');
      expectClean(status);
      console.info(
        `echoing source: exit ${r.code} after ${r.ms} ms; ${summary.secrets_scrubbed} secrets scrubbed`,
      );
    } finally {
      await db.end();
      proxy.misbehave = null;
    }
  });

  it('one 429 with Retry-After: 999999 on the first CSAT request: a short wait, then CSAT and sessions synced', async () => {
    // The proxy's own count spans the earlier cases, which may have read CSAT already: count here.
    let answered = false;
    proxy.misbehave = ({ path }, res) => {
      if (path !== '/csat-surveys' || answered) return false;
      answered = true;
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '999999' });
      res.end(
        JSON.stringify({ success: false, code: 'RATE_LIMITED', message: 'slow down', request_id: 'r429' }),
      );
      return true;
    };
    // The cap is three rate windows: 15 s at a 5 s window.
    const { r, db } = await sync('retry_after', { SUPPORT_API_RATE_WINDOW: 'PT5S' });
    try {
      const summary = summaryOf(r);
      expect(r.code, r.stderr.slice(-3000)).toBe(0);
      expect(summary.status).toBe('succeeded');
      expect(statusesOf(summary, 'csat_surveys')).toEqual(['succeeded']);
      expect(statusesOf(summary, 'agent_sessions')).toEqual(['succeeded']);
      const csat = await db.query('SELECT count(*)::int AS n FROM support.csat_surveys');
      expect(csat.rows[0].n).toBeGreaterThan(0);
      expect(r.stderr).toMatch(/the server asked for a longer wait than the cap/);
      expect(r.ms).toBeLessThan(120_000);
      console.info(`huge Retry-After: exit ${r.code} after ${r.ms} ms (cap 15 s)`);
    } finally {
      await db.end();
      proxy.misbehave = null;
    }
  });
});
