import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { PAGE_FETCHERS } from '../../activities/fetchers.js';
import { type Activities, activitiesByRouteClass } from '../../activities/index.js';
import { classifierOf, routeClassFor, streamRoutes } from '../../connectors/support-api/route-classes.js';
import { THREAD_QUEUE_STREAM } from '../../schemas/state-key.js';
import {
  ALL_STREAMS,
  EXPORT_PASSES,
  ExportPass,
  FULL_REFRESH_MARKS_UNSEEN,
  namesOf,
  passesOf,
  REFERENCE_STREAMS,
  registryOf,
  STREAMS,
  type StreamEntry,
  type StreamRegistry,
  scopesOf,
  streamOfPass,
  streamOfPassIn,
  streamsOfKind,
  THREADS_STREAM,
  TICKET_FOLLOWERS,
} from '../../schemas/streams.js';
import { STREAM_TABLE_NAMES, TABLE_NAMES } from '../../schemas/warehouse.js';
import { COMPARED_TABLES } from '../e2e/source-snapshot.js';

/**
 * A stream is described in one module (streams/<name>.ts) listed once in streams/registry.ts; these tests
 * show that what derives from the registry picks a new entry up by itself (test/e2e/toy-stream.test.ts adds
 * one end to end), and that the registry refuses what the type checker cannot see.
 */
