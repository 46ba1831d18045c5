import { describe, expect, it } from 'vitest';
import {
  decodeStateKey,
  decodeStateKeyOf,
  decodeThreadFailure,
  encodeStateKey,
  encodeThreadFailure,
  requireStateKey,
  STATE_KEY_FORMATS,
  type StateKey,
  threadKeyOf,
} from '../../schemas/state-key.js';

const FROM = '2026-01-01T00:00:00.000Z';
const BEFORE = '2026-01-08T00:00:00.000Z';

/** One key of every kind, with the row it is stored as (the formats warehouses hold today). */
const CASES: [StateKey, { stream: string; scope: string }][] = [
  [
    { kind: 'high_water_mark', stream: 'tickets' },
    { stream: 'tickets', scope: 'hwm' },
  ],
  [
    { kind: 'high_water_mark', stream: 'csat_surveys.sent' },
    { stream: 'csat_surveys.sent', scope: 'hwm' },
  ],
  [{ kind: 'sweep' }, { stream: 'tickets', scope: 'sweep' }],
  [{ kind: 'oldest_ticket' }, { stream: 'tickets', scope: 'oldest' }],
  [
    { kind: 'head_pass', before: BEFORE },
    { stream: 'tickets', scope: `head/${BEFORE}` },
  ],
  [
    { kind: 'window', pass: 'agent_sessions', from: FROM, before: BEFORE },
    { stream: 'agent_sessions', scope: `${FROM}/${BEFORE}` },
  ],
  [
    { kind: 'reread', pass: 'csat_surveys.submitted', from: FROM, before: BEFORE },
    { stream: 'csat_surveys.submitted', scope: `reread/${FROM}/${BEFORE}` },
  ],
  [
    { kind: 'thread', ticketNumber: 1042 },
    { stream: 'ticket_messages', scope: '1042' },
  ],
  [
    { kind: 'snapshot', stream: 'tags', runId: 'sync-1/abc' },
    { stream: 'tags', scope: 'run:sync-1/abc' },
  ],
  [
    { kind: 'report', query: 'hwm' },
    { stream: 'report_snapshots', scope: 'hwm' },
  ],
];

describe('state key', () => {
  it('encodes every kind to its row and decodes the row back to the same key', () => {
    expect(new Set(CASES.map(([key]) => key.kind))).toEqual(new Set(Object.keys(STATE_KEY_FORMATS)));
    for (const [key, row] of CASES) {
      expect(encodeStateKey(key)).toEqual(row);
      expect(decodeStateKey(row)).toEqual(key);
    }
  });

  it('decodes no key from a row the sync never writes', () => {
    for (const row of [
      { stream: 'ticket_messages', scope: 'abc' },
      { stream: 'ticket_messages', scope: '007' },
      { stream: 'ticket_messages', scope: '0' },
      { stream: 'tickets', scope: 'all' },
      { stream: 'tickets', scope: 'head/a/b' },
      { stream: 'agent_sessions', scope: 'tr1' },
      { stream: 'agent_sessions', scope: `${FROM}/not-a-time` },
      { stream: 'agent_sessions', scope: `reread/${FROM}` },
      { stream: 'agent_sessions', scope: `${FROM}/${BEFORE}/x` },
    ])
      expect(decodeStateKey(row), JSON.stringify(row)).toBeNull();
  });

  it('refuses to encode a key that breaks its schema, naming the field', () => {
    expect(() =>
      encodeStateKey({ kind: 'window', pass: 'agent_sessions', from: 'a/b', before: BEFORE }),
    ).toThrow(/from/);
    expect(() => encodeStateKey({ kind: 'thread', ticketNumber: 1.5 })).toThrow(/ticketNumber/);
  });

  it('decodes a row as one kind or names the row', () => {
    const row = { stream: 'agent_sessions', scope: `reread/${FROM}/${BEFORE}` };
    expect(decodeStateKeyOf('window', row)).toBeNull();
    expect(decodeStateKeyOf('reread', row)).toMatchObject({ from: FROM, before: BEFORE });
    expect(threadKeyOf('77')).toEqual({ kind: 'thread', ticketNumber: 77 });
    expect(() => threadKeyOf('x7')).toThrow(/stream "ticket_messages", scope "x7"\) is no thread key/);
    expect(() => requireStateKey('sweep', { stream: 'tickets', scope: 'hwm' })).toThrow(/is no sweep key/);
  });

  it("records a thread's failure in the run ledger under its thread key, and reads no other row as one", () => {
    const row = encodeThreadFailure({ kind: 'thread', ticketNumber: 42 });
    expect(row).toEqual({
      run_id: 'thread:42',
      workflow_id: 'ticket_messages/42',
      stream: 'ticket_messages',
    });
    expect(decodeThreadFailure(row)).toEqual({ kind: 'thread', ticketNumber: 42 });
    // A run, a window, a thread id that is no ticket number, or another stream's row: not a thread failure.
    for (const other of [
      { run_id: 'run-2026-01-01', stream: null },
      { run_id: 'wf-1', stream: 'ticket_messages' },
      { run_id: 'thread:007', stream: 'ticket_messages' },
      { run_id: 'thread:x7', stream: 'ticket_messages' },
      { run_id: 'thread:42', stream: 'tickets' },
    ]) {
      expect(decodeThreadFailure(other), other.run_id).toBeNull();
    }
  });
});
