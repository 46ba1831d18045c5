import type { ServerResponse } from 'node:http';
import { drip, type HostileProxy } from './hostile-proxy.js';

/** An unknown field whose name clears the screen and retitles the terminal when printed raw. */
export const EVIL_FIELD = 'evil\u001b[2J\u001b]0;PWNED\u0007';
/** The colour the source's error message sets. */
const RED = '\u001b[31m';
/** The escape sequences the source sends, as a terminal would read them if printed raw. */
export const SOURCE_ESCAPES = ['\u001b[2J', '\u001b]0;PWNED\u0007', RED] as const;

/** How hard the source hits: the item count of its oversized page and the nesting of its deep item. */
export interface HostileScale {
  /** Numbers on the oversized reference page (6,000,000: the 12 MB page of issue 46). */
  readonly oversizedItems: number;
  /** Arrays nested in one ticket's unknown field (past the ~5,000 where recursion overflows). */
  readonly depth: number;
}

/** The misbehaviours, by the name their count goes under in {@link HostileRecord.fired}. */
export const MISBEHAVIOURS = [
  'threadStall',
  'redirect',
  'oversizedPage',
  'endlessPage',
  'deepItem',
  'agentsRewritten',
  'nulCursor',
  'keyInError',
] as const;
export type Misbehaviour = (typeof MISBEHAVIOURS)[number];

/** What the source did, for the checks: which items it poisoned and how often each misbehaviour fired. */
export interface HostileRecord {
  /**
   * The tickets served nested `depth` deep (set aside, never stored as served): one in an unknown field
   * (the depth guard's case), one in `tags`, which breaks the schema (a rejected item, serialised for
   * `_rejected`). Id → number.
   */
  readonly deepTickets: Map<string, number>;
  /** The agent whose name echoes the API key. */
  keyEchoAgentId: string | null;
  /** The agent served with `__proto__` as one of its keys. */
  protoAgentId: string | null;
  /** The CSAT request (query without cursor) answered with a NUL cursor, every time it is asked. */
  nulCursorQuery: string | null;
  readonly fired: Record<Misbehaviour, number>;
}

const DEEP_MARK = '__deep_item__';
const YEAR_S = 365 * 24 * 60 * 60;

const json = (res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}) =>
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(body);

/** The preflight reads a page of one of every list and export; the run reads full pages. */
const isProbe = (query: URLSearchParams) => query.get('limit') === '1';

/**
 * Turns `proxy` into a source that does every misbehaviour of issue 46 at once, each on its own route so
 * that everything else it serves is correct:
 * - the first thread read (the preflight's) stalls: headers, then a byte every 2 s;
 * - the first `/views` request (the preflight's) is a 302 whose rate-limit headers name a reset a year away;
 * - every full `/tags` page holds `oversizedItems` numbers (more items than any `limit`);
 * - every full `/teams` page says `has_more: true` with no items and a fresh cursor, for ever;
 * - two tickets carry `depth` nested arrays, on every page that holds them: one in an unknown field, one
 *   in `tags` (breaking the schema);
 * - every agent has the unknown field {@link EVIL_FIELD}; one agent's name echoes the key; one has
 *   `__proto__` as an item key;
 * - the first full CSAT window's first page has a next cursor holding NUL, every time it is read;
 * - the first full agent-sessions request is a 503 whose message holds the key and terminal escapes.
 * `without`: misbehaviours left out (to see what the others do on their own).
 */
