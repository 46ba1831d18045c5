/**
 * The plan of a pass another pass covers (FIRST_READ_COVERED_BY, issue 22): on the first read from the
 * history's start, CSAT's submitted pass reads nothing and follows the sent pass — but only where that is
 * exact: the history starts no later than the oldest ticket, both passes start there, and no range is
 * given. Every other case reads the pass in full, as before.
 */
import { describe, expect, it } from 'vitest';
import { planRun } from '../../activities/bookkeeping.js';
import type { SyncMode, SyncSettings } from '../../schemas/run-input.js';

const DAY = 24 * 3600 * 1000;
const NOW = '2026-06-01T00:00:00.000Z';
const OLDEST_TICKET = '2026-01-10T00:00:00.000Z';

const settings = (startDate: string | null): SyncSettings => ({
  startDate,
  lookbackMs: DAY,
  windowMs: 90 * DAY,
  threadLookbackMs: 7 * DAY,
  sweepPagesPerRun: 50,
  threadReverifyPerRun: 0,
  pageSize: 100,
  streamParallelism: 4,
  threadConcurrency: 8,
  analyticsTaskQueue: 'a',
  csatIncludeComments: false,
});

/** A warehouse holding these checkpoints (stream/scope → mark) and no set-aside or re-read entries. */
function plan(
  marks: Record<string, string>,
  input: {
    mode?: SyncMode;
    startDate?: string | null;
    streams?: string[];
    range?: { from: string; before: string };
  },
) {
  const destination = {
    readCheckpoint: async (stream: string, scope: string) => {
      const mark = marks[`${stream}/${scope}`];
      return mark ? ({ high_water_mark: mark } as never) : null;
    },
    listCheckpoints: async () => [],
    bookkeeping: { openRejections: async () => [] },
    select: async () => [],
  };
  return planRun({ destination: destination as never })({
    mode: input.mode ?? 'incremental',
    streams: (input.streams ?? ['tickets', 'csat_surveys']) as never,
    settings: settings(input.startDate === undefined ? null : input.startDate),
    now: NOW,
    ...(input.range ? { range: input.range } : {}),
  });
}

const pass = async (p: ReturnType<typeof plan>, name: string) =>
  (await p).passes.find((x) => x.pass === name)!;
const OLDEST = { 'tickets/oldest': OLDEST_TICKET };

describe('the first read of a covered pass', () => {
  it('reads nothing of the submitted pass when the history starts at the oldest ticket', async () => {
    const p = plan(OLDEST, {});
    const sent = await pass(p, 'csat_surveys.sent');
    const submitted = await pass(p, 'csat_surveys.submitted');
    expect(sent.windows.length).toBeGreaterThan(0);
    expect(sent.coveredBy).toBeUndefined();
    expect(submitted).toMatchObject({
      coveredBy: 'csat_surveys.sent',
      windows: [],
      advanceHighWaterMark: true,
    });
  });

  it('covers it when SYNC_START_DATE is no later than the oldest ticket, and on a full refresh', async () => {
    expect(
      (await pass(plan(OLDEST, { startDate: '2026-01-01T00:00:00.000Z' }), 'csat_surveys.submitted'))
        .coveredBy,
    ).toBe('csat_surveys.sent');
    const marked = { ...OLDEST, 'csat_surveys.sent/hwm': NOW, 'csat_surveys.submitted/hwm': NOW };
    expect((await pass(plan(marked, { mode: 'full_refresh' }), 'csat_surveys.submitted')).coveredBy).toBe(
      'csat_surveys.sent',
    );
  });

  it('reads it in full when a survey could have been sent before the history start', async () => {
    // SYNC_START_DATE after the oldest ticket: a survey sent before it and answered since is the submitted
    // pass's alone.
    const late = await pass(
      plan(OLDEST, { startDate: '2026-03-01T00:00:00.000Z' }),
      'csat_surveys.submitted',
    );
    expect(late.coveredBy).toBeUndefined();
    expect(late.windows.length).toBeGreaterThan(0);
  });

  it('reads it in full once it has its own mark, or when the sent pass starts elsewhere', async () => {
    const ownMark = { ...OLDEST, 'csat_surveys.submitted/hwm': '2026-05-01T00:00:00.000Z' };
    expect((await pass(plan(ownMark, {}), 'csat_surveys.submitted')).coveredBy).toBeUndefined();
    const sentMarked = { ...OLDEST, 'csat_surveys.sent/hwm': '2026-05-01T00:00:00.000Z' };
    const submitted = await pass(plan(sentMarked, {}), 'csat_surveys.submitted');
    expect(submitted.coveredBy).toBeUndefined();
    expect(submitted.windows.length).toBeGreaterThan(0);
  });

  it('never covers a backfill or a replay (a given range moves no mark)', async () => {
    const range = { from: '2026-02-01T00:00:00.000Z', before: '2026-03-01T00:00:00.000Z' };
    for (const mode of ['backfill', 'replay'] as const) {
      const submitted = await pass(plan(OLDEST, { mode, range }), 'csat_surveys.submitted');
      expect(submitted.coveredBy).toBeUndefined();
      expect(submitted.windows).toHaveLength(1);
    }
  });

  it('waits for the sweep when the oldest ticket is not known yet, and only if this run sweeps', async () => {
    const startDate = '2026-01-01T00:00:00.000Z';
    const pending = await pass(plan({}, { startDate }), 'csat_surveys.submitted');
    expect(pending).toMatchObject({ coverPending: true });
    expect(pending.coveredBy).toBeUndefined();
    expect(pending.windows.length).toBeGreaterThan(0);
    const noTickets = await pass(
      plan({}, { startDate, streams: ['csat_surveys'] }),
      'csat_surveys.submitted',
    );
    expect(noTickets.coverPending).toBeUndefined();
    expect(noTickets.windows.length).toBeGreaterThan(0);
  });

  it('never covers agent sessions or the sent pass itself', async () => {
    const p = plan(OLDEST, { streams: ['tickets', 'csat_surveys', 'agent_sessions'] });
    expect((await pass(p, 'agent_sessions')).coveredBy).toBeUndefined();
    expect((await pass(p, 'csat_surveys.sent')).coveredBy).toBeUndefined();
  });
});

describe('planning a pending cover again after the sweep', () => {
  it('judges only the oldest ticket: the sent pass may have moved its mark meanwhile', async () => {
    const startDate = '2026-01-01T00:00:00.000Z';
    const moved = { ...OLDEST, 'csat_surveys.sent/hwm': '2026-04-01T00:00:00.000Z' };
    const destination = {
      readCheckpoint: async (stream: string, scope: string) => {
        const mark = moved[`${stream}/${scope}` as keyof typeof moved];
        return mark ? ({ high_water_mark: mark } as never) : null;
      },
      listCheckpoints: async () => [],
      bookkeeping: { openRejections: async () => [] },
      select: async () => [],
    };
    const again = (coverPendingSinceStart?: true) =>
      planRun({ destination: destination as never })({
        mode: 'incremental',
        streams: ['tickets', 'csat_surveys'],
        settings: settings(startDate),
        now: NOW,
        ...(coverPendingSinceStart ? { coverPendingSinceStart } : {}),
      });
    const submitted = async (p: ReturnType<typeof again>) =>
      (await p).passes.find((x) => x.pass === 'csat_surveys.submitted')!;
    expect((await submitted(again(true))).coveredBy).toBe('csat_surveys.sent');
    // A plan from scratch would not cover it: the sent pass no longer starts at the history start.
    expect((await submitted(again())).coveredBy).toBeUndefined();
  });
});
