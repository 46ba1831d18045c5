// A minimal workflow used only to prove the provisioned dev server and a real worker run workflow + activity.
import { proxyActivities, upsertSearchAttributes } from '@temporalio/workflow';
import { SyncStreamKey, WindowEndKey, WindowStartKey } from '../../workflows/search-attributes.js';

export interface EchoActivities {
  shout(text: string): Promise<string>;
}

const { shout } = proxyActivities<EchoActivities>({ startToCloseTimeout: '10 seconds' });

export async function echoWorkflow(text: string): Promise<string> {
  upsertSearchAttributes([
    { key: SyncStreamKey, value: 'echo' },
    { key: WindowStartKey, value: new Date('2026-01-01T00:00:00Z') },
    { key: WindowEndKey, value: new Date('2026-01-02T00:00:00Z') },
  ]);
  return shout(text);
}
