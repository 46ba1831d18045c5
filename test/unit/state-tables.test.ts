import { describe, expect, it } from 'vitest';
import { restartedCheckpoint } from '../../activities/checkpoints.js';
import { stagedCheckpointMergeSql } from '../../connectors/bigquery/flush-sql.js';
import { checkpointMergeSql } from '../../connectors/bigquery/sql.js';
import { bigQueryPlace } from '../../connectors/bigquery/staging.js';
import { byStateTable, stateTableNamed, stateTableOf } from '../../connectors/state-tables.js';
import { STATE_KEY_FORMATS } from '../../schemas/state-key.js';

const thread = restartedCheckpoint({ kind: 'thread', ticketNumber: 42 });
const window = restartedCheckpoint({
  kind: 'window',
  pass: 'agent_sessions',
  from: '2024-01-01T00:00:00Z',
  before: '2024-01-02T00:00:00Z',
});

const reread = restartedCheckpoint({
  kind: 'reread',
  pass: 'agent_sessions',
  from: '2024-01-01T00:00:00Z',
  before: '2024-01-02T00:00:00Z',
});

describe('state tables: a thread key lives in _thread_queue, a reread key in _reread_queue, every other in _sync_state', () => {
  it('routes checkpoints by their key kind, as STATE_KEY_FORMATS documents', () => {
    const groups = byStateTable([window, thread, reread]);
    expect(groups.map((g) => [g.table.name, g.entries])).toEqual([
      ['_thread_queue', [{ key: [42], checkpoint: thread }]],
      [
        '_reread_queue',
        [{ key: ['agent_sessions', '2024-01-01T00:00:00Z', '2024-01-02T00:00:00Z'], checkpoint: reread }],
      ],
      ['_sync_state', [{ key: [window.stream, window.scope], checkpoint: window }]],
    ]);
    for (const [kind, format] of Object.entries(STATE_KEY_FORMATS))
      expect(format.table).toBe(
        kind === 'thread' ? '_thread_queue' : kind === 'reread' ? '_reread_queue' : '_sync_state',
      );
    // `007` is no ticket number, `reread/x/y` no window: such rows are no queue keys, so they stay where they are.
    expect(stateTableOf({ ...thread, scope: '007' }).name).toBe('_sync_state');
    expect(stateTableOf({ ...reread, scope: 'reread/x/y' }).name).toBe('_sync_state');
    // A report query may be named like a re-read scope: it is a report key all the same.
    expect(stateTableOf({ stream: 'report_snapshots', scope: reread.scope }).name).toBe('_sync_state');
  });

  it('reads a queue row back as the checkpoint of its key', () => {
    const state = { cursor: null, high_water_mark: null, status: 'running', pages: 0, rows: 0 };
    const updated_at = '2024-01-01T00:00:00.000Z';
    expect(
      stateTableNamed('_thread_queue').checkpointOf({ ticket_number: 42, ...state, updated_at }),
    ).toEqual({
      ...thread,
      updated_at,
    });
    expect(
      stateTableNamed('_reread_queue').checkpointOf({
        pass: 'agent_sessions',
        window_start: '2024-01-01T00:00:00Z',
        window_end: '2024-01-02T00:00:00Z',
        ...state,
        updated_at,
      }),
    ).toEqual({ ...reread, updated_at });
  });

  it('BigQuery upserts one MERGE per state table written, none into a table not written', () => {
    const all = checkpointMergeSql(
      bigQueryPlace('ds'),
      [window, thread, reread],
      new Date('2024-01-01T00:00:00Z'),
    );
    for (const table of ['_sync_state', '_thread_queue', '_reread_queue'])
      expect(all.match(new RegExp(`MERGE \`ds\`\\.\`${table}\``, 'g'))).toHaveLength(1);
    expect(checkpointMergeSql(bigQueryPlace('ds'), [window], new Date())).not.toMatch(
      /_thread_queue|_reread_queue/,
    );
    const staged = stagedCheckpointMergeSql(
      bigQueryPlace('ds'),
      ['b1'],
      [{ ...thread, updated_at: '2024-01-01T00:00:00Z' }],
    );
    expect(staged).toContain('MERGE `ds`.`_thread_queue`');
    expect(staged).not.toMatch(/_sync_state|_reread_queue/);
  });
});
