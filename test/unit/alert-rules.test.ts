import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { idleMetrics } from '../support/idle-metrics.js';

/**
 * docs/alerts.yml, the example alerting rules: Prometheus' rule-file shape, and every metric and label its
 * expressions name is one the worker exports (or Prometheus' own `up`). A rule on a misspelt or removed
 * metric never fires, silently; this is where that shows.
 */

const RULES_FILE = new URL('../../docs/alerts.yml', import.meta.url);

/** PromQL's functions and aggregations the rules may call, and its keywords. */
const FUNCTIONS = new Set(
  'abs absent absent_over_time avg avg_over_time ceil changes clamp_min count count_over_time delta deriv floor histogram_quantile increase irate max max_over_time min min_over_time rate resets round scalar sort sum sum_over_time time timestamp topk bottomk vector'.split(
    ' ',
  ),
);
const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset']);
/** Labels Prometheus adds to every scraped series. */
const TARGET_LABELS = ['job', 'instance'];

interface Selector {
  metric: string;
  labels: string[];
}

/**
 * The metric selectors of an expression (`name{label="v"}`), and the labels its `by (…)`/`on (…)` clauses
 * group by. Quoted strings and range durations are dropped first, so their content is never read as a name.
 */
function analyse(expr: string): { selectors: Selector[]; grouping: string[]; functions: string[] } {
  let text = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""').replace(/\[[^\]]*\]/g, '');
  const grouping: string[] = [];
  text = text.replace(
    /\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g,
    (_m, _kw: string, list: string) => {
      grouping.push(
        ...list
          .split(',')
          .map((l) => l.trim())
          .filter(Boolean),
      );
      return ' ';
    },
  );
  const selectors: Selector[] = [];
  const functions: string[] = [];
  for (const m of text.matchAll(/([A-Za-z_:][\w:]*)\s*(\{([^}]*)\})?\s*(\()?/g)) {
    const [, name, , matchers, call] = m;
    if (call && !m[2]) functions.push(name!);
    else if (!KEYWORDS.has(name!))
      selectors.push({
        metric: name!,
        labels: [...(matchers ?? '').matchAll(/(\w+)\s*(?:=~|!~|!=|=)/g)].map((l) => l[1]!),
      });
  }
  return { selectors, grouping, functions };
}

/**
 * The metrics the worker's registry exports, with their label names (and Prometheus' own `up`): with
 * `workspaceLabel`, as SYNC_METRICS_WORKSPACE_LABEL=true makes them (a rule may group by a label that is
 * there only then: `by (workspace)` without it groups nothing apart).
 */
function exported(options: { workspaceLabel?: boolean } = {}): Map<string, string[]> {
  const metrics = idleMetrics(options);
  const names = new Map<string, string[]>([['up', []]]);
  for (const m of metrics.registry.getMetricsAsArray())
    names.set(m.name, (m as unknown as { labelNames: string[] }).labelNames);
  return names;
}

