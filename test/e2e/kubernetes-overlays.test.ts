import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CompanionHandle, startCompanion } from '../../companion/index.js';
import { KUBERNETES_DIR, kustomizeBuild } from '../support/kustomize.js';
import { containerView, overlaySecrets, podSpecOf } from '../support/pod-view.js';
import { freshDatabase } from '../support/postgres.js';
import { testTemporalAddress } from '../support/temporal.js';
import { makeTestPki, startMtlsProxy, startRecordingGrpcProxy, type TestPki } from '../support/tls.js';

/**
 * The worker of each Kubernetes overlay (deploy/kubernetes/overlays), started as its pod would start it:
 * the rendered container's arguments and environment, its Secret volumes' files written to a temp folder
 * with their mount paths mapped there (test/support/pod-view.ts). It reaches Temporal and polls ("worker
 * running"), where the old single manifest exited 2 on the API-key path. What stands in for what cannot exist
 * here, and is mapped: the cluster is the test's dev server behind a TLS front (an mTLS terminator that
 * demands the client certificate; a gRPC proxy that records the API key on its way), so TEMPORAL_ADDRESS,
 * TEMPORAL_NAMESPACE and the server name point there; the API is the companion (SUPPORT_API_URL) and the
 * warehouse a fresh database (the Secret's DESTINATION_URL); the metrics port is a free loopback one. For
 * the API key, the test CA stands in for the public CAs that vouch for Temporal Cloud's certificate.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe('the Kubernetes overlays start a worker', () => {
  let pki: TestPki;
  let companion: CompanionHandle;
  let mtls: Awaited<ReturnType<typeof startMtlsProxy>>;
  let recording: Awaited<ReturnType<typeof startRecordingGrpcProxy>>;
  let databaseUrl: string;
  const roots: string[] = [];
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    pki = makeTestPki();
    companion = await startCompanion({ seed: 5, tickets: 5, rateLimits: false });
    mtls = await startMtlsProxy(pki, testTemporalAddress());
    recording = await startRecordingGrpcProxy(pki, testTemporalAddress());
    databaseUrl = await freshDatabase('e2e_kubernetes_overlays');
  });
  afterAll(async () => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
    await mtls?.close();
    await recording?.close();
    await companion?.stop();
    for (const root of roots) rmSync(root, { recursive: true, force: true });
    if (pki) rmSync(pki.dir, { recursive: true, force: true });
  });

  const secretsOf = (overlay: string) =>
    overlaySecrets(
      overlay,
      { SUPPORT_API_KEY: companion.keys.admin, DESTINATION_URL: databaseUrl },
      pki,
      'temporal_overlay_key',
    );

  /** Runs the overlay's worker container until it says it polls (or exits); then stops it with SIGTERM. */
  async function runWorker(overlay: 'api-key' | 'mtls', temporalAddress: string) {
    const manifests = kustomizeBuild(join(KUBERNETES_DIR, 'overlays', overlay));
    const root = mkdtempSync(join(tmpdir(), `k8s-${overlay}-`));
    roots.push(root);
    const pod = podSpecOf(manifests, 'Deployment', 'support-sync-worker');
    const view = containerView(manifests, pod, 'worker', secretsOf(overlay), root);
    const env: Record<string, string> = {
      PATH: process.env['PATH'] ?? '',
      HOME: root,
      ...view.env,
      SUPPORT_API_URL: companion.baseUrl,
      TEMPORAL_ADDRESS: temporalAddress,
      TEMPORAL_NAMESPACE: 'default',
      TEMPORAL_TASK_QUEUE: `k8s-${overlay}-${Date.now().toString(36)}`,
      TEMPORAL_TLS_SERVER_NAME: 'localhost',
      METRICS_HOST: '127.0.0.1',
      ...(overlay === 'api-key' ? { TEMPORAL_TLS_SERVER_CA_CERT_PATH: pki.caCert } : {}),
    };
    const args = view.args.map((a, i) => (view.args[i - 1] === '--metrics-port' ? '0' : a));
    const child = spawn(process.execPath, ['--import', 'tsx', 'cli/main.ts', ...args], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    children.push(child);
    let stderr = '';
    const outcome = await new Promise<'running' | string>((resolve) => {
      child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
        stderr += chunk;
        if (stderr.includes('worker running')) resolve('running');
      });
      child.once('exit', (code) => resolve(`exited ${code}: ${stderr}`));
    });
    const exited = new Promise<number | null>((resolve) => {
      if (child.exitCode !== null) resolve(child.exitCode);
      else child.once('exit', (code) => resolve(code));
    });
    child.kill('SIGTERM');
    return { outcome, view, stderr, exitCode: await exited };
  }

  it('api-key: the worker connects with the key from the Secret and polls', async () => {
    const before = recording.headers.length;
    const { outcome, stderr, exitCode } = await runWorker('api-key', recording.address);
    expect(outcome, stderr).toBe('running');
    expect(stderr).not.toContain('config error');
    const authorizations = recording.headers.slice(before).map((h) => h['authorization']);
    expect(authorizations.length).toBeGreaterThan(0);
    expect(new Set(authorizations)).toEqual(new Set(['Bearer temporal_overlay_key']));
    expect(exitCode).toBe(0);
  }, 180_000);

  it('mtls: the worker presents the mounted client certificate and polls', async () => {
    const before = mtls.stats.handshakes;
    const { outcome, view, stderr, exitCode } = await runWorker('mtls', mtls.address);
    expect(outcome, stderr).toBe('running');
    expect(view.env['TEMPORAL_TLS_CLIENT_CERT_PATH']).toBe(
      join(view.mounts['/etc/support-sync/temporal-tls']!, 'tls.crt'),
    );
    expect(mtls.stats.handshakes).toBeGreaterThan(before);
    expect(mtls.stats.refused).toBe(0);
    expect(exitCode).toBe(0);
  }, 180_000);
});
