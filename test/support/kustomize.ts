import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';

/**
 * `kustomize build` for the subset deploy/kubernetes uses, so that tests render the overlays without
 * kubectl (none is installed here, nor in CI): `resources` (files, and folders holding a
 * kustomization.yaml), `patches` with a `path` (strategic-merge patches matched by apiVersion, kind and
 * name) and `namespace`. Strategic merge as Kubernetes does it for the fields these manifests touch: maps
 * merge, lists of named things (containers, env, volumes, volumeMounts, ports) merge by name, an item with
 * `$patch: delete` removes its match, any other list is replaced. Anything else in a kustomization is an
 * error, never silently ignored: a field this renderer does not know would make the test's rendering differ
 * from kubectl's.
 */

export type Manifest = Record<string, unknown> & {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
};

const KNOWN_FIELDS = new Set(['apiVersion', 'kind', 'resources', 'patches', 'namespace']);

/** Lists merged item by item, by the key Kubernetes' strategic merge uses for them. */
const MERGE_KEYS: Record<string, string> = {
  containers: 'name',
  initContainers: 'name',
  env: 'name',
  volumes: 'name',
  volumeMounts: 'mountPath',
  ports: 'containerPort',
};

function readDocuments(file: string): Manifest[] {
  return parseAllDocuments(readFileSync(file, 'utf8'))
    .map((doc) => {
      if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0]!.message}`);
      return doc.toJS() as Manifest | null;
    })
    .filter((m): m is Manifest => m !== null);
}

/** The manifests `kustomize build <folder>` prints, in its resources' order. */
export function kustomizeBuild(folder: string): Manifest[] {
  const file = join(folder, 'kustomization.yaml');
  if (!existsSync(file)) throw new Error(`${folder}: no kustomization.yaml`);
  const [kustomization] = readDocuments(file) as unknown as Record<string, unknown>[];
  if (!kustomization) throw new Error(`${file} is empty`);
  const unknown = Object.keys(kustomization).filter((k) => !KNOWN_FIELDS.has(k));
  if (unknown.length > 0) throw new Error(`${file}: this renderer does not handle ${unknown.join(', ')}`);
  let manifests: Manifest[] = [];
  for (const entry of (kustomization['resources'] as string[] | undefined) ?? []) {
    const path = resolve(folder, entry);
    manifests.push(...(statSync(path).isDirectory() ? kustomizeBuild(path) : readDocuments(path)));
  }
  for (const patch of (kustomization['patches'] as { path?: string }[] | undefined) ?? []) {
    const keys = Object.keys(patch);
    if (keys.length !== 1 || !patch.path)
      throw new Error(`${file}: a patch is { path } here (strategic merge), not ${JSON.stringify(patch)}`);
    for (const p of readDocuments(resolve(folder, patch.path))) {
      const at = manifests.findIndex(
        (m) => m.apiVersion === p.apiVersion && m.kind === p.kind && m.metadata.name === p.metadata.name,
      );
      if (at < 0)
        throw new Error(`${join(folder, patch.path)}: no ${p.kind} ${p.metadata.name} among the resources`);
      manifests[at] = strategicMerge(manifests[at], p, `${p.kind}/${p.metadata.name}`) as Manifest;
    }
  }
  const namespace = kustomization['namespace'] as string | undefined;
  if (namespace) manifests = manifests.map((m) => ({ ...m, metadata: { ...m.metadata, namespace } }));
  return manifests;
}

const isMap = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export function strategicMerge(base: unknown, patch: unknown, where: string, field = ''): unknown {
  if (isMap(base) && isMap(patch)) {
    const merged: Record<string, unknown> = { ...base };
    for (const [key, value] of Object.entries(patch)) {
      if (value === null) delete merged[key];
      else merged[key] = key in base ? strategicMerge(base[key], value, `${where}.${key}`, key) : value;
    }
    return merged;
  }
  const key = MERGE_KEYS[field];
  if (Array.isArray(base) && Array.isArray(patch) && key) {
    const merged = [...base] as Record<string, unknown>[];
    for (const item of patch as Record<string, unknown>[]) {
      const at = merged.findIndex((m) => m[key] === item[key]);
      if (item['$patch'] === 'delete') {
        if (at < 0) throw new Error(`${where}: nothing to delete with ${key} ${String(item[key])}`);
        merged.splice(at, 1);
      } else if (at >= 0)
        merged[at] = strategicMerge(merged[at], item, `${where}[${String(item[key])}]`) as never;
      else merged.push(item);
    }
    return merged;
  }
  return patch;
}

/** The folder of this repository's Kubernetes example. */
export const KUBERNETES_DIR = resolve(dirname(new URL(import.meta.url).pathname), '../../deploy/kubernetes');
