import type { SupportApiClient } from '../../connectors/support-api/index.js';
import type { ReportResult } from '../../schemas/api/index.js';
import { type MetricValues, putValue, type TieOutWindow, wholePeriod } from './periods.js';
import { apiQueries } from './queries.js';

/**
 * Runs the queries (UTC) and files their numbers by metric and period (a day, the whole range, or now). A
 * query the API refuses (a key without the dashboard permission for CSAT …) is not fatal: its metrics are
 * returned in `refused` with the API's message, to be recorded as skipped.
 */
export async function readApi(
  client: SupportApiClient,
  w: TieOutWindow,
  only?: ReadonlySet<string>,
): Promise<{ numbers: MetricValues; refused: Map<string, string> }> {
  const out: MetricValues = new Map();
  const refused = new Map<string, string>();
  const queue = apiQueries(w);
  for (let q = queue.shift(); q !== undefined; q = queue.shift()) {
    if (only && !q.metrics.some((m) => only.has(m))) continue;
    let result: ReportResult;
    try {
      result = await client.queryReport({ query: q.query, timezone: 'UTC' });
    } catch (err) {
      if (!isRefusal(err)) throw err;
      if (q.alone) queue.unshift(...q.alone);
      else for (const id of q.metrics) refused.set(id, err instanceof Error ? err.message : String(err));
      continue;
    }
    if (result.kind === 'data_table') {
      for (const row of result.rows)
        for (const id of q.metrics) putValue(out, id, row.key.slice(0, 10), row.values[id] ?? 0);
    } else if (result.kind === 'time-series') {
      for (const p of result.points)
        for (const id of q.metrics) putValue(out, id, p.date.slice(0, 10), p.values[id] ?? 0);
    } else if (result.kind === 'kpi') {
      const id = q.metrics[0]!;
      putValue(out, id, q.key === 'backlog' ? 'now' : wholePeriod(w), result.value);
    }
  }
  return { numbers: out, refused };
}

/** An API answer that refuses the query itself (permissions, validation), not a failing service. */
function isRefusal(err: unknown): boolean {
  const status = (err as { status?: unknown }).status;
  return typeof status === 'number' && status >= 400 && status < 500 && status !== 429;
}
