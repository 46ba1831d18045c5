import { createHash } from 'node:crypto';

/**
 * Variant worlds (companion option `variant`, CLI `--variant N`; companion/README.md "Variant worlds").
 *
 * One job: at presentation time, give every shape the spec leaves open ("not shown", "for example",
 * "possibly others", "can contain more") ANOTHER reading the spec allows, on a deterministic share of items.
 * Pure functions over presented JSON objects: each decision is a function of (variant, resource kind, item id)
 * only, through sha256(`${variant}:${kind}:${id}`), so one item looks the same in a list and in its detail, on
 * every request and across restarts. Variant 0 returns its input unchanged (the same object): the default
 * world stays byte for byte what it is.
 *
 * Never touched: ids of tickets, messages, surveys, sessions and views, ticket numbers, timestamps, the closed
 * sets (ticket status, priority, channel, metric format/aggregation/attribution, CSAT attribution source), the
 * envelope's own fields and pagination, which items exist and their order, report results. Team and agent ids
 * keep their form too: tickets, exports and reports refer to them.
 */

/** A presented item after the rewrite; in the default world exactly the schemas/api shape. */
export type Presented = Record<string, unknown>;

export type VariantKind =
  | 'ticket'
  | 'contact'
  | 'company'
  | 'ticket_fields'
  | 'option'
  | 'message'
  | 'attachment'
  | 'view'
  | 'tag'
  | 'team'
  | 'agent'
  | 'metric'
  | 'csat'
  | 'session';

/** Share of items of each open point that take another reading. */
export const VARIANT_SHARES = {
  contact: 0.12,
  ticketExtras: 0.2,
  ticketOmission: 0.15,
  ticketFields: 0.3,
  messageRole: 0.2,
  messageDirection: 0.05,
  messageStatus: 0.3,
  messageExtras: 0.15,
  attachment: 0.6,
  viewFilters: 0.6,
  viewExtras: 0.5,
  tag: 0.35,
  team: 0.5,
  agent: 0.4,
  metricDataType: 0.35,
  metricGroup: 0.2,
  metricExtras: 0.3,
  csat: 0.25,
  session: 0.25,
} as const;

/** Default page size of every v1 list (tickets, messages, views, tags/teams/agents, exports). */
const DEFAULT_PAGE_LIMIT = 50;

/** Eight 32-bit words of sha256(`${variant}:${kind}:${id}`); word 0 usually decides whether, word 1 how. */
interface Draw {
  frac(word: number): number;
  int(word: number, n: number): number;
  hex(chars: number): string;
}

export function draw(variant: number, kind: VariantKind, id: string): Draw {
  const d = createHash('sha256').update(`${variant}:${kind}:${id}`).digest();
  const word = (i: number) => d.readUInt32BE((i % 8) * 4);
  return {
    frac: (i) => word(i) / 2 ** 32,
    int: (i, n) => word(i) % n,
    hex: (chars) => d.toString('hex').slice(0, chars),
  };
}

/**
 * The draw of an item that takes another reading, or null when it keeps the default one: always in the default
 * world, otherwise when word 0 falls outside the share for its kind.
 */
function rereading(variant: number, kind: VariantKind, id: unknown, share: number): Draw | null {
  if (!variant) return null;
  const d = draw(variant, kind, String(id));
  return d.frac(0) < share ? d : null;
}

const isObject = (v: unknown): v is Presented => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
function pick<T>(d: Draw, word: number, items: readonly T[]): T {
  return items[d.int(word, items.length)] as T;
}
/** An 8-digit number id (collisions among a workspace's items are vanishingly unlikely). */
const numericId = (d: Draw, word: number) => 10_000_000 + d.int(word, 90_000_000);
/** The object with `key` replaced in place (key order kept) or, when absent, appended. */
const withKey = (o: Presented, key: string, value: unknown): Presented => ({ ...o, [key]: value });
function without(o: Presented, ...keys: string[]): Presented {
  const out: Presented = {};
  for (const [k, v] of Object.entries(o)) if (!keys.includes(k)) out[k] = v;
  return out;
}

// ------------------------------------------------------------------ tickets (spec 2.2)

/** Our "not shown" ticket extras a variant ticket may lack (never a field of the spec 2.2 table). */
export const OMITTABLE_TICKET_FIELDS = ['language', 'is_spam', 'team_id', 'resolved_at'] as const;

