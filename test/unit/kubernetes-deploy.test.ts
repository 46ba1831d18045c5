import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Deployment } from 'kubernetes-models/apps/v1';
import { Job } from 'kubernetes-models/batch/v1';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Service } from 'kubernetes-models/v1';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ConfigFromEnv } from '../../schemas/config.js';
import { loadConfig } from '../../worker/config.js';
import { resolveTemporalConnection } from '../../worker/temporal-connection.js';
import { KUBERNETES_DIR, kustomizeBuild, type Manifest } from '../support/kustomize.js';
import { containerView, overlaySecrets, podSpecOf } from '../support/pod-view.js';
import { makeTestPki } from '../support/tls.js';

/**
 * deploy/kubernetes, the Kustomize example: a base and one overlay per way of authenticating to Temporal
 * (an API key; mTLS files), rendered here without kubectl (test/support/kustomize.ts). Every rendered
 * manifest is valid against the Kubernetes API's JSON schemas (the `kubernetes-models` package carries them,
 * so no schema download is needed) and wired the way the worker needs it; each overlay's containers, given
 * the Secrets its comments ask for, load a configuration with no problem — the worker's own start in each is
 * test/e2e/kubernetes-overlays.test.ts.
 */

const OVERLAYS = ['api-key', 'mtls'] as const;
const rendered = Object.fromEntries(
  OVERLAYS.map((o) => [o, kustomizeBuild(join(KUBERNETES_DIR, 'overlays', o))]),
) as Record<(typeof OVERLAYS)[number], Manifest[]>;

const VALIDATORS: Record<string, (m: Manifest) => { validate(): void }> = {
  'apps/v1/Deployment': (m) => new Deployment(m as never),
  'batch/v1/Job': (m) => new Job(m as never),
  'v1/Service': (m) => new Service(m as never),
  'v1/ConfigMap': (m) => new ConfigMap(m as never),
  'policy/v1/PodDisruptionBudget': (m) => new PodDisruptionBudget(m as never),
  'networking.k8s.io/v1/NetworkPolicy': (m) => new NetworkPolicy(m as never),
};
/** The Prometheus Operator's kinds: no schema in kubernetes-models; their fields are checked below. */
const OPERATOR_KINDS = ['monitoring.coreos.com/v1/ServiceMonitor', 'monitoring.coreos.com/v1/PrometheusRule'];

const find = (manifests: Manifest[], kind: string, name?: string) => {
  const found = manifests.find((m) => m.kind === kind && (name === undefined || m.metadata.name === name));
  if (!found) throw new Error(`no ${kind} ${name ?? ''}`);
  return found as Manifest & { spec: Record<string, never> };
};

interface EnvEntry {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef: { name: string; key: string; optional?: boolean } };
}
interface Container {
  name: string;
  args: string[];
  env?: EnvEntry[];
  envFrom?: { configMapRef?: { name: string } }[];
  livenessProbe: { httpGet: unknown };
  startupProbe: { httpGet: unknown };
  readinessProbe: { httpGet: unknown };
  ports: { name: string; containerPort: number }[];
  securityContext: Record<string, unknown>;
}
const containersOf = (manifests: Manifest[]) =>
  manifests.flatMap((m) => {
    const pod = (
      m as { spec?: { template?: { spec?: { containers: Container[]; initContainers?: Container[] } } } }
    ).spec?.template?.spec;
    return pod ? [...pod.containers, ...(pod.initContainers ?? [])].map((c) => ({ manifest: m, c })) : [];
  });

