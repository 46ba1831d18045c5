import { describe, expect, it } from 'vitest';
import {
  FOLD_STATEMENT_CHARS,
  foldSightingsSql,
  mergeStagedCheckpointsSql,
  packStatements,
} from '../../connectors/bigquery/flush-sql.js';
import { DestinationSettings } from '../../connectors/settings.js';

const settings = new DestinationSettings({});

describe("a flush's SQL stays within BigQuery's query length", () => {
  it('packs statements in order into parts of at most the budget; one longer than it alone is an error', () => {
    expect(packStatements(['aaaa;', 'bb;', 'cccccc;', 'd;'], 10)).toEqual([
      ['aaaa;', 'bb;'],
      ['cccccc;', 'd;'],
    ]);
    expect(packStatements([], 10)).toEqual([]);
    expect(() => packStatements(['x'.repeat(11)], 10)).toThrow(/11 characters does not fit/);
  });

  it('a fold of many ids is several statements, each under its budget, naming every id once', () => {
    const at = new Date('2026-11-25T00:00:00Z');
    const ids = Array.from({ length: 40_000 }, (_, i) => `id-${i}-${'y'.repeat(24)}`);
    const statements = foldSightingsSql('ds', settings.spec('ticket_messages'), [
      { at, ids: ids.slice(0, 25_000) },
      { at: new Date(at.getTime() + 1000), ids: ids.slice(25_000) },
    ]);
    expect(statements.length).toBeGreaterThan(3);
    for (const s of statements) expect(s.length).toBeLessThan(FOLD_STATEMENT_CHARS + 2000);
    const named = statements.join('\n').match(/'id-\d+-y+'/g) ?? [];
    expect(named.length).toBe(ids.length);
    expect(new Set(named).size).toBe(ids.length);
  });

  it('checkpoints are merged from _staging_checkpoints by batch, whatever their number: the text names batches only', () => {
    const sql = mergeStagedCheckpointsSql('ds', ['b1', 'b2']);
    expect(sql).toContain('`_staging_checkpoints`');
    expect(sql).toMatch(/c\.batch IN UNNEST\(\['b1', 'b2'\]\)/);
    expect(sql).toMatch(/PARTITION BY stream, scope ORDER BY _seq DESC/);
    expect(sql).toMatch(/WHEN MATCHED AND T\.updated_at <= S\.updated_at/);
  });
});
