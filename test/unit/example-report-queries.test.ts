import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CompanionHandle } from '../../companion/index.js';
import { ReportResult } from '../../schemas/api/index.js';
import { ReportQueriesSource } from '../../schemas/config.js';
import { readReportQueries } from '../../worker/config.js';
import { api, start } from '../companion/helpers.js';

const EXAMPLES = fileURLToPath(new URL('../../examples/report-queries.yaml', import.meta.url));

/** examples/report-queries.yaml: what `npm start` snapshots on embedded defaults. */
describe('examples/report-queries.yaml', () => {
  let companion: CompanionHandle;
  beforeAll(async () => {
    companion = await start({ seed: 7, tickets: 300 });
  });
  afterAll(async () => {
    await companion?.stop();
  });

  const file = ReportQueriesSource.parse(readReportQueries(EXAMPLES));

  it('validates as a REPORT_QUERIES file: a KPI with COMPARE TO, a daily series, a channel table, a snapshot metric', () => {
    expect(file.queries.map((q) => q.name)).toEqual([
      'new-tickets-this-month',
      'daily-new-and-resolved',
      'channels-last-month',
      'backlog-now',
    ]);
    expect(file.queries[0]?.query).toMatch(/^COMPARE TO previous_period$/m);
    expect(file.queries[1]?.query).toMatch(/^TIMESERIES day$/m);
    expect(file.queries[3]?.schedule).toEqual({ cron: '0 * * * *', timezone: 'UTC' });
  });

  it('the companion (our implementation of the report language) accepts each query with the expected shape', async () => {
    const kinds: string[] = [];
    for (const q of file.queries) {
      const res = await api(companion, 'POST', '/reports/query', {
        body: { query: q.query, timezone: q.timezone },
      });
      expect(res.status, `${q.name}: ${JSON.stringify(res.body)}`).toBe(200);
      const result = ReportResult.parse(res.body.data);
      kinds.push(result.kind);
      if (result.kind === 'kpi' && q.name === 'new-tickets-this-month')
        expect(result.previousValue).not.toBeNull();
      if (result.kind === 'time-series') {
        expect(result.series.map((s) => s.key)).toEqual(['new_tickets', 'resolved_tickets']);
        expect(result.points.length).toBeGreaterThan(0);
      }
    }
    expect(kinds).toEqual(['kpi', 'time-series', 'data_table', 'kpi']);
  });
});
