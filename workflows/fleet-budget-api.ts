import { defineSignal, defineUpdate } from '@temporalio/workflow';
import type { FleetSlotAnswer, FleetSlotRequest, FleetWindowReport } from '../schemas/fleet-budget.js';

/** The fleet budget workflow's messages, importable by the processes that send them. */
export const acquireSlotsUpdate = defineUpdate<FleetSlotAnswer, [FleetSlotRequest]>('acquireSlots');
export const windowObservedSignal = defineSignal<[FleetWindowReport]>('windowObserved');

export const FLEET_BUDGET_WORKFLOW = 'fleetBudgetWorkflow';

/** One budget workflow per key: its id names the key's fingerprint (a hash prefix), never the key. */
export function fleetBudgetWorkflowId(taskQueue: string, keyFingerprint: string): string {
  return `${taskQueue}-budget-${keyFingerprint}`;
}
