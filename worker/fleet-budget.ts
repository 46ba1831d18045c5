import { Client, type ConnectionLike, WithStartWorkflowOperation } from '@temporalio/client';
import type { Logger } from 'pino';
import {
  type FleetSlotSource,
  FleetSlots,
  keyFingerprint,
  type RateGovernor,
  systemClock,
} from '../connectors/support-api/index.js';
import type { Config, QueuedRouteClass } from '../schemas/config.js';
import type {
  FleetBudgetSettings,
  FleetSlotAnswer,
  FleetSlotRequest,
  FleetWindowReport,
} from '../schemas/fleet-budget.js';
import {
  acquireSlotsUpdate,
  FLEET_BUDGET_WORKFLOW,
  fleetBudgetWorkflowId,
  windowObservedSignal,
} from '../workflows/fleet-budget-api.js';

/**
 * The fleet budget's settings from the configuration, or null when there are no limits to keep
 * (SUPPORT_API_RATE_LIMITS=off). Budgets per window: the configured limit times SUPPORT_API_RATE_SHARE;
 * the API's X-RateLimit-Limit replaces the limit once seen.
 */
export function fleetBudgetOf(config: Config): FleetBudgetSettings | null {
  const limits = config.SUPPORT_API_RATE_LIMITS;
  if (!limits) return null;
  const windowMs = config.SUPPORT_API_RATE_WINDOW;
  const limitOf = (c: QueuedRouteClass): number => Math.max(1, Math.floor(limits[c]));
  return {
    keyFingerprint: keyFingerprint(config.SUPPORT_API_KEY),
    windowMs,
    idleMs: Math.max(5 * 60_000, 5 * windowMs),
    budgets: Object.fromEntries(
      (Object.keys(limits) as QueuedRouteClass[]).map((c) => [
        c,
        { limit: limitOf(c), share: config.SUPPORT_API_RATE_SHARE },
      ]),
    ),
  };
}

/**
 * How long a request waits in its activity for the fleet's next window before it goes back to Temporal as
 * a retry: longer than a window at the spec's one minute (so a page waits once, not in a retry loop that
 * could use up a thread page's six attempts), shorter than the page activity's start-to-close timeout.
 */
const FLEET_MAX_WAIT_MS = 90_000;

/** The ledger in Temporal: an update with start (the first request of the fleet starts the workflow). */
class TemporalFleetBudget implements FleetSlotSource {
  readonly #workflowId: string;
  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
    private readonly input: FleetBudgetSettings,
    private readonly logger: Logger,
  ) {
    this.#workflowId = fleetBudgetWorkflowId(taskQueue, input.keyFingerprint);
  }

  acquire(request: FleetSlotRequest): Promise<FleetSlotAnswer> {
    const startWorkflowOperation = new WithStartWorkflowOperation(FLEET_BUDGET_WORKFLOW, {
      workflowId: this.#workflowId,
      taskQueue: this.taskQueue,
      args: [this.input],
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
    return this.client.workflow.executeUpdateWithStart(acquireSlotsUpdate, {
      args: [request],
      startWorkflowOperation,
    });
  }

  report(report: FleetWindowReport): void {
    this.client.workflow
      .getHandle(this.#workflowId)
      .signal(windowObservedSignal, report)
      .catch((err: unknown) =>
        // The workflow ended (idle) or Temporal is away: the next request's probe learns the window again.
        this.logger.debug({ err }, 'fleet budget report not delivered'),
      );
  }
}

/**
 * Puts `governor`'s queued route classes under the fleet budget of `settings`, its ledger reached through
 * the worker's Temporal connection.
 */
export function attachFleetBudget(options: {
  connection: ConnectionLike;
  namespace: string;
  taskQueue: string;
  governor: RateGovernor;
  settings: FleetBudgetSettings;
  logger: Logger;
}): void {
  const client = new Client({ connection: options.connection, namespace: options.namespace });
  const source = new TemporalFleetBudget(client, options.taskQueue, options.settings, options.logger);
  const classes = Object.keys(options.settings.budgets) as QueuedRouteClass[];
  const slots = new FleetSlots({
    source,
    classes,
    clock: systemClock,
    windowMs: options.settings.windowMs,
    limits: Object.fromEntries(classes.map((c) => [c, options.settings.budgets[c]?.limit ?? 1])),
  });
  options.governor.useFleet(slots, FLEET_MAX_WAIT_MS);
}
