import { CsatMeta, CsatSurvey } from '../schemas/api/exports.js';
import { column } from '../schemas/warehouse/derive.js';
import { defineStream, type WindowRead } from './define.js';

/** Comments are asked for only when the run says so (the stream's `extras`). */
const comments = (read: WindowRead) => ({ include_comments: String(read.extras) });

/** A survey's version only grows: it is sent before it is answered. */
const csatVersion = (s: Record<string, unknown>) => s['submitted_at'] ?? s['sent_at'];

/**
 * CSAT surveys (spec 4.13), read twice: by sent date (every survey, answered or not, exactly once) and by
 * submitted date (every answer since the last run, however late after sending) — together exact without
 * re-reading months of sent windows.
 */
export const csatSurveys = defineStream({
  name: 'csat_surveys',
  kind: 'export',
  table: 'csat_surveys',
  routeClass: 'analytics',
  endpoint: 'GET /csat-surveys',
  scope: 'analytics:read',
  agent: { dashboardPermissions: ['dashboard.org_metrics', 'dashboard.ticket_csat'] },
  passes: ['csat_surveys.sent', 'csat_surveys.submitted'],
  passDefinitions: {
    // A survey is sent on a ticket: their number follows the tickets created.
    'csat_surveys.sent': {
      page: {
        item: CsatSurvey,
        meta: CsatMeta,
        window: { from: 'sent_from', before: 'sent_before' },
        query: comments,
      },
      forecast: { dateColumn: 'sent_at', basis: 'tickets' },
      // It reads every survey sent since the start date: those it did not receive are gone (their ticket
      // was deleted, spec 2.7 rule 7).
      fullRefreshMarksUnseen: true,
    },
    'csat_surveys.submitted': {
      page: {
        item: CsatSurvey,
        meta: CsatMeta,
        window: { from: 'submitted_from', before: 'submitted_before' },
        query: comments,
      },
      forecast: { dateColumn: 'submitted_at', basis: 'tickets' },
      // A survey is submitted after it is sent, and sent about a ticket that exists (spec 2.7 rule 7: only
      // surveys on existing tickets are exported): so when the history starts no later than the oldest
      // ticket, the sent pass over [history start, now) returns every survey the submitted pass would over
      // the same range, with its answer as of the read. A survey answered after the sent pass read it is
      // after that mark, less the look-back: the next run's submitted pass reads it. Reading both would
      // spend a third to a half more of a first sync's CSAT requests, in the class that binds a long history.
      firstReadCoveredBy: 'csat_surveys.sent',
    },
  },
  extras: {
    what: 'CSAT comments',
    scope: 'tickets:read',
    without: 'SYNC_CSAT_COMMENTS=false reads the surveys without them',
  },
  // Spec 2.7 rule 7: the export serves a survey exactly while its ticket exists, so its rows also come back.
  followsTicketDeletion: { revive: true },
  warehouse: {
    description:
      'One row per CSAT survey (GET /csat-surveys). Surveys are answered late; version: _version = coalesce(submitted_at, sent_at), which only grows (a survey is sent before it is answered). A full refresh re-reads every survey sent since the start date and marks those the export no longer serves (e.g. of deleted tickets, spec 2.7 rule 7) with _deleted_at.',
    schema: CsatSurvey,
    primaryKey: ['id'],
    merge: { kind: 'version', column: '_version' },
    tracksDeletion: true,
    derive: {
      descriptions: {
        id: 'Survey id (UUID). Primary key.',
        ticket_id: 'Ticket id (joins tickets.id).',
        ticket_number: 'Ticket number; null when unknown.',
        credited_agent_id: 'Agent credited with the survey (joins agents.id); null when unattributed.',
        credited_agent_name: 'Name of the credited agent at survey time.',
        attribution_source: 'How the agent was attributed.',
        score: 'Score 1–5; null until answered.',
        sent_at: 'When the survey was sent.',
        submitted_at: 'When the survey was answered; null until then.',
        comment: 'Free-text comment (only when the sync requests comments).',
      },
    },
    computed: [
      {
        ...column(
          '_version',
          'timestamp',
          false,
          'Row version: coalesce(submitted_at, sent_at). A later answer replaces the unanswered row.',
        ),
        compute: csatVersion,
      },
    ],
    indexes: [['sent_at'], ['submitted_at'], ['credited_agent_id'], ['ticket_id']],
    partitionBy: 'sent_at',
    clusterBy: ['credited_agent_id', 'score'],
  },
  // The by-sent pass reads every survey once by it.
  freshness: 'sent_at',
  freshnessTarget: { warnHours: 6, errorHours: 24 },
  // Surveys by sent date: every survey, answered or not (the submitted pass serves only answers).
  audit: {
    unit: 'window',
    seedColumn: 'sent_at',
    pass: 'csat_surveys.sent',
    streams: ['csat_surveys.sent', 'csat_surveys.submitted'],
  },
});
