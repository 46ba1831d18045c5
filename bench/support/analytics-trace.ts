/**
 * Where the analytics class's time goes in one run (bench:classes --trace): from the companion's request
 * log, the gaps between analytics requests' arrivals; from the export windows' workflow histories, each
 * page activity's schedule → start (the task queue's dispatch, retries included) → complete, and the gap
 * from a page's completion to the next page's schedule (a workflow task's round trip).
 */
import type { Client } from '@temporalio/client';
import type { RequestLogEntry } from '../../companion/index.js';
import { routeClassOf } from './harness.js';

const millis = (t: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
  t ? Number(t.seconds ?? 0) * 1000 + Math.round((t.nanos ?? 0) / 1e6) : Number.NaN;

function stats(xs: number[]) {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
  return {
    n: s.length,
    medianS: Number((at(0.5) / 1000).toFixed(2)),
    p90S: Number((at(0.9) / 1000).toFixed(2)),
    maxS: Number((s[s.length - 1]! / 1000).toFixed(2)),
    totalS: Number((s.reduce((a, b) => a + b, 0) / 1000).toFixed(1)),
  };
}

export async function analyticsTrace(
  client: Client,
  runWorkflowId: string,
  entries: readonly RequestLogEntry[],
) {
  const arrivals = entries
    .filter((e) => routeClassOf(e) === 'analytics')
    .map((e) => Date.parse(e.at))
    .sort((a, b) => a - b);
  const gaps = arrivals.slice(1).map((t, i) => t - arrivals[i]!);

  // The export windows are the run's children named `<pass>/<from>/<before>`.
  const parent = await client.workflow.getHandle(runWorkflowId).fetchHistory();
  const windows = (parent.events ?? [])
    .map((e) => e.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId)
    .filter((id): id is string => !!id && /^(csat_surveys|agent_sessions)/.test(id));
  const queued: number[] = [];
  const attempts: number[] = [];
  const running: number[] = [];
  const roundTrip: number[] = [];
  const spans: { start: number; end: number }[] = [];
  for (const id of windows) {
    const history = await client.workflow.getHandle(id).fetchHistory();
    const events = history.events ?? [];
    const scheduled = new Map<string, number>();
    let lastCompleted: number | null = null;
    for (const e of events) {
      const at = millis(e.eventTime);
      const s = e.activityTaskScheduledEventAttributes;
      if (s && s.activityType?.name === 'syncExportPages') {
        scheduled.set(String(e.eventId), at);
        if (lastCompleted !== null) roundTrip.push(at - lastCompleted);
      }
      const st = e.activityTaskStartedEventAttributes;
      if (st && scheduled.has(String(st.scheduledEventId))) {
        queued.push(at - scheduled.get(String(st.scheduledEventId))!);
        attempts.push(st.attempt ?? 1);
      }
      const c = e.activityTaskCompletedEventAttributes;
      if (c && scheduled.has(String(c.scheduledEventId))) {
        const from = scheduled.get(String(c.scheduledEventId))!;
        running.push(at - from);
        spans.push({ start: from, end: at });
        lastCompleted = at;
      }
    }
  }
  // How much of the run some analytics page was scheduled and not yet complete (the class had work).
  spans.sort((a, b) => a.start - b.start);
  let busy = 0;
  let maxConcurrent = 0;
  let cursor = Number.NEGATIVE_INFINITY;
  for (const span of spans) {
    if (span.end > cursor) busy += span.end - Math.max(span.start, cursor);
    cursor = Math.max(cursor, span.end);
    maxConcurrent = Math.max(
      maxConcurrent,
      spans.filter((o) => o.start < span.end && o.end > span.start).length,
    );
  }
  return {
    requests: arrivals.length,
    arrivalGaps: stats(gaps),
    exportWindows: windows.length,
    pageScheduleToStart: stats(queued),
    pageScheduleToComplete: stats(running),
    pageCompleteToNextSchedule: stats(roundTrip),
    retriedAttempts: attempts.filter((a) => a > 1).length,
    pagesScheduledAtOnceMax: maxConcurrent,
    scheduledSpanS: Number((busy / 1000).toFixed(1)),
    firstToLastRequestS: arrivals.length ? Number(((arrivals.at(-1)! - arrivals[0]!) / 1000).toFixed(1)) : 0,
  };
}
