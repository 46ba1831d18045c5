import type { BigQueryOptions } from '@google-cloud/bigquery';
import { GoogleAuth, PassThroughClient } from 'google-auth-library';
import type { DestinationCapabilities, DestinationOptions } from '../destination.js';
import { DestinationSettings } from '../settings.js';
import { SqlDestination } from '../sql/destination.js';
import { prepareBigQuery, replaceView } from './ddl.js';
import { bqIdent } from './dialect.js';
import { BigQuerySession, normalize } from './session.js';
import { BigQueryWriter } from './write.js';

export interface BigQueryDestinationOptions extends DestinationOptions {
  readonly projectId: string;
  readonly datasetId: string;
  /** Location of the dataset and jobs (default `US`). */
  readonly location?: string;
  /**
   * API endpoint of an emulator (e.g. http://127.0.0.1:9050). When set, requests carry no credentials;
   * otherwise the client uses Application Default Credentials.
   */
  readonly apiEndpoint?: string;
  /** Attempts for a transaction aborted by a concurrent update of the same table (default 8). */
  readonly maxConflictRetries?: number;
}

export const BIGQUERY_CAPABILITIES: DestinationCapabilities = {
  kind: 'bigquery',
  transactionalCheckpoints: true,
  stagingLoad: 'load_job',
  merge: 'merge_statement',
  concurrentWritersPerTable: true,
  additiveMigrations: true,
  physicalLayout: 'partitioning_clustering',
  recommendedBatchRows: 50_000,
  maxStringLength: 10 * 1024 * 1024,
};

/** `bigquery://<project>/<dataset>` → ids. */
export function parseBigQueryUrl(url: string): { projectId: string; datasetId: string } {
  const m = /^bigquery:\/\/([^/?#]+)\/([A-Za-z0-9_]+)\/?$/.exec(url);
  if (!m) throw new Error('a BigQuery destination URL has the form bigquery://<project>/<dataset>');
  return { projectId: m[1]!, datasetId: m[2]! };
}

/**
 * Client options for an emulator: no credentials. Going through the auth client anyway (a pass-through
 * client) gives every request a header object, which the client's multipart upload of load jobs requires
 * (without it the upload fails in teeny-request setting Content-Type on undefined headers).
 */
export function emulatorClientOptions(apiEndpoint: string): BigQueryOptions {
  // useAuthWithCustomEndpoint is honoured by @google-cloud/common but missing from BigQueryOptions' typings,
  // and the client's typings pin an older copy of google-auth-library's GoogleAuth: hence the cast.
  return {
    apiEndpoint,
    useAuthWithCustomEndpoint: true,
    authClient: new GoogleAuth({ authClient: new PassThroughClient() }),
  } as unknown as BigQueryOptions;
}

/**
 * BigQuery destination: a client running jobs (session.ts), the DDL (ddl.ts), the write path — a load job
 * into a staging table, then one script MERGEing rows and checkpoints in a transaction (write.ts) — and the
 * error mapping that keeps tokens out of every message (errors.ts). Reads of state and ledger: sql/.
 */
export class BigQueryDestination extends SqlDestination {
  readonly #session: BigQuerySession;

  constructor(options: BigQueryDestinationOptions) {
    bqIdent(options.datasetId);
    const settings = new DestinationSettings(options);
    const session = new BigQuerySession({
      projectId: options.projectId,
      datasetId: options.datasetId,
      location: options.location ?? 'US',
      client: options.apiEndpoint ? emulatorClientOptions(options.apiEndpoint) : {},
      maxConflictRetries: options.maxConflictRetries ?? 8,
    });
    super({
      capabilities: BIGQUERY_CAPABILITIES,
      settings,
      session,
      prepare: () => prepareBigQuery(session, settings),
      createView: (view) => replaceView(session, view),
      writer: new BigQueryWriter(session, settings),
    });
    this.#session = session;
  }

  /** Runs a query (tests, status command); rows normalized (timestamps canonical, JSON parsed). */
  query(sql: string, params: Record<string, unknown> = {}): Promise<Record<string, unknown>[]> {
    return this.#session.withErrorMapping('query', async () =>
      (await this.#session.run(sql, params)).map(normalize),
    );
  }
}
