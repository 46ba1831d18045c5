import type { MetricFormat, ReportResult } from '../../schemas/api/reports.js';
import type { AgentRecord, DashboardPermission, TicketRecord, World } from '../world/index.js';
import { METRIC_BY_ID, type MetricDef } from './catalog.js';
import { type Aggregation, IMPLS, type SourceContext } from './metrics.js';
import { ACTION_TYPES, type Obs, type OrgIndex, orgIndex } from './observations.js';
import { type CategoryDimension, type ParsedQuery, parseQuery, QueryError } from './parser.js';
import { type Bucket, buckets, comparisonRange, isValidZone, type Range, resolvePeriod } from './periods.js';
import { type Plan, validatePlan } from './validate.js';

/** Who asks: the key's org and linked agent, and the clocks. */
export interface ReportContext {
  world: World;
  orgId: string;
  agent: AgentRecord;
  /** Companion clock (ms): "now" for periods and snapshots. */
  now: number;
  /** Real time (ms) for replica visibility. */
  realNow: number;
}

/** A 400 VALIDATION_ERROR that is not tied to a query line (the timezone). */
export class ReportInputError extends Error {}
/** A 403 FORBIDDEN_SCOPE: the linked agent lacks a dashboard permission. */
export class ReportForbiddenError extends Error {}

/**
 * Dashboard permissions a plan needs (spec 4.12, 5.8; the mapping is our choice, see companion/README.md):
 * every report needs `dashboard.org_metrics`; CSAT metrics `dashboard.ticket_csat`; automation metrics
 * `dashboard.automation_metrics`; online time and any per-agent split or filter on another agent
 * `dashboard.other_agents_metrics`; a split or filter by team `dashboard.team_metrics`.
 */
export function requiredPermissions(plan: Plan, agent: AgentRecord): Array<[DashboardPermission, string]> {
  const need: Array<[DashboardPermission, string]> = [['dashboard.org_metrics', 'reports']];
  for (const m of plan.shown) {
    if (m.family === 'csat') need.push(['dashboard.ticket_csat', m.id]);
    if (m.family === 'automation') need.push(['dashboard.automation_metrics', m.id]);
    if (m.family === 'presence') need.push(['dashboard.other_agents_metrics', m.id]);
  }
  const dim = plan.breakdown.kind === 'category' ? plan.breakdown.dimension : null;
  if (dim === 'human_agent') need.push(['dashboard.other_agents_metrics', 'GROUP BY human_agent']);
  if (dim === 'team') need.push(['dashboard.team_metrics', 'GROUP BY team']);
  for (const w of plan.query.where) {
    if (w.field === 'team') need.push(['dashboard.team_metrics', 'WHERE team']);
    if (w.field === 'human_agent' && w.values.some((v) => v !== agent.id)) {
      need.push(['dashboard.other_agents_metrics', 'WHERE human_agent']);
    }
  }
  return need.filter(([p]) => !agent.permissions.includes(p));
}

// ------------------------------------------------------------------ filtering

interface Filter {
  /** By world ticket index: 1 = the ticket's rows count. */
  mask: Uint8Array;
  /** Whether any ticket-level filter or restriction applies (rows without a ticket are then excluded). */
  ticketFiltered: boolean;
  /** Agent indexes allowed by WHERE human_agent (null = any). */
  agents: Set<number> | null;
  /** Agent ids whose presence counts (null = any), from WHERE and restrictions. */
  presenceAgents: Set<string> | null;
  realNow: number;
}

