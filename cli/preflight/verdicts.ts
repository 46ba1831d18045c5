import { setTimeout as sleep } from 'node:timers/promises';
import {
  DEADLINE_EXCEEDED,
  RateLimitedError,
  RedirectRefusedError,
  type SupportApiClient,
  SupportApiError,
  SupportClientError,
  TransportError,
  withCancellation,
} from '../../connectors/support-api/index.js';
import type { KeyIdentity } from '../../schemas/api/identity.js';
import type { StreamName } from '../../schemas/streams.js';
import { missingFor, remedy } from './explain.js';
import { probeContext, STREAM_PROBES } from './probes.js';

/**
 * What the probe of one selected stream found:
 *  - `ok`: readable; `idle`: nothing to read (no report query configured, no ticket yet) — neither stops a run;
 *  - `unverified`: the source gave only answers that may pass (a stall, a 5xx, a reset, a 429, a redirect
 *    while other routes answer in place), through a few tries: the run reads it, and its own reads retry
 *    and fail on their own;
 *  - `forbidden`: the source refused the stream (403 FORBIDDEN_SCOPE): `missing` says what the key lacks;
 *  - `failed`: an answer that another try would not change (a 404 at the base URL, a TLS failure, nothing
 *    listening, a redirect on every route, a bad answer).
 */
export interface StreamVerdict {
  stream: StreamName;
  status: 'ok' | 'idle' | 'unverified' | 'forbidden' | 'failed';
  detail: string;
  missing?: string[];
  code?: string;
  request_id?: string;
}

/** The source refused the key itself (401): no stream can be read, nothing else is asked. */
export class KeyRefusedError extends Error {}

export interface Preflight {
  readonly verdicts: StreamVerdict[];
  /** The refused and failed streams: a run must not start. */
  readonly blocking: StreamVerdict[];
  /** One line naming what blocks and what to do, or null when nothing does. */
  readonly problem: string | null;
}

/** How much longer than one request's deadline one try of a probe may take in all. */
const PROBE_SLACK_MS = 2000;
/** Tries of one probe whose answer may pass on another try; of one that stalls (each costs a deadline), two. */
const PROBE_TRIES = 3;
const STALLED_PROBE_TRIES = 2;
/** The pause before the second and the third try. */
const RETRY_DELAYS_MS = [500, 1500] as const;
/** A rate limit the preflight waits out before its next try; a longer one leaves the stream unverified. */
const MAX_RATE_WAIT_MS = 5000;
/** The preflight's time in all, in tries' bounds: past it no retry is begun and no stream is probed. */
const PREFLIGHT_BOUNDS = 4;

/** A transport failure that is the base URL's, the same on every try and route: TLS, no such host, no server. */
const PERMANENT_TRANSPORT =
  /^(ERR_TLS_|ERR_SSL_)|CERT|SELF_SIGNED|UNABLE_TO_VERIFY|^EPROTO$|^ENOTFOUND$|^ECONNREFUSED$/;

/** What one try of a probe ended with. */
type Outcome =
  | { kind: 'readable'; idle: string | null }
  | { kind: 'forbidden'; error: SupportApiError }
  /** `everywhere`: a failure of the base URL itself, which every other probe would meet too. */
  | { kind: 'permanent'; detail: string; evidence: Evidence; everywhere: boolean }
  | { kind: 'passing'; cause: 'stall' | 'rate' | 'redirect' | 'other'; detail: string; waitMs?: number };

type Evidence = Pick<StreamVerdict, 'code' | 'request_id'>;

const evidenceOf = (err: unknown): Evidence =>
  err instanceof SupportApiError ? { code: err.code, request_id: err.requestId } : {};
const answerOf = (err: SupportApiError | undefined) =>
  err ? ` (HTTP ${err.status} ${err.code}, request_id ${err.requestId})` : '';

