import { Duration } from 'luxon';
import { z } from 'zod';
import { MAX_EXPORT_WINDOW_MS } from './api/exports.js';
import { BusinessHoursFile } from './business-hours.js';
import { ReportQuery } from './report-query.js';
import { Secret, SecretString } from './secret.js';
import { ALL_STREAMS, STREAM_ROUTE_CLASSES, type StreamRouteClass, streamList } from './streams.js';
import { ColumnPolicyText } from './warehouse.js';
import { DEFAULT_WORKSPACE, WarehouseLayout, WorkspaceId } from './workspaces.js';

/**
 * Shortest SYNC_HASH_KEY: 32 characters (128 bits as hex). The key is what keeps a hashed e-mail from being
 * confirmed by hashing guesses, so it must not be guessable itself.
 */
const MIN_HASH_KEY_LENGTH = 32;

/**
 * The largest SUPPORT_API_MAX_RESPONSE_BYTES: a body is held whole, as bytes, then as a string (V8's
 * longest is just under 512 MiB) and parsed (several times its bytes again); past this a worker's heap, not
 * the cap, would end the read.
 */
const MAX_RESPONSE_BYTES_LIMIT = 256 * 1024 * 1024;

/**
 * An ISO 8601 duration (`PT72H`, `P7D`) turned into milliseconds; never negative (`P-5D` would read a look-back
 * as a look-ahead, starting after the high-water mark: a silent gap).
 */
export const IsoDurationMs = z
  .string()
  .meta({ format: 'duration' })
  .transform((text, ctx) => {
    const duration = Duration.fromISO(text);
    if (!duration.isValid) {
      ctx.addIssue({ code: 'custom', message: `"${text}" is not an ISO 8601 duration such as PT72H or P7D` });
      return z.NEVER;
    }
    const ms = duration.as('milliseconds');
    if (!(ms >= 0)) {
      ctx.addIssue({ code: 'custom', message: `"${text}" is negative; a duration here is PT0S or more` });
      return z.NEVER;
    }
    return ms;
  });

/**
 * A base URL parsed whole (WHATWG), of one of `protocols` (`https:`…): `file:`, `javascript:`, `data:` and
 * the like are refused, as is a URL with a user or password in it (credentials have settings of their own),
 * and one with a `?query` or `#fragment`: routes are appended to the text, so either would swallow them.
 */
export const WebUrl = (protocols: readonly string[] = ['https:', 'http:']) =>
  z.string().transform((text, ctx) => {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      ctx.addIssue({ code: 'custom', message: 'is not a URL' });
      return z.NEVER;
    }
    if (!protocols.includes(url.protocol)) {
      ctx.addIssue({
        code: 'custom',
        message: `must be a ${protocols.map((p) => p.slice(0, -1)).join(' or ')} URL (got ${url.protocol})`,
      });
      return z.NEVER;
    }
    if (url.username !== '' || url.password !== '') {
      ctx.addIssue({ code: 'custom', message: 'must not carry a user or password' });
      return z.NEVER;
    }
    if (/[?#]/.test(text)) {
      ctx.addIssue({
        code: 'custom',
        message: `must not carry a ${text.includes('?') ? '?query' : '#fragment'}: routes are appended to it, and it would swallow them`,
      });
      return z.NEVER;
    }
    return text;
  });

/**
 * Whether a URL's host is this machine (localhost, 127.0.0.0/8, ::1): plain http does not leave it. Not a
 * name under `.localhost`: only some resolvers keep those on this machine, and a DNS server may answer
 * `evil.localhost` with any address.
 */
export function isLoopbackUrl(text: string): boolean {
  const host = new URL(text).hostname.toLowerCase();
  return host === 'localhost' || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host);
}

const hasSpaceOrControl = (text: string) => /[\s\p{Cc}]/u.test(text);
const SPACE_OR_CONTROL = 'must not contain white space or control characters (a stray newline or space?)';

/**
 * A key (API key, HMAC key) as a Secret: no white space or control characters, which a copy and paste brings
 * in (a trailing newline) and which would otherwise fail later and elsewhere (a header the HTTP client
 * refuses, retried as a network error). The message never shows the key.
 */
