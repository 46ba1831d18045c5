import { afterEach, describe, expect, it, vi } from 'vitest';
import { createProgressRenderer } from '../../cli/display/run-progress.js';
import type { RateClassStats } from '../../connectors/support-api/index.js';
import { createStepReporter } from '../../embedded/step-progress.js';
import type { RunProgress, StreamProgress } from '../../schemas/run-summary.js';

const ESC = '\x1b[';

/** A 5-minute run of four streams, one progress snapshot per second, each stream ending at a different time. */
function simulatedRun(): { at: number; progress: RunProgress }[] {
  const ends: Record<string, number> = {
    views: 20,
    tickets: 150,
    ticket_messages: 280,
    'csat_surveys.sent': 90,
  };
  const out: { at: number; progress: RunProgress }[] = [];
  for (let t = 0; t <= 300; t++) {
    const streams: Record<string, StreamProgress> = {};
    for (const [name, end] of Object.entries(ends))
      streams[name] = {
        status: t >= end ? 'succeeded' : 'running',
        windowsTotal: 2,
        windowsDone: t >= end ? 2 : t >= end / 2 ? 1 : 0,
        pages: Math.min(t, end),
        rows: Math.min(t, end) * 100,
        current: t >= end ? null : `${name}/2026-01-01/2026-02-01`,
        error: null,
      };
    out.push({
      at: t * 1000,
      progress: { runId: 'r1', mode: 'incremental', status: t < 300 ? 'running' : 'succeeded', streams },
    });
  }
  return out;
}

const rates: RateClassStats[] = [
  {
    routeClass: 'list',
    requests: 40,
    limit: 100,
    windowMs: 60_000,
    rateLimited: 0,
    waits: 1,
    totalWaitMs: 1200,
  } as RateClassStats,
];

function render(tty: boolean): string {
  let clock = 0;
  let text = '';
  const stream = {
    isTTY: tty,
    write: (s: string) => {
      text += s;
      return true;
    },
  };
  const draw = createProgressRenderer(stream, 10_000, () => clock);
  for (const { at, progress } of simulatedRun()) {
    clock = at;
    draw(progress, rates);
  }
  return text;
}

describe('live display when stderr is not a terminal', () => {
  it('prints plain progress lines — no redraw sequences, a bounded number of lines, never silent for 15 s', () => {
    const text = render(false);
    expect(text).not.toContain(ESC);
    expect(text).not.toContain('\r');
    const lines = text.trimEnd().split('\n');
    // One line per ended stream plus one state line per 10 s at most (300 s run).
    expect(lines.length).toBeLessThanOrEqual(4 + 30);
    expect(lines.filter((l) => / succeeded: /.test(l))).toHaveLength(4);
    const times = lines.map((l) => Number(/^\[(\d+) s\]/.exec(l)?.[1]));
    expect(times.every((t) => Number.isFinite(t))).toBe(true);
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeLessThanOrEqual(15);
    expect(lines.some((l) => l.includes('running: tickets 1/2 windows'))).toBe(true);
  });

  it('on a terminal it still redraws the table in place (for contrast)', () => {
    const text = render(true);
    expect(text).toMatch(new RegExp(`${ESC.replace('[', '\\[')}\\d+A`));
  });
});

describe('first-start steps (createStepReporter)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('piped: a start line, a line at least every 10 s with the latest detail, and an end line', () => {
    vi.useFakeTimers();
    let text = '';
    const step = createStepReporter({ write: (s) => (text += s), tty: false })('building the Temporal CLI');
    for (let s = 1; s <= 95; s++) {
      if (s % 7 === 0) step.update(`${s * 3} packages compiled`);
      vi.advanceTimersByTime(1000);
    }
    step.end('built');
    expect(text).not.toContain(ESC);
    expect(text).not.toContain('\r');
    const lines = text.trimEnd().split('\n');
    expect(lines[0]).toBe('building the Temporal CLI…');
    expect(lines.at(-1)).toBe('building the Temporal CLI: built (95 s)');
    const heartbeats = lines.slice(1, -1);
    expect(heartbeats.length).toBeGreaterThanOrEqual(9);
    expect(heartbeats.length).toBeLessThanOrEqual(10);
    // The last heartbeat (at 90 s) carries the latest detail (updated at 84 s).
    expect(heartbeats.at(-1)).toBe('building the Temporal CLI… 90 s, 252 packages compiled');
  });

  it('a note (why the step is slow) is said once, on the start line only', () => {
    vi.useFakeTimers();
    let text = '';
    const step = createStepReporter({ write: (s) => (text += s), tty: false })(
      'building',
      '(about 3 minutes)',
    );
    vi.advanceTimersByTime(25_000);
    step.end();
    const lines = text.trimEnd().split('\n');
    expect(lines[0]).toBe('building… (about 3 minutes)');
    expect(lines.filter((l) => l.includes('about 3 minutes'))).toHaveLength(1);
    expect(lines.slice(1, -1)).toEqual(['building… 10 s', 'building… 20 s']);
  });

  it('on a terminal: one live line rewritten in place, then the result on its own line', () => {
    vi.useFakeTimers();
    let text = '';
    const step = createStepReporter({ write: (s) => (text += s), tty: true })('initialising PostgreSQL');
    vi.advanceTimersByTime(3000);
    step.end();
    expect(text.split('\n')).toHaveLength(2);
    expect(text).toContain('\r\x1b[2Kinitialising PostgreSQL… 2 s');
    expect(text.endsWith('initialising PostgreSQL: done (3 s)\n')).toBe(true);
  });
});