function buildFilter(q: ParsedQuery, ix: OrgIndex, c: ReportContext): Filter {
  const w = c.world;
  const mask = new Uint8Array(w.tickets.length);
  const r = c.agent.restrictions;
  const sets = new Map<string, Set<string>>();
  for (const clause of q.where) {
    const next = new Set(clause.values);
    const prev = sets.get(clause.field);
    sets.set(clause.field, prev ? new Set([...prev].filter((v) => next.has(v))) : next);
  }
  const channel = sets.get('channel');
  const team = sets.get('team');
  const language = sets.get('language');
  const status = sets.get('status');
  const priority = sets.get('priority');
  const rChannels = r.channels ? new Set<string>(r.channels) : null;
  const rTeams = r.teamIds ? new Set(r.teamIds) : null;
  const rAgents = r.agentIds ? new Set(r.agentIds) : null;
  const ticketFiltered = !!(
    channel ||
    team ||
    language ||
    status ||
    priority ||
    rChannels ||
    rTeams ||
    rAgents
  );
  for (const t of ix.tickets) {
    if (t.deletedAt !== null || t.visibleAt > c.realNow) continue;
    const st = t.replicaShadow === null ? t : w.ticketReplicaState(t, c.realNow);
    if (channel && !channel.has(t.channel)) continue;
    if (rChannels && !rChannels.has(t.channel)) continue;
    if (team && (st.teamId === null || !team.has(st.teamId))) continue;
    if (rTeams && (st.teamId === null || !rTeams.has(st.teamId))) continue;
    if (rAgents && (st.assigneeId === null || !rAgents.has(st.assigneeId))) continue;
    if (language && (t.language === null || !language.has(t.language))) continue;
    if (status && !status.has(st.status)) continue;
    if (priority && !priority.has(st.priority)) continue;
    mask[t.idx] = 1;
  }
  const human = sets.get('human_agent');
  const agents = human ? new Set([...human].map((id) => ix.agent(id))) : null;
  let presenceAgents: Set<string> | null = human ? new Set(human) : null;
  const narrow = (allowed: (a: AgentRecord) => boolean) => {
    const ids = w.agents.filter((a) => a.orgId === c.orgId && allowed(a)).map((a) => a.id);
    presenceAgents = new Set(
      (presenceAgents ? ids.filter((id) => presenceAgents?.has(id)) : ids) as string[],
    );
  };
  if (team) narrow((a) => a.teamIds.some((id) => team.has(id)));
  if (rTeams) narrow((a) => a.teamIds.some((id) => rTeams.has(id)));
  if (rAgents) narrow((a) => rAgents.has(a.id));
  return { mask, ticketFiltered, agents, presenceAgents, realNow: c.realNow };
}

// ------------------------------------------------------------------ aggregation

interface Acc {
  n: number;
  sum: number;
  set: Set<number> | null;
  vals: number[] | null;
}
const newAcc = (agg: Aggregation): Acc => ({
  n: 0,
  sum: 0,
  set: agg === 'distinct' ? new Set() : null,
  vals: agg === 'median' ? [] : null,
});

function finish(acc: Acc | undefined, agg: Aggregation): number {
  if (!acc) return 0;
  switch (agg) {
    case 'count':
      return acc.n;
    case 'distinct':
      return acc.set?.size ?? 0;
    case 'sum':
      return acc.sum;
    case 'mean':
      return acc.n === 0 ? 0 : acc.sum / acc.n;
    case 'percent':
      return acc.n === 0 ? 0 : (100 * acc.sum) / acc.n;
    case 'median': {
      const v = acc.vals ?? [];
      if (v.length === 0) return 0;
      v.sort((a, b) => a - b);
      const mid = v.length >> 1;
      return v.length % 2 === 1 ? (v[mid] as number) : ((v[mid - 1] as number) + (v[mid] as number)) / 2;
    }
  }
}

