import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { HistoryAndWorkflowId } from '@temporalio/client';
import { historyFromJson } from './history-json.js';

/**
 * Recorded workflow histories, one folder per scenario (`initial-sync/`, `incremental/`, …), one file per
 * workflow execution, each exactly as `temporal workflow show --output json` or the UI's download writes it:
 * a file saved from a production run can be dropped in beside them.
 */
export const HISTORIES_DIR = fileURLToPath(new URL('./histories/', import.meta.url));

/**
 * The scenarios `npm run record-histories` records (scripts/record-histories.ts says what each one is).
 * Other folders beside them are kept and replayed too: `before-<patch id>/`, the scenarios recorded by the
 * code before a `patched()` change, while that patch lives (workflows/README.md).
 */
export const RECORDED_SCENARIOS = [
  'initial-sync',
  'incremental',
  'failed-window',
  'window-replay',
  'full-refresh',
] as const;
export type RecordedScenario = (typeof RECORDED_SCENARIOS)[number];

/**
 * The file name of an execution: the first segment of its workflow id (the stream or pass: `sync-run`,
 * `tickets`, `csat_surveys.sent`, …), numbered when a scenario has several of it (windows oldest first,
 * continued runs in order). Ids carry instants, which change with every recording; these names do not, so a
 * re-recording shows as changed files rather than as files removed and added.
 */
export function historyFileName(workflowId: string, ordinal: number | null): string {
  const stream = workflowId.split('/')[0]!;
  return `${stream}${ordinal === null ? '' : `.${ordinal}`}.json`;
}

/** The scenario folders under HISTORIES_DIR, sorted. */
export function recordedScenarios(): string[] {
  return readdirSync(HISTORIES_DIR, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
}

/**
 * The histories of one folder, its subfolders included (a `before-<patch id>/` folder holds the scenarios),
 * each labelled `<folder>/<file>` (the label replay errors are reported with).
 */
export function recordedHistories(scenario: string): (HistoryAndWorkflowId & { text: string })[] {
  const dir = join(HISTORIES_DIR, scenario);
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.json'))
    .sort()
    .map((file) => {
      const text = readFileSync(join(dir, file), 'utf8');
      return { workflowId: `${scenario}/${file}`, history: historyFromJson(JSON.parse(text)), text };
    });
}