describe('the stream registry', () => {
  const macros: StreamEntry = {
    kind: 'reference',
    table: 'macros',
    routeClass: 'directory',
    endpoint: 'GET /macros',
    scope: 'macros:read',
  };
  const surveys: StreamEntry = {
    kind: 'export',
    table: 'nps_surveys',
    routeClass: 'analytics',
    endpoint: 'GET /nps-surveys',
    scope: 'analytics:read',
    passes: ['nps_surveys.sent', 'nps_surveys.answered'],
  };
  const toy = { ...STREAMS, macros, nps_surveys: surveys } satisfies StreamRegistry;

  it('a toy stream added to the registry alone reaches every list, pass and route class derived from it', () => {
    expect(namesOf(toy)).toEqual([...ALL_STREAMS, 'macros', 'nps_surveys']);
    expect(streamsOfKind(toy, 'reference')).toEqual([...REFERENCE_STREAMS, 'macros']);
    expect(streamsOfKind(toy, 'export')).toEqual(['csat_surveys', 'agent_sessions', 'nps_surveys']);
    expect(passesOf(toy)).toEqual([...ExportPass.options, 'nps_surveys.sent', 'nps_surveys.answered']);
    expect(streamOfPassIn(toy, 'nps_surveys.answered')).toBe('nps_surveys');
    const classOf = classifierOf(streamRoutes(toy));
    expect(classOf('GET', '/macros')).toBe('directory');
    expect(classOf('GET', '/nps-surveys?from=x')).toBe('analytics');
    expect(scopesOf(toy, ['macros', 'views'])).toEqual(['macros:read', 'tickets:read']);
  });

  it('derives the names the CLI, the ledger and the search attributes know', () => {
    expect(ALL_STREAMS).toEqual([
      'views',
      'tags',
      'teams',
      'agents',
      'metric_catalog',
      'tickets',
      'ticket_messages',
      'csat_surveys',
      'agent_sessions',
      'report_snapshots',
    ]);
    expect(REFERENCE_STREAMS).toEqual(['views', 'tags', 'teams', 'agents', 'metric_catalog']);
    expect(ExportPass.options).toEqual(['csat_surveys.sent', 'csat_surveys.submitted', 'agent_sessions']);
    expect(EXPORT_PASSES).toEqual({
      csat_surveys: ['csat_surveys.sent', 'csat_surveys.submitted'],
      agent_sessions: ['agent_sessions'],
    });
    expect(ExportPass.options.map(streamOfPass)).toEqual(['csat_surveys', 'csat_surveys', 'agent_sessions']);
  });

  it("gives each stream's read endpoint the stream's route class, and every table is a warehouse table", () => {
    for (const stream of ALL_STREAMS) {
      const { endpoint, routeClass, table } = STREAMS[stream];
      const [method, path] = endpoint.split(' ') as [string, string];
      expect(routeClassFor(method, path.replaceAll(/:[^/]+/g, '12')), endpoint).toBe(routeClass);
      expect(TABLE_NAMES, stream).toContain(table);
    }
  });

  it('has a page fetcher for every paged stream and every export pass', () => {
    const paged = [
      ...streamsOfKind(STREAMS, 'reference'),
      'tickets',
      'ticket_messages',
      ...ExportPass.options,
    ];
    expect(Object.keys(PAGE_FETCHERS).sort()).toEqual(paged.sort());
  });

  it("serves each stream's page activity on its route class's task queue", () => {
    const activities = Object.fromEntries(
      [
        'syncReferencePages',
        'syncTicketsPages',
        'syncThreadPage',
        'syncThreadBatch',
        'syncExportPages',
        'syncReportSnapshot',
        'reconcile',
        'readReportAccess',
        'auditTicket',
        'auditThread',
        'auditWindow',
      ].map((name) => [name, () => name]),
    ) as unknown as Activities;
    const names = Object.fromEntries(
      Object.entries(activitiesByRouteClass(activities)).map(([routeClass, served]) => [
        routeClass,
        Object.keys(served).sort(),
      ]),
    );
    expect(names).toEqual({
      list: ['syncReferencePages', 'syncTicketsPages'],
      directory: ['syncReferencePages'],
      // The audit's units: a ticket's detail and a thread's page are detail requests, a window analytics.
      detail: ['auditThread', 'auditTicket', 'readReportAccess', 'syncThreadBatch', 'syncThreadPage'],
      analytics: ['auditWindow', 'reconcile', 'syncExportPages', 'syncReportSnapshot'],
    });
  });

  it('needs the key scopes the README lists', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const sentence = /The key needs (.*?), and must be linked/s.exec(readme)?.[1] ?? '';
    const listed = [...sentence.matchAll(/`([a-z_]+:read)`/g)].map((m) => m[1]).sort();
    expect(listed).toEqual(scopesOf(STREAMS, ALL_STREAMS));
  });

  it('refuses a definition whose passes and pass definitions differ, or whose stamp is no field', () => {
    const { passDefinitions, ...facts } = STREAMS.csat_surveys;
    const onePass = {
      ...facts,
      passDefinitions: { 'csat_surveys.sent': passDefinitions['csat_surveys.sent'] },
    };
    expect(() => registryOf([onePass])).toThrow(
      'stream "csat_surveys": passes csat_surveys.sent, csat_surveys.submitted but pass definitions for csat_surveys.sent',
    );
    expect(() =>
      registryOf([{ ...STREAMS.agent_sessions, freshness: 'logged_in_at' as 'session_start' }]),
    ).toThrow('stream "agent_sessions": its freshness stamp logged_in_at is no field of its items');
    expect(() => registryOf([STREAMS.tags, STREAMS.tags])).toThrow(
      'stream "tags": another stream has that name',
    );
  });

  it('refuses stream facts its items cannot carry: a follower without ticket_id, a deletion range or target that cannot be', () => {
    expect(() =>
      registryOf([{ ...STREAMS.agent_sessions, followsTicketDeletion: { revive: true } }]),
    ).toThrow('stream "agent_sessions": it follows ticket deletion but its items have no ticket_id');
    const { passDefinitions } = STREAMS.agent_sessions;
    const byLogin = {
      ...passDefinitions.agent_sessions,
      forecast: { dateColumn: 'logged_in_at', basis: 'days' as const },
      fullRefreshMarksUnseen: true,
    };
    expect(() =>
      registryOf([{ ...STREAMS.agent_sessions, passDefinitions: { agent_sessions: byLogin } }]),
    ).toThrow(
      'stream "agent_sessions": pass agent_sessions marks unseen rows by logged_in_at, no field of its items',
    );
    expect(() =>
      registryOf([{ ...STREAMS.tickets, freshnessTarget: { warnHours: 12, errorHours: 2 } }]),
    ).toThrow('stream "tickets": its freshness target warns after 12 h and errs after 2 h');
  });

  it('reads the facts of a stream from its definition, never from its name', () => {
    // The generic code reads these: the cascade after the listing, the export lane's full-refresh deletion,
    // preflight's scopes, dbt's freshness. Each follows from the definitions, so a toy stream gets them too.
    expect(TICKET_FOLLOWERS).toEqual(
      ALL_STREAMS.filter((s) => (STREAMS[s] as { followsTicketDeletion?: object }).followsTicketDeletion),
    );
    expect(TICKET_FOLLOWERS).toEqual(['ticket_messages', 'csat_surveys']);
    expect(FULL_REFRESH_MARKS_UNSEEN).toEqual({
      'csat_surveys.sent': { table: 'csat_surveys', column: 'sent_at' },
    });
    expect(THREADS_STREAM).toBe(THREAD_QUEUE_STREAM);
  });

  it('compares every stream table with the source in the exactness tests', () => {
    expect([...COMPARED_TABLES].sort()).toEqual([...STREAM_TABLE_NAMES].sort());
  });
});
