import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import pino from 'pino';
import { startCompanion } from '../../companion/index.js';
import { SupportApiClient } from '../../connectors/support-api/index.js';
import { Secret } from '../../schemas/secret.js';
import {
  type HostileScale,
  installAllAtOnce,
  type Misbehaviour,
  SOURCE_ESCAPES,
} from './all-at-once-source.js';
import { type CliRun, cliToFiles } from './cli-to-files.js';
import { startHostileProxy } from './hostile-proxy.js';
import { COMPARED_TABLES, sourceSnapshot } from './source-snapshot.js';
import { tableDifferences } from './warehouse-rows.js';

/** One verdict of the all-at-once scenario, with the defects of issue 46 that make it fail. */
export interface Check {
  readonly name: string;
  readonly pass: boolean;
  readonly detail: string;
  readonly failsOn: string;
}

export interface AllAtOnceOptions {
  readonly tickets: number;
  readonly seed: number;
  readonly scale: HostileScale;
  readonly temporalAddress: string;
  /** A new, empty PostgreSQL database: its URL. */
  createDatabase(label: string): Promise<string>;
  /** Where the runs' stdout and logs are written. */
  readonly workDir: string;
  /** The hostile run must have ended by itself within this. */
  readonly deadlineMs: number;
  /** The hostile run's log may be at most this long. */
  readonly maxLogBytes: number;
  /** Settings of both runs over the scenario's own (a request deadline, page bounds …). */
  readonly env?: Readonly<Record<string, string>>;
  /** A peer sends the run's metrics endpoint a malformed request line. */
  readonly metricsPeer?: boolean;
  /** Misbehaviours left out: to see what the others do on their own (the verdict is then partial). */
  readonly without?: ReadonlySet<Misbehaviour>;
  readonly progress?: (line: string) => void;
}

export interface AllAtOnceResult {
  readonly checks: Check[];
  readonly figures: Record<string, string | number>;
}

const EVERYTHING_SINCE = () => new Date(Date.now() - 500 * 24 * 60 * 60 * 1000).toISOString();

/**
 * Terminates the workflows a killed run left open on its task queue: they would go on holding their
 * window's workflow id (the next run's child would be refused as "already started") though no worker of
 * theirs is left. Returns how many.
 */
async function terminateLeftovers(address: string, taskQueue: string): Promise<number> {
  const connection = await Connection.connect({ address });
  try {
    const client = new Client({ connection });
    let n = 0;
    for await (const w of client.workflow.list({
      query: `TaskQueue = "${taskQueue}" AND ExecutionStatus = "Running"`,
    })) {
      await client.workflow
        .getHandle(w.workflowId, w.runId)
        .terminate('its sync --once was killed at the deadline')
        .catch(() => {});
      n += 1;
    }
    return n;
  } finally {
    await connection.close();
  }
}

/** What a warehouse's text and JSON columns hold of a secret and of terminal escapes, column by column. */
async function warehouseFindings(db: pg.Client, secret: string) {
  const { rows: columns } = await db.query<{ s: string; t: string; c: string }>(
    `SELECT c.table_schema AS s, c.table_name AS t, c.column_name AS c
       FROM information_schema.columns c
       JOIN information_schema.tables t USING (table_schema, table_name)
      WHERE t.table_type = 'BASE TABLE' AND c.table_schema NOT IN ('pg_catalog', 'information_schema')
        AND c.data_type IN ('text', 'character varying', 'json', 'jsonb', 'ARRAY')`,
  );
  const keys: string[] = [];
  const escapes: string[] = [];
  for (const { s, t, c } of columns) {
    const col = `"${c}"::text`;
    const { rows } = await db.query(
      `SELECT count(*) FILTER (WHERE strpos(${col}, $1) > 0)::int AS keys,
              count(*) FILTER (WHERE strpos(${col}, chr(27)) > 0 OR strpos(${col}, chr(7)) > 0)::int AS escapes
         FROM "${s}"."${t}"`,
      [secret],
    );
    if (rows[0].keys) keys.push(`${t}.${c} (${rows[0].keys})`);
    if (rows[0].escapes) escapes.push(`${t}.${c} (${rows[0].escapes})`);
  }
  return { columns: columns.length, keys, escapes };
}

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
const check = (name: string, pass: boolean, detail: string, failsOn: string): Check => ({
  name,
  pass,
  detail,
  failsOn,
});

type Needle = 'key' | `escape ${number}`;

