import { describe, expect, it } from 'vitest';
import {
  FOLD_STATEMENT_CHARS,
  foldSightingsSql,
  INLINE_CHECKPOINT_CHARS,
  mergeStagedCheckpointsSql,
  mergeStagedSql,
  packStatements,
  rejectedStagedSql,
  stagedCheckpointMergeSql,
} from '../../connectors/bigquery/flush-sql.js';
import { bigQueryPlace } from '../../connectors/bigquery/staging.js';
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
    const statements = foldSightingsSql(bigQueryPlace('ds'), settings.spec('ticket_messages'), [
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
    const sql = mergeStagedCheckpointsSql(bigQueryPlace('ds'), ['b1', 'b2']);
    expect(sql).toContain('`_staging_checkpoints`');
    expect(sql).toMatch(/c\.batch IN UNNEST\(\['b1', 'b2'\]\)/);
    expect(sql).toMatch(/PARTITION BY stream, scope ORDER BY _seq DESC/);
    expect(sql).toMatch(/WHEN MATCHED AND \(T\.updated_at <= S\.updated_at\)/);
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
      bigQueryPlace('ds'),
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
    expect(few).toMatch(/WHEN MATCHED AND \(T\.updated_at <= S\.updated_at\)/);
    const many = Array.from({ length: 2_000 }, (_, i) => cp(String(i), 1, '2026-11-25T10:00:00.000Z'));
    const read = stagedCheckpointMergeSql(bigQueryPlace('ds'), ['b1'], many);
    expect(read).toContain('`_staging_checkpoints`');
    expect(read.length).toBeLessThan(INLINE_CHECKPOINT_CHARS);
  });
});

describe("a flush's SQL in shared tables names its workspace in every MERGE and UPDATE", () => {
  const north = bigQueryPlace('ds', { workspace: 'north', layout: 'shared-tables' });
  const shared = new DestinationSettings({ scope: { workspace: 'north', layout: 'shared-tables' } });

  it('the rows merge by workspace_id first, joined on the workspace, from its own staging table', () => {
    const sql = mergeStagedSql(north, shared.spec('tickets'), ['b1'], 'CURRENT_TIMESTAMP()', 0);
    expect(sql).toContain(
      "ON T.`workspace_id` = S.`workspace_id` AND T.`id` = S.`id` AND T.`workspace_id` = 'north'",
    );
    expect(sql).toContain('PARTITION BY `workspace_id`, `id`');
    expect(sql).toContain('`ds`.`_staging__north`');
    expect(sql).not.toMatch(/`_staging`/);
    // The counting reads join the same way.
    expect(sql.match(/LEFT JOIN `ds`\.`tickets` T ON T\.`workspace_id` = S\.`workspace_id`/g)).toHaveLength(
      2,
    );
  });

  it('sightings, _rejected and checkpoints: each UPDATE kept to the workspace, each upsert keyed by it', () => {
    const at = new Date('2026-11-25T00:00:00Z');
    const [fold] = foldSightingsSql(north, shared.spec('tickets'), [{ at, ids: ['1'] }]);
    expect(fold).toMatch(/AND T\.`workspace_id` = 'north';$/);
    const rejected = rejectedStagedSql(
      north,
      ['tickets'],
      ['b1'],
      [
        {
          table: 'tickets',
          itemKey: '1',
          itemId: '1',
          stream: 'tickets',
          scope: 'all',
          pageCursor: null,
          reason: 'r',
          raw: {},
        },
      ],
      'CURRENT_TIMESTAMP()',
    );
    expect(rejected[0]).toContain(
      'ON T.`workspace_id` = S.`workspace_id` AND T.`table_name` = S.`table_name`',
    );
    expect(rejected[0]).toContain("SELECT 'north' AS `workspace_id`, W.*");
    expect(rejected[1]).toContain("FROM (SELECT * FROM `ds`.`_rejected` WHERE `workspace_id` = 'north') r");
    expect(rejected[1]).toMatch(/UPDATE `ds`\.`_rejected` r SET .* AND r\.`workspace_id` = 'north';/s);
    const checkpoints = mergeStagedCheckpointsSql(north, ['b1']);
    expect(checkpoints).toContain('FROM `ds`.`_staging_checkpoints__north` c');
    for (const table of ['_sync_state', '_thread_queue', '_reread_queue'])
      expect(checkpoints).toMatch(
        new RegExp(
          `MERGE \`ds\`\\.\`${table}\` T USING \\(SELECT 'north' AS \`workspace_id\`, W\\.\\* [^]*?ON T\\.\`workspace_id\` = S\\.\`workspace_id\``,
        ),
      );
  });

  it('a workspace id with a hyphen names staging tables of plain identifiers, apart from any other id', () => {
    const place = bigQueryPlace('ds', { workspace: 'south-east', layout: 'shared-tables' });
    expect(place.staging).toEqual({
      entries: '_staging__south_east',
      checkpoints: '_staging_checkpoints__south_east',
      batches: '_staging_batches__south_east',
      merged: '_staging_merged__south_east',
      folded: '_staging_folded__south_east',
    });
    expect(bigQueryPlace('ds').staging.entries).toBe('_staging');
  });
});
