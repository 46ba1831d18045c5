// Before anything creates the Temporal runtime: only warnings from the replay workers.
import '../support/quiet-temporal.js';
import { Worker, type WorkflowBundle } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { bundleWorkflows } from '../../worker/workflow-bundle.js';
import { RECORDED_SCENARIOS, recordedHistories, recordedScenarios } from './history-files.js';

/**
 * Determinism: the histories recorded from real runs (`npm run record-histories`, test/workflows/README.md)
 * replayed against the workflow code as it is now. A change that would make a running workflow take another
 * path on its next worker — an activity or child workflow added, removed or reordered, a timer, a `patched()`
 * removed too early — fails here instead of in production. Needs no server: the replay worker feeds the
 * recorded events to the workflow code in-process.
 */
const SCENARIOS = recordedScenarios();

let bundle: WorkflowBundle;
beforeAll(async () => {
  // The same bundling as the build's and the workers' (worker/workflow-bundle.ts).
  bundle = { code: await bundleWorkflows() };
});

describe('recorded workflow histories replay on the current workflow code', () => {
  it('every scenario of the recording script is there', () => {
    expect(SCENARIOS).toEqual(expect.arrayContaining([...RECORDED_SCENARIOS]));
  });

  it.each(SCENARIOS)('%s replays without a determinism violation', async (scenario) => {
    const histories = recordedHistories(scenario);
    expect(histories.length).toBeGreaterThan(0);
    const failures: string[] = [];
    let replayed = 0;
    for await (const result of Worker.runReplayHistories(
      { workflowBundle: bundle, replayName: `replay-${scenario}` },
      histories,
    )) {
      replayed += 1;
      if (result.error) failures.push(`${result.workflowId}: ${result.error.name}: ${result.error.message}`);
    }
    expect(failures).toEqual([]);
    expect(replayed).toBe(histories.length);
  });

  it('no history carries a credential', () => {
    for (const scenario of SCENARIOS) {
      for (const { workflowId, text } of recordedHistories(scenario)) {
        // Decoded payloads too: inputs and results are base64 JSON in the file.
        const decoded = [...text.matchAll(/"data": "([A-Za-z0-9+/=]+)"/g)]
          .map((m) => Buffer.from(m[1]!, 'base64').toString('utf8'))
          .join('\n');
        for (const content of [text, decoded]) {
          // The key header, a companion key (`sk_<label>_<hex>`), a connection string with credentials.
          expect(content, workflowId).not.toMatch(
            /cx-api-key|\bsk_[a-z_]+_[0-9a-f]{8,}|postgres(ql)?:\/\/[^\s"]*@/i,
          );
        }
      }
    }
  });
});