describe.each(OVERLAYS)('deploy/kubernetes/overlays/%s', (overlay) => {
  const manifests = rendered[overlay];
  const worker = podSpecOf(manifests, 'Deployment', 'support-sync-worker') as unknown as {
    containers: Container[];
  } & Record<string, unknown>;
  const container = worker.containers[0]!;

  it('renders valid manifests of the Kubernetes API, and operator resources of the right shape', () => {
    const kinds = manifests.map((m) => `${m.apiVersion}/${m.kind}`).sort();
    expect(kinds).toEqual([...Object.keys(VALIDATORS), ...OPERATOR_KINDS].sort());
    for (const m of manifests) {
      const validator = VALIDATORS[`${m.apiVersion}/${m.kind}`];
      if (validator) expect(() => validator(m).validate(), `${m.kind}/${m.metadata.name}`).not.toThrow();
    }
    expect(find(manifests, 'ServiceMonitor').spec.endpoints).toEqual([
      { port: 'metrics', path: '/metrics', interval: '30s' },
    ]);
  });

  it('the validator does catch a broken manifest', () => {
    const broken = structuredClone(find(manifests, 'Deployment')) as unknown as {
      spec: { template: { spec: { containers: Container[] } } };
    };
    (broken.spec.template.spec.containers[0]!.readinessProbe.httpGet as { port: unknown }).port = {
      name: 'metrics',
    };
    expect(() => new Deployment(broken as never).validate()).toThrow();
  });

  it('probes /healthz (liveness, startup) and /readyz (readiness) on the metrics port it serves', () => {
    expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
    expect(container.startupProbe.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
    expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'metrics' });
    const port = container.ports.find((p) => p.name === 'metrics')!.containerPort;
    expect(container.args).toEqual(['worker', '--metrics-port', String(port)]);
    expect(container.env?.find((e) => e.name === 'METRICS_HOST')?.value).toBe('0.0.0.0');
    const service = find(manifests, 'Service', 'support-sync') as unknown as {
      spec: { ports: { port: number; targetPort: string }[] };
    };
    expect(service.spec.ports).toEqual([{ name: 'metrics', port, targetPort: 'metrics' }]);
  });

  it('takes the secrets from Secrets, never inline, and sets only settings the configuration knows', () => {
    const known = Object.keys(ConfigFromEnv.shape);
    const config = find(manifests, 'ConfigMap', 'support-sync-config') as unknown as {
      data: Record<string, string>;
    };
    expect(Object.keys(config.data).filter((name) => !known.includes(name))).toEqual([]);
    for (const { manifest, c } of containersOf(manifests)) {
      const where = `${manifest.kind}/${c.name}`;
      expect(c.envFrom, where).toEqual([{ configMapRef: { name: 'support-sync-config' } }]);
      for (const entry of c.env ?? []) {
        expect(known, `${where}: ${entry.name}`).toContain(entry.name);
        if (/KEY|URL$/.test(entry.name) && entry.name !== 'SUPPORT_API_URL') {
          expect(entry.value, `${where}: ${entry.name}`).toBeUndefined();
          expect(entry.valueFrom?.secretKeyRef.key, `${where}: ${entry.name}`).toBe(entry.name);
        }
      }
      for (const name of Object.keys(config.data)) expect(name, where).not.toMatch(/KEY$|^DESTINATION_URL$/);
    }
  });

  it('runs every pod without a service-account token, under RuntimeDefault seccomp, as non-root, read-only', () => {
    for (const m of manifests.filter((m) => ['Deployment', 'Job'].includes(m.kind))) {
      const pod = (m as unknown as { spec: { template: { spec: Record<string, never> } } }).spec.template
        .spec;
      expect(pod.automountServiceAccountToken, m.kind).toBe(false);
      expect(pod.securityContext, m.kind).toMatchObject({
        runAsNonRoot: true,
        seccompProfile: { type: 'RuntimeDefault' },
      });
    }
    for (const { manifest, c } of containersOf(manifests))
      expect(c.securityContext, `${manifest.kind}/${c.name}`).toEqual({
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ['ALL'] },
      });
  });

  it('admits the metrics port from the monitoring namespace only; lets out DNS, HTTPS, Temporal and PostgreSQL only', () => {
    const policy = find(manifests, 'NetworkPolicy') as unknown as {
      spec: {
        podSelector: { matchLabels: Record<string, string> };
        policyTypes: string[];
        ingress: { from: unknown[]; ports: { port: string | number }[] }[];
        egress: { to?: unknown[]; ports: { port: number; protocol: string }[] }[];
      };
    };
    expect(policy.spec.policyTypes).toEqual(['Ingress', 'Egress']);
    // It selects the worker's and the setup Job's pods.
    for (const m of manifests.filter((m) => ['Deployment', 'Job'].includes(m.kind))) {
      const labels = (
        m as unknown as { spec: { template: { metadata: { labels: Record<string, string> } } } }
      ).spec.template.metadata.labels;
      expect(labels, m.kind).toMatchObject(policy.spec.podSelector.matchLabels);
    }
    expect(policy.spec.ingress).toEqual([
      {
        from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }],
        ports: [{ port: 'metrics', protocol: 'TCP' }],
      },
    ]);
    const ports = policy.spec.egress.flatMap((rule) => {
      expect(rule.ports?.length, 'an egress rule without ports opens every port').toBeGreaterThan(0);
      return rule.ports.map((p) => `${p.port}/${p.protocol}`);
    });
    expect(ports.sort()).toEqual(['443/TCP', '53/TCP', '53/UDP', '5432/TCP', '7233/TCP']);
  });

  it('a PodDisruptionBudget keeps all but one worker up through a drain', () => {
    const pdb = find(manifests, 'PodDisruptionBudget') as unknown as {
      spec: { maxUnavailable: number; selector: { matchLabels: Record<string, string> } };
    };
    const deployment = find(manifests, 'Deployment') as unknown as {
      spec: { replicas: number; selector: { matchLabels: Record<string, string> } };
    };
    expect(pdb.spec.selector.matchLabels).toEqual(deployment.spec.selector.matchLabels);
    expect(pdb.spec.maxUnavailable).toBeLessThan(deployment.spec.replicas);
  });

  it("gives SIGTERM's drain (30 s) time before the pod is killed", () => {
    expect(worker['terminationGracePeriodSeconds']).toBeGreaterThan(30);
  });

  it('the alert rules are docs/alerts.yml, and select the job the ServiceMonitor scrapes', () => {
    const rule = find(manifests, 'PrometheusRule') as unknown as { spec: unknown };
    const documented = parse(readFileSync(new URL('../../docs/alerts.yml', import.meta.url), 'utf8'));
    expect(rule.spec).toEqual(documented);
    // The Prometheus Operator names a ServiceMonitor's job after the Service (no jobLabel here).
    const monitor = find(manifests, 'ServiceMonitor') as unknown as {
      spec: { jobLabel?: string; selector: { matchLabels: Record<string, string> } };
    };
    expect(monitor.spec.jobLabel).toBeUndefined();
    const service = find(manifests, 'Service');
    expect(service.metadata.labels).toMatchObject(monitor.spec.selector.matchLabels);
    const jobs = new Set([...JSON.stringify(documented).matchAll(/job=\\"([^\\]+)\\"/g)].map((m) => m[1]));
    expect([...jobs]).toEqual([service.metadata.name]);
  });
});

