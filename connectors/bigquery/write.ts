import type { TableSpec } from '../../schemas/warehouse.js';
import { checkpointList } from '../batch.js';
import type { DeletionCounts } from '../destination.js';
import type { DestinationSettings } from '../settings.js';
import type { CascadeConditions, DeletionRequest } from '../sql/deletions.js';
import { bindLiteral, timestampLiteral } from './dialect.js';
import type { BigQuerySession } from './session.js';
import { checkpointMergeSql } from './sql.js';

/**
 * BigQuery's deletion scripts: the rows come from sql/deletions.ts; each is one multi-statement transaction
 * that counts and marks them (and upserts its checkpoint). Rows and checkpoints are written by the staged
 * path (staged-writer.ts, flush.ts), which flushes before it runs one of these.
 */
export class BigQueryDeletions {
  constructor(
    private readonly session: BigQuerySession,
    private readonly settings: DestinationSettings,
  ) {}

  /**
   * The count is taken inside the transaction, on the snapshot the UPDATE works on, and the UPDATE runs only
   * when it found rows: most runs delete nothing (a full re-read of an unchanged collection), and an UPDATE
   * bills its whole target (10 MB at least) even when it changes no row. `where` names the table
   * `t` (a guard's subquery must not mistake its own columns for the table's). Both deletions have always
   * been named `markDeleted` in BigQuery's errors: one script serves them.
   */
  async markDeleted({ spec, where, deletedAt, checkpoint }: DeletionRequest): Promise<number> {
    const d = this.session.dialect;
    const condition = where(d, bindLiteral);
    const checkpoints = checkpointList(checkpoint);
    // Counted in the workspace's rows (`table`), marked in the table kept to them (`target` and `ownRows`).
    const script = `DECLARE n INT64 DEFAULT 0;
BEGIN TRANSACTION;
SET n = (SELECT COUNT(*) FROM ${d.table(spec.name)} t WHERE ${condition});
IF n > 0 THEN
  UPDATE ${d.target(spec.name)} t SET _deleted_at = ${timestampLiteral(deletedAt)} WHERE (${condition})${d.ownRows('t')};
END IF;
${checkpoints.length > 0 ? `${checkpointMergeSql(this.session, checkpoints, this.settings.clock())};\n` : ''}COMMIT TRANSACTION;
SELECT n;`;
    const [row] = await this.session.withErrorMapping(`markDeleted ${spec.name}`, () =>
      this.session.script<{ n: number }>(script),
    );
    return Number(row?.n ?? 0);
  }

  async cascade(
    child: TableSpec<unknown>,
    conditions: CascadeConditions,
    deletedAt: Date,
  ): Promise<DeletionCounts> {
    const d = this.session.dialect;
    const rows = d.table(child.name);
    const target = d.target(child.name);
    const revive = conditions.revive
      ? `SET revived = (SELECT COUNT(*) FROM ${rows} WHERE ${conditions.revive});
IF revived > 0 THEN
  UPDATE ${target} SET _deleted_at = CAST(NULL AS TIMESTAMP) WHERE (${conditions.revive})${d.ownRows()};
END IF;
`
      : '';
    const script = `DECLARE marked INT64 DEFAULT 0;
DECLARE revived INT64 DEFAULT 0;
BEGIN TRANSACTION;
SET marked = (SELECT COUNT(*) FROM ${rows} WHERE ${conditions.mark});
IF marked > 0 THEN
  UPDATE ${target} SET _deleted_at = ${timestampLiteral(deletedAt)} WHERE (${conditions.mark})${d.ownRows()};
END IF;
${revive}COMMIT TRANSACTION;
SELECT marked, revived;`;
    const [row] = await this.session.withErrorMapping(`cascadeDeletion ${child.name}`, () =>
      this.session.script<{ marked: number; revived: number }>(script),
    );
    return { marked: Number(row?.marked ?? 0), revived: Number(row?.revived ?? 0) };
  }
}
