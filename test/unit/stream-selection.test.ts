import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reportAccessOf } from '../../activities/report-access.js';
import { parseStreams } from '../../cli/arguments.js';
import { missingFor, remedy } from '../../cli/preflight/explain.js';
import type { CompanionHandle } from '../../companion/index.js';
import { KeyIdentity } from '../../schemas/api/identity.js';
import { ALL_STREAMS } from '../../schemas/streams.js';
import { ConfigError, loadConfig } from '../../worker/config.js';
import { api, start } from '../companion/helpers.js';

const BASE = {
  SUPPORT_API_URL: 'http://127.0.0.1:1',
  SUPPORT_API_KEY: 'sk_test_0123456789',
  DESTINATION_URL: 'postgres://u:p@127.0.0.1:5432/db',
};

const problemsOf = (env: Record<string, string>): string[] => {
  try {
    loadConfig(env);
    return [];
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
};

describe('SYNC_STREAMS', () => {
  it('defaults to every stream of the registry', () => {
    expect(loadConfig(BASE).SYNC_STREAMS).toEqual([...ALL_STREAMS]);
  });

  it("reads a comma-separated list into the registry's order, each stream once", () => {
    expect(loadConfig({ ...BASE, SYNC_STREAMS: ' tickets , views,tickets' }).SYNC_STREAMS).toEqual([
      'views',
      'tickets',
    ]);
  });

  it('refuses an unknown name, naming it and the valid ones, as --streams does', () => {
    const [problem, ...rest] = problemsOf({ ...BASE, SYNC_STREAMS: 'tickets,ticket' });
    expect(rest).toEqual([]);
    expect(problem).toBe(`SYNC_STREAMS: unknown stream "ticket" (streams: ${ALL_STREAMS.join(', ')})`);
    expect(() => parseStreams('tickets,ticket')).toThrow(`unknown stream "ticket" (streams: `);
    expect(problemsOf({ ...BASE, SYNC_STREAMS: ' , ' })).toEqual([
      `SYNC_STREAMS: names no stream (streams: ${ALL_STREAMS.join(', ')})`,
    ]);
  });
});

describe('what preflight says a refused stream lacks', () => {
  const limited = KeyIdentity.parse({
    scopes: ['tickets:read', 'analytics:read'],
    agent: { id: 'agt_1', name: 'Lee', dashboard_permissions: ['dashboard.org_metrics'] },
  });

  it('names exactly the missing scope or dashboard permission when the source says who the key is', () => {
    expect(missingFor('tags', limited, true)).toEqual(['the key lacks tags:read']);
    expect(missingFor('agent_sessions', limited, true)).toEqual([
      "the key's agent lacks dashboard.other_agents_metrics",
    ]);
    const noAgent = KeyIdentity.parse({ scopes: ['tickets:read'], agent: null });
    expect(missingFor('csat_surveys', noAgent, false)).toEqual([
      'the key lacks analytics:read',
      'the key is not linked to a support agent (spec 5.8)',
    ]);
    const analyticsOnly = KeyIdentity.parse({
      scopes: ['analytics:read'],
      agent: { id: 'a', dashboard_permissions: ['dashboard.org_metrics', 'dashboard.ticket_csat'] },
    });
    expect(missingFor('csat_surveys', analyticsOnly, true)).toEqual([
      'the key lacks tickets:read (for CSAT comments: SYNC_CSAT_COMMENTS=false reads the surveys without them)',
    ]);
  });

  it('names every requirement when the source does not say (no GET /me, or another shape)', () => {
    expect(missingFor('csat_surveys', undefined, false)).toEqual([
      'the key needs analytics:read and a linked agent with dashboard.org_metrics and dashboard.ticket_csat; one of these is missing',
    ]);
    expect(missingFor('teams', KeyIdentity.parse({ scopes: 'all' }), false)).toEqual([
      'the key needs teams:read; one of these is missing',
    ]);
  });

  it('offers the SYNC_STREAMS of the selected streams the key can read', () => {
    expect(remedy(['agent_sessions'], ['tickets', 'agent_sessions', 'views'])).toBe(
      'grant it, or leave the stream out: SYNC_STREAMS=tickets,views',
    );
    expect(remedy(['tags'], ['tags'])).toMatch(/can read none of the selected streams/);
  });
});

describe('the report access the reconciliation knows (spec 4.12)', () => {
  const agent = (restrictions: unknown) =>
    KeyIdentity.parse({ agent: { id: 'agt_1', name: 'Lee', restrictions } });

  it('restricted only when the source names a restriction; whole only when it says there is none', () => {
    expect(reportAccessOf(agent({ channels: ['email', 'widget'], team_ids: null, agent_ids: null }))).toEqual(
      {
        restricted: true,
        detail: "the key's agent Lee sees only channels email, widget",
      },
    );
    expect(reportAccessOf(agent({ channels: null, team_ids: null, agent_ids: null })).restricted).toBe(false);
    // A partial answer that names a restriction is enough to know the reports are restricted.
    expect(reportAccessOf(agent({ team_ids: ['team_1'] })).restricted).toBe(true);
  });

  it('not known otherwise: no agent, no restrictions field, a shape it does not read', () => {
    for (const identity of [
      KeyIdentity.parse({}),
      KeyIdentity.parse({ agent: null }),
      agent(undefined),
      agent({ channels: 'email' }),
      agent({ channels: null }),
    ])
      expect(reportAccessOf(identity).restricted).toBeNull();
  });
});

describe('GET /me (companion; not in the spec)', () => {
  let h: CompanionHandle;
  beforeAll(async () => {
    h = await start({ seed: 5, tickets: 20 });
  });
  afterAll(async () => {
    await h?.stop();
  });

  it('answers every valid key with its scopes and linked agent, and what the agent may see', async () => {
    const limited = await api(h, 'GET', '/me', { key: h.keys.agent_limited });
    expect(limited.status).toBe(200);
    const me = KeyIdentity.parse(limited.body.data);
    expect(me.scopes).toEqual(['tickets:read', 'analytics:read']);
    expect(me.agent?.dashboard_permissions).toEqual(['dashboard.org_metrics', 'dashboard.team_metrics']);
    expect(me.agent?.restrictions?.channels).toEqual(['email', 'widget', 'whatsapp']);
    expect(me.agent?.restrictions?.team_ids).toHaveLength(1);
    expect(reportAccessOf(me).restricted).toBe(true);

    const admin = KeyIdentity.parse((await api(h, 'GET', '/me')).body.data);
    expect(reportAccessOf(admin).restricted).toBe(false);
    const readonly = KeyIdentity.parse((await api(h, 'GET', '/me', { key: h.keys.readonly })).body.data);
    expect(readonly).toMatchObject({ scopes: ['tickets:read'], agent: null });
    const legacy = KeyIdentity.parse((await api(h, 'GET', '/me', { key: h.keys.legacy })).body.data);
    expect(legacy.scopes).toBeNull();
    expect((await api(h, 'GET', '/me', { key: 'sk_wrong' })).status).toBe(401);
  });
});
