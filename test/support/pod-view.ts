import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Manifest } from './kustomize.js';

/**
 * What a container of a rendered manifest sees when it runs: its arguments, its environment (plain values,
 * `envFrom` ConfigMaps, `secretKeyRef`s resolved from `secrets`) and the files of its Secret volumes, written
 * under `root` with every mount path mapped there (in the environment too), as the kubelet would lay them
 * out. A Secret or key the manifest requires and `secrets` lacks is an error, as it is for a pod (it does not
 * start); an optional one is left out, as the kubelet does.
 */

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } };
}
interface Container {
  name: string;
  args?: string[];
  env?: EnvVar[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  volumeMounts?: { name: string; mountPath: string }[];
}
interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  volumes?: { name: string; secret?: { secretName: string; optional?: boolean }; emptyDir?: object }[];
}

export interface ContainerView {
  args: string[];
  env: Record<string, string>;
  /** Mount path in the pod → folder under `root`. */
  mounts: Record<string, string>;
}

export type Secrets = Record<string, Record<string, string>>;

export function podSpecOf(manifests: Manifest[], kind: string, name: string): PodSpec {
  const found = manifests.find((m) => m.kind === kind && m.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in the rendered manifests`);
  return (found as unknown as { spec: { template: { spec: PodSpec } } }).spec.template.spec;
}

export function containerView(
  manifests: Manifest[],
  pod: PodSpec,
  containerName: string,
  secrets: Secrets,
  root: string,
): ContainerView {
  const container = [...pod.containers, ...(pod.initContainers ?? [])].find((c) => c.name === containerName);
  if (!container) throw new Error(`no container ${containerName}`);
  const secretValue = (name: string, key: string, optional: boolean): string | undefined => {
    const value = secrets[name]?.[key];
    if (value === undefined && !optional)
      throw new Error(
        `container ${containerName}: Secret ${name} has no key ${key} (the pod would not start)`,
      );
    return value;
  };
  const mounts: Record<string, string> = {};
  for (const mount of container.volumeMounts ?? []) {
    const volume = pod.volumes?.find((v) => v.name === mount.name);
    if (!volume) throw new Error(`container ${containerName}: mount of an undeclared volume ${mount.name}`);
    const folder = join(root, mount.mountPath);
    mkdirSync(folder, { recursive: true });
    mounts[mount.mountPath] = folder;
    if (volume.secret) {
      const data = secrets[volume.secret.secretName];
      if (!data && !volume.secret.optional)
        throw new Error(
          `volume ${volume.name}: Secret ${volume.secret.secretName} is missing (the pod would not start)`,
        );
      for (const [key, value] of Object.entries(data ?? {})) writeFileSync(join(folder, key), value);
    }
  }
  const mapped = (value: string): string => {
    for (const [path, folder] of Object.entries(mounts))
      if (value === path || value.startsWith(`${path}/`)) return folder + value.slice(path.length);
    return value;
  };
  const env: Record<string, string> = {};
  for (const source of container.envFrom ?? []) {
    if (source.configMapRef) {
      const map = manifests.find(
        (m) => m.kind === 'ConfigMap' && m.metadata.name === source.configMapRef!.name,
      );
      if (!map) throw new Error(`envFrom: no ConfigMap ${source.configMapRef.name}`);
      Object.assign(env, (map as unknown as { data: Record<string, string> }).data);
    } else if (source.secretRef) Object.assign(env, secrets[source.secretRef.name] ?? {});
  }
  for (const variable of container.env ?? []) {
    const ref = variable.valueFrom?.secretKeyRef;
    const value = ref ? secretValue(ref.name, ref.key, ref.optional === true) : variable.value;
    if (value === undefined) delete env[variable.name];
    else env[variable.name] = value;
  }
  for (const [name, value] of Object.entries(env)) env[name] = mapped(value);
  return { args: container.args ?? [], env, mounts };
}

/**
 * The Secrets the overlay's comments ask for: `support-sync` with the source's key and the warehouse (and,
 * for `api-key`, the Temporal API key); for `mtls`, `support-sync-temporal-mtls` with the PEM files of `pki`.
 */
export function overlaySecrets(
  overlay: string,
  supportSync: { SUPPORT_API_KEY: string; DESTINATION_URL: string },
  pki: { clientCert: string; clientKey: string; caCert: string },
  temporalApiKey: string,
): Secrets {
  return overlay === 'api-key'
    ? { 'support-sync': { ...supportSync, TEMPORAL_API_KEY: temporalApiKey } }
    : {
        'support-sync': supportSync,
        'support-sync-temporal-mtls': {
          'tls.crt': readFileSync(pki.clientCert, 'utf8'),
          'tls.key': readFileSync(pki.clientKey, 'utf8'),
          'ca.crt': readFileSync(pki.caCert, 'utf8'),
        },
      };
}
