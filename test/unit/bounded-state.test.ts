/**
 * What a worker keeps while it syncs must not grow with the workspace (issue 22): a sync of 100k tickets reads
 * a scope per ticket thread, and every per-scope record the workflow or a cache keeps for them must go once
 * the scope is done, or be bounded.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { BoundedMap } from '../../connectors/bounded-map.js';
import { workflowCacheSizeFor, workflowHeapCapMb } from '../../worker/heap-cap.js';
import { pageGuard } from '../../workflows/page-guard.js';

const page = (cursorTag: string | null) => ({ cursorTag, restarted: false });

describe('the page guard of a workflow execution', () => {
  it('holds only the scopes being read: thousands of threads read 16 at a time leave nothing behind', () => {
    const guard = pageGuard('ticket_messages');
    const lanes = 16;
    let most = 0;
    for (let first = 0; first < 5_000; first += lanes) {
      const scopes = Array.from({ length: lanes }, (_, i) => `ticket:${first + i}`);
      // Each thread has three pages: two cursors, then done; the lanes interleave page by page.
      for (const tag of ['a', 'b', null]) {
        for (const scope of scopes) guard.observe(scope, page(tag));
        most = Math.max(most, guard.scopesHeld());
      }
    }
    expect(most).toBe(lanes);
    expect(guard.scopesHeld()).toBe(0);
  });

  it('still stops a cursor that comes round again within a scope, and lets a finished scope be read again', () => {
    const guard = pageGuard('ticket_messages');
    guard.observe('ticket:1', page('a'));
    guard.observe('ticket:1', page('b'));
    expect(() => guard.observe('ticket:1', page('a'))).toThrow(/already returned/);

    guard.observe('ticket:2', page('a'));
    guard.observe('ticket:2', page(null));
    // Read again from its first page later in the execution: the same cursors again, by right.
    expect(() => guard.observe('ticket:2', page('a'))).not.toThrow();
    expect(guard.lastCursorTag('ticket:2')).toBe('a');
  });
});

describe('the page guard over continue-as-new', () => {
  /**
   * A scope whose cursors cycle with period `cycle` after `tail` pages, read by executions that each
   * continue as new after `perExecution` pages, carrying the guard's probes: the page the loop is caught at.
   */
  function caughtAt(cycle: number, tail: number, perExecution: number): number | null {
    let probes = pageGuard('csat_surveys.sent').probes();
    for (let n = 0; n < 100_000; ) {
      const guard = pageGuard('csat_surveys.sent', probes);
      for (let i = 0; i < perExecution; i++, n++) {
        const tag = n < tail ? `t${n}` : `c${(n - tail) % cycle}`;
        try {
          guard.observe('w', page(tag));
        } catch (err) {
          expect(String(err)).toMatch(/already returned/);
          return n;
        }
      }
      probes = guard.probes();
      expect(probes.length).toBe(1); // constant, whatever the scope's length
    }
    return null;
  }

  it('catches a cycle longer than one execution, within about twice its length and tail', () => {
    for (const [cycle, tail] of [
      [3_000, 0],
      [2_500, 7_000],
      [1_001, 1],
    ] as const) {
      const at = caughtAt(cycle, tail, 1_000);
      expect(at, `cycle ${cycle} after ${tail}`).not.toBeNull();
      expect(at!).toBeLessThanOrEqual(2 * Math.max(cycle, tail) + 2 * cycle);
    }
  });

  it('a scope without a cycle is never stopped, and a finished scope leaves no probe', () => {
    expect(caughtAt(Number.MAX_SAFE_INTEGER, 100_000, 1_000)).toBeNull();
    const guard = pageGuard('tags');
    guard.observe('snapshot', page('a'));
    guard.observe('snapshot', page(null));
    expect(guard.probes()).toEqual([]);
  });
});

describe('BoundedMap (caches that are only a saving)', () => {
  it('keeps at most `max` entries however many keys pass through it', () => {
    const map = new BoundedMap<string, number>(100);
    for (let i = 0; i < 100_000; i++) map.set(`scope:${i}`, i);
    expect(map.size).toBe(100);
    expect(map.get('scope:99999')).toBe(99_999);
    expect(map.get('scope:0')).toBeUndefined();
  });

  it('drops the least recently used entry, not one just read', () => {
    const map = new BoundedMap<string, number>(2);
    map.set('a', 1);
    map.set('b', 2);
    expect(map.get('a')).toBe(1); // a is now the most recently used
    map.set('c', 3);
    expect(map.get('b')).toBeUndefined();
    expect(map.get('a')).toBe(1);
    expect(map.get('c')).toBe(3);
  });
});

describe('the workflow thread heap cap', () => {
  it('applies the configured cap unless node was started with a limit of its own, or it is 0', () => {
    expect(workflowHeapCapMb(384, undefined, [])).toBe(384);
    expect(workflowHeapCapMb(384, '--enable-source-maps', ['--import', 'tsx'])).toBe(384);
    expect(workflowHeapCapMb(384, '--max-old-space-size=2048', [])).toBeNull();
    expect(workflowHeapCapMb(384, undefined, ['--max_old_space_size=1024'])).toBeNull();
    expect(workflowHeapCapMb(0, undefined, [])).toBeNull();
  });

  it("sizes the workflow cache for the capped thread's heap, as the SDK would for a heap that size", () => {
    // The SDK's default: 600 workflows per GiB above 200 MiB, at least 10.
    expect(workflowCacheSizeFor(384)).toBe(107);
    expect(workflowCacheSizeFor(1224)).toBe(600);
    expect(workflowCacheSizeFor(150)).toBe(10);
  });
});

describe('capWorkflowThreadHeap', () => {
  /** The heap limit (MiB) of a thread a fresh process creates after capping at `capMb` (0: no cap). */
  function threadHeapLimitMb(capMb: number): number {
    const heapCap = new URL('../../worker/heap-cap.ts', import.meta.url).href;
    const script = `
      import { Worker } from 'node:worker_threads';
      import pino from 'pino';
      import { capWorkflowThreadHeap } from '${heapCap}';
      capWorkflowThreadHeap(${capMb}, pino({ level: 'silent' }));
      const w = new Worker("require('node:worker_threads').parentPort.postMessage(require('node:v8').getHeapStatistics().heap_size_limit)", { eval: true, execArgv: [] });
      w.once('message', (limit) => { process.stdout.write(String(limit)); w.terminate(); });`;
    const env = { ...process.env, NODE_OPTIONS: '' };
    const out = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: new URL('../..', import.meta.url),
      env,
      encoding: 'utf8',
    });
    expect(out.stderr).toBe('');
    return Number(out.stdout) / 2 ** 20;
  }

  it("caps the heap of the threads the process creates afterwards (the SDK's workflow thread)", () => {
    const [uncapped, at128, at256] = [threadHeapLimitMb(0), threadHeapLimitMb(128), threadHeapLimitMb(256)];
    // The limit is the old space plus the young generation, whose size is V8's own (48 MB on Node 20,
    // 192 MB on Node 24): the cap moves the limit by exactly its own change, far under V8's default.
    expect(at256 - at128).toBe(128);
    expect(at128).toBeLessThan(128 + 256);
    expect(uncapped).toBeGreaterThan(at256 + 256);
  });
});