/** What a probe's error says, by whether another try could change it. A 401 throws: no stream is readable. */
function outcomeOf(err: unknown, bound: AbortSignal, deadlineMs: number): Outcome {
  if (err instanceof SupportApiError && err.status === 401)
    throw new KeyRefusedError(`the Support API refused the key: ${err.message}`);
  if (err instanceof SupportApiError && err.status === 403) return { kind: 'forbidden', error: err };
  if (err instanceof RateLimitedError)
    return {
      kind: 'passing',
      cause: 'rate',
      detail: `the source is rate limiting${answerOf(err.apiError)} (retry in ${err.retryAfterMs} ms)`,
      waitMs: err.retryAfterMs,
    };
  if (bound.aborted || (err instanceof TransportError && err.code === DEADLINE_EXCEEDED))
    return {
      kind: 'passing',
      cause: 'stall',
      detail:
        err instanceof TransportError
          ? err.message
          : `no answer within ${deadlineMs} ms (SUPPORT_API_REQUEST_DEADLINE): the source is stalled`,
    };
  if (err instanceof RedirectRefusedError) return { kind: 'passing', cause: 'redirect', detail: err.message };
  if (err instanceof TransportError && err.code !== undefined && PERMANENT_TRANSPORT.test(err.code))
    return { kind: 'permanent', detail: err.message, evidence: {}, everywhere: true };
  if (err instanceof SupportClientError && err.retryable)
    return { kind: 'passing', cause: 'other', detail: err.message };
  return { kind: 'permanent', detail: (err as Error).message, evidence: evidenceOf(err), everywhere: false };
}

/**
 * Probes each selected stream (schemas/streams.ts order), one after the other, and gates only on what is
 * permanent: a 401 stops at once (the key is wrong for every stream); a refused stream is explained with the
 * key's identity, read once and only then (`GET /me`, a detail request the source may not serve); a 404, a
 * TLS failure or a bad answer fails its stream. An answer that may pass — a stall, a 5xx or a reset that
 * outlasted the client's own retries, a 429 whose wait is at most 5 s, a redirect — is tried again, up to
 * three tries (two for a stall, which costs a deadline each); one that persists (or a longer rate wait)
 * leaves its stream `unverified`, and the run reads it (its own reads retry with patience, and fail on their
 * own). A redirect is the base URL's (a login page, a moved service) only when no route answered in place:
 * then it fails the redirected streams.
 *
 * Each try gets the client's request deadline (and 2 s) in all, its retries included. The preflight in all
 * gets four such bounds: past them no retry is begun and the streams left are not probed (`unverified`), so
 * the preflight of a stalled source ends within about four deadlines (SUPPORT_API_REQUEST_DEADLINE), and
 * one stalled route costs two of them.
 */
