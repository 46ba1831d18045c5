/**
 * BigQuery's location rule, kept in front of the emulator: a job runs in one location, and every dataset it
 * reads or writes must be in that location (cloud.google.com/bigquery/docs/locations: "the location of a
 * job must match the location of the datasets it references"; a mismatch fails with `notFound`, "Dataset
 * <project>:<dataset> was not found in location <location>"). bqemulator keeps a dataset's location but runs
 * a job anywhere (checked with bqemulator 1.4.0: a job in `US` reads an `EU` dataset), so a client that
 * sends the wrong location passes there and fails on the service. The quota proxy applies the rule with
 * this ledger of dataset locations.
 *
 * The proxy learns a dataset's location from what passes through it: a `datasets.insert` (its body's
 * `location`, BigQuery's default `US` when absent) and a `datasets.get` answer. A job names datasets by
 * `dataset.table` in its SQL (the project's SQL always qualifies tables: connectors/bigquery/dialect.ts), by
 * a query's default dataset, or by a load's destination; names that are not known datasets (table aliases,
 * `t.column`) are ignored. A job that gives no location is placed by BigQuery where its datasets are:
 * nothing to check.
 */

/** BigQuery's location when a dataset is created without one. */
const DEFAULT_DATASET_LOCATION = 'US';

/** What of a job resource names its location and its datasets. */
export interface LocatedJob {
  readonly jobReference?: { readonly location?: string };
  readonly configuration?: {
    readonly query?: { readonly query?: string; readonly defaultDataset?: { readonly datasetId?: string } };
    readonly load?: { readonly destinationTable?: { readonly datasetId?: string } };
  };
}

export interface LocationMismatch {
  readonly dataset: string;
  readonly datasetLocation: string;
  readonly jobLocation: string;
}

/** Locations compare as BigQuery compares them: case aside (`eu` is `EU`). */
const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/** `/projects/<p>/datasets/<d>` (REST prefixes allowed) → the dataset id; null for any other path. */
function datasetOfPath(url: string): string | null {
  const path = (url.split('?')[0] ?? '').replace(/^\/bigquery\/v2/, '');
  return /^\/projects\/[^/]+\/datasets\/([^/]+)\/?$/.exec(path)?.[1] ?? null;
}

export class DatasetLocations {
  readonly #located = new Map<string, string>();

  /** Learns from a dataset request and its answer: an insert's location, a get's (or insert's) answer. */
  observe(method: string, url: string, requestBody: string, status: number, responseBody: string): void {
    const path = (url.split('?')[0] ?? '').replace(/^\/bigquery\/v2/, '');
    const created = method === 'POST' && /^\/projects\/[^/]+\/datasets\/?$/.test(path);
    const read = method === 'GET' && datasetOfPath(url) !== null;
    if (status === 404 && read) this.#located.delete(datasetOfPath(url)!);
    if (!(created || read) || status < 200 || status >= 300) return;
    const resource = parsed(responseBody) ?? (created ? parsed(requestBody) : null);
    const id = resource?.datasetReference?.datasetId ?? (read ? datasetOfPath(url) : null);
    if (!id) return;
    const requested = created ? parsed(requestBody)?.location : undefined;
    this.#located.set(id, resource?.location ?? requested ?? DEFAULT_DATASET_LOCATION);
  }

  /** Forgets a dataset deleted through the proxy. */
  forget(method: string, url: string): void {
    const id = datasetOfPath(url);
    if (method === 'DELETE' && id) this.#located.delete(id);
  }

  /** The first dataset the job references in another location than the job's; null when none. */
  mismatchOf(job: LocatedJob | undefined, jobLocation: string | undefined): LocationMismatch | null {
    if (!jobLocation || !job) return null;
    for (const dataset of this.#referenced(job)) {
      const datasetLocation = this.#located.get(dataset);
      if (datasetLocation !== undefined && !same(datasetLocation, jobLocation))
        return { dataset, datasetLocation, jobLocation };
    }
    return null;
  }

  #referenced(job: LocatedJob): Set<string> {
    const out = new Set<string>();
    const config = job.configuration;
    const sql = config?.query?.query ?? '';
    // `dataset`.`table`, dataset.table, `project.dataset.table`: each name before a dot may be a dataset.
    for (const m of sql.matchAll(/`?([A-Za-z_][A-Za-z0-9_]*)`?\s*\.\s*`?[A-Za-z_]/g))
      if (this.#located.has(m[1]!)) out.add(m[1]!);
    for (const m of sql.matchAll(/`[^`.]+\.([A-Za-z_][A-Za-z0-9_]*)\.[^`]+`/g))
      if (this.#located.has(m[1]!)) out.add(m[1]!);
    const byDefault = config?.query?.defaultDataset?.datasetId;
    if (byDefault) out.add(byDefault);
    const loaded = config?.load?.destinationTable?.datasetId;
    if (loaded) out.add(loaded);
    return out;
  }
}

function parsed(
  text: string,
): { location?: string; datasetReference?: { datasetId?: string }; query?: string } | null {
  try {
    const value = JSON.parse(text) as unknown;
    return value !== null && typeof value === 'object' ? (value as ReturnType<typeof parsed>) : null;
  } catch {
    return null;
  }
}

/** BigQuery's answer to a job whose location does not hold a dataset it references. */
export function locationMismatchError(
  projectId: string,
  mismatch: LocationMismatch,
): { status: number; body: string } {
  const message = `Not found: Dataset ${projectId}:${mismatch.dataset} was not found in location ${mismatch.jobLocation}`;
  return {
    status: 404,
    body: JSON.stringify({
      error: { code: 404, message, errors: [{ reason: 'notFound', message }], status: 'NOT_FOUND' },
    }),
  };
}
