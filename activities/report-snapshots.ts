import { ApplicationFailure } from '@temporalio/activity';
import { SupportApiError } from '../connectors/support-api/index.js';
import type { ReportQuery } from '../schemas/report-query.js';
import { encodeStateKey, REPORT_SNAPSHOTS_STREAM, type StateKey } from '../schemas/state-key.js';
import { type ReportSnapshotInput, reportSnapshotId, reportSnapshotValues } from '../schemas/warehouse.js';
import { readState } from './checkpoints.js';
import type { ActivityDeps } from './deps.js';

/**
 * Takes one snapshot of a saved report query (analytics class: runs on the analytics task queue): runs it
 * with `POST /reports/query`, then writes the snapshot row, its flattened values and the query's
 * checkpoint in one destination transaction. The snapshot id is a hash of (query, timezone, takenAt), so a
 * retry rewrites the same rows; a query already taken at `takenAt` is not asked again.
 *
 * A query the API rejects (400) fails non-retryably, naming the query, the offending line and the API's
 * message.
 */
export function syncReportSnapshot(deps: ActivityDeps) {
  return async (input: { query: ReportQuery; takenAt: string }) => {
    const { destination, client } = deps;
    const { name, query, timezone } = input.query;
    const key: StateKey = { kind: 'report', query: name };
    const previous = await readState(destination, key);
    if (previous?.high_water_mark && Date.parse(previous.high_water_mark) === Date.parse(input.takenAt)) {
      return { rows: 0, values: 0, skipped: true };
    }
    let result: ReportSnapshotInput['result'];
    try {
      result = await client.queryReport({ query, timezone });
    } catch (err) {
      if (err instanceof SupportApiError && err.status === 400) throw rejectedQuery(input.query, err);
      throw err;
    }
    deps.observer?.pageRead(REPORT_SNAPSHOTS_STREAM, null);
    const snapshot: ReportSnapshotInput = { query, timezone, taken_at: input.takenAt, result };
    const values = reportSnapshotValues(snapshot);
    await destination.writeTables(
      [
        { table: 'report_snapshots', rows: [snapshot] },
        { table: 'report_snapshot_values', rows: values },
      ],
      {
        ...encodeStateKey(key),
        cursor: null,
        high_water_mark: input.takenAt,
        status: 'complete',
        pages: (previous?.pages ?? 0) + 1,
        rows: (previous?.rows ?? 0) + 1 + values.length,
      },
    );
    for (const [table, rows] of [
      ['report_snapshots', 1],
      ['report_snapshot_values', values.length],
    ] as const)
      deps.observer?.rowsWritten({
        stream: REPORT_SNAPSHOTS_STREAM,
        table,
        rows,
        rejected: 0,
        newestMs: null,
      });
    return { rows: 1, values: values.length, skipped: false, snapshotId: reportSnapshotId(snapshot) };
  };
}

/** `report query "<name>" rejected (line N: <text>): <API message> (code, request_id)`, non-retryable. */
function rejectedQuery(q: ReportQuery, err: SupportApiError): ApplicationFailure {
  const apiMessage = /HTTP \d+ \S+: ([\s\S]*) \(request_id [^)]*\)$/.exec(err.message)?.[1] ?? err.message;
  const lineNo = Number(/\bline (\d+)\b/.exec(apiMessage)?.[1] ?? Number.NaN);
  const lineText = Number.isInteger(lineNo) ? q.query.split('\n')[lineNo - 1]?.trim() : undefined;
  const where = lineText !== undefined ? ` at line ${lineNo} (${JSON.stringify(lineText)})` : '';
  return ApplicationFailure.create({
    type: err.code,
    message: `report query "${q.name}" rejected by the API${where}: ${apiMessage} (${err.code}, request_id ${err.requestId})`,
    nonRetryable: true,
    details: [
      {
        name: q.name,
        line: Number.isInteger(lineNo) ? lineNo : null,
        code: err.code,
        requestId: err.requestId,
      },
    ],
  });
}
