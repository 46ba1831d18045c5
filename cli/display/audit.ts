import type { AuditSummary, AuditTableResult } from '../../schemas/audit.js';

const percent = (share: number) => `${(share * 100).toFixed(1)} %`;

/** One line per table: rows compared, the share that differed, its 95 % upper bound, healed, changed since. */
export function auditTableLines(tables: Readonly<Record<string, AuditTableResult>>): string[] {
  const entries = Object.entries(tables);
  if (entries.length === 0) return ['  (no rows audited)'];
  return entries.map(
    ([table, r]) =>
      `  ${table.padEnd(16)} sampled ${String(r.sampled).padStart(6)}   differ ${String(r.differs).padStart(4)} (${percent(r.share)})   95 % upper bound ${percent(r.bound).padStart(7)}   healed ${r.healed}   changed since read ${r.changed_since}`,
  );
}

/** The run summary's line: what the audit re-read, at what cost, and what it found. */
export function auditSummaryLine(audit: AuditSummary): string {
  const requests = Object.entries(audit.requests)
    .map(([routeClass, n]) => `${n} ${routeClass}`)
    .join(', ');
  return (
    `audit: ${audit.sampled} rows re-read from the API${requests ? ` (${requests} requests)` : ''}, ` +
    `${audit.differs} differed (95 % upper bound ${percent(audit.bound)}), ${audit.healed} healed` +
    (audit.error ? ` — ${audit.error}` : '')
  );
}
