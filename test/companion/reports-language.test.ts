import { describe, expect, it } from 'vitest';
import { ReportInputError, runReport } from '../../companion/reports/engine.js';
import { parseQuery, QueryError } from '../../companion/reports/parser.js';
import { type AgentRecord, generateWorld, World } from '../../companion/world/index.js';
import { ReportResult } from '../../schemas/api/reports.js';

/** Spec 4.12: the clause language, its order and repetition rules, and the validation rules 1–6. */

const NOW = Date.parse('2025-04-15T10:00:00Z');
const world = new World(generateWorld(11, 400, NOW), {
  now: () => NOW,
  realNow: Date.now,
  replicaLagMs: 0,
  messageBumpsTicketUpdatedAt: true,
});
const admin = world.agent(world.key('admin').agentId as string) as AgentRecord;
const team = world.teams.find((t) => t.orgId === world.orgA.id)?.id as string;

const run = (query: string, timezone = 'UTC') =>
  runReport(
    { query, timezone },
    { world, orgId: world.orgA.id, agent: admin, now: NOW, realNow: Date.now() },
  );
const q = (...lines: string[]) => lines.join('\n');
const ok = (...lines: string[]) => ReportResult.parse(run(q(...lines)));
/** Expects a 400-class query error whose message names `line` and contains `problem`. */
function rejects(line: number, problem: string | RegExp, ...lines: string[]) {
  let err: unknown;
  try {
    run(q(...lines));
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(QueryError);
  const msg = (err as Error).message;
  expect(msg.startsWith(`line ${line}: `)).toBe(true);
  if (typeof problem === 'string') expect(msg).toContain(problem);
  else expect(msg).toMatch(problem);
}

const HEAD = ['FROM tickets', 'SHOW new_tickets', 'DURING last_month'] as const;
const KPI = 'VISUALIZE new_tickets TYPE kpi';

describe('4.12 clauses and order', () => {
  it('4.12 a minimal query parses into its clauses; keywords are case-insensitive', () => {
    const p = parseQuery(
      q('from tickets', 'show new_tickets', 'during LAST_MONTH', 'visualize new_tickets type KPI'),
    );
    expect(p.show.ids).toEqual(['new_tickets']);
    expect(p.period).toEqual({ kind: 'during', period: 'last_month', line: 3 });
    expect(p.visualize).toEqual({ ids: ['new_tickets'], type: 'kpi', line: 4 });
  });

  it('4.12 FROM tickets must come first and names the only dataset', () => {
    rejects(1, 'first clause must be FROM tickets', 'SHOW new_tickets', 'FROM tickets', 'DURING today', KPI);
    rejects(1, "unknown dataset 'orders'", 'FROM orders', 'SHOW new_tickets', 'DURING today', KPI);
  });

  it('4.12 SHOW, the period and VISUALIZE are required; the error names the last line', () => {
    rejects(3, 'no SHOW clause', 'FROM tickets', 'DURING today', KPI);
    rejects(3, 'needs DURING or SINCE', 'FROM tickets', 'SHOW new_tickets', KPI);
    rejects(3, 'no VISUALIZE clause', ...HEAD);
    rejects(1, 'empty', '   ');
  });

  it('4.12 clauses keep their order: WHERE after GROUP BY is rejected on its line', () => {
    expect(
      ok(...HEAD, `WHERE team is ${team}`, 'GROUP BY channel', 'VISUALIZE new_tickets TYPE horizontal_bar')
        .kind,
    ).toBe('category');
    rejects(5, 'WHERE must come before GROUP BY', ...HEAD, 'GROUP BY channel', `WHERE team is ${team}`, KPI);
    rejects(
      4,
      'SHOW must come before',
      'FROM tickets',
      'DURING today',
      'WHERE channel is email',
      'SHOW new_tickets',
      KPI,
    );
  });

  it('4.12 only WHERE repeats (lines combine with AND); any other clause twice is rejected', () => {
    const both = ok(...HEAD, 'WHERE channel is_one_of email, widget', 'WHERE channel is email', KPI);
    const email = ok(...HEAD, 'WHERE channel is email', KPI);
    expect(both).toEqual(email);
    rejects(
      3,
      'SHOW may appear only once (already on line 2)',
      'FROM tickets',
      'SHOW new_tickets',
      'SHOW messages',
      'DURING today',
      KPI,
    );
    rejects(
      5,
      'LIMIT may appear only once (already on line 4)',
      ...HEAD.slice(0, 2),
      'DURING today',
      'LIMIT 5',
      'LIMIT 6',
      KPI,
    );
  });

  it('4.12 DURING and SINCE … UNTIL are exclusive', () => {
    rejects(4, 'cannot be combined', ...HEAD, 'SINCE 2025-01-01 UNTIL 2025-01-31', KPI);
  });

  it('4.12 DURING takes the six named periods only', () => {
    for (const p of ['yesterday', 'today', 'this_week', 'last_week', 'this_month', 'last_month']) {
      expect(ok('FROM tickets', 'SHOW new_tickets', `DURING ${p}`, KPI).kind).toBe('kpi');
    }
    rejects(3, "unknown period 'last_year'", 'FROM tickets', 'SHOW new_tickets', 'DURING last_year', KPI);
  });

  it('4.12 SINCE … UNTIL takes real calendar dates, end not before start', () => {
    expect(ok('FROM tickets', 'SHOW new_tickets', 'SINCE 2024-02-29 UNTIL 2024-02-29', KPI).kind).toBe('kpi');
    rejects(
      3,
      'not a calendar date',
      'FROM tickets',
      'SHOW new_tickets',
      'SINCE 2025-02-29 UNTIL 2025-03-01',
      KPI,
    );
    rejects(
      3,
      'is not YYYY-MM-DD',
      'FROM tickets',
      'SHOW new_tickets',
      'SINCE 2025-3-1 UNTIL 2025-03-02',
      KPI,
    );
    rejects(3, 'before SINCE', 'FROM tickets', 'SHOW new_tickets', 'SINCE 2025-03-02 UNTIL 2025-03-01', KPI);
    rejects(3, 'expected UNTIL', 'FROM tickets', 'SHOW new_tickets', 'SINCE 2025-03-02', KPI);
  });

  it('4.12 a SINCE … UNTIL span of 366 days is accepted, 367 rejected (our cap)', () => {
    expect(ok('FROM tickets', 'SHOW new_tickets', 'SINCE 2024-01-01 UNTIL 2024-12-31', KPI).kind).toBe('kpi');
    rejects(
      3,
      'spans 367 days',
      'FROM tickets',
      'SHOW new_tickets',
      'SINCE 2024-01-01 UNTIL 2025-01-01',
      KPI,
    );
  });

  it('4.12 LIMIT accepts 1 to 1,000 and rejects 0 and 1,001', () => {
    const table = (n: number) => [
      ...HEAD,
      'GROUP BY channel',
      `LIMIT ${n}`,
      'VISUALIZE new_tickets TYPE data_table',
    ];
    expect(ok(...table(1000)).kind).toBe('data_table');
    const one = ok(...table(1));
    expect(one.kind === 'data_table' && one.rows.length).toBe(1);
    rejects(5, 'out of range', ...table(1001));
    rejects(5, 'out of range', ...table(0));
    rejects(
      5,
      'whole number',
      ...HEAD,
      'GROUP BY channel',
      'LIMIT 2.5',
      'VISUALIZE new_tickets TYPE data_table',
    );
  });

  it('4.12 OPTIONS takes a JSON object of allow-listed options with their types', () => {
    const t = [...HEAD, 'GROUP BY channel'];
    const r = ok(...t, 'OPTIONS {"showAverageRow": true}', 'VISUALIZE new_tickets TYPE data_table');
    expect(r.kind === 'data_table' && r.rows.at(-1)?.key).toBe('__average');
    rejects(
      5,
      "option 'colour' is not allowed",
      ...t,
      'OPTIONS {"colour": "red"}',
      'VISUALIZE new_tickets TYPE data_table',
    );
    rejects(
      5,
      "'showAverageRow' must be a boolean",
      ...t,
      'OPTIONS {"showAverageRow": "yes"}',
      'VISUALIZE new_tickets TYPE data_table',
    );
    rejects(5, 'JSON object', ...t, 'OPTIONS [true]', 'VISUALIZE new_tickets TYPE data_table');
    rejects(
      5,
      'JSON object',
      ...t,
      'OPTIONS {showAverageRow: true}',
      'VISUALIZE new_tickets TYPE data_table',
    );
  });

  it('4.12 WHERE takes is (one value) and is_one_of (comma-separated); values are checked', () => {
    expect(ok(...HEAD, 'WHERE language is_one_of de, fr', 'WHERE status is resolved', KPI).kind).toBe('kpi');
    rejects(4, "'is' takes one value", ...HEAD, 'WHERE channel is email, widget', KPI);
    rejects(4, "unknown channel 'fax'", ...HEAD, 'WHERE channel is fax', KPI);
    rejects(4, "unknown team id 'Support'", ...HEAD, 'WHERE team is Support', KPI);
    rejects(4, "unknown agent id 'Ada Admin'", ...HEAD, 'WHERE human_agent is "Ada Admin"', KPI);
    rejects(4, "unknown operator 'contains'", ...HEAD, 'WHERE channel contains email', KPI);
    rejects(4, "unknown WHERE field 'subject'", ...HEAD, 'WHERE subject is x', KPI);
    rejects(4, 'unknown status', ...HEAD, 'WHERE status is pending', KPI);
  });

  it('4.12 SHOW takes catalog ids, each once; VISUALIZE only metrics from SHOW', () => {
    rejects(
      2,
      "unknown metric 'tickets_total'",
      'FROM tickets',
      'SHOW tickets_total',
      'DURING today',
      'VISUALIZE tickets_total TYPE kpi',
    );
    rejects(2, 'listed twice', 'FROM tickets', 'SHOW new_tickets, new_tickets', 'DURING today', KPI);
    rejects(4, "'messages' is not in SHOW (line 2)", ...HEAD, 'VISUALIZE messages TYPE kpi');
    rejects(4, "unknown visualization type 'pie'", ...HEAD, 'VISUALIZE new_tickets TYPE pie');
  });

  it('4.12 an unknown IANA zone is a validation error', () => {
    expect(() => run(q(...HEAD, KPI), 'Mars/Olympus')).toThrow(ReportInputError);
    expect(() => run(q(...HEAD, KPI), 'Europe/Berlin')).not.toThrow();
  });
});

describe('4.12 visualization rules 1–6', () => {
  it('4.12 rule 1: a kpi takes exactly one metric and no breakdown', () => {
    rejects(
      4,
      'exactly one metric, got 2',
      'FROM tickets',
      'SHOW new_tickets, messages',
      'DURING today',
      'VISUALIZE new_tickets, messages TYPE kpi',
    );
    rejects(4, 'takes no GROUP BY or TIMESERIES', ...HEAD, 'TIMESERIES day', KPI);
  });

  it('4.12 rule 2: charts need metrics sharing one format', () => {
    const show = 'SHOW new_tickets, messages, csat_average';
    const r = ok(
      'FROM tickets',
      show,
      'DURING last_month',
      'TIMESERIES day',
      'VISUALIZE new_tickets, messages TYPE line',
    );
    expect(r.kind === 'time-series' && r.series.map((s) => s.key)).toEqual(['new_tickets', 'messages']);
    rejects(
      5,
      'share one format; got count, decimal',
      'FROM tickets',
      show,
      'DURING last_month',
      'TIMESERIES day',
      'VISUALIZE new_tickets, csat_average TYPE line',
    );
  });

  it('4.12 rule 3: a data_table may mix formats and needs exactly one breakdown', () => {
    const show = 'SHOW new_tickets, csat_average';
    const r = ok(
      'FROM tickets',
      show,
      'DURING last_month',
      'GROUP BY channel',
      'VISUALIZE new_tickets, csat_average TYPE data_table',
    );
    expect(r.kind === 'data_table' && r.columns.map((c) => c.format)).toEqual(['count', 'decimal']);
    rejects(
      4,
      'needs exactly one breakdown',
      'FROM tickets',
      show,
      'DURING last_month',
      'VISUALIZE new_tickets, csat_average TYPE data_table',
    );
    rejects(
      5,
      'one breakdown per query',
      'FROM tickets',
      show,
      'DURING last_month',
      'GROUP BY channel',
      'TIMESERIES day',
      'VISUALIZE new_tickets TYPE data_table',
    );
  });

  it('4.12 rule 4: snapshot metrics take neither TIMESERIES nor COMPARE TO and need DURING', () => {
    const s = ['FROM tickets', 'SHOW backlog_now'];
    const kpi = ok(...s, 'DURING today', 'VISUALIZE backlog_now TYPE kpi');
    expect(kpi.kind === 'kpi' && kpi.previousValue).toBeNull();
    expect(
      ok(...s, 'DURING today', 'GROUP BY channel', 'VISUALIZE backlog_now TYPE horizontal_bar').kind,
    ).toBe('category');
    rejects(
      4,
      'takes no time dimension',
      ...s,
      'DURING today',
      'TIMESERIES day',
      'VISUALIZE backlog_now TYPE line',
    );
    rejects(
      4,
      'takes no time dimension',
      ...s,
      'DURING today',
      'GROUP BY day',
      'VISUALIZE backlog_now TYPE line',
    );
    rejects(
      4,
      'takes no COMPARE TO',
      ...s,
      'DURING today',
      'COMPARE TO previous_period',
      'VISUALIZE backlog_now TYPE kpi',
    );
    rejects(3, 'needs DURING', ...s, 'SINCE 2025-04-01 UNTIL 2025-04-02', 'VISUALIZE backlog_now TYPE kpi');
  });

  it('4.12 rule 5: automation metrics in KPIs, daily charts, tables and action breakdowns only', () => {
    const a = ['FROM tickets', 'SHOW money_saved, time_saved', 'DURING last_month'];
    expect(ok(...a, 'VISUALIZE money_saved TYPE kpi').kind).toBe('kpi');
    expect(ok(...a, 'TIMESERIES day', 'VISUALIZE money_saved TYPE stacked_bar').kind).toBe('time-series');
    expect(ok(...a, 'TIMESERIES day', 'VISUALIZE money_saved, time_saved TYPE data_table').kind).toBe(
      'data_table',
    );
    expect(ok(...a, 'GROUP BY action_type', 'VISUALIZE money_saved TYPE horizontal_bar').kind).toBe(
      'category',
    );
    rejects(
      4,
      'does not support week breakdowns; supported: day',
      ...a,
      'TIMESERIES week',
      'VISUALIZE money_saved TYPE line',
    );
    rejects(
      4,
      'cannot be grouped by channel',
      ...a,
      'GROUP BY channel',
      'VISUALIZE money_saved TYPE horizontal_bar',
    );
    rejects(
      4,
      "'ai_spend' cannot be grouped by action_type",
      'FROM tickets',
      'SHOW ai_spend',
      'DURING last_month',
      'GROUP BY action_type',
      'VISUALIZE ai_spend TYPE data_table',
    );
    rejects(
      2,
      "cannot be shown with 'new_tickets'",
      'FROM tickets',
      'SHOW money_saved, new_tickets',
      'DURING last_month',
      'VISUALIZE money_saved TYPE kpi',
    );
  });

  it('4.12 rule 6: per-metric grouping support (action_type only for automation; online time by agent only)', () => {
    rejects(
      4,
      "'new_tickets' cannot be grouped by action_type",
      ...HEAD,
      'GROUP BY action_type',
      'VISUALIZE new_tickets TYPE data_table',
    );
    rejects(
      4,
      "'agent_online_time' cannot be grouped by channel",
      'FROM tickets',
      'SHOW agent_online_time',
      'DURING last_week',
      'GROUP BY channel',
      'VISUALIZE agent_online_time TYPE data_table',
    );
    rejects(
      4,
      "'agent_online_time' cannot be filtered by channel",
      'FROM tickets',
      'SHOW agent_online_time',
      'DURING last_week',
      'WHERE channel is email',
      'VISUALIZE agent_online_time TYPE kpi',
    );
  });

  it('4.12 line and area charts need a time breakdown; horizontal bars a category one', () => {
    rejects(5, 'needs a time breakdown', ...HEAD, 'GROUP BY channel', 'VISUALIZE new_tickets TYPE line');
    rejects(
      5,
      'takes a category breakdown',
      ...HEAD,
      'TIMESERIES day',
      'VISUALIZE new_tickets TYPE horizontal_bar',
    );
    rejects(4, 'needs a breakdown', ...HEAD, 'VISUALIZE new_tickets TYPE area');
  });

  it('4.12 COMPARE TO applies to KPIs and time series; ORDER BY and LIMIT to categories and tables', () => {
    rejects(
      5,
      'COMPARE TO applies to kpi and time series',
      ...HEAD,
      'GROUP BY channel',
      'COMPARE TO previous_year',
      'VISUALIZE new_tickets TYPE data_table',
    );
    rejects(
      5,
      'ORDER BY does not apply to time-series',
      ...HEAD,
      'TIMESERIES day',
      'ORDER BY new_tickets DESC',
      'VISUALIZE new_tickets TYPE line',
    );
    rejects(
      5,
      "'messages' is neither label nor a visualized metric",
      ...HEAD,
      'GROUP BY channel',
      'ORDER BY messages DESC',
      'VISUALIZE new_tickets TYPE data_table',
    );
  });

  it('4.12 hourly breakdowns cover at most 31 days (our cap): 31 accepted, 32 rejected', () => {
    const h = (until: string) => [
      'FROM tickets',
      'SHOW new_tickets',
      `SINCE 2025-01-01 UNTIL ${until}`,
      'TIMESERIES hour',
      'VISUALIZE new_tickets TYPE line',
    ];
    const r = ok(...h('2025-01-31'));
    expect(r.kind === 'time-series' && r.points.length).toBe(31 * 24);
    rejects(4, 'at most 31 days', ...h('2025-02-01'));
  });
});