export async function probeStreams(
  client: SupportApiClient,
  streams: readonly StreamName[],
  options: { includeComments: boolean; reportQueries: number; now?: Date },
): Promise<Preflight> {
  const ctx = probeContext(client, { ...options, now: options.now ?? new Date() });
  const tryMs = client.deadlineMs + PROBE_SLACK_MS;
  const started = performance.now();
  const timeLeft = () => PREFLIGHT_BOUNDS * tryMs - (performance.now() - started);
  let identity: Promise<KeyIdentity | undefined> | undefined;
  const verdicts: StreamVerdict[] = [];
  const redirected = new Set<StreamVerdict>();
  let unusable: StreamName | undefined;

  const verdictOf = async (stream: StreamName, outcome: Outcome, tries: number): Promise<StreamVerdict> => {
    switch (outcome.kind) {
      case 'readable':
        return outcome.idle
          ? { stream, status: 'idle', detail: outcome.idle }
          : { stream, status: 'ok', detail: 'readable' };
      case 'forbidden': {
        identity ??= client.identity().catch(() => undefined);
        const missing = missingFor(stream, await identity, options.includeComments);
        const detail = `${missing.join('; ')}${answerOf(outcome.error)}`;
        return { stream, status: 'forbidden', detail, missing, ...evidenceOf(outcome.error) };
      }
      case 'permanent':
        return { stream, status: 'failed', detail: outcome.detail, ...outcome.evidence };
      case 'passing': {
        const after = tries === 1 ? '' : ` (${tries} tries)`;
        const verdict: StreamVerdict = { stream, status: 'unverified', detail: `${outcome.detail}${after}` };
        if (outcome.cause === 'redirect') redirected.add(verdict);
        return verdict;
      }
    }
  };

  for (const stream of streams) {
    if (unusable !== undefined || timeLeft() <= 0) {
      verdicts.push({
        stream,
        status: 'unverified',
        detail:
          unusable !== undefined
            ? `not probed: the ${unusable} probe found the source unusable`
            : `not probed: the preflight's time (${PREFLIGHT_BOUNDS} request deadlines) went to earlier probes`,
      });
      continue;
    }
    for (let tries = 1; ; tries += 1) {
      // A little over one request's deadline, so a single stalled request fails with its own error (naming
      // its route); the bound ends what the deadline does not (a rate wait, a retry after a reset).
      const bound = AbortSignal.timeout(tryMs);
      let outcome: Outcome;
      try {
        outcome = { kind: 'readable', idle: await withCancellation(bound, () => STREAM_PROBES[stream](ctx)) };
      } catch (err) {
        outcome = outcomeOf(err, bound, client.deadlineMs);
      }
      const pause = outcome.kind === 'passing' ? (outcome.waitMs ?? RETRY_DELAYS_MS[tries - 1] ?? 0) : 0;
      const again =
        outcome.kind === 'passing' &&
        tries < (outcome.cause === 'stall' ? STALLED_PROBE_TRIES : PROBE_TRIES) &&
        pause <= MAX_RATE_WAIT_MS &&
        pause + tryMs <= timeLeft();
      if (!again) {
        if (outcome.kind === 'permanent' && outcome.everywhere) unusable = stream;
        verdicts.push(await verdictOf(stream, outcome, tries));
        break;
      }
      await sleep(pause);
    }
  }
  // Redirects on every route that was answered: the base URL points elsewhere, which no retry changes.
  if (redirected.size > 0 && !verdicts.some((v) => ['ok', 'idle', 'forbidden'].includes(v.status)))
    for (const verdict of redirected) {
      verdict.status = 'failed';
      verdict.detail = `${verdict.detail}; no route answered in place`;
    }
  const blocking = verdicts.filter((v) => v.status === 'forbidden' || v.status === 'failed');
  return { verdicts, blocking, problem: problemOf(verdicts, streams) };
}

function problemOf(verdicts: readonly StreamVerdict[], selected: readonly StreamName[]): string | null {
  const refused = verdicts.filter((v) => v.status === 'forbidden');
  const failed = verdicts.filter((v) => v.status === 'failed');
  const parts: string[] = [];
  if (refused.length > 0) {
    const which = refused.map((v) => `${v.stream}: ${v.missing!.join('; ')}`).join(', ');
    const count = `${refused.length} of the ${selected.length} selected stream${selected.length === 1 ? '' : 's'}`;
    parts.push(
      `the key cannot read ${count} (${which}) — ${remedy(
        refused.map((v) => v.stream),
        selected,
      )}`,
    );
  }
  if (failed.length > 0)
    parts.push(`the Support API is not usable: ${failed.map((v) => `${v.stream}: ${v.detail}`).join('; ')}`);
  return parts.length > 0 ? parts.join('; ') : null;
}

/** One line per stream, aligned, for a terminal. */
export function verdictLines(verdicts: readonly StreamVerdict[]): string[] {
  const label: Record<StreamVerdict['status'], string> = {
    ok: 'ok',
    idle: 'idle',
    unverified: 'unverified',
    forbidden: 'FORBIDDEN',
    failed: 'FAILED',
  };
  return verdicts.map((v) => `  ${v.stream.padEnd(17)}${label[v.status].padEnd(11)}${v.detail}`);
}