export function varyTicket(variant: number, t: Presented): Presented {
  if (!variant) return t;
  const id = String(t['id']);
  const d = draw(variant, 'ticket', id);
  const omit = d.frac(1) < VARIANT_SHARES.ticketOmission ? pick(d, 3, OMITTABLE_TICKET_FIELDS) : undefined;
  const out: Presented = {};
  for (const [k, v] of Object.entries(t)) {
    if (k === omit) continue;
    if (k === 'contact') out[k] = varyContact(variant, v);
    else if (k === 'ticket_fields') out[k] = varyTicketFields(variant, id, v);
    else out[k] = v;
  }
  if (d.frac(0) < VARIANT_SHARES.ticketExtras) {
    // 1..7: which of the three unknown fields appear.
    const mask = 1 + d.int(2, 7);
    if (mask & 1) {
      const created = Date.parse(String(t['created_at']));
      out['sla_breached_at'] =
        d.frac(4) < 0.5 || Number.isNaN(created)
          ? null
          : new Date(created + (1 + d.int(5, 72)) * 3_600_000).toISOString();
    }
    if (mask & 2) {
      out['custom'] = {
        region: pick(d, 6, ['EU', 'US', 'APAC']),
        vip: d.frac(7) < 0.2,
        loyalty_points: d.int(7, 5000),
      };
    }
    if (mask & 4) {
      out['source'] = { via: pick(d, 4, ['api', 'web_form', 'mail_gateway', 'import']), ref: null };
    }
  }
  return out;
}

/** The contact (spec 2.2 "contact object shape: not shown"), decided per contact id; null stays null. */
export function varyContact(variant: number, c: unknown): unknown {
  if (!isObject(c)) return c;
  const d = rereading(variant, 'contact', c['id'], VARIANT_SHARES.contact);
  if (!d) return c;
  const email = str(c['email']);
  const name = { first: str(c['first_name']), last: str(c['last_name']) };
  const phone = str(c['phone']);
  switch (d.int(1, 4)) {
    case 0:
      return withKey(c, 'id', numericId(d, 2));
    case 1:
      return withKey(c, 'id', `ct_${d.hex(16)}`);
    case 2:
      // Nested name, email and phone lists; first_name/last_name/email/phone absent.
      return {
        id: c['id'],
        name,
        emails: email === null ? [] : [email],
        ...(phone === null ? {} : { phones: [{ type: 'mobile', number: phone }] }),
      };
    default:
      // A numeric id, a nested name and the contact's company; first_name/last_name/phone absent.
      return { id: numericId(d, 2), email, name, company: company(variant, email) };
  }
}

function company(variant: number, email: string | null): Presented | null {
  const domain = email?.split('@')[1];
  if (!domain) return null;
  const label = domain.split('.')[0] ?? domain;
  return {
    id: `co_${draw(variant, 'company', domain).hex(10)}`,
    name: label.charAt(0).toUpperCase() + label.slice(1),
  };
}

/** Custom-field values (spec 2.2 "custom-field value shape: not shown"), decided per ticket id. */
export function varyTicketFields(variant: number, ticketId: string, fields: unknown): unknown {
  if (!Array.isArray(fields)) return fields;
  const d = rereading(variant, 'ticket_fields', ticketId, VARIANT_SHARES.ticketFields);
  if (!d) return fields;
  const withExtraKeys = fields.length > 0 ? d.int(3, fields.length) : -1;
  const out: unknown[] = fields.map((f, i) => {
    if (!isObject(f)) return f;
    const value = reshapeFieldValue(variant, f);
    const entry = value === f['value'] ? f : withKey(f, 'value', value);
    return i === withExtraKeys ? { ...entry, required: false, position: i + 1, description: null } : entry;
  });
  out.push(extraField(d));
  return out;
}

/** Dropdowns as `{id, label}`, multi-selects as arrays of those, numbers as decimal strings. */
function reshapeFieldValue(variant: number, f: Presented): unknown {
  const v = f['value'];
  const option = (label: string) => ({
    id: `opt_${draw(variant, 'option', `${String(f['field_id'])}:${label}`).hex(10)}`,
    label,
  });
  if (f['type'] === 'dropdown' && typeof v === 'string') return option(v);
  if (f['type'] === 'multi_select' && Array.isArray(v))
    return v.map((x) => (typeof x === 'string' ? option(x) : x));
  if (f['type'] === 'number' && typeof v === 'number') return v.toFixed(2);
  return v;
}