export const KeyString = SecretString.refine((key) => !hasSpaceOrControl(key.reveal()), {
  message: SPACE_OR_CONTROL,
});

/**
 * A key sent in a request header (SUPPORT_API_KEY, TEMPORAL_API_KEY): a `KeyString` of printable ASCII
 * only. A zero-width space or a `€` picked up in a copy and paste passes a white-space check, then every
 * request fails as a "network error" (the HTTP client refuses the header). The message names the character,
 * never the key.
 */
export const HeaderKeyString = SecretString.superRefine((key, ctx) => {
  const text = key.reveal();
  if (hasSpaceOrControl(text)) {
    ctx.addIssue({ code: 'custom', message: SPACE_OR_CONTROL });
    return;
  }
  const other = /[^\x21-\x7e]/u.exec(text)?.[0];
  if (other !== undefined)
    ctx.addIssue({
      code: 'custom',
      message: `must be printable ASCII, as it is sent in a header: it contains U+${other.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')} (from a copy and paste?)`,
    });
});

/** The content of a REPORT_QUERIES file: a YAML (or JSON) list of `{ name, query, timezone }`, names unique. */
export const ReportQueriesFile = z.array(ReportQuery).superRefine((queries, ctx) => {
  const names = new Set<string>();
  queries.forEach((q, i) => {
    if (names.has(q.name))
      ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `"${q.name}" is used by an earlier entry` });
    names.add(q.name);
  });
});

/**
 * SYNC_BUSINESS_HOURS once the worker has read the file it names (worker/config.ts reads it): the path with the
 * parsed content, or the problem that kept the file from being read. Validated into `{ path, hours }`; each
 * problem names the file and the field.
 */
export const BusinessHoursSource = z
  .object({ path: z.string(), content: z.unknown().optional(), problem: z.string().optional() })
  .transform(({ path, content, problem }, ctx) => {
    if (problem !== undefined) {
      ctx.addIssue({ code: 'custom', message: `${path}: ${problem}` });
      return z.NEVER;
    }
    const result = BusinessHoursFile.safeParse(content ?? null);
    if (!result.success) {
      for (const issue of result.error.issues) {
        const field = issue.path.length > 0 ? `${issue.path.join('.')}: ` : '';
        ctx.addIssue({ code: 'custom', message: `${path}: ${field}${issue.message}` });
      }
      return z.NEVER;
    }
    return { path, hours: result.data };
  });

/**
 * REPORT_QUERIES once the worker has read the file it names (worker/config.ts does the reading, so this
 * schema stays pure): the path with the parsed content, or the problem that kept the file from being read.
 * Validated into `{ path, queries }`; each problem names the file, the entry (position and name) and the
 * field.
 */
export const ReportQueriesSource = z
  .object({ path: z.string(), content: z.unknown().optional(), problem: z.string().optional() })
  .transform(({ path, content, problem }, ctx) => {
    if (problem !== undefined) {
      ctx.addIssue({ code: 'custom', message: `${path}: ${problem}` });
      return z.NEVER;
    }
    const result = ReportQueriesFile.safeParse(content ?? []);
    if (!result.success) {
      for (const issue of result.error.issues) {
        const [index, ...field] = issue.path;
        if (typeof index !== 'number') {
          ctx.addIssue({
            code: 'custom',
            message: `${path}: expected a list of { name, query, timezone } (${issue.message})`,
          });
          continue;
        }
        const name = (content as { name?: unknown }[])[index]?.name;
        const entry = `entry ${index + 1}${typeof name === 'string' ? ` ("${name}")` : ''}`;
        const what = field.length > 0 ? `${field.join('.')}: ` : '';
        ctx.addIssue({ code: 'custom', message: `${path}: ${entry}: ${what}${issue.message}` });
      }
      return z.NEVER;
    }
    return { path, queries: result.data };
  });

/** The route classes the fleet budget paces, one task queue each: those the registry's streams read (schemas/streams.ts). */
export const QUEUED_ROUTE_CLASSES = STREAM_ROUTE_CLASSES;
export type QueuedRouteClass = StreamRouteClass;
const DEFAULT_CLASS_LIMITS_TEXT = 'list=60,detail=120,analytics=10,directory=60';

