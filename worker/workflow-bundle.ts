import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, type WorkflowBundleOption } from '@temporalio/worker';
import { sourceBundleCache } from './source-bundle-cache.js';

const RUNNING_FROM_SOURCE = extname(fileURLToPath(import.meta.url)) === '.ts';
const PROJECT_ROOT = fileURLToPath(new URL('../', import.meta.url));

/**
 * The workflows' entry module: the TypeScript source when this runs from source (tsx), the compiled
 * JavaScript when it runs from `dist/`.
 */
export const WORKFLOWS_PATH = fileURLToPath(
  new URL(`../workflows/index${RUNNING_FROM_SOURCE ? '.ts' : '.js'}`, import.meta.url),
);

/** The workflow interceptors every bundle registers: a run's workspace reaching all it starts. */
const INTERCEPTORS_PATH = fileURLToPath(
  new URL(`../workflows/workspace-interceptors${RUNNING_FROM_SOURCE ? '.ts' : '.js'}`, import.meta.url),
);

/** The bundle's file name under `dist/`, where `npm run build` (and so the image's build stage) writes it. */
export const BUILT_BUNDLE_FILE = 'workflow-bundle.js';

/** Where a worker running from `dist/` finds the bundle the build wrote. */
const BUILT_BUNDLE_PATH = fileURLToPath(new URL(`../${BUILT_BUNDLE_FILE}`, import.meta.url));

/**
 * The one way the workflows are bundled (the build, the test suite's global setup, the replay test,
 * `record-histories`, a worker running from source): webpack over the workflows' entry module (or another
 * one: a test's changed build), quiet but for the bundler's errors.
 */
export async function bundleWorkflows(workflowsPath = WORKFLOWS_PATH): Promise<string> {
  const none = () => undefined;
  const { code } = await bundleWorkflowCode({
    workflowsPath,
    workflowInterceptorModules: [INTERCEPTORS_PATH],
    logger: {
      trace: none,
      debug: none,
      info: none,
      warn: none,
      log: none,
      error: (message: string) => process.stderr.write(`[workflow bundle] ${message}\n`),
    } as never,
  });
  return code;
}

export interface LoadedWorkflows {
  bundle: WorkflowBundleOption;
  /** The first 12 hex digits of the bundle's SHA-256: part of the default build id. */
  contentHash: string;
  /**
   * `built`: the bundle `npm run build` wrote; `bundled at start`: this process bundled the source;
   * `source bundle reused`: an earlier start's bundle of the same source (worker/source-bundle-cache.ts).
   */
  origin: 'built' | 'bundled at start' | 'source bundle reused';
}

export function contentHashOf(code: string): string {
  return createHash('sha256').update(code).digest('hex').slice(0, 12);
}

let loaded: Promise<LoadedWorkflows> | undefined;

/**
 * The workflows a worker of this process runs, loaded once per process. From `dist/` (the image, `node
 * dist/cli/main.js`) the bundle the build wrote, never a fresh one: the build id names exactly what was
 * built, and start-up skips webpack (seconds). From source (tsx, development) the source is bundled here,
 * so an edit is picked up by the next start (a start with the sources unchanged reuses the last bundle).
 */
export function loadWorkflows(): Promise<LoadedWorkflows> {
  loaded ??= (async (): Promise<LoadedWorkflows> => {
    if (RUNNING_FROM_SOURCE) {
      const cache = await sourceBundleCache(PROJECT_ROOT, WORKFLOWS_PATH);
      const cached = await cache.read();
      if (cached !== null) {
        return {
          bundle: { code: cached },
          contentHash: contentHashOf(cached),
          origin: 'source bundle reused',
        };
      }
      const code = await bundleWorkflows();
      await cache.write(code);
      return { bundle: { code }, contentHash: contentHashOf(code), origin: 'bundled at start' };
    }
    const code = await readFile(BUILT_BUNDLE_PATH, 'utf8').catch((err: NodeJS.ErrnoException) => {
      throw new Error(
        `the workflow bundle ${BUILT_BUNDLE_PATH} cannot be read (${err.code ?? err.message}): \`npm run build\` writes it`,
      );
    });
    return { bundle: { codePath: BUILT_BUNDLE_PATH }, contentHash: contentHashOf(code), origin: 'built' };
  })();
  loaded.catch(() => {
    loaded = undefined;
  });
  return loaded;
}
