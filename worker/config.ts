import { readFileSync } from 'node:fs';
import { isMap, isScalar, parseDocument, parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import type { AuditRequests } from '../schemas/audit.js';
import {
  type BusinessHoursSource,
  Config,
  ConfigFromEnv,
  QUEUED_ROUTE_CLASSES,
  type ReportQueriesSource,
  SPEC_CLASS_LIMITS,
} from '../schemas/config.js';
import type { SyncSettings } from '../schemas/run-input.js';
import { classTaskQueue } from '../schemas/workflow-names.js';
import { DEFAULT_WORKSPACE, WorkspaceId } from '../schemas/workspaces.js';
import { workspaceSettings } from './workspace-config.js';

/** A configuration that failed validation: one message per problem, printed by the CLI before exit 2. */
export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.problems = problems;
  }
}

/**
 * A YAML (or JSON) file, read and parsed, or the problem that kept it from being read (`format` names what
 * the file should have been). The one place configuration touches the file system.
 */
function readYamlFile(path: string, format: string): { content: unknown } | { problem: string } {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    return { problem: `cannot read the file (${(err as NodeJS.ErrnoException).code ?? 'error'})` };
  }
  try {
    return { content: parseYaml(text) };
  } catch (err) {
    return { problem: `not valid ${format} (${(err as Error).message.split('\n')[0]})` };
  }
}

/**
 * Whether a setting was given (in the environment, or in the `--config` file), as opposed to left to its
 * default: commands that embed what is not configured (a dev server, the embedded warehouse) ask this, so
 * that a `--config` file (e.g. the running demo's `.data/demo.yaml`) counts as configuring it.
 */
export function isConfigured(
  name: string,
  file: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): boolean {
  if (env[name]) return true;
  if (!file) return false;
  const read = readYamlFile(file, 'YAML/JSON');
  if ('problem' in read) return false; // loadConfig reports the problem
  const content = read.content as Record<string, unknown> | null;
  return content !== null && typeof content === 'object' && content[name] != null && content[name] !== '';
}

/**
 * A `--config` file: a mapping of VARIABLE: value, each value read as the text written (YAML's core schema
 * would read `0x00123` as 291, `1e3` as 1000, `012` as 12: settings are strings, as in the environment). An
 * empty value, `~` or `null` leaves the setting unset; a list or mapping as a value is a problem.
 */
