import type { MissingData } from '../schemas/run-summary.js';
import { ALL_STREAMS, STREAMS, type StreamName, THREADS_STREAM } from '../schemas/streams.js';
import type { ActivityDeps } from './deps.js';

/**
 * What the warehouse is known to be missing, read from the warehouse itself so it holds across runs and
 * workers: items set aside (`_rejected`, not stored since) per table, and threads whose last read failed
 * (thread-queue entries left `failed`). Both come back by themselves: every run re-reads the ticket list
 * and the reference streams, re-queues failed threads and threads with rejected messages, and re-reads the
 * export windows holding rejected items.
 *
 * Only of the run's `streams` (absent: every stream): a stream left out is not read, so what it misses
 * cannot come back in this run and does not make it incomplete; it counts again once it is selected.
 */
export function missingData(deps: ActivityDeps) {
  return async (input: { streams?: readonly StreamName[] } = {}): Promise<MissingData> => {
    const { destination } = deps;
    const tables = [...new Set((input.streams ?? ALL_STREAMS).map((s) => STREAMS[s].table))];
    const rejected: Record<string, number> = {};
    for (const r of await destination.bookkeeping.openRejections())
      if ((tables as readonly string[]).includes(r.table_name))
        rejected[r.table_name] = (rejected[r.table_name] ?? 0) + r.items;
    const withThreads = input.streams?.includes(THREADS_STREAM) ?? true;
    const failed = withThreads
      ? await destination.listCheckpoints({ threadQueue: true, status: 'failed' })
      : [];
    const parts = [
      ...Object.entries(rejected).map(
        ([table, n]) => `${n} ${table} item${n === 1 ? '' : 's'} set aside in _rejected`,
      ),
      ...(failed.length > 0
        ? [
            `${failed.length} thread${failed.length === 1 ? '' : 's'} failed (their messages may be stale or missing)`,
          ]
        : []),
    ];
    return {
      rejected,
      failedThreads: failed.length,
      summary:
        parts.length === 0
          ? null
          : `${parts.join('; ')} — see \`status\`; the next run reads them again (a fix on the source side, or in the connector for a rule it should not enforce, brings them in)`,
    };
  };
}
