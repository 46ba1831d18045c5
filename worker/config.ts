import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { type Config, ConfigFromEnv } from '../schemas/config.js';
import { classTaskQueue, type SyncSettings } from '../schemas/sync.js';

/** A configuration that failed validation: one message per problem, printed by the CLI before exit 2. */
export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.problems = problems;
  }
}

/**
 * Reads the configuration from an optional YAML/JSON file (keys are the environment names) overlaid by the
 * environment; empty values count as unset (docker-compose passes `VAR=` for unset optionals). Problems are
 * reported all at once, each naming the variable — never echoing a secret's value.
 */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  file?: string,
  overrides: Record<string, string> = {},
): Config {
  const fromFile: Record<string, unknown> = {};
  if (file) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new ConfigError([
        `--config ${file}: cannot read the file (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
      ]);
    }
    let parsed: unknown;
    try {
      parsed = parseYaml(text);
    } catch (err) {
      throw new ConfigError([
        `--config ${file}: not valid YAML/JSON (${(err as Error).message.split('\n')[0]})`,
      ]);
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      throw new ConfigError([`--config ${file}: expected a mapping of VARIABLE: value`]);
    }
    for (const [key, value] of Object.entries(parsed))
      fromFile[key] = value === null ? undefined : String(value);
  }
  const known = new Set(Object.keys(ConfigFromEnv.shape));
  const unknownInFile = Object.keys(fromFile).filter((k) => !known.has(k));
  const input: Record<string, unknown> = { ...fromFile };
  for (const key of known) {
    const value = overrides[key] ?? env[key];
    if (value !== undefined && value !== '') input[key] = value;
  }
  for (const key of Object.keys(input)) if (input[key] === '') delete input[key];
  const result = ConfigFromEnv.safeParse(input);
  const problems = unknownInFile.map((k) => `${k} (in ${file}): unknown setting`);
  if (!result.success) {
    for (const issue of result.error.issues) {
      const name = issue.path.join('.') || '(config)';
      const message =
        issue.code === 'invalid_type' && input[name] === undefined ? 'is required' : issue.message;
      problems.push(`${name}: ${message}`);
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
    threadBatchSize: 50,
    threadConcurrency: 16,
    sourcePatienceMs: config.SYNC_SOURCE_PATIENCE,
    analyticsTaskQueue: analyticsQueueOf(config.TEMPORAL_TASK_QUEUE),
    csatIncludeComments: config.SYNC_CSAT_COMMENTS,
    ...(config.REPORT_QUERIES ? { reportQueries: config.REPORT_QUERIES.queries } : {}),
  };
}

export function analyticsQueueOf(taskQueue: string): string {
  return classTaskQueue(taskQueue, 'analytics');
}
