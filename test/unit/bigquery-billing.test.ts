import { describe, expect, it } from 'vitest';
import {
  billStatement,
  logicalBytesOf,
  logicalBytesOfNdjson,
  logicalBytesSql,
  MINIMUM_BILLED_BYTES,
} from '../support/bigquery-billing.js';
import { shapeOfQuery } from '../support/bigquery-job-shapes.js';
import { QuotaLedger, tableGroupOf } from '../support/bigquery-quota-ledger.js';

const MB = 1024 * 1024;

describe('what BigQuery would bill (on-demand), from table sizes', () => {
  it("values are sized by BigQuery's logical rules: STRING 2 + UTF-8 bytes, JSON its text, 8 for numbers and times, NULL 0", () => {
    expect(logicalBytesOf('STRING', 'ü')).toBe(4);
    expect(logicalBytesOf('JSON', { a: [1, 'ü'] })).toBe(14);
    expect(logicalBytesOf('INTEGER', 5)).toBe(8);
    expect(logicalBytesOf('TIMESTAMP', '2026-01-01T00:00:00Z')).toBe(8);
    expect(logicalBytesOf('BOOLEAN', false)).toBe(1);
    expect(logicalBytesOf('STRING', null)).toBe(0);
    const fields = [
      { name: 'id', type: 'STRING' },
      { name: 'n', type: 'INT64' },
      { name: '_raw', type: 'JSON' },
    ];
    expect(
      logicalBytesOfNdjson(fields, '{"id":"abc","n":1,"_raw":{"x":1}}\n{"id":null,"n":null,"_raw":null}\n'),
    ).toBe(5 + 8 + 7);
    expect(logicalBytesSql('_raw', 'JSON')).toBe('IFNULL(BYTE_LENGTH(TO_JSON_STRING(`_raw`)), 0)');
  });

  it('a MERGE that updates bills what it reads plus its whole target; small tables bill 10 MB each', () => {
    const [merge] = shapeOfQuery(
      'MERGE ds.tickets T USING ds.stage S ON T.id = S.id WHEN MATCHED THEN UPDATE SET v = S.v WHEN NOT MATCHED THEN INSERT ROW',
    ).children;
    const sizes = new Map([
      ['tickets', 300 * MB],
      ['stage', 1 * MB],
    ]);
    const bill = billStatement(merge!, (t) => sizes.get(t));
    // q = tickets (300 MB) + stage (floored to 10 MB); t = tickets (300 MB).
    expect(bill.bytes).toBe(610 * MB);
    expect([...bill.byTable]).toEqual([['tickets', 610 * MB]]);
  });

  it('a read bills each table it reads, at least 10 MB each; names that are no known table do not count', () => {
    const [select] = shapeOfQuery('SELECT COUNT(*) FROM ds.a JOIN ds.b USING (id) JOIN cte ON true').children;
    const sizes = new Map([
      ['a', 0],
      ['b', 25 * MB],
    ]);
    const bill = billStatement(select!, (t) => sizes.get(t));
    expect(bill.bytes).toBe(35 * MB);
    expect(Object.fromEntries(bill.byTable)).toEqual({ a: MINIMUM_BILLED_BYTES, b: 25 * MB });
    // A statement that names no table bills nothing (`SELECT inserted, updated` at a script's end).
    expect(shapeOfQuery('SELECT 1 AS x').children).toEqual([]);
  });

  it('an INSERT of literals bills the floor for its target; TRUNCATE bills nothing', () => {
    const [insert, truncate] = shapeOfQuery('INSERT INTO ds.t (x) VALUES (1); TRUNCATE TABLE ds.t').children;
    expect(billStatement(insert!, () => 50 * MB).bytes).toBe(MINIMUM_BILLED_BYTES);
    expect(billStatement(truncate!, () => 50 * MB).bytes).toBe(0);
  });
});

