import { describe, expect, it } from 'vitest';
import {
  jobResourceOf,
  multipartParts,
  requestKindOf,
  routeOf,
  shapeOfJob,
  shapeOfQuery,
} from '../support/bigquery-job-shapes.js';

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
    const shape = shapeOfQuery(script);
    expect(shape.transaction).toBe(true);
    expect(shape.statements).toEqual([
      { kind: 'merge', table: 'tickets', conditional: false },
      { kind: 'update', table: 'tickets', conditional: false },
      { kind: 'merge', table: '_sync_state', conditional: false },
    ]);
    // Each statement is a child job of the script, billed for what it reads (and its target, rewritten).
    expect(shape.children).toEqual([
      {
        kind: 'merge',
        reads: ['tickets', '_stage_1'],
        writes: 'tickets',
        billsTarget: true,
        conditional: false,
      },
      {
        kind: 'update',
        reads: ['tickets', '_stage_1'],
        writes: 'tickets',
        billsTarget: true,
        conditional: false,
      },
      { kind: 'merge', reads: ['_sync_state'], writes: '_sync_state', billsTarget: true, conditional: false },
    ]);
  });

  it('a SELECT writes nothing; DELETE, TRUNCATE and INSERT name their table', () => {
    const select = shapeOfQuery('SELECT * FROM `ds`.`tickets` WHERE id IN (SELECT id FROM x)');
    expect(select.statements).toEqual([]);
    expect(select.children).toEqual([
      { kind: 'select', reads: ['tickets', 'x'], billsTarget: false, conditional: false },
    ]);
    const dml = shapeOfQuery(
      'DELETE FROM `ds`.`a` WHERE true; TRUNCATE TABLE ds.b; INSERT INTO `ds`.`c` (x) SELECT y FROM ds.e; INSERT ds.d (x) VALUES (1)',
    );
    expect(dml.statements).toEqual([
      { kind: 'delete', table: 'a', conditional: false },
      { kind: 'truncate', table: 'b', conditional: false },
      { kind: 'insert', table: 'c', conditional: false },
      { kind: 'insert', table: 'd', conditional: false },
    ]);
    // An INSERT reads its source, not its target.
    expect(dml.children[2]).toEqual({
      kind: 'insert',
      reads: ['e'],
      writes: 'c',
      billsTarget: false,
      conditional: false,
    });
  });

  it('names that are calls or keywords are no tables: UNNEST(…), UPDATE SET, INSERT ROW', () => {
    const shape = shapeOfQuery(
      "MERGE ds.t T USING (SELECT * FROM UNNEST([STRUCT('a' AS k)])) S ON T.k = S.k WHEN MATCHED THEN UPDATE SET v = 1 WHEN NOT MATCHED THEN INSERT ROW",
    );
    expect(shape.children).toEqual([
      { kind: 'merge', reads: ['t'], writes: 't', billsTarget: true, conditional: false },
    ]);
    // A MERGE that only inserts does not bill its whole target.
    expect(
      shapeOfQuery('MERGE ds.t T USING ds.s S ON T.k = S.k WHEN NOT MATCHED THEN INSERT ROW').children[0]!
        .billsTarget,
    ).toBe(false);
  });

  it("a block's statements are read like a script's", () => {
    expect(
      shapeOfQuery('BEGIN UPDATE ds.t SET v = 1 WHERE true; DELETE FROM ds.u WHERE true; END').statements,
    ).toEqual([
      { kind: 'update', table: 't', conditional: false },
      { kind: 'delete', table: 'u', conditional: false },
    ]);
  });

  it('DDL statements are table operations, not DML', () => {
    const shape = shapeOfQuery(
      'CREATE TABLE IF NOT EXISTS `ds`.`t` (id STRING); ALTER TABLE `ds`.`t` ADD COLUMN IF NOT EXISTS `x` STRING; CREATE OR REPLACE VIEW `ds`.`v` AS SELECT * FROM `ds`.`t`; DROP TABLE IF EXISTS ds.old',
    );
    expect(shape.ddl).toEqual([
      { kind: 'create', table: 't' },
      { kind: 'alter', table: 't' },
      { kind: 'create', table: 'v' },
      { kind: 'drop', table: 'old' },
    ]);
    expect(shape.statements).toEqual([]);
    expect(shape.children).toEqual([]);
  });

  it('a table function is a routine, no table: creating one changes no table (nor one named FUNCTION)', () => {
    const shape = shapeOfQuery(
      'CREATE OR REPLACE TABLE FUNCTION `ds`.`v__of_workspace`(view_workspace STRING) AS (SELECT * FROM (SELECT * FROM `ds`.`t` WHERE `workspace_id` = view_workspace))',
    );
    expect(shape.ddl).toEqual([]);
    expect(shape.statements).toEqual([]);
  });

  it('a load job names its destination table', () => {
    expect(shapeOfJob({ load: { destinationTable: { tableId: '_stage_9' } } })).toEqual({
      kind: 'load',
      statements: [],
      transaction: false,
      ddl: [],
      children: [],
      loadTable: '_stage_9',
    });
  });

  it("a load job's multipart upload: its metadata part is the job, its data part the rows", () => {
    const contentType = 'multipart/related; boundary=abc123';
    const metadata = { configuration: { load: { destinationTable: { tableId: '_stage_x' } } } };
    const body = `--abc123\r\nContent-Type: application/json\r\n\r\n${JSON.stringify(metadata)}\r\n--abc123\r\nContent-Type: application/octet-stream\r\n\r\n{"id":"a"}\n{"id":"b"}\n\r\n--abc123--`;
    expect(jobResourceOf(body, contentType)).toEqual(metadata);
    expect(multipartParts(body, contentType)[1]).toBe('{"id":"a"}\n{"id":"b"}\n');
  });

  it('requests are classified by method and route: the jobs.query fast path, table operations, insertAll', () => {
    expect(requestKindOf('POST', '/bigquery/v2/projects/p/jobs?prettyPrint=false')).toEqual({
      kind: 'jobs.insert',
    });
    expect(requestKindOf('POST', '/upload/bigquery/v2/projects/p/jobs?uploadType=multipart')).toEqual({
      kind: 'jobs.insert',
    });
    expect(requestKindOf('POST', '/bigquery/v2/projects/p/queries')).toEqual({ kind: 'jobs.query' });
    expect(requestKindOf('GET', '/bigquery/v2/projects/p/queries/job_1')).toEqual({ kind: 'other' });
    expect(requestKindOf('POST', '/bigquery/v2/projects/p/datasets/d/tables')).toEqual({
      kind: 'tables.insert',
    });
    expect(requestKindOf('DELETE', '/bigquery/v2/projects/p/datasets/d/tables/_stage_t_ab')).toEqual({
      kind: 'tables.delete',
      table: '_stage_t_ab',
    });
    expect(requestKindOf('PATCH', '/bigquery/v2/projects/p/datasets/d/tables/t')).toEqual({
      kind: 'tables.patch',
      table: 't',
    });
    expect(requestKindOf('POST', '/bigquery/v2/projects/p/datasets/d/tables/t/insertAll')).toEqual({
      kind: 'tabledata.insertAll',
      table: 't',
    });
    expect(requestKindOf('GET', '/bigquery/v2/projects/p/datasets/d/tables/t')).toEqual({ kind: 'other' });
    expect(routeOf('GET', '/bigquery/v2/projects/p/jobs/job_1?location=US')).toBe('GET /projects/*/jobs/*');
    expect(routeOf('POST', '/upload/bigquery/v2/projects/p/jobs')).toBe('POST /upload/projects/*/jobs');
  });
});