describe('each overlay, as its pods would see it', () => {
  const pki = makeTestPki();
  const roots: string[] = [];
  afterAll(() => {
    for (const root of roots) rmSync(root, { recursive: true, force: true });
    rmSync(pki.dir, { recursive: true, force: true });
  });
  const supportSync = {
    SUPPORT_API_KEY: 'sk_live_kubernetes_overlay',
    DESTINATION_URL: 'postgres://sync:pw@warehouse.internal:5432/support',
  };
  const secretsOf = (overlay: string) => overlaySecrets(overlay, supportSync, pki, 'temporal_overlay_key');

  it.each(OVERLAYS)('%s: every container loads its configuration and Temporal connection', (overlay) => {
    const manifests = rendered[overlay];
    const checked: string[] = [];
    for (const [kind, name] of [
      ['Deployment', 'support-sync-worker'],
      ['Job', 'support-sync-setup'],
    ] as const) {
      const pod = podSpecOf(manifests, kind, name);
      for (const c of [...pod.containers, ...(pod.initContainers ?? [])]) {
        const root = mkdtempSync(join(tmpdir(), 'k8s-pod-'));
        roots.push(root);
        const view = containerView(manifests, pod, c.name, secretsOf(overlay), root);
        const config = loadConfig(view.env);
        const connection = resolveTemporalConnection(config, view.env);
        expect(connection.address).toBe(view.env['TEMPORAL_ADDRESS']);
        expect(connection.tls, `${kind}/${c.name}`).toBeTruthy();
        if (overlay === 'api-key') expect(connection.apiKey?.reveal()).toBe('temporal_overlay_key');
        else {
          const tls = connection.tls as { clientCertPair?: { crt: Uint8Array } };
          expect(Buffer.from(tls.clientCertPair!.crt).toString()).toBe(readFileSync(pki.clientCert, 'utf8'));
        }
        checked.push(`${kind}/${c.name}`);
      }
    }
    expect(checked).toEqual(
      overlay === 'api-key'
        ? ['Deployment/worker', 'Job/schedules']
        : ['Deployment/worker', 'Job/schedules', 'Job/search-attributes'],
    );
  });

  it('the base alone (no Temporal authentication) is not an overlay: its worker would connect without TLS', () => {
    const manifests = kustomizeBuild(join(KUBERNETES_DIR, 'base'));
    const pod = podSpecOf(manifests, 'Deployment', 'support-sync-worker');
    const root = mkdtempSync(join(tmpdir(), 'k8s-pod-'));
    roots.push(root);
    const view = containerView(manifests, pod, 'worker', { 'support-sync': supportSync }, root);
    const connection = resolveTemporalConnection(loadConfig(view.env), view.env);
    expect(connection.tls).toBeFalsy();
  });
});
