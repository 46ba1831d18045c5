import type { StreamOfKind } from '../../schemas/streams.js';

/**
 * The tie-out's catalogue: every metric the BI views compute that the report API also serves (spec 2.11),
 * each with the rule that makes the API's number and the warehouse's comparable. Counts and the online time
 * are compared per UTC day; medians and averages also per period (spec 2.10 rule 5: a period's median is
 * queried, never rebuilt from daily values); the backlog now.
 */

/** How the two numbers are compared. */
export interface TieOutMetric {
  readonly id: string;
  /** Largest difference still equal: 0 for counts; float rounding for medians and averages. */
  readonly tolerance: number;
  /** What the warehouse computes, in the API's terms. */
  readonly rule: string;
  /**
   * Known from ticket_history only: on days up to the one the history began (the first sync), the events
   * before the first sighting are not known, so a warehouse number lower than the API's is explained.
   */
  readonly fromHistory?: string;
  /** A difference the warehouse cannot close, with why (definitions the spec leaves open). */
  readonly cannotEqual?: string;
  /** The stream besides tickets the warehouse number comes from: not compared until it has been synced. */
  readonly needs?: FollowerStream;
}

/** Streams a tie-out metric may read besides tickets. */
export type FollowerStream = StreamOfKind<'threads' | 'export'>;

const SWEEP =
  'Known at the granularity of the sync schedule: a change and its undoing between two runs leave no trace.';

export const DAILY_COUNTS: readonly TieOutMetric[] = [
  {
    id: 'new_tickets',
    tolerance: 0,
    rule: 'current tickets (not deleted) by created_at UTC day (creation cohort).',
  },
  {
    id: 'resolved_tickets',
    tolerance: 0,
    rule: `distinct current tickets with a resolution that UTC day: a move to resolved in ticket_history, or the ticket's current resolved_at (view ticket_resolutions). ${SWEEP}`,
    fromHistory:
      'on the days up to the first sync, a resolution undone by a reopen before the ticket was first synced is not known (the API has no events feed and a reopen clears resolved_at)',
  },
  {
    id: 'reopened_tickets',
    tolerance: 0,
    rule: `distinct current tickets with a move from resolved/closed to open/need_more_info in ticket_history that UTC day (is_reopen, dated by valid_from). ${SWEEP}`,
    fromHistory:
      'on the days up to the first sync, reopens before the ticket was first synced are not known (the API has no events feed)',
  },
  {
    id: 'tickets_replied_to',
    needs: 'ticket_messages',
    tolerance: 0,
    rule: 'distinct current tickets with a public thread item not by the customer (current_messages, role agent or ai) created that UTC day.',
  },
  {
    id: 'answered_tickets',
    needs: 'ticket_messages',
    tolerance: 0,
    rule: 'as tickets_replied_to: distinct current tickets with a reply by an agent or AI that UTC day.',
    cannotEqual:
      'the API counts only replies attributed to an agent (spec 2.11); message reads carry author_name but no author id (spec 2.3), so an unattributed reply cannot be told apart in the warehouse',
  },
  {
    id: 'csat_responses',
    needs: 'csat_surveys',
    tolerance: 0,
    rule: 'scored CSAT surveys (csat_surveys, not deleted, score and submitted_at set) by submitted_at UTC day.',
  },
];

export const DAILY_DURATIONS: readonly TieOutMetric[] = [
  {
    id: 'customer_first_response_time',
    needs: 'ticket_messages',
    tolerance: 0.001,
    rule: 'median of ticket_facts.first_response_seconds over current tickets whose first_reply_at falls in the period (reply event); 0 when none, as the API answers.',
  },
  {
    id: 'human_first_response_time',
    needs: 'ticket_messages',
    tolerance: 0.001,
    rule: 'median of ticket_facts.first_human_response_seconds over current tickets whose first_human_reply_at falls in the period; 0 when none.',
  },
  {
    id: 'full_resolution_time',
    tolerance: 0.001,
    rule: 'median of ticket_facts.resolution_seconds (creation to the current resolution) over tickets resolved or closed now whose resolved_at falls in the period; 0 when none.',
  },
  {
    id: 'agent_online_time',
    needs: 'agent_sessions',
    tolerance: 0.001,
    rule: 'sum of agent_online_daily.online_seconds (sessions clipped to the day, overlaps of one agent counted once, an open session up to its last_activity).',
  },
];

export const CSAT_AVERAGE = {
  id: 'csat_average',
  needs: 'csat_surveys',
  tolerance: 1e-6,
  rule: 'mean score of scored CSAT surveys by submitted_at in the period; 0 when none, as the API answers.',
} as const satisfies TieOutMetric;

export const BACKLOG_NOW: TieOutMetric = {
  id: 'backlog_now',
  tolerance: 0,
  rule: 'current tickets with status open or need_more_info (a snapshot: compared with the warehouse as of the last sweep).',
};

/** Metrics whose period value is a median or an average: queried for the whole period too. */
export const PERIOD_METRICS: readonly TieOutMetric[] = [
  ...DAILY_DURATIONS.filter((m) => m.id !== 'agent_online_time'),
  CSAT_AVERAGE,
];

/** Every metric compared, with its rule, by id. */
export const TIE_OUT_METRICS: ReadonlyMap<string, TieOutMetric> = new Map(
  [...DAILY_COUNTS, ...DAILY_DURATIONS, CSAT_AVERAGE, BACKLOG_NOW].map((m) => [m.id, m]),
);
