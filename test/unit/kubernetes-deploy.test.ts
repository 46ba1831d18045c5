import { readFileSync } from 'node:fs';
import { Deployment } from 'kubernetes-models/apps/v1';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ConfigFromEnv } from '../../schemas/config.js';

/**
 * The example Kubernetes Deployment (deploy/kubernetes/worker.yaml): valid against the Kubernetes API's
 * JSON schemas (the `kubernetes-models` package carries them, so no schema download is needed), and wired
 * the way the worker needs it: probes on /healthz and /readyz, secrets referenced and never inlined, only
 * settings the configuration knows.
 */
const text = readFileSync(new URL('../../deploy/kubernetes/worker.yaml', import.meta.url), 'utf8');
const manifest = parse(text);
const container = manifest.spec.template.spec.containers[0];
interface EnvEntry {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef: { name: string; key: string } };
}
const env = new Map((container.env as EnvEntry[]).map((e) => [e.name, e]));
const entry = (name: string): EnvEntry => {
  const found = env.get(name);
  if (!found) throw new Error(`${name} is not set`);
  return found;
};

describe('deploy/kubernetes/worker.yaml', () => {
  it('is a valid apps/v1 Deployment', () => {
    expect(() => new Deployment(manifest).validate()).not.toThrow();
  });

  it('the validator does catch a broken manifest', () => {
    const broken = parse(text);
    broken.spec.template.spec.containers[0].readinessProbe.httpGet.port = { name: 'metrics' };
    expect(() => new Deployment(broken).validate()).toThrow();
  });

  it('probes /healthz (liveness, startup) and /readyz (readiness) on the metrics port it serves', () => {
    expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
    expect(container.startupProbe.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
    expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'metrics' });
    const port = container.ports.find((p: { name: string }) => p.name === 'metrics').containerPort;
    expect(container.args).toEqual(['worker', '--metrics-port', String(port)]);
    expect(entry('METRICS_HOST').value).toBe('0.0.0.0');
  });

  it('takes the secrets from Secrets, never inline', () => {
    for (const name of ['SUPPORT_API_KEY', 'DESTINATION_URL', 'TEMPORAL_API_KEY']) {
      expect(entry(name).value, name).toBeUndefined();
      expect(entry(name).valueFrom?.secretKeyRef.key, name).toBe(name);
    }
    const tlsVolume = manifest.spec.template.spec.volumes.find(
      (v: { name: string }) => v.name === 'temporal-tls',
    );
    expect(tlsVolume.secret.secretName).toBeTruthy();
    for (const name of ['TEMPORAL_TLS_CLIENT_CERT_PATH', 'TEMPORAL_TLS_CLIENT_KEY_PATH'])
      expect(entry(name).value).toMatch(/^\/etc\/support-sync\/temporal-tls\//);
  });

  it('sets only settings the configuration knows', () => {
    const known = Object.keys(ConfigFromEnv.shape);
    expect([...env.keys()].filter((name) => !known.includes(name))).toEqual([]);
  });

  it("gives SIGTERM's drain (30 s) time before the pod is killed", () => {
    expect(manifest.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThan(30);
  });
});
