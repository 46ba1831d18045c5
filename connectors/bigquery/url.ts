/** `bigquery://<project>/<dataset>` → ids (a module of its own: configuration reads it without the client). */
export function parseBigQueryUrl(url: string): { projectId: string; datasetId: string } {
  const m = /^bigquery:\/\/([^/?#]+)\/([A-Za-z0-9_]+)\/?$/.exec(url);
  if (!m) throw new Error('a BigQuery destination URL has the form bigquery://<project>/<dataset>');
  return { projectId: m[1]!, datasetId: m[2]! };
}