function lowerBound(a: Float64Array, n: number, x: number): number {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((a[mid] as number) < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

type GroupOf = ((i: number) => string) | null;
/** Values per group key, one per range. */
type Values = Map<string, number[]>;

/** Aggregates the rows of `obs` falling in each of the sorted, disjoint `ranges`. */
function aggregate(obs: Obs, agg: Aggregation, ranges: Range[], f: Filter, groupOf: GroupOf): Values {
  const R = ranges.length;
  const cells = new Map<string, Acc[]>();
  const cellsOf = (key: string): Acc[] => {
    let c = cells.get(key);
    if (!c) {
      c = [];
      cells.set(key, c);
    }
    return c;
  };
  let fixed: Acc[] | null = groupOf ? null : cellsOf('');
  const first = ranges[0];
  if (first) {
    let r = 0;
    let range = first;
    for (let i = lowerBound(obs.at, obs.n, first.start); i < obs.n; i++) {
      const at = obs.at[i] as number;
      while (at >= range.end) {
        r++;
        if (r === R) break;
        range = ranges[r] as Range;
      }
      if (r === R) break;
      if (at < range.start) continue;
      const t = obs.t[i] as number;
      if (t >= 0 ? f.mask[t] !== 1 : f.ticketFiltered) continue;
      if ((obs.vis[i] as number) > f.realNow) continue;
      if (f.agents && !f.agents.has(obs.a[i] as number)) continue;
      const row = fixed ?? cellsOf((groupOf as (i: number) => string)(i));
      let acc = row[r];
      if (!acc) {
        acc = newAcc(agg);
        row[r] = acc;
      }
      const v = obs.v[i] as number;
      acc.n++;
      acc.sum += v;
      acc.set?.add(t);
      acc.vals?.push(v);
    }
  }
  fixed = null;
  const out: Values = new Map();
  for (const [key, row] of cells) {
    const vals: number[] = [];
    for (let r = 0; r < R; r++) vals.push(round(finish(row[r], agg)));
    out.set(key, vals);
  }
  if (!groupOf && !out.has('')) out.set('', new Array(R).fill(0));
  return out;
}

const round = (v: number) => Math.round(v * 1e6) / 1e6;

/** Deduplicated, range-clipped online seconds per agent from login sessions (`agent_online_time`). */
function presence(ix: OrgIndex, ranges: Range[], f: Filter, byAgent: boolean): Values {
  const w = ix.world;
  const intervals = new Map<string, Array<[number, number]>>();
  for (const s of w.sessions) {
    if (s.orgId !== ix.orgId || s.visibleAt > f.realNow) continue;
    if (f.presenceAgents && !f.presenceAgents.has(s.agentId)) continue;
    const shadow = s.replicaShadow !== null && f.realNow < s.replicaShadow.until ? s.replicaShadow : s;
    const end = shadow.end ?? shadow.lastActivity;
    if (end <= s.start) continue;
    let list = intervals.get(s.agentId);
    if (!list) {
      list = [];
      intervals.set(s.agentId, list);
    }
    const last = list[list.length - 1];
    // Sessions are sorted by start: merge overlaps as they come.
    if (last && s.start <= last[1]) last[1] = Math.max(last[1], end);
    else list.push([s.start, end]);
  }
  const out: Values = new Map();
  for (const [agentId, list] of intervals) {
    const key = byAgent ? agentId : '';
    const vals = out.get(key) ?? new Array(ranges.length).fill(0);
    for (const [a, b] of list) {
      ranges.forEach((r, k) => {
        const overlap = Math.min(b, r.end) - Math.max(a, r.start);
        if (overlap > 0) vals[k] += overlap / 1000;
      });
    }
    out.set(key, vals);
  }
  if (!byAgent && !out.has('')) out.set('', new Array(ranges.length).fill(0));
  for (const v of out.values()) for (let k = 0; k < v.length; k++) v[k] = round(v[k] as number);
  return out;
}

const ALL_TIME: Range = { start: Number.NEGATIVE_INFINITY, end: Number.POSITIVE_INFINITY };

class Evaluator {
  readonly ix: OrgIndex;
  readonly src: SourceContext;
  readonly filter: Filter;
  readonly #obs = new Map<string, Obs>();
  constructor(
    readonly plan: Plan,
    readonly c: ReportContext,
  ) {
    this.ix = orgIndex(c.world, c.orgId);
    this.src = { ix: this.ix, now: c.now, realNow: c.realNow };
    this.filter = buildFilter(plan.query, this.ix, c);
  }

  groupOf(dim: CategoryDimension, obs: Obs): (i: number) => string {
    const w = this.c.world;
    const ticket = (i: number): TicketRecord | undefined => w.tickets[obs.t[i] as number];
    const state = (i: number) => {
      const t = ticket(i);
      return t ? w.ticketReplicaState(t, this.c.realNow) : undefined;
    };
    switch (dim) {
      case 'channel':
        return (i) => ticket(i)?.channel ?? 'none';
      case 'language':
        return (i) => ticket(i)?.language ?? 'none';
      case 'team':
        return (i) => state(i)?.teamId ?? 'none';
      case 'status':
        return (i) => state(i)?.status ?? 'none';
      case 'priority':
        return (i) => state(i)?.priority ?? 'none';
      case 'human_agent':
        return (i) => this.ix.agentIds[obs.a[i] as number] ?? 'none';
      case 'action_type':
        return (i) => ACTION_TYPES[obs.k[i] as number] ?? 'none';
    }
  }

  /** Values of one metric per group and range; snapshot metrics ignore the ranges (current state). */
  values(m: MetricDef, ranges: Range[], dim: CategoryDimension | null): Values {
    const impl = IMPLS[m.id];
    if (!impl) throw new Error(`metric ${m.id} has no implementation`);
    if (impl.kind === 'presence') return presence(this.ix, ranges, this.filter, dim === 'human_agent');
    if (impl.kind === 'difference') {
      const left = this.values(metricDef(impl.left), ranges, dim);
      const right = this.values(metricDef(impl.right), ranges, dim);
      const out: Values = new Map();
      for (const key of new Set([...left.keys(), ...right.keys()])) {
        const l = left.get(key) ?? [];
        const r = right.get(key) ?? [];
        out.set(
          key,
          ranges.map((_, k) => (l[k] ?? 0) - (r[k] ?? 0)),
        );
      }
      return out;
    }
    // Per-query memo: fresh (clock- or state-dependent) sources are built once per query, not per period.
    let obs = this.#obs.get(m.id);
    if (!obs) {
      obs = impl.source(this.src);
      this.#obs.set(m.id, obs);
    }
    const rs = m.snapshot ? [ALL_TIME] : ranges;
    const out = aggregate(obs, impl.agg, rs, this.filter, dim ? this.groupOf(dim, obs) : null);
    if (m.snapshot && ranges.length !== 1) {
      for (const [k, v] of out)
        out.set(
          k,
          ranges.map(() => v[0] ?? 0),
        );
    }
    return out;
  }

  total(m: MetricDef, range: Range): number {
    return this.values(m, [range], null).get('')?.[0] ?? 0;
  }
}

function metricDef(id: string): MetricDef {
  const m = METRIC_BY_ID.get(id);
  if (!m) throw new Error(`unknown metric ${id}`);
  return m;
}

// ------------------------------------------------------------------ labels

const CHANNEL_LABELS: Record<string, string> = {
  email: 'Email',
  widget: 'Chat widget',
  whatsapp: 'WhatsApp',
  voice: 'Voice',
  instagram: 'Instagram',
  facebook: 'Facebook',
  tiktok: 'TikTok',
  youtube: 'YouTube',
  contact_form: 'Contact form',
};
const STATUS_LABELS: Record<string, string> = {
  open: 'Open',
  need_more_info: 'Need more info',
  resolved: 'Resolved',
  closed: 'Closed',
};
const ACTION_LABELS: Record<string, string> = {
  ai_reply: 'AI reply',
  auto_tag: 'Auto-tag',
  auto_assign: 'Auto-assign',
  auto_close: 'Auto-close',
  translate: 'Translate',
  summarize: 'Summarize',
};
const languageNames = new Intl.DisplayNames(['en'], { type: 'language' });

function labelOf(dim: CategoryDimension, key: string, world: World): string {
  if (key === 'none') {
    return (
      { channel: 'No channel', team: 'No team', human_agent: 'Unassigned', language: 'No language' }[
        dim as string
      ] ?? 'None'
    );
  }
  switch (dim) {
    case 'channel':
      return CHANNEL_LABELS[key] ?? key;
    case 'team':
      return world.teams.find((t) => t.id === key)?.name ?? key;
    case 'human_agent':
      return key === 'AI' ? 'AI (legacy marker)' : (world.agent(key)?.name ?? key);
    case 'language':
      try {
        return languageNames.of(key) ?? key;
      } catch {
        return key;
      }
    case 'status':
      return STATUS_LABELS[key] ?? key;
    case 'priority':
      return key.charAt(0).toUpperCase() + key.slice(1);
    case 'action_type':
      return ACTION_LABELS[key] ?? key;
  }
}

// ------------------------------------------------------------------ run

interface Row {
  key: string;
  label: string;
  values: Record<string, number>;
}

function orderRows(rows: Row[], q: ParsedQuery, defaultField: string | null): Row[] {
  const field = q.orderBy?.field ?? defaultField;
  if (field === null) return rows;
  const dir = q.orderBy?.direction ?? (field === 'label' ? 'ASC' : 'DESC');
  const sign = dir === 'ASC' ? 1 : -1;
  const byLabel = (a: Row, b: Row) => a.label.localeCompare(b.label, 'en') || a.key.localeCompare(b.key);
  return [...rows].sort((a, b) =>
    field === 'label'
      ? sign * byLabel(a, b)
      : sign * ((a.values[field] ?? 0) - (b.values[field] ?? 0)) || byLabel(a, b),
  );
}

/**
 * Runs a report query (spec 4.12) for the key's agent and returns one of the four result shapes of 2.10.
 * Throws `QueryError` / `ReportInputError` (400) or `ReportForbiddenError` (403).
 */
export function runReport(body: { query: string; timezone: string }, c: ReportContext): ReportResult {
  const zone = body.timezone;
  if (!isValidZone(zone)) throw new ReportInputError(`timezone '${zone}' is not an IANA time zone name`);
  const q = parseQuery(body.query);
  const plan = validatePlan(q, c.world, c.orgId);
  const missing = requiredPermissions(plan, c.agent);
  if (missing.length > 0) {
    throw new ReportForbiddenError(
      `the linked agent lacks ${[...new Set(missing.map(([p]) => p))].join(', ')} (needed for ${missing.map(([, w]) => w).join(', ')})`,
    );
  }
  const ev = new Evaluator(plan, c);
  const main = resolvePeriod(q.period, zone, c.now);
  const compare = q.compare ? comparisonRange(main, q.compare.mode, zone) : null;

  if (plan.shape === 'kpi') {
    const m = plan.visualized[0] as MetricDef;
    const value = ev.total(m, main.range);
    const prevRange = m.snapshot ? null : (compare ?? comparisonRange(main, 'previous_period', zone));
    return { kind: 'kpi', value, previousValue: prevRange ? ev.total(m, prevRange) : null, format: m.format };
  }

  const bd = plan.breakdown;
  if (bd.kind === 'time') {
    const bks = buckets(main.range, bd.grain, zone);
    const cols = plan.visualized.map((m) => ({ m, v: ev.values(m, bks, null).get('') ?? [] }));
    if (plan.shape === 'time-series') {
      const cmp = compare ? buckets(compare, bd.grain, zone) : null;
      const cmpCols = cmp ? plan.visualized.map((m) => ev.values(m, cmp, null).get('') ?? []) : null;
      const series = plan.visualized.flatMap((m) => [
        { key: m.id, label: m.label },
        ...(cmp
          ? [
              {
                key: `${m.id}__compare`,
                label: `${m.label} (${q.compare?.mode === 'previous_year' ? 'previous year' : 'previous period'})`,
              },
            ]
          : []),
      ]);
      const points = bks.map((b: Bucket, k) => {
        const values: Record<string, number> = {};
        cols.forEach(({ m, v }, j) => {
          values[m.id] = v[k] ?? 0;
          if (cmpCols) values[`${m.id}__compare`] = cmpCols[j]?.[k] ?? 0;
        });
        return { date: b.date, label: b.label, values };
      });
      return { kind: 'time-series', format: plan.format, series, points };
    }
    const rows: Row[] = bks.map((b, k) => ({
      key: b.date,
      label: b.label,
      values: Object.fromEntries(cols.map(({ m, v }) => [m.id, v[k] ?? 0])),
    }));
    return table(plan, bd.grain, orderRows(rows, q, null));
  }
  if (bd.kind !== 'category') throw new Error('unreachable: breakdown');
  const dim = bd.dimension;
  const perMetric = plan.visualized.map((m) => ({ m, v: ev.values(m, [main.range], dim) }));
  const keys = new Set<string>();
  for (const { v } of perMetric) for (const k of v.keys()) keys.add(k);
  const rows: Row[] = [...keys].map((key) => ({
    key,
    label: labelOf(dim, key, c.world),
    values: Object.fromEntries(perMetric.map(({ m, v }) => [m.id, v.get(key)?.[0] ?? 0])),
  }));
  const ordered = orderRows(rows, q, (plan.visualized[0] as MetricDef).id);
  if (plan.shape === 'category') {
    const m = plan.visualized[0] as MetricDef;
    const items = ordered.slice(0, q.limit?.n ?? ordered.length);
    return {
      kind: 'category',
      format: plan.format,
      items: items.map((r) => ({ key: r.key, label: r.label, value: r.values[m.id] ?? 0 })),
    };
  }
  return table(plan, dim, ordered);
}

function table(plan: Plan, rowDimension: string, ordered: Row[]): ReportResult {
  const q = plan.query;
  const rows = ordered.slice(0, q.limit?.n ?? ordered.length);
  if (q.options?.values.showAverageRow && rows.length > 0) {
    const values: Record<string, number> = {};
    for (const m of plan.visualized)
      values[m.id] = round(rows.reduce((s, r) => s + (r.values[m.id] ?? 0), 0) / rows.length);
    rows.push({ key: '__average', label: 'Average', values });
  }
  return {
    kind: 'data_table',
    rowDimension,
    columns: plan.visualized.map((m) => ({
      measureId: m.id,
      label: m.label,
      format: m.format as MetricFormat,
    })),
    rows,
  };
}

export { QueryError };