/** `list=60,detail=120,…` (every queued class, positive numbers) or `off`. */
export const ClassRateLimits = z.string().transform((text, ctx) => {
  if (text.trim() === 'off') return null;
  const limits: Partial<Record<QueuedRouteClass, number>> = {};
  for (const part of text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const [name, value] = part.split('=').map((x) => x?.trim());
    const n = Number(value);
    if (!QUEUED_ROUTE_CLASSES.includes(name as QueuedRouteClass) || !(n > 0)) {
      ctx.addIssue({
        code: 'custom',
        message: `"${part}" is not <class>=<positive number> with a class among ${QUEUED_ROUTE_CLASSES.join(', ')}`,
      });
      return z.NEVER;
    }
    limits[name as QueuedRouteClass] = n;
  }
  const missing = QUEUED_ROUTE_CLASSES.filter((c) => limits[c] === undefined);
  if (missing.length > 0) {
    ctx.addIssue({ code: 'custom', message: `missing ${missing.join(', ')} (or say off)` });
    return z.NEVER;
  }
  return limits as Record<QueuedRouteClass, number>;
});

/** `SYNC_STREAMS`: comma-separated stream names of the registry (schemas/streams.ts), in its order. */
export const StreamList = z.string().transform((text, ctx) => {
  const list = streamList(text);
  if ('problem' in list) {
    ctx.addIssue({ code: 'custom', message: list.problem });
    return z.NEVER;
  }
  return list.streams;
});
/** The spec's limits per class (SUPPORT_API_RATE_LIMITS' default). */
export const SPEC_CLASS_LIMITS = ClassRateLimits.parse(DEFAULT_CLASS_LIMITS_TEXT) as Record<
  QueuedRouteClass,
  number
>;

/** `host:port` (a name, an IPv4 address or a bracketed IPv6 address, and a port 1–65535). */
export const HostPort = z.string().refine(
  (text) => {
    const match = /^(\[[0-9a-fA-F:.]+\]|[^\s:/[\]@]+):(\d{1,5})$/.exec(text);
    return match !== null && Number(match[2]) >= 1 && Number(match[2]) <= 65535;
  },
  { message: 'must be host:port (e.g. temporal.example.com:7233)' },
);

/**
 * `postgres://…` or `bigquery://project/dataset`, parsed whole, as a Secret (a PostgreSQL URL carries its
 * password): read with `reveal()` where the destination is built.
 */
export const DestinationUrl = z
  .string()
  .refine(
    (text) => {
      try {
        return (
          ['postgres:', 'postgresql:', 'bigquery:'].includes(new URL(text).protocol) &&
          /^[a-z]+:\/\//.test(text)
        );
      } catch {
        return false;
      }
    },
    { message: 'must be a URL starting with postgres:// or bigquery://project/dataset' },
  )
  .transform((text) => new Secret(text));

/**
 * The configuration, one environment variable per field (names are a contract: docker-compose.yml and
 * external scripts set them), exactly as the environment gives it: a file is named by its path (`Config`
 * below holds what the files contain). Parsed once at start-up; a bad value gets one clear message per
 * problem.
 */
/**
 * A setting that no longer exists: present (in the environment or the `--config` file), it is a
 * configuration error naming what replaces it, not a value silently ignored.
 */
const removed = (replacement: string) =>
  z
    .undefined({ error: `was removed: ${replacement}` })
    .optional()
    .describe(`Removed: ${replacement}`);

