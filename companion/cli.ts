import { Command, InvalidArgumentError, Option } from 'commander';
import type { FaultKind } from './http/faults.js';
import { startCompanion, startWorkspaces } from './server.js';
import { readWorkspacesFile } from './workspaces-file.js';

const int = (name: string) => (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`${name} must be a non-negative integer`);
  return n;
};

const program = new Command()
  .name('companion')
  .description('Serve a seeded in-process implementation of Support API v1 on 127.0.0.1')
  .option('--port <n>', 'port (0 = a free port)', int('port'), 0)
  .option('--host <host>', 'interface to bind', '127.0.0.1')
  .option('--seed <n>', 'world seed', int('seed'), 7)
  .option('--tickets <n>', 'tickets in the main organization', int('tickets'), 300)
  .addOption(
    new Option('--rate-limits <mode>', 'per-route-class rate limits').choices(['on', 'off']).default('on'),
  )
  .option('--rate-limit-window-ms <ms>', 'rate-limit window length', int('window'), 60_000)
  .option('--replica-lag-ms <ms>', 'writes become visible to reads after this delay', int('lag'), 0)
  .option(
    '--fault-rate <p>',
    'share of requests that fail (0..1)',
    (v) => {
      const n = Number(v);
      if (!(n >= 0 && n <= 1)) throw new InvalidArgumentError('fault rate must be within 0..1');
      return n;
    },
    0,
  )
  .option('--fault-kinds <list>', 'comma-separated: 5xx,reset,slow,html', '5xx,reset,slow,html')
  .option('--slow-ms <ms>', 'delay of a slow fault', int('slow'), 2000)
  .option('--now <iso>', 'start the companion clock at this instant (it then runs in real time)')
  .option('--no-message-bumps-updated-at', 'new messages leave ticket.updated_at alone')
  .option(
    '--live',
    'the workspace lives: tickets, replies, status changes, surveys, sessions, deletions',
    false,
  )
  .option('--live-interval-ms <ms>', 'time between two rounds of live changes', int('live interval'), 5000)
  .option('--live-changes <n>', 'changes per round', int('live changes'), 3)
  .option(
    '--variant <n>',
    'serve a variant world: shapes the spec leaves open take another reading (0 = the default world)',
    int('variant'),
    0,
  )
  .option(
    '--workspaces <file>',
    'serve many workspaces on this port (YAML or JSON, see companion/README.md); the flags above are their defaults',
  )
  .option('--log-level <level>', 'stderr log level', 'info');

program.parse();
const o = program.opts<{
  port: number;
  host: string;
  seed: number;
  tickets: number;
  rateLimits: 'on' | 'off';
  rateLimitWindowMs: number;
  replicaLagMs: number;
  faultRate: number;
  faultKinds: string;
  slowMs: number;
  now?: string;
  messageBumpsUpdatedAt: boolean;
  live: boolean;
  liveIntervalMs: number;
  liveChanges: number;
  variant: number;
  workspaces?: string;
  logLevel: string;
}>();

const kinds = o.faultKinds
  .split(',')
  .filter((k): k is FaultKind => ['5xx', 'reset', 'slow', 'html'].includes(k));
let now: (() => Date) | undefined;
if (o.now !== undefined) {
  const start = Date.parse(o.now);
  if (Number.isNaN(start)) program.error('--now must be an ISO 8601 instant');
  const t0 = Date.now();
  now = () => new Date(start + (Date.now() - t0));
}

const service = { port: o.port, host: o.host, logLevel: o.logLevel, ...(now ? { now } : {}) };
if (o.workspaces !== undefined) {
  const workspaces = (() => {
    try {
      return readWorkspacesFile(o.workspaces, {
        seed: o.seed,
        tickets: o.tickets,
        rateLimits: o.rateLimits === 'on',
        rateLimitWindowMs: o.rateLimitWindowMs,
        replicaLagMs: o.replicaLagMs,
        faultRate: o.faultRate,
        faultKinds: kinds,
        slowMs: o.slowMs,
        messageBumpsTicketUpdatedAt: o.messageBumpsUpdatedAt,
        live: o.live,
        liveIntervalMs: o.liveIntervalMs,
        liveChanges: o.liveChanges,
        variant: o.variant,
      });
    } catch (e) {
      return program.error(`--workspaces ${(e as Error).message}`);
    }
  })();
  const handle = await startWorkspaces({ ...service, rateLimits: o.rateLimits === 'on', workspaces }).catch(
    (e: unknown) => program.error(`--workspaces ${o.workspaces}: ${(e as Error).message}`),
  );
  const served = [...handle.workspaces.values()];
  // Today's line, extended: `keys` stays (the first workspace's), `workspaces` names every workspace's keys.
  const line = {
    base_url: handle.baseUrl,
    keys: served[0]?.keys,
    workspaces: Object.fromEntries(served.map((w) => [w.id, { keys: w.keys }])),
  };
  process.stdout.write(`${JSON.stringify(line)}\n`);
  stopOnSignal(handle);
} else {
  const handle = await startCompanion({
    ...service,
    seed: o.seed,
    tickets: o.tickets,
    rateLimits: o.rateLimits === 'on',
    rateLimitWindowMs: o.rateLimitWindowMs,
    replicaLagMs: o.replicaLagMs,
    ...(o.faultRate > 0 ? { faults: { rate: o.faultRate, kinds, slowMs: o.slowMs } } : {}),
    messageBumpsTicketUpdatedAt: o.messageBumpsUpdatedAt,
    variant: o.variant,
    ...(o.live ? { live: { intervalMs: Math.max(1, o.liveIntervalMs), changesPerTick: o.liveChanges } } : {}),
  });
  process.stdout.write(`${JSON.stringify({ base_url: handle.baseUrl, keys: handle.keys })}\n`);
  stopOnSignal(handle);
}

function stopOnSignal(handle: { stop(): Promise<void> }) {
  const stop = () => {
    handle.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
