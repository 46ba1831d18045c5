import { Channel, Priority, TicketStatus } from '../../schemas/api/index.js';
import type { MetricFormat } from '../../schemas/api/reports.js';
import type { World } from '../world/index.js';
import { METRIC_BY_ID, type MetricDef } from './catalog.js';
import {
  type CategoryDimension,
  CHART_TYPES,
  GRAINS,
  type Grain,
  type ParsedQuery,
  QueryError,
  TICKET_DIMENSIONS,
  type VisType,
} from './parser.js';

/**
 * The semantic rules of spec 4.12 on top of the grammar: metric ids, the visualization rules 1–6, snapshot and
 * automation restrictions, breakdown counts, ORDER BY / LIMIT / OPTIONS applicability and WHERE values. The
 * result is a plan the engine executes. Errors name the line of the clause at fault.
 */
export type Breakdown =
  | { kind: 'none' }
  | { kind: 'time'; grain: Grain }
  | { kind: 'category'; dimension: CategoryDimension };
export type Shape = 'kpi' | 'time-series' | 'category' | 'data_table';

export interface Plan {
  query: ParsedQuery;
  shown: MetricDef[];
  visualized: MetricDef[];
  shape: Shape;
  breakdown: Breakdown;
  /** Shared format of chart metrics (KPI: its metric's format). */
  format: MetricFormat;
}

const CHARTS: ReadonlySet<VisType> = new Set(CHART_TYPES);
/** Our cap on a SINCE … UNTIL span and on hourly series (see companion/README.md). */
export const MAX_RANGE_DAYS = 366;
export const MAX_HOURLY_DAYS = 31;
const LANGUAGE = /^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$/;

/** Category dimensions each family supports (spec 4.12 rules 5, 6). */
function dimensionsOf(m: MetricDef): readonly CategoryDimension[] {
  if (m.family === 'automation')
    return m.id === 'ai_spend' || m.id === 'ai_credits_used' ? [] : ['action_type'];
  if (m.family === 'presence') return ['human_agent'];
  return TICKET_DIMENSIONS;
}
function grainsOf(m: MetricDef): readonly Grain[] {
  if (m.snapshot) return [];
  if (m.family === 'automation') return ['day'];
  return GRAINS;
}