export function readSettingsFile(
  file: string,
): { settings: Record<string, string | undefined> } | { problems: string[] } {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    return {
      problems: [
        `--config ${file}: cannot read the file (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
      ],
    };
  }
  const doc = parseDocument(text);
  if (doc.errors.length > 0)
    return { problems: [`--config ${file}: not valid YAML/JSON (${doc.errors[0]!.message.split('\n')[0]})`] };
  if (!isMap(doc.contents)) return { problems: [`--config ${file}: expected a mapping of VARIABLE: value`] };
  const settings: Record<string, string | undefined> = {};
  const problems: string[] = [];
  for (const pair of doc.contents.items) {
    const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
    const value = pair.value;
    if (value === null || (isScalar(value) && value.value === null)) settings[key] = undefined;
    else if (!isScalar(value))
      problems.push(`${key} (in ${file}): expected a single value, not a list or mapping`);
    // A plain scalar as written; a quoted or block one as its text.
    else
      settings[key] =
        value.type === 'PLAIN' && value.source !== undefined ? value.source : String(value.value);
  }
  return problems.length > 0 ? { problems } : { settings };
}

/** The REPORT_QUERIES file at `path`, read for the schema that validates it (`ReportQueriesSource`). */
export function readReportQueries(path: string): z.input<typeof ReportQueriesSource> {
  return { path, ...readYamlFile(path, 'YAML') };
}

/** The SYNC_BUSINESS_HOURS file at `path`, read for the schema that validates it (`BusinessHoursSource`). */
export function readBusinessHours(path: string): z.input<typeof BusinessHoursSource> {
  return { path, ...readYamlFile(path, 'YAML/JSON') };
}

/**
 * Reads the configuration from an optional YAML/JSON file (keys are the environment names) overlaid by the
 * environment; empty values count as unset (docker-compose passes `VAR=` for unset optionals). Problems are
 * reported all at once, each naming the variable — never echoing a secret's value.
 */
/**
 * How a command loads its configuration. `sourceKeyNeeded: false`: a command that never calls the API
 * (`status`) loads a workspace whose key it cannot read (an on-call machine without the workspaces' keys).
 */
export interface LoadOptions {
  readonly sourceKeyNeeded?: boolean;
}

export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  file?: string,
  overrides: Record<string, string> = {},
  options: LoadOptions = {},
): Config {
  const config = parseConfig(env, file, overrides, options);
  sources.set(config, { env, file, overrides, options });
  return config;
}

/** Where each loaded configuration came from, so that a worker can load its other workspaces the same way. */
const sources = new WeakMap<
  Config,
  {
    env: NodeJS.ProcessEnv;
    file: string | undefined;
    overrides: Record<string, string>;
    options: LoadOptions;
  }
>();

/**
 * How to load the configuration of another workspace from the same environment, `--config` file and
 * overrides as `config` (read again at each call: the workspaces file may have changed). Throws a
 * ConfigError naming the workspace's problem.
 */
export function workspaceConfigLoader(config: Config): (workspace: string) => Config {
  const source = sources.get(config);
  if (!source) throw new Error('workspaceConfigLoader: the configuration was not made by loadConfig');
  return (workspace) =>
    parseConfig(source.env, source.file, { ...source.overrides, SYNC_WORKSPACE: workspace }, source.options);
}

function parseConfig(
  env: NodeJS.ProcessEnv,
  file: string | undefined,
  overrides: Record<string, string>,
  options: LoadOptions,
): Config {
  const fromFile: Record<string, unknown> = {};
  if (file) {
    const read = readSettingsFile(file);
    if ('problems' in read) throw new ConfigError(read.problems);
    Object.assign(fromFile, read.settings);
  }
  const known = new Set(Object.keys(ConfigFromEnv.shape));
  const unknownInFile = Object.keys(fromFile).filter((k) => !known.has(k));
  const input: Record<string, unknown> = { ...fromFile };
  for (const key of known) {
    const value = overrides[key] ?? env[key];
    if (value !== undefined && value !== '') input[key] = value;
  }
  for (const key of Object.keys(input)) if (input[key] === '') delete input[key];
  // Another workspace than the deployment's own: its entry replaces the URL, the key, the schema and the
  // settings it sets, and every problem names it.
  const workspace = typeof input['SYNC_WORKSPACE'] === 'string' ? input['SYNC_WORKSPACE'] : DEFAULT_WORKSPACE;
  // An id that is not a slug is left to the schema, which says so.
  const ofWorkspace = workspace !== DEFAULT_WORKSPACE && WorkspaceId.safeParse(workspace).success;
  if (ofWorkspace) {
    const resolved = workspaceSettings(workspace, input, env, {
      keyNeeded: options.sourceKeyNeeded ?? true,
    });
    if ('problems' in resolved) throw new ConfigError(resolved.problems);
    Object.assign(input, resolved.settings);
  }
  const queriesPath = input['REPORT_QUERIES'];
  if (typeof queriesPath === 'string') input['REPORT_QUERIES'] = readReportQueries(queriesPath);
  const hoursPath = input['SYNC_BUSINESS_HOURS'];
  if (typeof hoursPath === 'string') input['SYNC_BUSINESS_HOURS'] = readBusinessHours(hoursPath);
  const result = Config.safeParse(input);
  const problems = unknownInFile.map((k) => `${k} (in ${file}): unknown setting`);
  if (!result.success) {
    for (const issue of result.error.issues) {
      const name = issue.path.join('.') || '(config)';
      const message =
        issue.code === 'invalid_type' && input[name] === undefined ? 'is required' : issue.message;
      problems.push(`${ofWorkspace ? `workspace "${workspace}": ` : ''}${name}: ${message}`);
    }
  }
  if (problems.length) throw new ConfigError(problems);
  return result.data!;
}

/** The per-run settings (plain JSON, part of the workflow input) derived from the configuration. */
export function settingsFromConfig(config: Config, _now?: Date): SyncSettings {
  const start = config.SYNC_START_DATE
    ? new Date(
        /T/.test(config.SYNC_START_DATE) ? config.SYNC_START_DATE : `${config.SYNC_START_DATE}T00:00:00Z`,
      )
    : null;
  return {
    startDate: start?.toISOString() ?? null,
    lookbackMs: config.SYNC_LOOKBACK,
    windowMs: config.SYNC_WINDOW,
    threadLookbackMs: config.SYNC_THREAD_LOOKBACK,
    sweepPagesPerRun: config.SYNC_SWEEP_PAGES_PER_RUN,
    threadReverifyPerRun: config.SYNC_THREAD_REVERIFY_PER_RUN,
    pageSize: config.SYNC_PAGE_SIZE,
    streamParallelism: config.SYNC_STREAM_PARALLELISM,
    // Thread lanes of a run. Against the API's limits the fleet budget paces them and a few lanes keep up;
    // without limits they share the worker's cores with its warehouse writes, and on 2 cores 8 lanes read
    // 3,000 threads faster than 16 (bench:throughput: 15.3–16.2 s against 17.5–18.6 s, fewer merges
    // waiting on each table's lock) while one slow thread still leaves 7 lanes reading.
    threadConcurrency: 8,
    sourcePatienceMs: config.SYNC_SOURCE_PATIENCE,
    analyticsTaskQueue: analyticsQueueOf(config.TEMPORAL_TASK_QUEUE),
    csatIncludeComments: config.SYNC_CSAT_COMMENTS,
    ...(config.REPORT_QUERIES ? { reportQueries: config.REPORT_QUERIES.queries } : {}),
    ...auditOf(config),
  };
}

/**
 * The audit's budget per run: SYNC_AUDIT_SHARE of each class's limit per rate window, rounded down (the
 * spec's limits when SUPPORT_API_RATE_LIMITS is off: the share is still of what a real key would have).
 * At the defaults, 12 detail requests (6 tickets, 6 threads) and 1 analytics request (a window of surveys
 * or of sessions, by turns) per run. Undefined at a share of 0: no audit.
 */
export function auditRequestsOf(config: Config): AuditRequests | undefined {
  if (config.SYNC_AUDIT_SHARE === 0) return undefined;
  const limits = config.SUPPORT_API_RATE_LIMITS ?? SPEC_CLASS_LIMITS;
  return Object.fromEntries(
    QUEUED_ROUTE_CLASSES.map((c) => [c, Math.floor(config.SYNC_AUDIT_SHARE * limits[c] + 1e-9)]),
  );
}

export function analyticsQueueOf(taskQueue: string): string {
  return classTaskQueue(taskQueue, 'analytics');
}

function auditOf(config: Config): Pick<SyncSettings, 'auditRequests'> {
  const auditRequests = auditRequestsOf(config);
  return auditRequests ? { auditRequests } : {};
}
