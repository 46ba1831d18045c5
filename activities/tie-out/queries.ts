import {
  BACKLOG_NOW,
  CSAT_AVERAGE,
  DAILY_COUNTS,
  DAILY_DURATIONS,
  PERIOD_METRICS,
  type TieOutMetric,
} from './metrics.js';
import { DAY_MS, dayOf, type TieOutWindow } from './periods.js';

/** One report query of the API's side and the metrics its answer carries. */
interface ApiQuery {
  key: string;
  metrics: string[];
  query: string;
  /** The same metrics one query each, for when the API refuses this one. */
  alone?: ApiQuery[];
}

/** The report queries of the API's side: one data table for the days, one KPI per period metric, one for now. */
export function apiQueries(w: TieOutWindow): ApiQuery[] {
  const since = `SINCE ${dayOf(w.fromMs)} UNTIL ${dayOf(w.todayMs)}`;
  const series = (key: string, metrics: readonly TieOutMetric[]): ApiQuery => {
    const ids = metrics.map((m) => m.id);
    return {
      // A metric the key may not see makes the API refuse the whole query: asked again alone.
      ...(metrics.length > 1 ? { alone: metrics.map((m) => series(`${key}:${m.id}`, [m])) } : {}),
      key,
      metrics: ids,
      query: [
        'FROM tickets',
        `SHOW ${ids.join(', ')}`,
        since,
        'TIMESERIES day',
        `VISUALIZE ${ids.join(', ')} TYPE line`,
      ].join('\n'),
    };
  };
  const kpi = (key: string, id: string, during: string) => ({
    key,
    metrics: [id],
    query: ['FROM tickets', `SHOW ${id}`, during, `VISUALIZE ${id} TYPE kpi`].join('\n'),
  });
  const daily = [...DAILY_COUNTS, ...DAILY_DURATIONS, CSAT_AVERAGE];
  const ids = daily.map((m) => m.id);
  return [
    // Every daily metric in one data table by day (one request of the analytics class, 10 a minute); an
    // API that refuses the combination is asked per format, then per metric.
    {
      key: 'daily',
      metrics: ids,
      query: [
        'FROM tickets',
        `SHOW ${ids.join(', ')}`,
        since,
        'GROUP BY day',
        `VISUALIZE ${ids.join(', ')} TYPE data_table`,
      ].join('\n'),
      alone: [
        series('counts', DAILY_COUNTS),
        series('durations', DAILY_DURATIONS),
        series('csat', [CSAT_AVERAGE]),
      ],
    },
    ...PERIOD_METRICS.map((m) => kpi(`period:${m.id}`, m.id, since)),
    kpi('backlog', BACKLOG_NOW.id, 'DURING today'),
  ];
}

/** Report queries a tie-out sends when the API takes each of them (a refusal or a difference asks again). */
export const TIE_OUT_QUERIES = apiQueries({ fromMs: 0, todayMs: DAY_MS }).length;
