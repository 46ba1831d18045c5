import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CompanionHandle, startCompanion } from '../../companion/index.js';
import { cli } from '../support/cli.js';
import { freshDatabase } from '../support/postgres.js';
import { testTemporalAddress } from '../support/temporal.js';
import { makeTestPki, startMtlsProxy, startRecordingGrpcProxy, type TestPki } from '../support/tls.js';

/**
 * A secured Temporal cluster: the test's dev server behind a TLS terminator that demands a client certificate
 * signed by a CA made for this run (as a self-hosted cluster's mTLS frontend does), and behind a TLS gRPC
 * proxy that records request headers (the dev server has no authentication, so an API key can only be
 * checked on its way there). `sync --once` goes through the CLI's own connection code; the dev server and
 * PostgreSQL are real, the proxies are the only stand-ins (for a cluster's TLS/auth front, which cannot exist
 * here).
 */
describe('Temporal over TLS', () => {
  let pki: TestPki;
  let companion: CompanionHandle;
  let mtls: Awaited<ReturnType<typeof startMtlsProxy>>;
  let recording: Awaited<ReturnType<typeof startRecordingGrpcProxy>>;
  let databaseUrl: string;
  let db: pg.Client;

  beforeAll(async () => {
    pki = makeTestPki();
    companion = await startCompanion({ seed: 11, tickets: 12, rateLimits: false });
    mtls = await startMtlsProxy(pki, testTemporalAddress());
    recording = await startRecordingGrpcProxy(pki, testTemporalAddress());
    databaseUrl = await freshDatabase('e2e_temporal_tls');
    db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
  });
  afterAll(async () => {
    await db?.end();
    await mtls?.close();
    await recording?.close();
    await companion?.stop();
  });

  const source = () => ({
    SUPPORT_API_URL: companion.baseUrl,
    SUPPORT_API_KEY: companion.keys.admin,
    DESTINATION_URL: databaseUrl,
    SYNC_STREAMS: 'tickets,ticket_messages,agents',
    SUPPORT_API_RATE_LIMITS: 'off',
    SYNC_AUDIT_SHARE: '0',
  });

  it('with the client certificate: sync --once through the mTLS proxy completes', async () => {
    const before = mtls.stats.handshakes;
    const r = await cli(['sync', '--once'], {
      ...source(),
      TEMPORAL_ADDRESS: mtls.address,
      TEMPORAL_TASK_QUEUE: `tls-${Date.now().toString(36)}`,
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: pki.caCert,
      TEMPORAL_TLS_CLIENT_CERT_PATH: pki.clientCert,
      TEMPORAL_TLS_CLIENT_KEY_PATH: pki.clientKey,
      TEMPORAL_TLS_SERVER_NAME: 'localhost',
    });
    expect(r.code, r.stderr).toBe(0);
    const summary = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { status: string };
    expect(summary.status).toBe('succeeded');
    expect(mtls.stats.handshakes - before).toBeGreaterThanOrEqual(2); // the worker's and the client's
    const tickets = await db.query('SELECT count(*)::int AS n FROM support.tickets');
    expect(tickets.rows[0].n).toBe(12);
    console.info(`sync over mTLS: exit ${r.code} after ${r.ms} ms`);
  });

  it('without the client certificate: one line naming the address, exit 1, nothing synced', async () => {
    const refusedBefore = mtls.stats.refused;
    const r = await cli(['sync', '--once'], {
      ...source(),
      DESTINATION_URL: await freshDatabase('e2e_temporal_tls_refused'),
      TEMPORAL_ADDRESS: mtls.address,
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: pki.caCert,
    });
    expect(r.code, r.stderr).toBe(1);
    const lines = r.stderr.trim().split('\n');
    expect(lines, r.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(
        `^error: cannot connect to Temporal at ${mtls.address} \\(TEMPORAL_ADDRESS, over TLS\\): .+`,
      ),
    );
    expect(r.stdout).toBe('');
    expect(mtls.stats.refused).toBeGreaterThan(refusedBefore);
    console.info(`without a client certificate: ${lines[0]}`);
  });

  it('a certificate from another CA is refused the same way', async () => {
    const r = await cli(['setup'], {
      ...source(),
      TEMPORAL_ADDRESS: mtls.address,
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: pki.caCert,
      TEMPORAL_TLS_CLIENT_CERT_PATH: pki.strangerCert,
      TEMPORAL_TLS_CLIENT_KEY_PATH: pki.strangerKey,
    });
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^error: cannot connect to Temporal at /);
  });

  it('a missing certificate file: one config error line naming the setting, exit 2', async () => {
    const r = await cli(['worker'], {
      ...source(),
      TEMPORAL_ADDRESS: mtls.address,
      TEMPORAL_TLS_CLIENT_CERT_PATH: `${pki.dir}/missing.pem`,
      TEMPORAL_TLS_CLIENT_KEY_PATH: pki.clientKey,
    });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr.trim()).toBe(
      `config error: TEMPORAL_TLS_CLIENT_CERT_PATH: cannot read ${pki.dir}/missing.pem (ENOENT)`,
    );
  });

  it('nothing listening: one line, exit 1', async () => {
    const r = await cli(['setup'], { ...source(), TEMPORAL_ADDRESS: '127.0.0.1:1' });
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(
      /^error: cannot connect to Temporal at 127\.0\.0\.1:1 \(TEMPORAL_ADDRESS, without TLS\): /,
    );
  });

  it('an API key reaches every request as a bearer token over TLS, and no output shows it', async () => {
    const apiKey = 'tmprl-test-key-7f3a9c1e5b2d4086';
    recording.headers.length = 0;
    const r = await cli(['sync', '--once'], {
      ...source(),
      DESTINATION_URL: await freshDatabase('e2e_temporal_api_key'),
      TEMPORAL_ADDRESS: recording.address,
      TEMPORAL_TASK_QUEUE: `apikey-${Date.now().toString(36)}`,
      TEMPORAL_API_KEY: apiKey,
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: pki.caCert,
      LOG_LEVEL: 'debug',
    });
    expect(r.code, r.stderr.slice(-2000)).toBe(0);
    expect(recording.headers.length).toBeGreaterThan(0);
    const authorizations = new Set(recording.headers.map((h) => h['authorization']));
    expect([...authorizations]).toEqual([`Bearer ${apiKey}`]);
    for (const text of [r.stdout, r.stderr]) expect(text).not.toContain(apiKey);
    console.info(
      `sync with an API key: ${recording.headers.length} requests, exit ${r.code} after ${r.ms} ms`,
    );
  });
});
