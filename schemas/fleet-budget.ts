import { z } from 'zod';
import { STREAM_ROUTE_CLASSES } from './streams.js';

const StreamRouteClass = z.enum(STREAM_ROUTE_CLASSES);

/**
 * The fleet budget: one workflow per API key (named by the key's fingerprint, never the key) hands out the
 * requests of each queued route class window by window, for every worker process of the fleet together
 * (workflows/fleet-budget.ts). These are the plain-JSON shapes of its input, its update and its signal.
 */

/** Epoch milliseconds. */
const EpochMs = z.number().int().nonnegative();

/** What the budget of one class is: the API's limit per window and the share of it the fleet may spend. */
export const FleetClassBudget = z.object({
  limit: z.number().int().positive(),
  share: z.number().gt(0).max(1),
});
export type FleetClassBudget = z.infer<typeof FleetClassBudget>;

/** One class's ledger, carried across continue-as-new. */
export const FleetClassLedger = z.object({
  /** Limit per window the API reported last (X-RateLimit-Limit), or the configured one before any. */
  limit: z.number().int().positive(),
  /** The configured limit (SUPPORT_API_RATE_LIMITS): a higher limit reported by the API is not used. */
  cap: z.number().int().positive(),
  share: z.number().gt(0).max(1),
  /** End of the API window the fleet is spending (X-RateLimit-Reset), 0 while unknown. */
  windowEnd: EpochMs,
  /** Requests counted in that window: granted by us, or counted by the server, whichever is more. */
  spent: z.number().int().nonnegative(),
  /** A probe request granted to learn the next window's end, and when (null: none out). */
  probeAt: EpochMs.nullable(),
  /** No grants before this instant (a 429's Retry-After somewhere in the fleet). */
  pausedUntil: EpochMs,
});
export type FleetClassLedger = z.infer<typeof FleetClassLedger>;

export const FleetBudgetInput = z.object({
  /** The key's fingerprint (a hash prefix), for display; the key itself never enters Temporal. */
  keyFingerprint: z.string().min(1),
  budgets: z.partialRecord(StreamRouteClass, FleetClassBudget),
  /** The API's window as configured (SUPPORT_API_RATE_WINDOW): the guard before its end depends on it. */
  windowMs: z.number().int().positive(),
  /** The workflow ends after this long without a request (the next request starts a new one). */
  idleMs: z.number().int().positive(),
  /** Ledgers carried over by continue-as-new. */
  ledgers: z.partialRecord(StreamRouteClass, FleetClassLedger).optional(),
});
export type FleetBudgetInput = z.infer<typeof FleetBudgetInput>;
/** The budget workflow's input as the configuration gives it (a new workflow starts with no ledgers). */
export type FleetBudgetSettings = Omit<FleetBudgetInput, 'ledgers'>;

/** A process asks for up to `want` requests of a class. */
export const FleetSlotRequest = z.object({
  routeClass: StreamRouteClass,
  want: z.number().int().positive().max(1000),
});
export type FleetSlotRequest = z.infer<typeof FleetSlotRequest>;

/**
 * The answer: `granted` requests, each to be sent before `sendBy` (after it they may land in the next
 * window, which is not theirs: the process asks again); or none, and when to ask again (`retryAt`).
 * `windowEnd` is the window the ledger knows, so the process reports only what is news.
 */
export const FleetSlotAnswer = z.object({
  granted: z.number().int().nonnegative(),
  sendBy: EpochMs,
  retryAt: EpochMs,
  windowEnd: EpochMs,
  probe: z.boolean(),
});
export type FleetSlotAnswer = z.infer<typeof FleetSlotAnswer>;

/** What a process saw in a response: the first of a new window, or a 429. */
export const FleetWindowReport = z.object({
  routeClass: StreamRouteClass,
  /** X-RateLimit-Reset, X-RateLimit-Limit, X-RateLimit-Remaining of the response. */
  windowEnd: EpochMs,
  limit: z.number().int().positive(),
  remaining: z.number().int().nonnegative(),
  /** A 429: no grants before this instant. */
  rateLimitedUntil: EpochMs.optional(),
});
export type FleetWindowReport = z.infer<typeof FleetWindowReport>;