/** What the output is scanned for: the key's secret part, and each escape sequence the source sends. */
const needlesOf = (secret: string): Record<Needle, string> => ({
  key: secret,
  ...Object.fromEntries(SOURCE_ESCAPES.map((e, i) => [`escape ${i}`, e])),
});

/**
 * The output's verdicts: none of the source's escape sequences, no key. ESC/BEL bytes of any origin are a
 * figure, not a verdict: the Temporal SDK core colours its own warnings (a workflow task over 5 s …).
 */
function outputClean(label: string, run: CliRun<Needle>, failsOn: string): Check[] {
  const count = (pick: (n: Needle) => boolean) =>
    (Object.entries(run.stdout.found) as [Needle, number][])
      .filter(([n]) => pick(n))
      .reduce((sum, [n, inStdout]) => sum + inStdout + (run.stderr.found[n] ?? 0), 0);
  const escapes = count((n) => n !== 'key');
  const keys = count((n) => n === 'key');
  const all = `all ESC ${run.stdout.escapes}+${run.stderr.escapes}, BEL ${run.stdout.bells}+${run.stderr.bells} (stdout+stderr)`;
  return [
    check(
      `${label}: none of the source's escapes in stdout, stderr, log`,
      escapes === 0,
      `${escapes} sequences; ${all}`,
      failsOn,
    ),
    check(`${label}: no key in stdout, stderr, log`, keys === 0, `${keys} occurrences`, failsOn),
  ];
}

/**
 * Issue 46's "done when": `sync --once` (the real CLI) against a source doing every misbehaviour at once
 * (all-at-once-source.ts) ends by itself within the deadline, with a bounded log free of escapes and of the
 * key; the key is in no warehouse column; everything the source served correctly is stored; and the next
 * run, against the behaving companion, leaves the warehouse equal to the companion's own state.
 */
