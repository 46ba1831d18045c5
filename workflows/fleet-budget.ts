import {
  allHandlersFinished,
  condition,
  makeContinueAsNewFunc,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import {
  FleetBudgetInput,
  type FleetClassLedger,
  FleetSlotRequest,
  FleetWindowReport,
} from '../schemas/fleet-budget.js';
import type { StreamRouteClass } from '../schemas/streams.js';
import { acquireSlotsUpdate, windowObservedSignal } from './fleet-budget-api.js';
import { applyReport, grantSlots, newLedger } from './fleet-budget-ledger.js';

/**
 * The request budget of one API key for the whole fleet (every worker process together): an update
 * `acquireSlots` grants requests of a route class window by window (fleet-budget-ledger.ts), a signal
 * `windowObserved` brings in what a response showed (a new window's end, a 429). Handlers are synchronous,
 * so a grant is one workflow task: tens of milliseconds, against a budget of a request a second or less.
 *
 * It ends after `idleMs` without a message (the next request starts it again: a fresh ledger first probes
 * the window) and continues as new when its history grows long, carrying its ledgers. Like every workflow
 * it is pinned to the build that started it (Worker Deployment Versioning); when another build becomes the
 * deployment's current one, its next message makes it continue as new onto that build, so it never keeps
 * an old build's workers up, and a change to it needs no patch.
 */
export async function fleetBudgetWorkflow(raw: FleetBudgetInput): Promise<void> {
  const input = FleetBudgetInput.parse(raw);
  const windowMs = input.windowMs;
  const ledgers = new Map<StreamRouteClass, FleetClassLedger>();
  for (const [routeClass, budget] of Object.entries(input.budgets) as [StreamRouteClass, never][])
    ledgers.set(routeClass, input.ledgers?.[routeClass] ?? newLedger(budget));
  const ledgerOf = (routeClass: StreamRouteClass): FleetClassLedger => {
    let ledger = ledgers.get(routeClass);
    if (!ledger) {
      // A class without a configured budget (not expected): one request per window until reports come.
      ledger = newLedger({ limit: 1, share: 1 });
      ledgers.set(routeClass, ledger);
    }
    return ledger;
  };
  let lastMessageAt = Date.now();

  setHandler(
    acquireSlotsUpdate,
    (request) => {
      lastMessageAt = Date.now();
      return grantSlots(ledgerOf(request.routeClass), Date.now(), request.want, windowMs);
    },
    { validator: (request) => void FleetSlotRequest.parse(request) },
  );
  setHandler(windowObservedSignal, (raw) => {
    lastMessageAt = Date.now();
    const report = FleetWindowReport.safeParse(raw);
    if (report.success) applyReport(ledgerOf(report.data.routeClass), report.data);
  });

  const newRunDue = () =>
    workflowInfo().continueAsNewSuggested ||
    workflowInfo().historyLength > HISTORY_EVENTS_BEFORE_NEW_RUN ||
    workflowInfo().targetWorkerDeploymentVersionChanged;
  for (;;) {
    const due = await condition(newRunDue, input.idleMs);
    if (due) {
      await condition(allHandlersFinished);
      // The next run starts on the deployment's current build (unversioned workers: the same queue).
      return makeContinueAsNewFunc<typeof fleetBudgetWorkflow>({ initialVersioningBehavior: 'AUTO_UPGRADE' })(
        {
          ...input,
          ledgers: Object.fromEntries(ledgers),
        },
      );
    }
    if (Date.now() - lastMessageAt >= input.idleMs) return;
  }
}

/** Each grant is a handful of events: a new run every few thousand grants keeps replays short. */
const HISTORY_EVENTS_BEFORE_NEW_RUN = 8000;
