import {
  DEADLINE_EXCEEDED,
  RateLimitedError,
  type SupportApiClient,
  SupportApiError,
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
 *  - `unverified`: the source asked to slow down (429): the run itself will tell, nothing stops it;
 *  - `forbidden`: the source refused the stream (403 FORBIDDEN_SCOPE): `missing` says what the key lacks;
 *  - `failed`: another error (a bad answer, an outage that outlasted the client's retries).
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

/** How much longer than one request's deadline a probe may take in all. */
const PROBE_SLACK_MS = 2000;

/**
 * Probes each selected stream with one request (schemas/streams.ts order), one after the other: a 401 stops
 * at once (the key is wrong for every stream); a refused stream is explained with the key's identity, read
 * once and only then (`GET /me`, a detail request the source may not serve).
 *
 * Each probe gets the client's request deadline (and 2 s) in all, its retries included: a source that stalls fails
 * its probe within it, and the probes after it are not made (the run is refused already; a stalled source
 * would make each of them wait a deadline too). The preflight of a stalled source therefore ends within
 * about one deadline (SUPPORT_API_REQUEST_DEADLINE).
 */
export async function probeStreams(
  client: SupportApiClient,
  streams: readonly StreamName[],
  options: { includeComments: boolean; reportQueries: number; now?: Date },
): Promise<Preflight> {
  const ctx = probeContext(client, { ...options, now: options.now ?? new Date() });
  let identity: Promise<KeyIdentity | undefined> | undefined;
  const verdicts: StreamVerdict[] = [];
  let stalled: StreamName | undefined;
  for (const stream of streams) {
    if (stalled !== undefined) {
      verdicts.push({
        stream,
        status: 'unverified',
        detail: `not probed: the ${stalled} probe got no answer within the deadline`,
      });
      continue;
    }
    // A little over one request's deadline, so a single stalled request fails with its own error (naming
    // its route); the bound ends what the deadline does not (a rate wait, a retry after a reset).
    const bound = AbortSignal.timeout(client.deadlineMs + PROBE_SLACK_MS);
    try {
      const idle = await withCancellation(bound, () => STREAM_PROBES[stream](ctx));
      verdicts.push(
        idle ? { stream, status: 'idle', detail: idle } : { stream, status: 'ok', detail: 'readable' },
      );
    } catch (err) {
      if (err instanceof SupportApiError && err.status === 401) {
        throw new KeyRefusedError(`the Support API refused the key: ${err.message}`);
      }
      const evidence = err instanceof SupportApiError ? { code: err.code, request_id: err.requestId } : {};
      const at =
        err instanceof SupportApiError
          ? ` (HTTP ${err.status} ${err.code}, request_id ${err.requestId})`
          : '';
      if (err instanceof SupportApiError && err.status === 403) {
        identity ??= client.identity().catch(() => undefined);
        const missing = missingFor(stream, await identity, options.includeComments);
        verdicts.push({
          stream,
          status: 'forbidden',
          detail: `${missing.join('; ')}${at}`,
          missing,
          ...evidence,
        });
      } else if (err instanceof RateLimitedError || (err instanceof SupportApiError && err.status === 429)) {
        verdicts.push({
          stream,
          status: 'unverified',
          detail: `not probed: the source is rate limiting${at}`,
        });
      } else if (bound.aborted || (err instanceof TransportError && err.code === DEADLINE_EXCEEDED)) {
        stalled = stream;
        const detail = `no answer within ${client.deadlineMs} ms (SUPPORT_API_REQUEST_DEADLINE)`;
        verdicts.push({
          stream,
          status: 'failed',
          detail: err instanceof TransportError ? err.message : `${detail}: the source is stalled`,
        });
      } else {
        verdicts.push({ stream, status: 'failed', detail: (err as Error).message, ...evidence });
      }
    }
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