export async function runAllAtOnce(o: AllAtOnceOptions): Promise<AllAtOnceResult> {
  const say = o.progress ?? (() => {});
  const companion = await startCompanion({ seed: o.seed, tickets: o.tickets, rateLimits: false });
  const proxy = await startHostileProxy(companion.baseUrl);
  const key = companion.keys.admin;
  const secret = key.slice(-16);
  const record = installAllAtOnce(proxy, key, o.scale, o.without);
  const databaseUrl = await o.createDatabase('hostile_all_at_once');
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  const client = new SupportApiClient({
    baseUrl: companion.baseUrl,
    apiKey: new Secret(key),
    logger: pino({ level: 'silent' }),
  });
  const env = (label: string, apiUrl: string): Record<string, string> => ({
    SUPPORT_API_URL: apiUrl,
    SUPPORT_API_KEY: key,
    DESTINATION_URL: databaseUrl,
    TEMPORAL_ADDRESS: o.temporalAddress,
    TEMPORAL_TASK_QUEUE: `hostile-${label}-${Date.now().toString(36)}`,
    SUPPORT_API_RATE_LIMITS: 'off',
    SYNC_THREAD_LOOKBACK: 'PT0S',
    SYNC_AUDIT_SHARE: '0',
    LOG_LEVEL: 'info',
    ...o.env,
  });
  const files = (label: string) => ({
    stdoutPath: join(o.workDir, `${label}.stdout`),
    logPath: join(o.workDir, `${label}.log`),
    needles: needlesOf(secret),
  });
  const checks: Check[] = [];
  const figures: Record<string, string | number> = {};
  try {
    say(`run 1: sync --once against the hostile source (deadline ${o.deadlineMs / 1000} s)`);
    const run1Env = env('run1', proxy.url);
    const hostile = await cliToFiles(
      ['sync', '--once', ...(o.metricsPeer ? ['--metrics-port', '0'] : [])],
      run1Env,
      { ...files('run1'), deadlineMs: o.deadlineMs, ...(o.metricsPeer ? { metricsPeer: true } : {}) },
    );
    say(`run 1: ${hostile.endedByItself ? `exit ${hostile.code}` : 'killed'} after ${hostile.ms} ms`);
    const summary = hostile.summary as {
      status?: string;
      error?: string;
      streams?: Record<string, { status: string }>;
    } | null;
    const streamStatus = (stream: string) =>
      [
        ...new Set(
          Object.entries(summary?.streams ?? {})
            .filter(([k]) => k === stream || k.startsWith(`${stream}.`))
            .map(([, v]) => v.status),
        ),
      ].join('/') || '-';
    Object.assign(figures, {
      'run 1 wall': `${(hostile.ms / 1000).toFixed(1)} s`,
      'run 1 exit': hostile.endedByItself ? String(hostile.code ?? hostile.signal) : 'killed at deadline',
      'run 1 status': summary?.status ?? '(no summary)',
      'run 1 log': `${mb(hostile.stderr.bytes)}, ${hostile.stderr.lines} lines`,
      'run 1 stdout': `${hostile.stdout.bytes} bytes`,
      'run 1 peak RSS (sampled)': mb(hostile.peakRssBytes),
      'run 1 streams': COMPARED_TABLES.map((s) => `${s}=${streamStatus(s)}`).join(' '),
      'run 1 summary error': (summary?.error ?? '').slice(0, 300),
      'source: fired': Object.entries(record.fired)
        .map(([k, v]) => `${k}=${v}`)
        .join(' '),
    });

    checks.push(
      check(
        `run 1 ends by itself within ${o.deadlineMs / 1000} s`,
        hostile.endedByItself,
        `${(hostile.ms / 1000).toFixed(1)} s; endless pages served ${record.fired['endlessPage']}`,
        'endless list (page bound), NUL cursor (checkpoint write retried), nesting (RangeError retried), 302 reset (365-day wait)',
      ),
      check(
        'run 1 exit code 1 or 3 with a JSON summary, past the preflight',
        hostile.endedByItself &&
          (hostile.code === 1 || hostile.code === 3) &&
          (summary?.status === 'failed' || summary?.status === 'incomplete') &&
          summary?.streams !== undefined,
        `exit ${hostile.code}, status ${summary?.status ?? '-'}, ${summary?.streams ? 'streams reported' : hostile.endedByItself ? 'no streams (stopped before the sync)' : 'killed at the deadline'}`,
        'preflight: a stalled thread probe or one 302 fails the run',
      ),
      check(
        `run 1 log at most ${mb(o.maxLogBytes)}`,
        hostile.stderr.bytes <= o.maxLogBytes,
        `${mb(hostile.stderr.bytes)}, ${hostile.stderr.lines} lines`,
        'a line per set-aside item (oversized page)',
      ),
      ...outputClean('run 1', hostile, 'sanitiser (escapes in drift, errors), secrets in logs'),
    );
    if (o.metricsPeer)
      checks.push(
        check(
          'run 1 survives a malformed request line to its metrics endpoint',
          hostile.metricsPeerSent && hostile.endedByItself && summary?.streams !== undefined,
          hostile.metricsPeerSent ? `sent; exit ${hostile.code}` : 'no metrics endpoint printed',
          'metrics endpoint: new URL outside a try',
        ),
      );

    say('status after run 1');
    const status = await cliToFiles(['status'], env('status', proxy.url), {
      ...files('status'),
      deadlineMs: 120_000,
    });
    checks.push(...outputClean('status', status, 'sanitiser: drift field names printed raw by status'));

    say('reading the source and the warehouse');
    const source = await sourceSnapshot(client, EVERYTHING_SINCE());
    const found = await warehouseFindings(db, secret);
    checks.push(
      check(
        'run 1: the key in no warehouse column',
        found.keys.length === 0,
        found.keys.join(', ') || `none in ${found.columns} text/JSON columns`,
        'key echoed inside an item stored in _raw and text columns',
      ),
      check(
        'run 1: no ESC/BEL in any warehouse text column',
        found.escapes.length === 0,
        found.escapes.join(', ') || 'none',
        'sanitiser: _schema_changes / _rejected take what the source says raw',
      ),
    );
    const deep = new Set(record.deepTickets.keys());
    const deepNumbers = new Set(record.deepTickets.values());
    // A set-aside ticket's thread is not read either: nothing of it was served.
    const deepThreads = new Set(
      [...source.ticket_messages]
        .filter(([, m]) => deepNumbers.has((m as { ticket_number: number }).ticket_number))
        .map(([id]) => id),
    );
    const killed = hostile.endedByItself ? '' : ' (run 1 killed at the deadline)';
    for (const [table, except, failsOn] of [
      ['tickets', deep, 'nesting overflow retried; preflight'],
      ['ticket_messages', deepThreads, 'preflight (stalled thread probe)'],
      ['agent_sessions', new Set<string>(), 'preflight; key in a 503 error'],
      ['views', new Set<string>(), 'preflight (302 on the probe), 302 headers: 365-day wait'],
      ['metric_catalog', new Set<string>(), 'preflight, 302 headers: 365-day wait'],
    ] as const) {
      const diffs = await tableDifferences(db, table, source[table], except);
      checks.push(
        check(
          `run 1 stored what was served correctly: ${table}${except.size ? ' (all but the deep tickets)' : ''}`,
          diffs.length === 0,
          (diffs.join('; ') || `${source[table].size - except.size} rows equal`) + killed,
          failsOn,
        ),
      );
    }
    const agents = await db
      .query(`SELECT id, _raw ? '__proto__' AS has_proto, _raw->'__proto__' AS proto FROM support.agents`)
      .catch(() => ({ rows: [] as { id: string; has_proto: boolean; proto: unknown }[] }));
    const storedAgents = new Set(agents.rows.map((r) => String(r.id)));
    const missingAgents = [...source.agents.keys()].filter((id) => !storedAgents.has(id));
    const proto = agents.rows.find((r) => String(r.id) === record.protoAgentId);
    checks.push(
      check(
        'run 1 stored every agent, the __proto__ member kept as data',
        missingAgents.length === 0 && proto?.has_proto === true,
        `${storedAgents.size} of ${source.agents.size} stored; __proto__ ${proto ? (proto.has_proto ? `kept: ${JSON.stringify(proto.proto)}` : 'dropped') : 'agent not stored'}${killed}`,
        'storableJson drops __proto__; key echo / drift name fails the stream',
      ),
    );
    const rejected = await db
      .query<{ item_id: string }>(
        `SELECT DISTINCT item_id FROM support._rejected WHERE item_id::text = ANY($1::text[])`,
        [[...deep]],
      )
      .catch(() => ({ rows: [] as { item_id: string }[] }));
    checks.push(
      check(
        `run 1 set both ${o.scale.depth}-deep tickets aside in _rejected`,
        deep.size === 2 && rejected.rows.length === 2,
        deep.size
          ? `${rejected.rows.length} of ${deep.size} in _rejected`
          : 'never served (run stopped earlier)',
        'JSON.stringify overflow before the depth guard',
      ),
    );

    proxy.misbehave = null;
    proxy.rewrite = null;
    if (!hostile.endedByItself)
      figures['run 1 workflows terminated before run 2'] = await terminateLeftovers(
        o.temporalAddress,
        run1Env['TEMPORAL_TASK_QUEUE']!,
      );
    say('run 2: sync --once against the behaving companion');
    const behaving = await cliToFiles(['sync', '--once'], env('run2', companion.baseUrl), {
      ...files('run2'),
      deadlineMs: o.deadlineMs,
    });
    say(`run 2: exit ${behaving.code} after ${behaving.ms} ms`);
    const diffs: string[] = [];
    for (const table of COMPARED_TABLES) diffs.push(...(await tableDifferences(db, table, source[table])));
    const after = await warehouseFindings(db, secret);
    Object.assign(figures, {
      'run 2 wall': `${(behaving.ms / 1000).toFixed(1)} s`,
      'run 2 exit': behaving.endedByItself ? String(behaving.code ?? behaving.signal) : 'killed at deadline',
      'run 2 log': mb(behaving.stderr.bytes),
      'source rows': COMPARED_TABLES.map((t) => `${t}=${source[t].size}`).join(' '),
    });
    checks.push(
      check(
        'run 2 (behaving source) exit 0, succeeded',
        behaving.endedByItself && behaving.code === 0 && behaving.summary?.['status'] === 'succeeded',
        `exit ${behaving.code}, status ${String(behaving.summary?.['status'] ?? '-')}: ${String(behaving.summary?.['error'] ?? '').slice(0, 200)}`,
        'a checkpoint or cursor left by run 1 that the next run cannot get past',
      ),
      check(
        'run 2 leaves the warehouse equal to the companion',
        diffs.length === 0,
        diffs.join('; ').slice(0, 600) || `${COMPARED_TABLES.length} tables equal`,
        'whatever run 1 lost or stored wrong',
      ),
      check(
        'run 2: the key in no warehouse column',
        after.keys.length === 0,
        after.keys.join(', ') || 'none',
        'a key stored by run 1 and not overwritten',
      ),
    );
    return { checks, figures };
  } finally {
    await db.end();
    await client.close();
    await proxy.close();
    await companion.stop();
  }
}
