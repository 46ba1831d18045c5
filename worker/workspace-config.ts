import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { parseBigQueryUrl } from '../connectors/bigquery/url.js';
import { defaultWorkspaceSchema, type WorkspaceEntry, WorkspacesFile } from '../schemas/workspaces.js';

/** Settings of a workspace entry that name a file: read relative to the workspaces file, as a user writes them. */
const PATH_SETTINGS = new Set(['SYNC_BUSINESS_HOURS', 'REPORT_QUERIES']);

/** The PostgreSQL schema a deployment's settings give when they name none (ConfigFromEnv's default). */
const DEFAULT_POSTGRES_SCHEMA = 'support';

/**
 * The SYNC_WORKSPACES_FILE at `path`, validated: its entries, or one message per problem, each naming the
 * file, the entry and the field.
 */
export function readWorkspacesFile(path: string): { file: WorkspacesFile } | { problems: string[] } {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    return { problems: [`SYNC_WORKSPACES_FILE ${path}: cannot read the file (${code})`] };
  }
  let content: unknown;
  try {
    content = parseYaml(text);
  } catch (err) {
    return {
      problems: [`SYNC_WORKSPACES_FILE ${path}: not valid YAML (${(err as Error).message.split('\n')[0]})`],
    };
  }
  const result = WorkspacesFile.safeParse(content ?? {});
  if (result.success) return { file: result.data };
  return {
    problems: result.error.issues.map((issue) => {
      const [, index, ...field] = issue.path;
      const entries = (content as { workspaces?: { id?: unknown }[] } | null)?.workspaces;
      const id = typeof index === 'number' ? entries?.[index]?.id : undefined;
      const where =
        typeof index === 'number'
          ? `entry ${index + 1}${typeof id === 'string' ? ` ("${id}")` : ''}: ${field.length > 0 ? `${field.join('.')}: ` : ''}`
          : issue.path.length > 0
            ? `${issue.path.join('.')}: `
            : '';
      return `SYNC_WORKSPACES_FILE ${path}: ${where}${issue.message}`;
    }),
  };
}

/**
 * The settings that make the deployment's configuration (`input`: its settings by environment name) that of
 * workspace `id` of the workspaces file: its URL, its key (read from where the entry says), its schema or
 * dataset, and the settings it sets for itself. Problems name the file, the workspace and the field, never
 * a key.
 */
export function workspaceSettings(
  id: string,
  input: Record<string, unknown>,
  env: NodeJS.ProcessEnv,
  options: { readonly keyNeeded: boolean } = { keyNeeded: true },
): { settings: Record<string, string> } | { problems: string[] } {
  const path = input['SYNC_WORKSPACES_FILE'];
  if (typeof path !== 'string')
    return {
      problems: [`SYNC_WORKSPACE: "${id}" needs SYNC_WORKSPACES_FILE, the file that lists its workspace`],
    };
  const read = readWorkspacesFile(path);
  if ('problems' in read) return read;
  const entry = read.file.workspaces.find((w) => w.id === id);
  if (!entry) {
    const ids = read.file.workspaces.map((w) => w.id);
    return {
      problems: [
        `SYNC_WORKSPACE: "${id}" is not in ${path} (${ids.length > 0 ? `its workspaces: ${ids.join(', ')}` : 'it lists no workspace'})`,
      ],
    };
  }
  const shared = sharedTables(input)
    ? entry.schema === undefined
      ? null
      : `schema "${entry.schema}": with SYNC_WAREHOUSE_LAYOUT=shared-tables every workspace is in the deployment's schema; remove the entry's schema`
    : sharedStorage(entry, read.file.workspaces, input);
  if (shared) return { problems: [`SYNC_WORKSPACES_FILE ${path}: workspace "${id}": ${shared}`] };
  const key = keyOf(entry, path, env);
  if ('problem' in key && options.keyNeeded) return { problems: [key.problem] };
  const settings: Record<string, string> = {
    SUPPORT_API_URL: entry.url,
    // A command that never calls the API gets a placeholder where the key cannot be read.
    SUPPORT_API_KEY: 'key' in key ? key.key : 'not-needed',
    // Shared tables: the deployment's own schema, which the workspace's configuration inherits as it is.
    ...(sharedTables(input) ? {} : storageOf(entry, input)),
  };
  for (const [name, value] of Object.entries(entry.settings ?? {})) {
    if (value === undefined) continue;
    settings[name] = PATH_SETTINGS.has(name) && !isAbsolute(value) ? resolve(dirname(path), value) : value;
  }
  return { settings };
}

