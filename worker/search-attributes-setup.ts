import type { Client } from '@temporalio/client';
import { SearchAttributeType } from '@temporalio/common';
import type { Logger } from 'pino';
import { SEARCH_ATTRIBUTES } from '../workflows/search-attributes.js';

/** IndexedValueType numbers of the operator service (temporal.api.enums.v1.IndexedValueType). */
const INDEXED_VALUE_TYPE: Partial<Record<string, number>> = {
  [SearchAttributeType.TEXT]: 1,
  [SearchAttributeType.KEYWORD]: 2,
  [SearchAttributeType.INT]: 3,
  [SearchAttributeType.DOUBLE]: 4,
  [SearchAttributeType.BOOL]: 5,
  [SearchAttributeType.DATETIME]: 6,
  [SearchAttributeType.KEYWORD_LIST]: 7,
};

export interface SetupResult {
  namespace: string;
  added: string[];
  present: string[];
}

/** What a cluster operator grants so that `setup` (and `worker` at start) can do this itself. */
export const SETUP_PERMISSION_HINT =
  'the OperatorService AddSearchAttributes and ListSearchAttributes calls on the namespace (a namespace admin); or register them by hand: ' +
  SEARCH_ATTRIBUTES.map(
    (k) => `temporal operator search-attribute create --name ${k.name} --type ${k.type}`,
  ).join('; ') +
  '. On Temporal Cloud, which takes neither, register them with tcld, the Cloud UI or Terraform (docs/operations/search-attributes.md)';

/**
 * Registers the custom search attributes the window workflows carry (SyncStream, WindowStart, WindowEnd,
 * SyncRunId) on the namespace, idempotently: those already there are left alone, a clash of type is an
 * error naming it. A cluster the project did not start (no dev server registering them) needs this once.
 */
export async function registerSearchAttributes(
  client: Client,
  namespace: string,
  raced = false,
): Promise<SetupResult> {
  const operator = client.connection.operatorService;
  const listed = await operator.listSearchAttributes({ namespace });
  const existing = new Map<string, number>([
    ...Object.entries(listed.customAttributes ?? {}),
    ...Object.entries(listed.systemAttributes ?? {}),
  ] as [string, number][]);
  const missing: Record<string, number> = {};
  const present: string[] = [];
  for (const key of SEARCH_ATTRIBUTES) {
    const wanted = INDEXED_VALUE_TYPE[key.type];
    if (wanted === undefined) throw new Error(`no indexed value type for ${key.name} (${key.type})`);
    const have = existing.get(key.name);
    if (have === undefined) missing[key.name] = wanted;
    else if (have !== wanted)
      throw new Error(
        `search attribute ${key.name} exists on namespace ${namespace} with another type (${have}, expected ${key.type})`,
      );
    else present.push(key.name);
  }
  if (Object.keys(missing).length > 0) {
    try {
      await operator.addSearchAttributes({ namespace, searchAttributes: missing });
    } catch (err) {
      // Workers of a fleet starting together race to add them: the one that loses finds them there (and
      // checks their types) instead of failing its start.
      if (!isAlreadyExists(err) || raced) throw err;
      return registerSearchAttributes(client, namespace, true);
    }
  }
  return { namespace, added: Object.keys(missing), present };
}

/**
 * `registerSearchAttributes`, for a caller that goes on without them: a cluster that does not allow it
 * answers `permission-denied` (the caller says what to grant, `SETUP_PERMISSION_HINT`) instead of an error.
 */
export async function registerSearchAttributesIfAllowed(
  client: Client,
  namespace: string,
): Promise<SetupResult | 'permission-denied'> {
  try {
    return await registerSearchAttributes(client, namespace);
  } catch (err) {
    if (isPermissionDenied(err)) return 'permission-denied';
    throw err;
  }
}

/**
 * At a worker's start: a cluster the project did not start lacks the window workflows' search attributes
 * (the sync fails on a window start without them), so they are added when allowed; when not, the worker
 * still starts and says what to grant.
 */
export async function registerSearchAttributesAtWorkerStart(
  client: Client,
  namespace: string,
  logger: Logger,
): Promise<void> {
  const setup = await registerSearchAttributesIfAllowed(client, namespace);
  if (setup === 'permission-denied')
    logger.warn(
      `cannot register the search attributes; ask the cluster operator for ${SETUP_PERMISSION_HINT}`,
    );
  else if (setup.added.length > 0) logger.info({ added: setup.added }, 'search attributes registered');
}

/** True for the gRPC status ALREADY_EXISTS (6). */
function isAlreadyExists(err: unknown): boolean {
  return (err as { code?: number }).code === 6;
}

/** True for the gRPC status of a caller without the rights (PERMISSION_DENIED = 7, UNAUTHENTICATED = 16). */
function isPermissionDenied(err: unknown): boolean {
  const code = (err as { code?: number }).code;
  return code === 7 || code === 16;
}
