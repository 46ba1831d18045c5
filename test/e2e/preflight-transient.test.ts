import type { ServerResponse } from 'node:http';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StreamVerdict } from '../../cli/preflight/verdicts.js';
import { type CompanionHandle, startCompanion } from '../../companion/index.js';
import { type CliResult, cli } from '../support/cli.js';
import { freshDatabase } from '../support/postgres.js';
import { testTemporalAddress } from '../support/temporal.js';
import { drip, type HostileProxy, type Misbehaviour, startHostileProxy } from './hostile-proxy.js';

const DEADLINE_S = 3;
const TICKETS = 40;
const THREAD = /^\/tickets\/\d+\/messages$/;

interface Report {
  ok: boolean;
  streams: StreamVerdict[];
  problems: string[];
}

const lastLine = (r: CliResult) => r.stdout.trim().split('\n').at(-1)!;
const statusOf = (report: Report) => Object.fromEntries(report.streams.map((v) => [v.stream, v.status]));
const detailOf = (report: Report, stream: string) => report.streams.find((v) => v.stream === stream)?.detail;

/** A redirect carrying rate-limit headers that say nothing is left until a year from now. */
function redirectWithAYearsReset(res: ServerResponse): void {
  res.writeHead(302, {
    location: 'https://login.example/sso',
    'x-ratelimit-limit': '60',
    'x-ratelimit-remaining': '0',
    'x-ratelimit-reset': String(Math.round(Date.now() / 1000) + 365 * 24 * 3600),
  });
  res.end();
}

function envelope(res: ServerResponse, status: number, code: string, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ success: false, code, message: `proxy says ${code}`, request_id: `r_${code}` }));
}

/**
 * The preflight against the real companion behind a proxy that fails some requests as a flaky network or
 * gateway would: what may pass on another try (a stall, a 5xx, a 429, a redirect on one route) is tried
 * again and, if it persists, leaves its stream `unverified` while the run goes ahead; only a permanent
 * answer (a 404 base URL, a TLS failure, a redirect on every route) stops a run there.
 */