export const ConfigFromEnv = z.object({
  SUPPORT_API_URL: WebUrl().describe(
    "The service's base URL, without a ?query or #fragment; the client adds /public/v1. https, or plain http to this machine (localhost, 127.0.0.0/8, ::1; not names under .localhost) or with SUPPORT_API_ALLOW_HTTP=true: the key travels in every request",
  ),
  SUPPORT_API_ALLOW_HTTP: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true')
    .describe(
      'Allow a plain http SUPPORT_API_URL to another machine (the key then crosses the network unencrypted; a warning is logged at start). For a trusted network or a TLS-terminating sidecar only',
    ),
  SUPPORT_API_KEY: HeaderKeyString.describe(
    'API key, sent as cx-api-key; never logged, never in errors, Temporal payloads or the warehouse; printable ASCII only (no white space, control or other characters)',
  ),
  DESTINATION_URL: DestinationUrl.describe('postgres://user:pass@host:port/db or bigquery://project/dataset'),
  POSTGRES_SCHEMA: z
    .string()
    .regex(/^[a-z_][a-z0-9_]*$/)
    .default('support')
    .describe('PostgreSQL schema for the tables'),
  BIGQUERY_API_ENDPOINT: WebUrl()
    .optional()
    .describe(
      "BigQuery REST endpoint: Google's when unset (an emulator in tests); credentials are Application Default Credentials",
    ),
  BIGQUERY_LOCATION: z
    .string()
    .regex(/^[A-Za-z][A-Za-z0-9-]{1,62}$/, 'a BigQuery location such as US, EU or europe-west2')
    .optional()
    .describe(
      "BigQuery location of the dataset and its jobs (US, EU, europe-west2, …). Unset: the dataset's own location, read once at start (a dataset the sync creates goes to US, BigQuery's default; a workspace's goes where the deployment's dataset is). Set, it must be the dataset's location: otherwise each job fails before it is sent, with an error naming both",
    ),
  BIGQUERY_STORAGE_ENDPOINT: z
    .string()
    .regex(/^[^\s:/]+:\d+$/)
    .optional()
    .describe(
      'BigQuery Storage Write API endpoint host:port of an emulator (plaintext gRPC; tests and benches); unset on the real service',
    ),
  TEMPORAL_ADDRESS: HostPort.optional().describe(
    "Temporal frontend host:port (Temporal Cloud: <namespace>.<account>.tmprl.cloud:7233, or the region's endpoint with an API key). Unset, and no TEMPORAL_PROFILE address: `start`, `sync --once`, `backfill`, `audit` and `replay` run an embedded dev server; `worker`, `setup` and `schedule` use localhost:7233",
  ),
  TEMPORAL_NAMESPACE: z
    .string()
    .min(1)
    .optional()
    .describe("Temporal namespace (default: the TEMPORAL_PROFILE's, else `default`)"),
  TEMPORAL_API_KEY: HeaderKeyString.optional().describe(
    'API key sent to Temporal as a bearer token (Temporal Cloud API-key authentication); turns TLS on unless TEMPORAL_TLS=false (then, to another machine, a warning is logged at start: the key crosses the network unencrypted). Printable ASCII only; never logged',
  ),
  TEMPORAL_TLS: z
    .enum(['true', 'false', '1', '0'])
    .optional()
    .describe(
      'TLS to Temporal on (`true`) or off (`false`); default: on when any TEMPORAL_TLS_* setting or TEMPORAL_API_KEY is given, else off',
    ),
  TEMPORAL_TLS_CLIENT_CERT_PATH: z
    .string()
    .min(1)
    .optional()
    .describe('PEM file of the client certificate (mTLS), with TEMPORAL_TLS_CLIENT_KEY_PATH or _DATA'),
  TEMPORAL_TLS_CLIENT_CERT_DATA: z
    .string()
    .min(1)
    .optional()
    .describe('The client certificate itself (PEM text), instead of TEMPORAL_TLS_CLIENT_CERT_PATH'),
  TEMPORAL_TLS_CLIENT_KEY_PATH: z
    .string()
    .min(1)
    .optional()
    .describe("PEM file of the client certificate's private key (mTLS)"),
  TEMPORAL_TLS_CLIENT_KEY_DATA: SecretString.optional().describe(
    "The client certificate's private key itself (PEM text), instead of TEMPORAL_TLS_CLIENT_KEY_PATH. Never logged",
  ),
  TEMPORAL_TLS_SERVER_CA_CERT_PATH: z
    .string()
    .min(1)
    .optional()
    .describe(
      "PEM file of the CA that signed the Temporal server's certificate (default: the system's trusted roots, which is right for Temporal Cloud)",
    ),
  TEMPORAL_TLS_SERVER_CA_CERT_DATA: z
    .string()
    .min(1)
    .optional()
    .describe('The server CA certificate itself (PEM text), instead of TEMPORAL_TLS_SERVER_CA_CERT_PATH'),
  TEMPORAL_TLS_SERVER_NAME: z
    .string()
    .min(1)
    .optional()
    .describe(
      "Name the server's certificate is checked against (SNI), when it differs from TEMPORAL_ADDRESS's host",
    ),
  TEMPORAL_PROFILE: z
    .string()
    .min(1)
    .optional()
    .describe(
      'Profile of the Temporal client configuration file (TEMPORAL_CONFIG_FILE) to connect with; every TEMPORAL_* setting given here overrides its field. Default: the `default` profile, when the file has one',
    ),
  TEMPORAL_CONFIG_FILE: z
    .string()
    .min(1)
    .optional()
    .describe(
      "The Temporal client configuration file (TOML, the Temporal CLI's and SDKs' `temporal.toml` format); default: ~/.config/temporalio/temporal.toml when it exists",
    ),
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('support-sync').describe('Task queue of the sync workflows'),
  TEMPORAL_DEPLOYMENT_NAME: z
    .string()
    .regex(/^[^\s.]{1,200}$/, 'at most 200 characters, no spaces or dots')
    .optional()
    .describe(
      "This deployment of support-sync in its Temporal namespace (default: TEMPORAL_TASK_QUEUE, dots as dashes): the Worker Deployment its workers join, and the prefix of its schedules' ids (`<name>-incremental`, …). Two deployments in one namespace need different task queues, hence different names",
    ),
  TEMPORAL_WORKER_VERSIONING: z
    .enum(['true', 'false'])
    .default('true')
    .transform((v) => v === 'true')
    .describe(
      'Worker Deployment Versioning: every worker declares TEMPORAL_DEPLOYMENT_NAME and TEMPORAL_BUILD_ID, a sync run and its children stay on the build that started them, the fleet budget moves to a new build when it continues as new ([upgrading](operations/upgrading.md)). `false`: unversioned workers, for a Temporal server without Worker Deployments (before 1.28)',
    ),
  TEMPORAL_BUILD_ID: z
    .string()
    .regex(/^\S{1,255}$/, 'at most 255 characters, no spaces')
    .optional()
    .describe(
      "This worker's build in its Worker Deployment (default: `<package version>-<first 12 hex digits of the workflow bundle's SHA-256>`, e.g. `0.1.0-be377cb651cc`: a changed workflow is a new build, the same bundle the same build)",
    ),
  TEMPORAL_SET_CURRENT_VERSION: z
    .enum(['true', 'false'])
    .default('true')
    .transform((v) => v === 'true')
    .describe(
      "Whether the workers of a process (`worker`, and the local worker of `start`, `sync --once`, `backfill`, `audit`, `replay`) make their build the deployment's current version at start when it has never been current or ramping (a new deploy): new runs then go to it, open runs finish on their own build. A build superseded once is never made current again by a start (an old pod restarting). `false`: only when the deployment has no current version at all; the operator promotes a build (`temporal worker deployment set-current-version`)",
    ),
  TEMPORAL_WORKFLOW_HEAP_MB: z.coerce
    .number()
    .int()
    .min(0)
    .default(384)
    .describe(
      "V8 old-space limit (MB) of a worker's workflow thread (Temporal runs every workflow of a process there); without it V8 sizes that thread's heap for the host and lets garbage pile up before collecting it. 0: V8's default. Ignored when node was started with `--max-old-space-size` (e.g. in NODE_OPTIONS). Raise it for a worker that serves many runs at once",
    ),
  METRICS_HOST: z
    .string()
    .min(1)
    .default('127.0.0.1')
    .describe(
      'Interface the `--metrics-port` endpoint (GET /metrics, /healthz, /readyz) listens on when the option names a port only: the loopback interface by default; `0.0.0.0` in a container whose probes or scrapes come from outside it',
    ),
  SYNC_METRICS_WORKSPACE_LABEL: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true')
    .describe(
      "Whether the metrics of a workspace's sync (pages, rows, items set aside, windows, runs, freshness and its target) carry a `workspace` label, a series per workspace ([workspaces](guides/workspaces.md)). `false`: no such label, every workspace the process serves counted together, a stream's lag the worst of theirs. The rate governor's series are per key and never carry it",
    ),
  SYNC_METRICS_WORKSPACE_LIMIT: z.coerce
    .number()
    .int()
    .min(1)
    .max(1000)
    .default(50)
    .describe(
      'With SYNC_METRICS_WORKSPACE_LABEL: how many workspaces a process gives series of their own, the first it serves; those it serves after them are counted under `workspace="_other"` (no workspace id has an underscore), so a file of many workspaces cannot multiply the series without bound. Set it above the number of workspaces for a series of each on every process',
    ),
  TEMPORAL_UI_URL: WebUrl()
    .default('http://localhost:8233')
    .describe('Base URL of the Temporal web UI (links printed by status --failed and replay)'),
  SYNC_START_DATE: z.iso
    .datetime({ offset: true })
    .or(z.iso.date())
    .optional()
    .describe(
      "Where the exports' history starts (ISO date or instant); default: the workspace's whole history (oldest ticket minus 90 days)",
    ),
  SYNC_STREAMS: StreamList.prefault(ALL_STREAMS.join(',')).describe(
    'Streams the sync reads, comma-separated (default: all); streams left out are neither read nor marked deleted, and their tables are left alone. `--streams` overrides it for one command',
  ),
  SYNC_LOOKBACK: IsoDurationMs.prefault('PT72H').describe(
    'Re-read range before the last high-water mark on every incremental run',
  ),
  SYNC_WINDOW: IsoDurationMs.prefault('P90D')
    .refine((ms) => ms > 0 && ms <= MAX_EXPORT_WINDOW_MS, { message: 'must be positive and at most P90D' })
    .describe('Export window size, at most 90 × 24 h'),
  SYNC_THREAD_LOOKBACK: IsoDurationMs.prefault('PT24H').describe(
    "Threads of tickets created this recently are re-read every run even if the ticket's updated_at did not move",
  ),
  SYNC_SWEEP_PAGES_PER_RUN: z.coerce
    .number()
    .int()
    .positive()
    .default(1800)
    .describe(
      'List pages (100 tickets each) one run spends sweeping the ticket list; larger workspaces are swept across runs',
    ),
  SYNC_THREAD_REVERIFY_PER_RUN: z.coerce
    .number()
    .int()
    .nonnegative()
    .default(600)
    .describe(
      "Threads of unchanged tickets re-read per run at most (oldest read first), only on detail budget the run's other streams leave, and a round of 4 a run at least; 0 turns it off",
    ),
  SYNC_MAX_PAGES: z.coerce
    .number()
    .int()
    .positive()
    .default(200_000)
    .describe(
      "The most pages one scope may take — an export window, a reference list, the tickets sweep, one ticket's thread — counted in its checkpoint, so across continue-as-new and runs. Far above any real workspace (200,000 pages of 100 items); it ends a source that answers `has_more: true` for ever. Past it that window fails naming the scope and this setting (the run goes on), and the scope's next read starts from its first page. A list whose pages hold no item at all fails sooner, after 100 such pages",
    ),
  SYNC_SOURCE_PATIENCE: IsoDurationMs.prefault('PT6H')
    .refine((ms) => ms > 0, {
      message: 'must be positive: PT0S would mean no limit at all (a failing page retried for ever)',
    })
    .describe(
      'How long a page may keep failing with transient errors (an outage: backing off to a retry a minute) before its window fails; positive (PT0S, which Temporal would read as no limit, is refused)',
    ),
  SYNC_FRESHNESS_SLO: IsoDurationMs.prefault('PT2H').describe(
    'Freshness target per stream: `status` flags a stream whose warehouse lags the source by more, or that was not read within it; the metrics export it for alert rules',
  ),
  SYNC_CSAT_COMMENTS: z
    .enum(['true', 'false'])
    .default('true')
    .transform((v) => v === 'true')
    .describe('Sync CSAT comments (the key then also needs tickets:read)'),
  SYNC_PAGE_SIZE: z.coerce.number().int().min(1).max(100).default(100).describe('Items per API page'),
  SYNC_STREAM_PARALLELISM: z.coerce
    .number()
    .int()
    .min(1)
    .max(16)
    .default(16)
    .describe('Streams synced at once (every stream by default: the fleet budget paces each route class)'),
  SUPPORT_API_RATE_LIMITS: ClassRateLimits.prefault(DEFAULT_CLASS_LIMITS_TEXT).describe(
    "Requests per SUPPORT_API_RATE_WINDOW per route class, kept for every worker together by the key's budget workflow (`list=60,detail=120,analytics=10,directory=60`, the spec's), or `off` (no pacing but the API's headers: a source without limits)",
  ),
  SUPPORT_API_RATE_WINDOW: IsoDurationMs.prefault('PT1M')
    .refine((ms) => ms > 0, { message: 'must be positive' })
    .describe("The API's rate-limit window"),
  SUPPORT_API_RATE_SHARE: z.coerce
    .number()
    .gt(0)
    .max(1)
    .default(1)
    .describe(
      "Share of each class's limit spent per window, at most; lower it to leave budget to other clients of the same key",
    ),
  SUPPORT_API_REQUEST_DEADLINE: IsoDurationMs.prefault('PT1M')
    .refine((ms) => ms > 0 && ms <= 150_000, {
      message: "must be positive and at most PT2M30S (below a page activity's 3-minute limit)",
    })
    .describe(
      'The longest one request to the Support API may take, connection to last byte of the body, however the server drips it; past it the request is aborted and fails with a timeout naming the route (retried by the activity, not in place). A try of a preflight probe gets one deadline in all, the preflight at most four',
    ),
  SUPPORT_API_MAX_RESPONSE_BYTES: z.coerce
    .number()
    .int()
    .min(64 * 1024)
    .max(MAX_RESPONSE_BYTES_LIMIT, {
      message: `must be at most ${MAX_RESPONSE_BYTES_LIMIT} (256 MiB): a body is held whole in memory, as text and then parsed`,
    })
    .default(64 * 1024 * 1024)
    .describe(
      "The largest response body read from the Support API, in bytes (default 64 MiB: several times the largest page the spec's field limits allow; at most 256 MiB); a larger body is abandoned as it streams in and its page fails with an error naming the route and the cap",
    ),
  SYNC_AUDIT_SHARE: z.coerce
    .number()
    .min(0)
    .max(1)
    .default(0.1)
    .describe(
      "Share of each route class's limit per rate window that the audit after every run spends re-reading a random sample of stored rows from the live API (0 turns it off)",
    ),
  SUPPORT_API_BUDGET: removed(
    "the key's budget workflow is the only pacing (it spends each window whole, where the task queues' even pace left requests unspent); unset it",
  ),
  ANALYTICS_REQUESTS_PER_MINUTE: removed(
    'set the analytics class in SUPPORT_API_RATE_LIMITS instead (e.g. `analytics=10`, per SUPPORT_API_RATE_WINDOW)',
  ),
  SYNC_COLUMN_POLICY: ColumnPolicyText.optional().describe(
    'Fields hashed or dropped before anything is written: `<table>.<column>=hash|drop` or `<table>._raw.<field>=hash|drop`, separated by commas or white space',
  ),
  SYNC_HASH_KEY: KeyString.refine((key) => key.reveal().length >= MIN_HASH_KEY_LENGTH, {
    message: `must be at least ${MIN_HASH_KEY_LENGTH} characters (e.g. openssl rand -hex 32)`,
  })
    .optional()
    .describe(
      'Key of the HMAC-SHA-256 that SYNC_COLUMN_POLICY hashes with (never logged; no white space or control characters)',
    ),
  REPORT_QUERIES: z
    .string()
    .optional()
    .describe(
      'Path to a YAML list of saved report queries ({ name, query, timezone, schedule? }) snapshotted every run into report_snapshots, or on their own `schedule: { cron, timezone }` after `schedule create`; examples/report-queries.yaml is an example',
    ),
  SYNC_BUSINESS_HOURS: z
    .string()
    .optional()
    .describe(
      "Path to a YAML/JSON file of the support team's business hours: `timezone` (IANA), `hours` (per weekday, local `HH:MM-HH:MM` intervals), `holidays` (local dates) and `targets` (per priority, `first_reply` and `resolution` as ISO 8601 durations of business time). The sync writes business_calendar and sla_targets from it, and ticket_metrics gets business-time durations and breach flags; unset, those columns are null. examples/business-hours.yaml is an example",
    ),
  SYNC_WORKSPACES_FILE: z
    .string()
    .min(1)
    .optional()
    .describe(
      'Path to a YAML file of further workspaces this deployment syncs (`workspaces:`, each with an `id`, its `url`, its `key` as `{ env: NAME }` or `{ file: PATH }`, an optional `schema`, `schedule` and `settings` by environment name); the settings above are the workspace `default`. Workers re-read it, so a workspace added or removed takes effect without a restart ([workspaces](guides/workspaces.md))',
    ),
  SYNC_WAREHOUSE_LAYOUT: WarehouseLayout.default('schema-per-workspace').describe(
    "Where the workspaces of this deployment are stored: `schema-per-workspace` (each its own schema, BigQuery: dataset, as a deployment of one workspace has always been) or `shared-tables` (every workspace in the deployment's one schema, each table with a `workspace_id` column first in its key; PostgreSQL 16 or later, or BigQuery). Switching a deployment whose tables exist is refused by the first run ([the two layouts](guides/workspaces.md#two-layouts))",
  ),
  SYNC_WORKSPACE: WorkspaceId.default(DEFAULT_WORKSPACE).describe(
    'The workspace a command acts on: `default` (the settings above) or an id of SYNC_WORKSPACES_FILE, whose entry then replaces the URL, the key, the schema and its own settings. `--workspace` sets it for one command',
  ),
  LOG_LEVEL: z
    .enum(['silent', 'fatal', 'error', 'warn', 'info', 'debug', 'trace'])
    .default('info')
    .describe(
      'Least severe log level written (logs go to stderr as JSON lines; `npm start` defaults to warn)',
    ),
});

