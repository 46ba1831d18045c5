import type { KeyIdentity } from '../../schemas/api/identity.js';
import { STREAMS, type StreamName } from '../../schemas/streams.js';

/**
 * What a stream the source refused (403 FORBIDDEN_SCOPE) lacks, as exactly as the source lets us say. The
 * requirements are the registry's (the key scope, spec 4; the linked agent's dashboard permissions, spec
 * 4.13, 4.14, 5.8); which of them is missing comes from the key's identity (`GET /me`, not in the spec,
 * schemas/api/identity.ts) when the source serves it. Without it every requirement is named, since clients
 * branch on `code`, never on the message (spec 2.1).
 */
export function missingFor(
  stream: StreamName,
  identity: KeyIdentity | undefined,
  /** The run asks for the streams' extras (SYNC_CSAT_COMMENTS): their scopes are needed too. */
  includeExtras: boolean,
): string[] {
  const entry = STREAMS[stream];
  const extras = includeExtras && 'extras' in entry ? entry.extras : undefined;
  const scopes: string[] = [entry.scope, ...(extras ? [extras.scope] : [])];
  const permissions = 'agent' in entry ? entry.agent.dashboardPermissions : null;

  const missing: string[] = [];
  if (Array.isArray(identity?.scopes)) {
    for (const scope of scopes.filter((s) => !identity.scopes!.includes(s)))
      missing.push(
        scope === entry.scope
          ? `the key lacks ${scope}`
          : `the key lacks ${scope} (for ${extras?.what}: ${extras?.without})`,
      );
  }
  if (permissions !== null && identity?.agent === null) {
    missing.push('the key is not linked to a support agent (spec 5.8)');
  } else if (permissions !== null && Array.isArray(identity?.agent?.dashboard_permissions)) {
    const held = identity.agent.dashboard_permissions;
    const lacking = permissions.filter((p) => !held.includes(p));
    if (lacking.length > 0) missing.push(`the key's agent lacks ${lacking.join(' and ')}`);
  }
  if (missing.length > 0) return missing;

  // The source does not say which: every requirement.
  const needs = [`the key needs ${scopes.join(' and ')}`];
  if (permissions !== null)
    needs.push(
      permissions.length > 0
        ? `a linked agent with ${permissions.join(' and ')}`
        : 'a linked support agent (spec 5.8)',
    );
  return [`${needs.join(' and ')}; one of these is missing`];
}

/** How to get a run going without the refused streams: the selected streams that can be read. */
export function remedy(refused: readonly StreamName[], selected: readonly StreamName[]): string {
  const readable = selected.filter((s) => !refused.includes(s));
  const grant =
    refused.length === 1
      ? 'grant it, or leave the stream out'
      : 'grant what is missing, or leave the streams out';
  return readable.length === 0
    ? 'grant what is missing (the key can read none of the selected streams)'
    : `${grant}: SYNC_STREAMS=${readable.join(',')}`;
}