/** The workspace's key, from its environment variable or its file (one trailing newline dropped). */
function keyOf(
  entry: WorkspaceEntry,
  path: string,
  env: NodeJS.ProcessEnv,
): { key: string } | { problem: string } {
  const where = `SYNC_WORKSPACES_FILE ${path}: workspace "${entry.id}": key`;
  if ('env' in entry.key) {
    const key = env[entry.key.env];
    return key
      ? { key }
      : { problem: `${where}: the environment variable ${entry.key.env} is not set (or empty)` };
  }
  const file = isAbsolute(entry.key.file) ? entry.key.file : resolve(dirname(path), entry.key.file);
  try {
    const key = readFileSync(file, 'utf8').replace(/\r?\n$/, '');
    return key ? { key } : { problem: `${where}: ${file} is empty` };
  } catch (err) {
    return { problem: `${where}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})` };
  }
}

/** Whether the deployment keeps every workspace in its own schema's tables (SYNC_WAREHOUSE_LAYOUT). */
function sharedTables(input: Record<string, unknown>): boolean {
  return input['SYNC_WAREHOUSE_LAYOUT'] === 'shared-tables';
}

/** The schema (dataset) name of a workspace's storage, or of the deployment's own. */
function storageName(entry: WorkspaceEntry | null, input: Record<string, unknown>): string {
  const url = input['DESTINATION_URL'];
  const deployment =
    typeof url === 'string' && url.startsWith('bigquery://')
      ? parseBigQueryUrl(url).datasetId
      : typeof input['POSTGRES_SCHEMA'] === 'string'
        ? input['POSTGRES_SCHEMA']
        : DEFAULT_POSTGRES_SCHEMA;
  return entry === null ? deployment : (entry.schema ?? defaultWorkspaceSchema(deployment, entry.id));
}

/**
 * Why the workspace's tables would be another's — the deployment's own schema, or another entry's named
 * or derived one (`support_north` named by south) — or null: two workspaces never share a table.
 */
function sharedStorage(
  entry: WorkspaceEntry,
  entries: readonly WorkspaceEntry[],
  input: Record<string, unknown>,
): string | null {
  const own = storageName(entry, input);
  if (own === storageName(null, input))
    return `schema "${own}" is the deployment's own (the workspace default's): two workspaces never share tables`;
  const other = entries.find((e) => e.id !== entry.id && storageName(e, input) === own);
  return other ? `schema "${own}" is workspace "${other.id}"'s too: two workspaces never share tables` : null;
}

/**
 * Where the workspace's tables go: its own PostgreSQL schema, or its own BigQuery dataset in the
 * deployment's project — never the deployment's own, so no two workspaces share a table — and, created by
 * the sync without a BIGQUERY_LOCATION, in the deployment's dataset's location (not BigQuery's default, `US`:
 * a deployment in the EU keeps its workspaces' data there).
 */
function storageOf(entry: WorkspaceEntry, input: Record<string, unknown>): Record<string, string> {
  const url = input['DESTINATION_URL'];
  if (typeof url === 'string' && url.startsWith('bigquery://')) {
    const { projectId, datasetId } = parseBigQueryUrl(url);
    return {
      DESTINATION_URL: `bigquery://${projectId}/${entry.schema ?? defaultWorkspaceSchema(datasetId, entry.id)}`,
      BIGQUERY_DEPLOYMENT_DATASET: datasetId,
    };
  }
  const schema =
    typeof input['POSTGRES_SCHEMA'] === 'string' ? input['POSTGRES_SCHEMA'] : DEFAULT_POSTGRES_SCHEMA;
  return { POSTGRES_SCHEMA: entry.schema ?? defaultWorkspaceSchema(schema, entry.id) };
}
