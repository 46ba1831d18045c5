import { describe, expect, it } from 'vitest';
import { shapeOfJob, shapeOfQuery } from '../../scripts/bigquery-quota-proxy.js';

/** The quota proxy counts DML per table from the SQL a job carries: these are the shapes it must read. */
describe('what a BigQuery job writes (quota proxy)', () => {
  it('reads a page script: a transaction with a MERGE into the target and one into the shared state table', () => {
    const script = `BEGIN TRANSACTION;
      MERGE \`ds\`.\`tickets\` AS t USING \`ds\`.\`_stage_1\` AS s ON t.id = s.id
        WHEN MATCHED AND s.v > t.v THEN UPDATE SET t.v = s.v
        WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v);
      UPDATE \`ds\`.\`tickets\` SET _seen_at = CURRENT_TIMESTAMP() WHERE id IN (SELECT id FROM \`ds\`.\`_stage_1\`);
      MERGE INTO \`proj.ds._sync_state\` s USING (SELECT 'x' AS k) n ON s.k = n.k
        WHEN MATCHED THEN UPDATE SET v = 'MERGE \`ds\`.\`other\`' WHEN NOT MATCHED THEN INSERT ROW;
      -- DELETE FROM \`ds\`.\`commented\`
      COMMIT TRANSACTION;`;
    expect(shapeOfQuery(script)).toEqual({
      kind: 'query',
      transaction: true,
      statements: [
        { kind: 'merge', table: 'tickets' },
        { kind: 'update', table: 'tickets' },
        { kind: 'merge', table: '_sync_state' },
      ],
    });
  });

  it('a SELECT writes nothing; DELETE, TRUNCATE and INSERT name their table', () => {
    expect(shapeOfQuery('SELECT * FROM `ds`.`tickets` WHERE id IN (SELECT id FROM x)').statements).toEqual(
      [],
    );
    expect(
      shapeOfQuery(
        'DELETE FROM `ds`.`a` WHERE true; TRUNCATE TABLE ds.b; INSERT INTO `ds`.`c` (x) SELECT 1; INSERT ds.d (x) VALUES (1)',
      ).statements,
    ).toEqual([
      { kind: 'delete', table: 'a' },
      { kind: 'truncate', table: 'b' },
      { kind: 'insert', table: 'c' },
      { kind: 'insert', table: 'd' },
    ]);
  });

  it('a load job names its destination table', () => {
    expect(shapeOfJob({ load: { destinationTable: { tableId: '_stage_9' } } })).toEqual({
      kind: 'load',
      statements: [],
      transaction: false,
      loadTable: '_stage_9',
    });
  });
});