/** A field of a type outside ours: a currency amount (or null), a lookup object, or a list of lookups. */
function extraField(d: Draw): Presented {
  switch (d.int(2, 3)) {
    case 0:
      return {
        field_id: 'fld_order_total',
        name: 'Order total',
        type: 'currency',
        value: d.frac(4) < 0.3 ? null : { amount: d.int(5, 50_000) / 100, currency: 'EUR' },
      };
    case 1:
      return {
        field_id: 'fld_linked_order',
        name: 'Linked order',
        type: 'lookup',
        value: { id: `ord_${d.hex(12)}`, name: `Order #${1000 + d.int(5, 9000)}` },
      };
    default:
      return {
        field_id: 'fld_related_products',
        name: 'Related products',
        type: 'multi_lookup',
        value: [
          { id: `prd_${d.int(5, 9000) + 1000}`, name: 'Shoes', kind: 'product' },
          { id: `prd_${d.int(6, 9000) + 1000}`, name: 'Bags', kind: 'product' },
        ],
      };
  }
}

// ------------------------------------------------------------------ messages (spec 2.3, 3)

const ROLE_ALTERNATIVES: Record<string, readonly string[]> = {
  customer: ['end_user', 'requester'],
  agent: ['system_user', 'staff'],
  ai: ['bot', 'ai_agent'],
};
const DIRECTION_ALTERNATIVES: Record<string, string> = {
  inbound: 'inbound_forward',
  outbound: 'internal_forward',
};
/** Later delivery states ("the list can contain more"); a queued or sent message keeps its progression. */
const STATUS_ALTERNATIVES: Record<string, string> = { delivered: 'read', failed: 'bounced' };

export function varyMessage(variant: number, m: Presented): Presented {
  if (!variant) return m;
  const d = draw(variant, 'message', String(m['id']));
  const out: Presented = {};
  for (const [k, v] of Object.entries(m)) {
    if (k === 'role' && typeof v === 'string' && d.frac(0) < VARIANT_SHARES.messageRole) {
      const alts = ROLE_ALTERNATIVES[v];
      out[k] = alts ? pick(d, 4, alts) : v;
    } else if (k === 'direction' && typeof v === 'string' && d.frac(1) < VARIANT_SHARES.messageDirection) {
      out[k] = DIRECTION_ALTERNATIVES[v] ?? v;
    } else if (k === 'status' && typeof v === 'string' && d.frac(2) < VARIANT_SHARES.messageStatus) {
      out[k] = STATUS_ALTERNATIVES[v] ?? v;
    } else if (k === 'attachments' && Array.isArray(v)) {
      out[k] = v.map((a) => varyAttachment(variant, a));
    } else out[k] = v;
  }
  if (d.frac(3) < VARIANT_SHARES.messageExtras) {
    const mask = 1 + d.int(5, 7);
    if (mask & 1) out['external_id'] = `<${d.hex(20)}@mail.example>`;
    if (mask & 2) out['is_automated'] = m['role'] === 'ai';
    if (mask & 4) out['metadata'] = {};
  }
  return out;
}

/** An attachment item (spec 2.3 "shape of items in attachments: not shown"), decided per attachment id. */
export function varyAttachment(variant: number, a: unknown): unknown {
  if (!isObject(a)) return a;
  const d = rereading(variant, 'attachment', a['id'], VARIANT_SHARES.attachment);
  if (!d) return a;
  const [name, type, size, url] = [a['file_name'], a['mime_type'], a['size'], a['public_url']];
  switch (d.int(1, 3)) {
    case 0:
      return { id: `att_${d.hex(12)}`, name, content_type: type, size_bytes: size, url };
    case 1:
      return { id: numericId(d, 2), file: { name, content_type: type, size, url } };
    default:
      return {
        id: a['id'],
        file: { file_name: name, mime_type: type, bytes: size },
        links: { download: url },
      };
  }
}

// ------------------------------------------------------------------ views (spec 2.4)