export function validatePlan(q: ParsedQuery, world: World, orgId: string): Plan {
  const fail = (line: number, problem: string): never => {
    throw new QueryError(line, problem);
  };
  const shown = q.show.ids.map((id) => METRIC_BY_ID.get(id) ?? fail(q.show.line, `unknown metric '${id}'`));
  const visualized = q.visualize.ids.map((id) =>
    q.show.ids.includes(id)
      ? (METRIC_BY_ID.get(id) as MetricDef)
      : fail(q.visualize.line, `metric '${id}' is not in SHOW (line ${q.show.line})`),
  );
  const vis = q.visualize.type;
  const vline = q.visualize.line;

  // Breakdown: GROUP BY <grain> and TIMESERIES <grain> both mean a time breakdown; only one breakdown at a time.
  let breakdown: Breakdown = { kind: 'none' };
  const g = q.groupBy;
  if (g && (GRAINS as readonly string[]).includes(g.dimension))
    breakdown = { kind: 'time', grain: g.dimension as Grain };
  else if (g) breakdown = { kind: 'category', dimension: g.dimension as CategoryDimension };
  if (q.timeseries) {
    if (breakdown.kind !== 'none') {
      fail(
        q.timeseries.line,
        `TIMESERIES cannot be combined with GROUP BY ${g?.dimension} (line ${g?.line}); one breakdown per query`,
      );
    }
    breakdown = { kind: 'time', grain: q.timeseries.grain };
  }
  const breakdownLine = q.timeseries?.line ?? g?.line ?? vline;

  // Families: automation metrics stand alone (rule 5).
  const automation = shown.filter((m) => m.family === 'automation');
  const other = shown.find((m) => m.family !== 'automation');
  if (automation.length > 0 && other) {
    fail(q.show.line, `automation metric '${automation[0]?.id}' cannot be shown with '${other.id}'`);
  }

  // Snapshot metrics (rule 4): no time dimension, no comparison, DURING required.
  const snap = shown.find((m) => m.snapshot);
  if (snap) {
    if (q.period.kind !== 'during')
      fail(q.period.line, `snapshot metric '${snap.id}' needs DURING, not SINCE … UNTIL`);
    if (breakdown.kind === 'time')
      fail(breakdownLine, `snapshot metric '${snap.id}' takes no time dimension`);
    if (q.compare) fail(q.compare.line, `snapshot metric '${snap.id}' takes no COMPARE TO`);
  }

  // Per-metric support of the breakdown (rule 6).
  for (const m of shown) {
    if (breakdown.kind === 'time' && !grainsOf(m).includes(breakdown.grain)) {
      const allowed = grainsOf(m);
      fail(
        breakdownLine,
        `metric '${m.id}' does not support ${breakdown.grain} breakdowns${allowed.length ? `; supported: ${allowed.join(', ')}` : ''}`,
      );
    }
    if (breakdown.kind === 'category' && !dimensionsOf(m).includes(breakdown.dimension)) {
      fail(breakdownLine, `metric '${m.id}' cannot be grouped by ${breakdown.dimension}`);
    }
  }

  // Range limits (our choice).
  if (q.period.kind === 'range') {
    const days = (Date.parse(q.period.until) - Date.parse(q.period.since)) / 86_400_000 + 1;
    if (days > MAX_RANGE_DAYS)
      fail(q.period.line, `SINCE … UNTIL spans ${days} days; at most ${MAX_RANGE_DAYS}`);
    if (breakdown.kind === 'time' && breakdown.grain === 'hour' && days > MAX_HOURLY_DAYS) {
      fail(breakdownLine, `hourly breakdowns cover at most ${MAX_HOURLY_DAYS} days; this range has ${days}`);
    }
  }

  // Visualization rules 1–3.
  let shape: Shape;
  if (vis === 'kpi') {
    if (visualized.length !== 1) fail(vline, `a kpi takes exactly one metric, got ${visualized.length}`);
    if (breakdown.kind !== 'none') fail(breakdownLine, 'a kpi takes no GROUP BY or TIMESERIES');
    shape = 'kpi';
  } else if (vis === 'data_table') {
    if (breakdown.kind === 'none')
      fail(vline, 'a data_table needs exactly one breakdown (GROUP BY or TIMESERIES)');
    shape = 'data_table';
  } else {
    const formats = new Set(visualized.map((m) => m.format));
    if (formats.size > 1) fail(vline, `chart metrics must share one format; got ${[...formats].join(', ')}`);
    if (breakdown.kind === 'none') fail(vline, `a ${vis} chart needs a breakdown (GROUP BY or TIMESERIES)`);
    if (breakdown.kind === 'time') {
      if (vis === 'horizontal_bar')
        fail(vline, 'a horizontal_bar chart takes a category breakdown, not a time series');
      shape = 'time-series';
    } else {
      if (vis === 'line' || vis === 'area') fail(vline, `a ${vis} chart needs a time breakdown (TIMESERIES)`);
      if (visualized.length !== 1)
        fail(vline, `a category chart takes one metric, got ${visualized.length}; use data_table`);
      shape = 'category';
    }
  }
  if (CHARTS.has(vis) && automation.length > 0 && breakdown.kind === 'time' && breakdown.grain !== 'day') {
    fail(breakdownLine, 'automation metrics support daily charts only');
  }

  if (q.compare && shape !== 'kpi' && shape !== 'time-series') {
    fail(q.compare.line, `COMPARE TO applies to kpi and time series results, not ${shape}`);
  }
  if (q.orderBy) {
    if (shape === 'kpi' || shape === 'time-series')
      fail(q.orderBy.line, `ORDER BY does not apply to ${shape} results`);
    const f = q.orderBy.field;
    if (f !== 'label' && !q.visualize.ids.includes(f))
      fail(q.orderBy.line, `ORDER BY field '${f}' is neither label nor a visualized metric`);
  }
  if (q.limit && (shape === 'kpi' || shape === 'time-series'))
    fail(q.limit.line, `LIMIT does not apply to ${shape} results`);
  if (q.options?.values.showAverageRow !== undefined && shape !== 'data_table') {
    fail(q.options.line, 'showAverageRow applies to data_table only');
  }

  // WHERE values and per-family support.
  for (const w of q.where) {
    for (const m of shown) {
      const ok =
        m.family === 'presence'
          ? w.field === 'team' || w.field === 'human_agent'
          : m.family !== 'automation' || w.field !== 'human_agent';
      if (!ok) fail(w.line, `metric '${m.id}' cannot be filtered by ${w.field}`);
    }
    if (w.op === 'is' && w.values.length !== 1) fail(w.line, `'is' takes one value`);
    for (const v of w.values) {
      const bad = (what: string) => fail(w.line, `${what} '${v}' for ${w.field}`);
      switch (w.field) {
        case 'channel':
          if (!Channel.safeParse(v).success) bad('unknown channel');
          break;
        case 'status':
          if (!TicketStatus.safeParse(v).success) bad('unknown status');
          break;
        case 'priority':
          if (!Priority.safeParse(v).success) bad('unknown priority');
          break;
        case 'language':
          if (!LANGUAGE.test(v)) bad('not a language code');
          break;
        case 'team':
          if (!world.teams.some((t) => t.orgId === orgId && t.id === v)) bad('unknown team id');
          break;
        case 'human_agent':
          if (!world.agents.some((a) => a.orgId === orgId && a.id === v)) bad('unknown agent id');
          break;
      }
    }
  }
  const first = visualized[0] as MetricDef;
  return { query: q, shown, visualized, shape, breakdown, format: first.format };
}