export function installAllAtOnce(
  proxy: HostileProxy,
  key: string,
  scale: HostileScale,
  without: ReadonlySet<Misbehaviour> = new Set(),
): HostileRecord {
  const record: HostileRecord = {
    deepTickets: new Map(),
    keyEchoAgentId: null,
    protoAgentId: null,
    nulCursorQuery: null,
    fired: Object.fromEntries(MISBEHAVIOURS.map((m) => [m, 0])) as Record<Misbehaviour, number>,
  };
  /** Whether `what` is on; if so, counted as done once more. */
  const fire = (what: Misbehaviour) => {
    if (without.has(what)) return false;
    record.fired[what] += 1;
    return true;
  };
  // Built once: the page is answered as often as it is asked for.
  const oversized = Buffer.from(
    `{"success":true,"data":[${'1,'.repeat(scale.oversizedItems - 1)}1],"pagination":{"has_more":false,"next_cursor":null}}`,
  );
  const deepText = `${'['.repeat(scale.depth)}"bottom"${']'.repeat(scale.depth)}`;
  let endless = 0;

  proxy.misbehave = ({ path, query }, res) => {
    if (/^\/tickets\/\d+\/messages$/.test(path)) {
      if (record.fired.threadStall || !fire('threadStall')) return false;
      drip(res, 2000);
      return true;
    }
    if (path === '/views' && !record.fired.redirect && fire('redirect')) {
      res
        .writeHead(302, {
          location: `https://elsewhere.example/login?key=${key}`,
          'x-ratelimit-limit': '60',
          'x-ratelimit-remaining': '0',
          'x-ratelimit-reset': String(Math.floor(Date.now() / 1000) + YEAR_S),
        })
        .end();
      return true;
    }
    if (isProbe(query)) return false;
    if (path === '/tags' && fire('oversizedPage')) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(oversized);
      return true;
    }
    if (path === '/teams' && fire('endlessPage')) {
      endless += 1;
      json(
        res,
        200,
        JSON.stringify({
          success: true,
          data: [],
          pagination: {
            has_more: true,
            next_cursor: `more-${endless}-${Math.random().toString(36).slice(2)}`,
          },
        }),
      );
      return true;
    }
    if (path === '/agent-sessions' && !record.fired.keyInError && fire('keyInError')) {
      json(
        res,
        503,
        JSON.stringify({
          success: false,
          code: 'SERVICE_UNAVAILABLE',
          message: `${RED}upstream refused key ${key}\u0007\u001b[0m`,
          request_id: `r_${key}`,
        }),
      );
      return true;
    }
    return false;
  };

  proxy.rewrite = ({ path, query }, body) => {
    if (isProbe(query)) return null;
    const page = body as { data?: Record<string, unknown>[] };
    if (!Array.isArray(page.data)) return null;
    if (path === '/tickets' && page.data.length > 2) {
      if (record.deepTickets.size === 0)
        for (const t of page.data.slice(1, 3))
          record.deepTickets.set(String(t['id']), Number(t['ticket_number']));
      const [inUnknown, inTags] = [...record.deepTickets.keys()];
      const poisoned = page.data.filter((t) => record.deepTickets.has(String(t['id'])));
      if (poisoned.length === 0 || !fire('deepItem')) return null;
      for (const t of poisoned) {
        if (t['id'] === inUnknown) t['x_unknown_nested'] = DEEP_MARK;
        if (t['id'] === inTags) t['tags'] = DEEP_MARK;
      }
      // Spliced in as text: a recursive JSON.stringify of the proxy's own would be the first to overflow.
      return JSON.stringify(page).replaceAll(`"${DEEP_MARK}"`, deepText);
    }
    if (path === '/csat-surveys' && !query.has('cursor')) {
      const window = query.toString();
      record.nulCursorQuery ??= window;
      if (window !== record.nulCursorQuery || !fire('nulCursor')) return null;
      const pagination = { has_more: true, next_cursor: 'c\u0000ursor' };
      return JSON.stringify({ ...page, pagination });
    }
    if (path === '/agents' && page.data.length > 1 && fire('agentsRewritten')) {
      const [echo, proto] = page.data as [Record<string, unknown>, Record<string, unknown>];
      record.keyEchoAgentId ??= String(echo['id']);
      record.protoAgentId ??= String(proto['id']);
      for (const agent of page.data) {
        agent[EVIL_FIELD] = 'drift';
        if (String(agent['id']) === record.keyEchoAgentId) agent['name'] = `${agent['name']} <${key}>`;
        if (String(agent['id']) === record.protoAgentId)
          // An own member named __proto__, as JSON.parse makes it (an assignment would set the prototype).
          Object.defineProperty(agent, '__proto__', { value: { polluted: true }, enumerable: true });
      }
      return JSON.stringify(page);
    }
    return null;
  };
  return record;
}