const OP: Record<string, string> = { is: 'eq', is_not: 'neq', is_one_of: 'in' };

export function varyView(variant: number, view: Presented): Presented {
  if (!variant) return view;
  const d = draw(variant, 'view', String(view['id']));
  let out = view;
  const filters = view['filters'];
  if (Array.isArray(filters) && d.frac(0) < VARIANT_SHARES.viewFilters) {
    out = withKey(out, 'filters', reshapeFilters(filters, d.int(1, 3)));
  }
  if (d.frac(2) < VARIANT_SHARES.viewExtras) {
    out = {
      ...out,
      position: 1 + d.int(3, 20),
      created_by: null,
      sort: { field: 'created_at', direction: 'desc' },
    };
  }
  return out;
}

function reshapeFilters(filters: unknown[], mode: number): unknown[] {
  const parts = (f: unknown) =>
    isObject(f) && typeof f['condition'] === 'string' && Array.isArray(f['options'])
      ? { field: f['condition'], operator: String(f['operator']), options: f['options'] as unknown[] }
      : null;
  const fov = (f: unknown) => {
    const p = parts(f);
    if (!p) return f;
    return {
      field: p.field,
      op: OP[p.operator] ?? p.operator,
      value: p.options.length === 1 ? p.options[0] : p.options,
    };
  };
  if (mode === 0) return filters.map(fov); // {field, op, value}
  if (mode === 1) {
    // {condition: {...}, options: {...}}
    return filters.map((f) => {
      const p = parts(f);
      return p ? { condition: { type: p.field }, options: { operator: p.operator, values: p.options } } : f;
    });
  }
  // One nested group: {all: [...]}, with `is_one_of` as {any: [{field, op: 'eq', value}, …]}.
  return [
    {
      all: filters.map((f) => {
        const p = parts(f);
        return p && p.operator === 'is_one_of'
          ? { any: p.options.map((o) => ({ field: p.field, op: 'eq', value: o })) }
          : fov(f);
      }),
    },
  ];
}

// ------------------------------------------------------------------ tags, teams, agents (spec 2.6, 4.8)

/** A list of ids read as a list of `{id}` objects (team members, an agent's teams). */
function idObjects(o: Presented, key: string): Presented {
  const ids = o[key];
  if (!Array.isArray(ids)) return o;
  const objects = ids.map((id) => ({ id }));
  return withKey(o, key, objects);
}

/** Tags are referenced on tickets by name, so a tag's id may take another form (ids of teams/agents may not). */
export function varyTag(variant: number, t: Presented): Presented {
  const d = rereading(variant, 'tag', t['id'], VARIANT_SHARES.tag);
  if (!d) return t;
  switch (d.int(1, 3)) {
    case 0:
      return without(t, 'created_at');
    case 1:
      return without(withKey(t, 'id', 100_000 + d.int(2, 900_000)), 'created_at');
    default:
      return { ...t, color: `#${d.hex(6)}`, description: null };
  }
}

export function varyTeam(variant: number, t: Presented): Presented {
  const d = rereading(variant, 'team', t['id'], VARIANT_SHARES.team);
  if (!d) return t;
  switch (d.int(1, 3)) {
    case 0:
      return idObjects(t, 'agent_ids');
    case 1:
      return without(t, 'created_at');
    default:
      return { ...t, description: null, timezone: pick(d, 2, ['Europe/Berlin', 'America/New_York', 'UTC']) };
  }
}

export function varyAgent(variant: number, a: Presented): Presented {
  const d = rereading(variant, 'agent', a['id'], VARIANT_SHARES.agent);
  if (!d) return a;
  switch (d.int(1, 6)) {
    case 0:
      return without(a, 'kind');
    case 1:
      return without(a, 'team_ids');
    case 2:
      return idObjects(a, 'team_ids');
    case 3:
      return withKey(a, 'kind', a['kind'] === 'ai' ? 'bot' : 'user');
    case 4:
      return typeof a['active'] === 'boolean' ? withKey(a, 'active', a['active'] ? 'yes' : 'no') : a;
    default:
      return { ...a, role: pick(d, 2, ['agent', 'admin', 'light_agent']), timezone: 'Europe/Berlin' };
  }
}

// ------------------------------------------------------------------ metric catalog (spec 2.9)

