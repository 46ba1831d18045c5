import { describe, expect, it } from 'vitest';
import { stagedCheckpointMergeSql } from '../../connectors/bigquery/flush-sql.js';
import { checkpointMergeSql } from '../../connectors/bigquery/sql.js';
import { byStateTable, checkpointOfQueueEntry } from '../../connectors/state-tables.js';
import { encodeStateKey, STATE_KEY_FORMATS, type StateKey } from '../../schemas/state-key.js';
import type { CheckpointUpdate } from '../../schemas/warehouse.js';

const checkpoint = (key: StateKey): CheckpointUpdate => ({
  ...encodeStateKey(key),
  cursor: null,
  high_water_mark: null,
  status: 'running',
  pages: 0,
  rows: 0,
});

const thread = checkpoint({ kind: 'thread', ticketNumber: 42 });
const window = checkpoint({
  kind: 'window',
  pass: 'agent_sessions',
  from: '2024-01-01T00:00:00Z',
  before: '2024-01-02T00:00:00Z',
});

describe('state tables: a thread key lives in _thread_queue, every other key in _sync_state', () => {
  it('routes checkpoints by their key kind, as STATE_KEY_FORMATS documents', () => {
    const { syncState, threadQueue } = byStateTable([window, thread]);
    expect(syncState).toEqual([window]);
    expect(threadQueue).toEqual([{ ticketNumber: 42, checkpoint: thread }]);
    expect(STATE_KEY_FORMATS.thread.table).toBe('_thread_queue');
    for (const [kind, format] of Object.entries(STATE_KEY_FORMATS))
      if (kind !== 'thread') expect(format.table).toBe('_sync_state');
    // `007` is no ticket number: such a row is no thread key, so it stays where it is.
    expect(byStateTable([{ ...thread, scope: '007' }]).threadQueue).toEqual([]);
  });

  it('reads a queue row back as the checkpoint of its thread key', () => {
    expect(
      checkpointOfQueueEntry({
        ticket_number: 42,
        cursor: null,
        high_water_mark: null,
        status: 'running',
        pages: 0,
        rows: 0,
        updated_at: '2024-01-01T00:00:00.000Z',
      }),
    ).toEqual({ ...thread, updated_at: '2024-01-01T00:00:00.000Z' });
  });

  it('BigQuery upserts one MERGE per state table written, none into a table not written', () => {
    const both = checkpointMergeSql('ds', [window, thread], new Date('2024-01-01T00:00:00Z'));
    expect(both.match(/MERGE `ds`\.`_sync_state`/g)).toHaveLength(1);
    expect(both.match(/MERGE `ds`\.`_thread_queue`/g)).toHaveLength(1);
    expect(checkpointMergeSql('ds', [window], new Date())).not.toContain('_thread_queue');
    const staged = stagedCheckpointMergeSql(
      'ds',
      ['b1'],
      [{ ...thread, updated_at: '2024-01-01T00:00:00Z' }],
    );
    expect(staged).toContain('MERGE `ds`.`_thread_queue`');
    expect(staged).not.toContain('_sync_state');
  });
});
