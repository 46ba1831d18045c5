/**
 * Reads of a worker's `/metrics` (Prometheus text format) for the benches: sums of a metric over its label
 * sets, and the Temporal SDK's latency histograms as totals, so that a bench can take the difference
 * between two scrapes.
 */

/** Every sample of a scrape: `name{labels} value` lines, comments skipped. */
export function parseSamples(text: string): Array<{ name: string; labels: string; value: number }> {
  const out: Array<{ name: string; labels: string; value: number }> = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (m) out.push({ name: m[1]!, labels: m[2] ?? '', value: Number(m[3]) });
  }
  return out;
}

/** The sum of `name` over all its label sets (0 when absent). */
export function metricSum(text: string, name: string): number {
  let total = 0;
  for (const s of parseSamples(text)) if (s.name === name && Number.isFinite(s.value)) total += s.value;
  return total;
}

export async function scrape(url: string): Promise<string> {
  const res = await fetch(url);
  return res.text();
}

/** The Temporal SDK histograms (seconds) that make a page's round trip, as totals of one scrape. */
export interface TemporalTotals {
  /** Activity tasks: scheduled → picked up by a worker (queue wait). */
  activityScheduleToStart: { sum: number; count: number };
  /** Activity execution in the worker (the API request and the warehouse write, for a page). */
  activityExecution: { sum: number; count: number };
  /** Workflow tasks: scheduled → picked up. */
  workflowTaskScheduleToStart: { sum: number; count: number };
  /** Workflow tasks: executed in the worker (the workflow code deciding the next page). */
  workflowTaskExecution: { sum: number; count: number };
}

const histogram = (text: string, base: string) => ({
  sum: metricSum(text, `${base}_sum`),
  count: metricSum(text, `${base}_count`),
});

export function temporalTotals(text: string): TemporalTotals {
  return {
    activityScheduleToStart: histogram(text, 'temporal_activity_schedule_to_start_latency_seconds'),
    activityExecution: histogram(text, 'temporal_activity_execution_latency_seconds'),
    workflowTaskScheduleToStart: histogram(text, 'temporal_workflow_task_schedule_to_start_latency_seconds'),
    workflowTaskExecution: histogram(text, 'temporal_workflow_task_execution_latency_seconds'),
  };
}

/** `after − before`, histogram by histogram. */
export function temporalDelta(before: TemporalTotals, after: TemporalTotals): TemporalTotals {
  const d = (k: keyof TemporalTotals) => ({
    sum: after[k].sum - before[k].sum,
    count: after[k].count - before[k].count,
  });
  return {
    activityScheduleToStart: d('activityScheduleToStart'),
    activityExecution: d('activityExecution'),
    workflowTaskScheduleToStart: d('workflowTaskScheduleToStart'),
    workflowTaskExecution: d('workflowTaskExecution'),
  };
}