const DATA_TYPE_ALTERNATIVES: Record<string, string> = {
  count: 'long',
  'duration-seconds': 'duration',
  percent: 'percentage',
  decimal: 'float',
  'currency-eur': 'currency',
};
const UNITS: Record<string, string | null> = {
  count: null,
  'duration-seconds': 'seconds',
  percent: '%',
  decimal: null,
  'currency-eur': 'EUR',
};

/** Other `group`/`dataType` values and unknown fields; id, format, aggregation, attribution stay. */
export function varyMetric(variant: number, e: Presented): Presented {
  if (!variant) return e;
  const d = draw(variant, 'metric', String(e['id']));
  const format = String(e['format']);
  let out = e;
  if (d.frac(0) < VARIANT_SHARES.metricDataType && DATA_TYPE_ALTERNATIVES[format]) {
    out = withKey(out, 'dataType', DATA_TYPE_ALTERNATIVES[format]);
  }
  const group = out['group'];
  if (d.frac(1) < VARIANT_SHARES.metricGroup && typeof group === 'string' && group.length > 0) {
    out = withKey(out, 'group', group.charAt(0).toUpperCase() + group.slice(1).replaceAll('_', ' '));
  }
  if (d.frac(2) < VARIANT_SHARES.metricExtras) {
    out = { ...out, unit: UNITS[format] ?? null, deprecated: false, since_version: 'v1' };
  }
  return out;
}

// ------------------------------------------------------------------ exports (spec 2.7, 2.8)

/**
 * Harmless unknown fields on a CSAT item. Never a channel, survey link or token, contact detail or ticket
 * body (spec 2.7 rule 8).
 */
export function varySurvey(variant: number, r: Presented): Presented {
  const d = rereading(variant, 'csat', r['id'], VARIANT_SHARES.csat);
  if (!d) return r;
  const mask = 1 + d.int(1, 7);
  return {
    ...r,
    ...(mask & 1 ? { locale: pick(d, 2, ['en', 'de', 'fr', 'es']) } : {}),
    ...(mask & 2 ? { tags: d.frac(3) < 0.5 ? [] : ['post-resolution'] } : {}),
    ...(mask & 4 ? { scale: { min: 1, max: 5 } } : {}),
  };
}

/** Harmless unknown fields on a session item. Never IP, browser or user agent (spec 2.8 rule 2). */
export function varySession(variant: number, r: Presented): Presented {
  const d = rereading(variant, 'session', r['id'], VARIANT_SHARES.session);
  if (!d) return r;
  const mask = 1 + d.int(1, 3);
  return {
    ...r,
    ...(mask & 1 ? { timezone: pick(d, 2, ['Europe/Berlin', 'Europe/Lisbon', 'UTC']) } : {}),
    ...(mask & 2 ? { session_type: 'login' } : {}),
  };
}

// ------------------------------------------------------------------ envelope (spec 2.1)

export interface EnvelopeRequest {
  requestId: string;
  /** Request path including `/public/v1`. */
  path: string;
  query: Readonly<Record<string, string>>;
}

/**
 * Unknown envelope fields on a success body: a top-level `request_id`; on cursor lists also `links` and a
 * `limit` inside `pagination`; on the exports an `api_version` inside `meta`. `success`, `data`, `has_more` and
 * `next_cursor` stay as they are. Errors are left alone.
 */
export function varyEnvelope(variant: number, body: unknown, req: EnvelopeRequest): unknown {
  if (!variant || !isObject(body) || body['success'] !== true) return body;
  const out: Presented = { ...body };
  const pagination = body['pagination'];
  if (isObject(pagination)) {
    const limit = req.query['limit'] === undefined ? DEFAULT_PAGE_LIMIT : Number(req.query['limit']);
    out['pagination'] = { ...pagination, limit };
    const next = pagination['next_cursor'];
    const link = (q: Record<string, string>) => {
      const qs = new URLSearchParams(q).toString();
      return qs === '' ? req.path : `${req.path}?${qs}`;
    };
    out['links'] = {
      self: link({ ...req.query }),
      next: typeof next === 'string' ? link({ ...req.query, cursor: next }) : null,
    };
  }
  const meta = body['meta'];
  if (isObject(meta)) out['meta'] = { ...meta, api_version: 'v1' };
  out['request_id'] = req.requestId;
  return out;
}
