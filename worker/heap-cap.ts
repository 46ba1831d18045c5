import v8 from 'node:v8';
import type { Logger } from 'pino';

/**
 * The V8 heap cap of the worker's workflow thread. The Temporal SDK runs every workflow of a
 * worker in one worker thread, a V8 isolate of its own, whose default old-space limit is V8's for the machine
 * (4 GB on a 24 GB host). Each workflow task there makes garbage (activations, history, payloads) that V8,
 * with that much room, collects late. `--max-old-space-size` set here, before the SDK creates the thread,
 * applies to isolates created after it: the thread's, not the main thread's, whose heap is sized when node
 * starts (activities live there; only NODE_OPTIONS or node's arguments can cap it — the Docker image does).
 * What each limit does to a worker's peak memory: docs/operations/worker-memory.md (bench:pipeline).
 *
 * Not applied when the process was started with `--max-old-space-size` (NODE_OPTIONS or node's own
 * arguments): the operator chose a limit for every isolate.
 */
export function workflowHeapCapMb(
  configuredMb: number,
  nodeOptions: string | undefined,
  execArgv: readonly string[],
): number | null {
  if (configuredMb <= 0) return null;
  const chosen = [nodeOptions ?? '', ...execArgv].some((arg) => /--max[-_]old[-_]space[-_]size/.test(arg));
  return chosen ? null : configuredMb;
}

let applied: number | null | undefined;

/**
 * Caps the heap of isolates this process creates from now on (the workflow thread) at TEMPORAL_WORKFLOW_HEAP_MB,
 * unless the process was started with a limit of its own; once per process, before any worker is created.
 */
export function capWorkflowThreadHeap(configuredMb: number, logger: Logger): void {
  if (applied !== undefined) return;
  applied = workflowHeapCapMb(configuredMb, process.env['NODE_OPTIONS'], process.execArgv);
  if (applied === null) return;
  v8.setFlagsFromString(`--max-old-space-size=${applied}`);
  logger.debug({ workflowHeapMb: applied }, 'workflow thread heap capped');
}

/**
 * How many workflows the capped thread may keep cached (the worker's maxCachedWorkflows), or undefined
 * without a cap. The SDK sizes its default from the heap limit of the thread that creates the worker — the
 * main thread's, ~4 GB on a 24 GB host, hence some 2,300 workflows — not from the workflow thread's: under
 * a 384 MB cap, a worker with many runs open (100 workspaces' runs of ~15 workflows each) grew its cache
 * until the thread died of ERR_WORKER_OUT_OF_MEMORY and the worker shut down. The SDK's own formula
 * (600 workflows per GB above 200 MB, at least 10), applied to the cap; an evicted workflow is replayed.
 */
export function workflowCacheSize(): number | undefined {
  return applied === undefined || applied === null ? undefined : workflowCacheSizeFor(applied);
}

export function workflowCacheSizeFor(heapMb: number): number {
  return Math.max(Math.floor((Math.max(heapMb - 200, 0) * 600) / 1024), 10);
}