describe('the quota ledger', () => {
  it('groups per-batch staging tables under their target', () => {
    expect(tableGroupOf('_stage_ticket_messages_0a1b2c3d4e5f')).toBe('_stage_ticket_messages*');
    expect(tableGroupOf('tickets')).toBe('tickets');
  });

  it('counts DML inside IF … END IF apart, and keeps it out of the concurrency rules', () => {
    const ledger = new QuotaLedger();
    const guarded = shapeOfQuery(
      'BEGIN TRANSACTION; MERGE ds.a T USING ds.s S ON T.id = S.id WHEN MATCHED THEN UPDATE SET v = 1; IF EXISTS (SELECT 1 FROM ds.r) THEN UPDATE ds.r SET x = 1 WHERE true; END IF; COMMIT TRANSACTION;',
    );
    ledger.record('j1', guarded, 0);
    const other = shapeOfQuery(
      'BEGIN TRANSACTION; MERGE ds.b T USING ds.s S ON T.id = S.id WHEN MATCHED THEN UPDATE SET v = 1; IF EXISTS (SELECT 1 FROM ds.r) THEN UPDATE ds.r SET x = 1 WHERE true; END IF; COMMIT TRANSACTION;',
    );
    // Both guard an UPDATE of r, and neither is known to run it: no conflict on r.
    expect(ledger.check(other, 1)).toEqual([]);
    ledger.record('j2', other, 1);
    const { tables } = ledger.report();
    expect(tables['r']).toMatchObject({ dmlStatements: 0, conditionalDml: 2, peakConcurrentTransactions: 0 });
    expect(tables['a']).toMatchObject({ dmlStatements: 1, mutatingDml: 1, peakConcurrentTransactions: 1 });
    // A third transaction on a conflicts with the one still running.
    expect(ledger.check(guarded, 2).map((v) => [v.rule, v.table])).toEqual([['transaction-conflict', 'a']]);
    ledger.done('j1');
    expect(ledger.check(guarded, 3)).toEqual([]);
  });

  it('table metadata operations: at most 5 per table per 10 s (tables.* calls, DDL, load jobs)', () => {
    const ledger = new QuotaLedger();
    for (let i = 0; i < 4; i++) ledger.tableOp('t', i * 1000, 'alter');
    ledger.record('ddl', shapeOfQuery('ALTER TABLE ds.t ADD COLUMN x STRING'), 4000);
    expect(ledger.report().tables['t']).toMatchObject({ tableOps: 5, peakTableOpsPer10s: 5 });
    expect(ledger.checkTableOp('t', 5000).map((v) => v.rule)).toEqual(['table-metadata-rate']);
    // Ten seconds after the first, there is room again.
    expect(ledger.checkTableOp('t', 10_500)).toEqual([]);
  });

  it('a query longer than 1,024K characters (comments and white space included) is refused', () => {
    const ledger = new QuotaLedger();
    const fits = `SELECT '${'x'.repeat(1024 * 1024 - 20)}' AS s`;
    expect(ledger.check(shapeOfQuery(fits), 0)).toEqual([]);
    const long = `-- ${' '.repeat(30)}\n${fits}`;
    expect(ledger.check(shapeOfQuery(long), 0).map((v) => v.rule)).toEqual(['query-length']);
  });

  it('bills each statement of a script with the sizes it is given and the rows loaded into a staging table', () => {
    const sizes = new Map([['tickets', 40 * MB]]);
    const ledger = new QuotaLedger((t) => sizes.get(t));
    ledger.record(
      'load',
      {
        kind: 'load',
        statements: [],
        transaction: false,
        ddl: [],
        children: [],
        loadTable: '_stage_tickets_00112233aabb',
      },
      0,
      2 * MB,
    );
    ledger.record(
      'merge',
      shapeOfQuery(
        'DECLARE n INT64 DEFAULT 0; BEGIN TRANSACTION; SET n = (SELECT COUNT(*) FROM ds._stage_tickets_00112233aabb S JOIN ds.tickets T USING (id)); MERGE ds.tickets T USING ds._stage_tickets_00112233aabb S ON T.id = S.id WHEN MATCHED THEN UPDATE SET v = 1; COMMIT TRANSACTION; SELECT n;',
      ),
      1,
    );
    // A second batch loads a staging table of its own: two loads for the group, one per table.
    ledger.record(
      'load2',
      {
        kind: 'load',
        statements: [],
        transaction: false,
        ddl: [],
        children: [],
        loadTable: '_stage_tickets_44556677ccdd',
      },
      2,
      1,
    );
    const report = ledger.report();
    // SET: 10 MB (the 2 MB stage, floored) + 40 MB; MERGE: 40 + 10 + 40 MB.
    expect(report.billedStatements).toBe(2);
    expect(report.billedBytesEstimate).toBe(140 * MB);
    expect(report.billedBytesFloor).toBe(10 * MB);
    expect(report.tables['tickets']!.billedBytes).toBe(130 * MB);
    expect(report.tables['_stage_tickets*']).toMatchObject({
      loadJobs: 2,
      peakLoadJobsPerTable: 1,
      billedBytes: 10 * MB,
    });
  });
});
