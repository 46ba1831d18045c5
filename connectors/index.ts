import type { Destination, DestinationOptions } from './destination.js';

export interface CreateDestinationOptions extends DestinationOptions {
  /** PostgreSQL schema (default `support`). */
  readonly schema?: string;
  /** PostgreSQL pool size (default 8). */
  readonly poolSize?: number;
  /** BigQuery API endpoint (an emulator); default: the real service. */
  readonly apiEndpoint?: string;
  /** BigQuery Storage Write API endpoint of an emulator (host:port, plaintext); default: the real service. */
  readonly storageEndpoint?: string;
  /** BigQuery location of the dataset and its jobs (default: the dataset's own; a new dataset: `US`). */
  readonly location?: string;
  /** BigQuery dataset whose location a dataset the sync creates takes when `location` is unset. */
  readonly newDatasetLocationOf?: string;
}

/**
 * Builds the destination a URL names: `postgres://…` / `postgresql://…` → PostgreSQL,
 * `bigquery://<project>/<dataset>` → BigQuery. Implementations are loaded on demand so that a PostgreSQL
 * deployment never loads the BigQuery client and vice versa.
 */
export async function createDestination(
  url: string,
  options: CreateDestinationOptions = {},
): Promise<Destination> {
  const scheme = url.slice(0, Math.max(0, url.indexOf(':'))).toLowerCase();
  if (scheme === 'postgres' || scheme === 'postgresql') {
    const { PostgresDestination } = await import('./postgres/destination.js');
    return new PostgresDestination(url, options);
  }
  if (scheme === 'bigquery') {
    const { BigQueryDestination } = await import('./bigquery/destination.js');
    const { parseBigQueryUrl } = await import('./bigquery/url.js');
    return new BigQueryDestination({ ...parseBigQueryUrl(url), ...options });
  }
  throw new Error(
    `DESTINATION_URL must start with postgres://, postgresql:// or bigquery:// (got scheme "${scheme || '(none)'}")`,
  );
}