describe('the preflight gates only on what is permanent', () => {
  let companion: CompanionHandle;
  let proxy: HostileProxy;
  let databaseUrl: string;

  beforeAll(async () => {
    companion = await startCompanion({ seed: 11, tickets: TICKETS, rateLimits: false });
    proxy = await startHostileProxy(companion.baseUrl);
    databaseUrl = await freshDatabase('e2e_preflight_transient');
  });
  afterAll(async () => {
    await proxy?.close();
    await companion?.stop();
  });

  const baseEnv = () => ({
    SUPPORT_API_URL: proxy.url,
    SUPPORT_API_KEY: companion.keys.admin,
    DESTINATION_URL: databaseUrl,
    SUPPORT_API_RATE_LIMITS: 'off',
    SUPPORT_API_REQUEST_DEADLINE: `PT${DEADLINE_S}S`,
    LOG_LEVEL: 'warn',
  });

  async function preflight(misbehave: Misbehaviour | null, env: Record<string, string> = {}) {
    proxy.misbehave = misbehave;
    try {
      const r = await cli(['preflight', '--json'], { ...baseEnv(), ...env });
      return { r, report: JSON.parse(lastLine(r)) as Report };
    } finally {
      proxy.misbehave = null;
    }
  }

  it('sync --once: a thread probe that stalls once and a 302 with a year-long reset on one route are tried again, and the run is complete', async () => {
    let stalled: string | null = null;
    let redirected = false;
    proxy.misbehave = ({ path }, res) => {
      if (stalled === null && THREAD.test(path)) {
        stalled = path;
        drip(res, 1000);
        return true;
      }
      if (!redirected && path === '/tags') {
        redirected = true;
        redirectWithAYearsReset(res);
        return true;
      }
      return false;
    };
    const syncDatabase = await freshDatabase('e2e_preflight_transient_sync');
    let r: CliResult;
    try {
      r = await cli(['sync', '--once'], {
        ...baseEnv(),
        DESTINATION_URL: syncDatabase,
        TEMPORAL_ADDRESS: testTemporalAddress(),
        TEMPORAL_TASK_QUEUE: `preflight-transient-${Date.now().toString(36)}`,
        SYNC_THREAD_LOOKBACK: 'PT0S',
        SYNC_AUDIT_SHARE: '0',
      });
    } finally {
      proxy.misbehave = null;
    }
    const summary = JSON.parse(lastLine(r)) as {
      status: string;
      error?: string;
      streams: Record<string, { status: string }>;
    };
    expect(r.code, `${summary.error ?? ''}\n${r.stderr.slice(-3000)}`).toBe(0);
    expect(summary.status).toBe('succeeded');
    expect(new Set(Object.values(summary.streams).map((s) => s.status))).toEqual(new Set(['succeeded']));
    expect(stalled).not.toBeNull();
    expect(redirected).toBe(true);
    // The preflight said what it tried again, and no stream was taken for rate limited.
    expect(r.stderr).not.toMatch(/rate limiting/);
    const db = new pg.Client({ connectionString: syncDatabase });
    await db.connect();
    try {
      const tickets = await db.query('SELECT count(*)::int AS n FROM support.tickets');
      expect(tickets.rows[0].n).toBe(TICKETS);
      const thread = await db.query(
        'SELECT count(*)::int AS n FROM support.ticket_messages WHERE ticket_number = $1',
        [Number(stalled!.split('/')[2])],
      );
      expect(thread.rows[0].n).toBeGreaterThan(0);
      const tags = await db.query('SELECT count(*)::int AS n FROM support.tags');
      expect(tags.rows[0].n).toBeGreaterThan(0);
    } finally {
      await db.end();
    }
    console.info(`stall once + 302 once: exit ${r.code} after ${r.ms} ms (deadline ${DEADLINE_S} s)`);
    // A whole run on a shared machine: 37 s alone, about two minutes beside other integration files.
  }, 300_000);

  it('a stall that persists, a 503 that outlasts the retries, a 429 with a short wait: unverified or passed, and a run can start', async () => {
    let limited = false;
    const { r, report } = await preflight(({ path }, res) => {
      if (path === '/views') {
        drip(res, 1000);
        return true;
      }
      if (path === '/teams') {
        envelope(res, 503, 'SERVICE_UNAVAILABLE');
        return true;
      }
      // The first request of its class, as the API sends a 429: the window it names ends in a second.
      if (path === '/csat-surveys' && !limited) {
        limited = true;
        envelope(res, 429, 'RATE_LIMIT_EXCEEDED', {
          'retry-after': '1',
          'x-ratelimit-limit': '10',
          'x-ratelimit-remaining': '0',
          'x-ratelimit-reset': String(Date.now() / 1000 + 1),
        });
        return true;
      }
      return false;
    });
    expect(r.code, r.stdout + r.stderr.slice(-2000)).toBe(0);
    expect(report.ok).toBe(true);
    expect(statusOf(report), JSON.stringify(report.streams)).toEqual({
      views: 'unverified',
      tags: 'ok',
      teams: 'unverified',
      agents: 'ok',
      metric_catalog: 'ok',
      tickets: 'ok',
      ticket_messages: 'ok',
      csat_surveys: 'ok',
      agent_sessions: 'ok',
      report_snapshots: 'idle',
    });
    expect(detailOf(report, 'views')).toMatch(
      new RegExp(
        `^GET /public/v1/views: timeout error DEADLINE_EXCEEDED: no complete response within ${DEADLINE_S * 1000} ms .* \\(2 tries\\)$`,
      ),
    );
    expect(detailOf(report, 'teams')).toMatch(/HTTP 503 SERVICE_UNAVAILABLE: .* \(3 tries\)$/);
    expect(limited).toBe(true);
    // Two stalled tries of one deadline each, the 503's and the 429's tries, the CLI's start.
    expect(r.ms).toBeLessThan(4 * (DEADLINE_S + 2) * 1000 + 30_000);
    console.info(`persistent stall, 503, 429: preflight exit ${r.code} after ${r.ms} ms`);
  });

  it('a source stalled on every route: the preflight ends within its four bounds, the streams unverified', async () => {
    const deadlineS = 2;
    const { r, report } = await preflight(
      (_request, res) => {
        drip(res, 500);
        return true;
      },
      { SUPPORT_API_REQUEST_DEADLINE: `PT${deadlineS}S` },
    );
    expect(r.code, r.stdout).toBe(0);
    expect(new Set(report.streams.map((v) => v.status))).toEqual(new Set(['unverified']));
    expect(detailOf(report, 'views')).toMatch(/DEADLINE_EXCEEDED: .* \(2 tries\)$/);
    expect(detailOf(report, 'report_snapshots')).toBe(
      "not probed: the preflight's time (4 request deadlines) went to earlier probes",
    );
    // Four bounds of a deadline and 2 s, one try begun just before their end, the CLI's start.
    expect(r.ms).toBeLessThan(5 * (deadlineS + 2) * 1000 + 30_000);
    console.info(`every route stalled (deadline ${deadlineS} s): preflight exit ${r.code} after ${r.ms} ms`);
  });

  it('a route that keeps redirecting while the others answer in place: unverified; every route redirecting: failed', async () => {
    const one = await preflight(({ path }, res) => {
      if (path !== '/tags') return false;
      redirectWithAYearsReset(res);
      return true;
    });
    expect(one.r.code, one.r.stdout).toBe(0);
    expect(statusOf(one.report)).toMatchObject({
      views: 'ok',
      tags: 'unverified',
      teams: 'ok',
      agents: 'ok',
    });
    expect(detailOf(one.report, 'tags')).toMatch(
      /^GET \/public\/v1\/tags: HTTP 302 redirect to "https:\/\/login\.example\/sso" not followed .* \(3 tries\)$/,
    );
    expect(one.r.stdout).not.toMatch(/rate limiting/);

    const every = await preflight(
      (_request, res) => {
        redirectWithAYearsReset(res);
        return true;
      },
      { SYNC_STREAMS: 'views,tags,tickets,ticket_messages' },
    );
    expect(every.r.code).toBe(1);
    expect(every.report.ok).toBe(false);
    expect(statusOf(every.report)).toEqual({
      views: 'failed',
      tags: 'failed',
      tickets: 'failed',
      ticket_messages: 'failed',
    });
    expect(detailOf(every.report, 'views')).toMatch(
      /redirect .* not followed .*; no route answered in place$/,
    );
    expect(every.report.problems[0]).toMatch(
      /^the Support API is not usable: views: GET \/public\/v1\/views: /,
    );
  });

  it('permanent answers still stop a run at once: a base URL that answers 404, a TLS failure', async () => {
    const notFound = await preflight(null, {
      SUPPORT_API_URL: `${companion.baseUrl}/elsewhere`,
      SYNC_STREAMS: 'views,tickets',
    });
    expect(notFound.r.code).toBe(1);
    expect(statusOf(notFound.report)).toEqual({ views: 'failed', tickets: 'failed' });
    expect(detailOf(notFound.report, 'views')).toMatch(/HTTP 404 NOT_FOUND/);
    expect(notFound.report.streams[0]!.code).toBe('NOT_FOUND');

    // https to a port that speaks plain http: the handshake fails the same way on every try and route.
    const tls = await preflight(null, {
      SUPPORT_API_URL: companion.baseUrl.replace(/^http:/, 'https:'),
      SYNC_STREAMS: 'views,tags,tickets',
    });
    expect(tls.r.code).toBe(1);
    expect(statusOf(tls.report)).toEqual({ views: 'failed', tags: 'unverified', tickets: 'unverified' });
    expect(detailOf(tls.report, 'views')).toMatch(/^GET \/public\/v1\/views: network error ERR_SSL_/);
    expect(detailOf(tls.report, 'tags')).toBe('not probed: the views probe found the source unusable');
    console.info(`404 base URL: exit 1 after ${notFound.r.ms} ms; TLS: exit 1 after ${tls.r.ms} ms`);
  });
});
