import { describe, expect, it } from 'vitest';
import { bigQueryDialect } from '../../connectors/bigquery/dialect.js';
import { rowFilterSql, rowMatches } from '../../connectors/row-filter.js';

describe('a row filter read as SQL and in memory (connectors/row-filter.ts)', () => {
  it('in: values compare as text, a null column never matches, an empty list matches nothing', () => {
    const byNumber = { kind: 'in', column: 'ticket_number', values: [7, 9] } as const;
    expect(rowMatches(byNumber, { ticket_number: 7 })).toBe(true);
    expect(rowMatches(byNumber, { ticket_number: '9' })).toBe(true);
    expect(rowMatches(byNumber, { ticket_number: 8 })).toBe(false);
    expect(rowMatches(byNumber, { ticket_number: null })).toBe(false);
    expect(rowMatches({ kind: 'in', column: 'id', values: [] }, { id: 'a' })).toBe(false);
    const d = bigQueryDialect('ds');
    expect(rowFilterSql(d, byNumber)).toBe('t.`ticket_number` IN (7, 9)');
    expect(rowFilterSql(d, { kind: 'in', column: 'id', values: [] })).toBe('1 = 0');
  });

  it('range: from <= column < until at the microsecond, as SQL decides it', () => {
    const range = {
      kind: 'range',
      column: 'sent_at',
      from: '2026-11-25T10:00:00.000Z',
      until: '2026-11-25T11:00:00.000Z',
    } as const;
    const at = (sent_at: string | null) => rowMatches(range, { sent_at });
    expect(at('2026-11-25T10:00:00.000000Z')).toBe(true);
    expect(at('2026-11-25T09:59:59.999999Z')).toBe(false);
    expect(at('2026-11-25T10:59:59.999999Z')).toBe(true);
    expect(at('2026-11-25T11:00:00.000000Z')).toBe(false);
    expect(at('2026-11-25T11:00:00.000400Z')).toBe(false);
    expect(at(null)).toBe(false);
  });
});