/**
 * The configuration as the sync uses it: the environment with the files it names read (REPORT_QUERIES),
 * and the settings that only make sense together checked together (a policy that hashes needs its key).
 */
export const Config = ConfigFromEnv.extend({
  REPORT_QUERIES: ReportQueriesSource.optional(),
  SYNC_BUSINESS_HOURS: BusinessHoursSource.optional(),
  /**
   * Not a setting: in a workspace's configuration on BigQuery (worker/workspace-config.ts), the deployment's
   * own dataset, where the workspace's dataset goes when the sync creates it and BIGQUERY_LOCATION is unset.
   */
  BIGQUERY_DEPLOYMENT_DATASET: z.string().optional(),
})
  .superRefine((config, ctx) => {
    const hashed = (config.SYNC_COLUMN_POLICY ?? []).filter((rule) => rule.action === 'hash');
    if (hashed.length > 0 && config.SYNC_HASH_KEY === undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['SYNC_HASH_KEY'],
        message: `is required: SYNC_COLUMN_POLICY hashes ${hashed.map((r) => r.entry.split('=')[0]).join(', ')}`,
      });
  })
  .superRefine(
    (config, ctx) => {
      if (
        new URL(config.SUPPORT_API_URL).protocol === 'http:' &&
        !isLoopbackUrl(config.SUPPORT_API_URL) &&
        !config.SUPPORT_API_ALLOW_HTTP
      )
        ctx.addIssue({
          code: 'custom',
          path: ['SUPPORT_API_URL'],
          message:
            'must be https (plain http would send the API key unencrypted); http is taken only to this machine, or with SUPPORT_API_ALLOW_HTTP=true',
        });
    },
    // Also when other settings are wrong: every problem is reported at once.
    {
      when: (payload) =>
        !payload.issues.some((i) =>
          ['SUPPORT_API_URL', 'SUPPORT_API_ALLOW_HTTP'].includes(String(i.path?.[0])),
        ),
    },
  );
export type Config = z.infer<typeof Config>;