describe('the example alerting rules (docs/alerts.yml)', () => {
  const file = parseYaml(readFileSync(RULES_FILE, 'utf8')) as {
    groups: { name: string; rules: Record<string, unknown>[] }[];
  };
  const rules = file.groups.flatMap((g) => g.rules);

  it('are a Prometheus rule file: named alerts, each with an expression, a severity and a summary', () => {
    expect(file.groups.length).toBeGreaterThan(0);
    for (const g of file.groups) expect(typeof g.name).toBe('string');
    const names = rules.map((r) => r['alert']);
    expect(new Set(names).size).toBe(names.length);
    for (const rule of rules) {
      const where = String(rule['alert']);
      expect(typeof rule['alert'], where).toBe('string');
      expect(typeof rule['expr'], where).toBe('string');
      if (rule['for'] !== undefined) expect(String(rule['for']), where).toMatch(/^\d+[smhd]$/);
      expect(['warning', 'critical'], where).toContain((rule['labels'] as { severity?: string })?.severity);
      expect(typeof (rule['annotations'] as { summary?: unknown })?.summary, where).toBe('string');
      // Balanced brackets: a cut expression is the commonest way to break a rule file.
      for (const [open, close] of ['()', '{}', '[]'])
        expect(String(rule['expr']).split(open!).length, `${where} ${open}${close}`).toBe(
          String(rule['expr']).split(close!).length,
        );
    }
  });

  it('name only metrics and labels the worker exports', () => {
    const metrics = exported({ workspaceLabel: true });
    for (const rule of rules) {
      const where = String(rule['alert']);
      const { selectors, grouping, functions } = analyse(String(rule['expr']));
      expect(selectors.length, `${where} names a metric`).toBeGreaterThan(0);
      for (const f of functions)
        expect(FUNCTIONS.has(f), `${where}: ${f}() is not a PromQL function`).toBe(true);
      const labels = new Set(TARGET_LABELS);
      for (const { metric, labels: used } of selectors) {
        expect(metrics.has(metric), `${where}: ${metric} is not exported`).toBe(true);
        for (const l of metrics.get(metric) ?? []) labels.add(l);
        for (const l of used)
          expect([...TARGET_LABELS, ...(metrics.get(metric) ?? [])], `${where}: ${metric}{${l}}`).toContain(
            l,
          );
      }
      for (const l of grouping) expect(labels.has(l), `${where}: by/on (${l})`).toBe(true);
    }
  });

  it('cover what the issue asks to alert on: freshness over the target, 429s, failed windows, rejected items, a worker down', () => {
    const exprs = rules.map((r) => String(r['expr'])).join('\n');
    expect(exprs).toMatch(/support_sync_freshness_lag_seconds[\s\S]*support_sync_freshness_slo_seconds/);
    expect(exprs).toContain('support_sync_api_rate_limited_total');
    expect(exprs).toContain('support_sync_windows_total{status="failed"}');
    expect(exprs).toContain('support_sync_rejected_items_total');
    expect(exprs).toMatch(/\bup\{job="support-sync"\} == 0/);
  });

  it("say the workspace: every rule on a series of a workspace's sync keeps its workspace label", () => {
    const off = exported();
    const on = exported({ workspaceLabel: true });
    const ofWorkspace = new Set(
      [...on].filter(
        ([name, labels]) => labels.includes('workspace') && !off.get(name)?.includes('workspace'),
      ),
    );
    expect([...ofWorkspace].map(([name]) => name)).toContain('support_sync_windows_total');
    // Per key, not per workspace: the governor's series never carry it.
    expect(on.get('support_sync_api_rate_limited_total')).toEqual(['route_class']);
    let checked = 0;
    for (const rule of rules) {
      const where = String(rule['alert']);
      const expr = String(rule['expr']);
      const { selectors } = analyse(expr);
      if (!selectors.some((s) => [...ofWorkspace].some(([name]) => name === s.metric))) continue;
      checked += 1;
      // Every aggregation keeps it (`by (…)`), and so does the `on (…)` of a comparison.
      const clauses = [...expr.matchAll(/\b(by|on)\s*\(([^)]*)\)/g)];
      expect(clauses.length, where).toBeGreaterThan(0);
      for (const [clause, , list] of clauses)
        expect(
          list!.split(',').map((l) => l.trim()),
          `${where}: ${clause}`,
        ).toContain('workspace');
      expect(String((rule['annotations'] as { summary: string }).summary), where).toContain(
        '$labels.workspace',
      );
    }
    expect(checked).toBeGreaterThanOrEqual(5);
  });

  it('the check itself tells a metric, a label and a function apart', () => {
    const { selectors, grouping, functions } = analyse(
      'sum by (table) (increase(support_sync_rejected_items_total{table!~"x|y"}[2h])) > on() group_left() max(support_sync_freshness_slo_seconds)',
    );
    expect(selectors).toEqual([
      { metric: 'support_sync_rejected_items_total', labels: ['table'] },
      { metric: 'support_sync_freshness_slo_seconds', labels: [] },
    ]);
    expect(grouping).toEqual(['table']);
    expect(functions).toEqual(['sum', 'increase', 'max']);
  });
});
