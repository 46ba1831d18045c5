import { describe, expect, it } from 'vitest';
import {
  FOLD_STATEMENT_CHARS,
  foldSightingsSql,
  INLINE_CHECKPOINT_CHARS,
  mergeStagedCheckpointsSql,
  packStatements,
  stagedCheckpointMergeSql,
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

  it("a flush's few checkpoints are inline (only _sync_state named: one 10 MB floor), many are read by batch", () => {
    const cp = (scope: string, pages: number, at: string) => ({
      stream: 'ticket_messages',
      scope,
      cursor: null,
      high_water_mark: null,
      status: 'running' as const,
      pages,
      rows: 0,
      updated_at: at,
    });
    // Staging order: the later of a scope's two wins, as QUALIFY on the staging order picks it.
    const few = stagedCheckpointMergeSql(
      'ds',
      ['b1', 'b2'],
      [
        cp('17', 1, '2026-11-25T10:00:00.000Z'),
        cp('18', 1, '2026-11-25T10:00:01.000Z'),
        cp('17', 2, '2026-11-25T10:00:02.000Z'),
      ],
    );
    expect(few).not.toContain('_staging_checkpoints');
    expect(few.match(/STRUCT\(/g)).toHaveLength(2);
    expect(few).toMatch(
      /'17' AS scope, CAST\(NULL AS STRING\) AS cursor, CAST\(NULL AS STRING\) AS high_water_mark, 'running' AS status, 2 AS pages/,
    );
    expect(few).toMatch(/WHEN MATCHED AND T\.updated_at <= S\.updated_at/);
    const many = Array.from({ length: 2_000 }, (_, i) => cp(String(i), 1, '2026-11-25T10:00:00.000Z'));
    const read = stagedCheckpointMergeSql('ds', ['b1'], many);
    expect(read).toContain('`_staging_checkpoints`');
    expect(read.length).toBeLessThan(INLINE_CHECKPOINT_CHARS);
  });
});
