import {
  type Channel,
  CreateTicketBody,
  TICKET_PAGE_LIMIT,
  TicketListQuery,
  UpdateTicketBody,
} from '../../schemas/api/index.js';
import {
  keyedRoute,
  mustKey,
  parseBody,
  parseQuery,
  type RequestContext,
  type Route,
} from '../http/context.js';
import { ApiError, validation } from '../http/errors.js';
import { presentTicket } from '../present.js';
import { takeAttachments } from '../rules/attachments.js';
import { cmpKey, createdKey, keysetPage } from '../rules/paging.js';
import { readable, viewMatches, viewVisible } from '../rules/views.js';
import type { CompanionState } from '../state.js';
import type { ApiKeyRecord, NewMessageInput, Org, TicketRecord } from '../world/index.js';

export function ticketNumberParam(ctx: RequestContext): number {
  const raw = ctx.params['ticketNumber'] ?? '';
  if (!/^[1-9]\d{0,9}$/.test(raw)) throw validation('ticketNumber must be a positive integer');
  return Number(raw);
}

/** A ticket the key may read: same org, not deleted, replicated (spec 4.2: else 404 TICKET_NOT_FOUND). */
export function findTicket(s: CompanionState, ctx: RequestContext, forWrite = false): TicketRecord {
  const key = mustKey(ctx);
  const n = ticketNumberParam(ctx);
  const t = s.world.ticketByNumber(n, key.orgId);
  const realNow = s.world.settings.realNow();
  if (!t || t.deletedAt !== null || (!forWrite && t.visibleAt > realNow)) {
    throw new ApiError(404, 'TICKET_NOT_FOUND', `ticket ${n} not found`);
  }
  return t;
}

/** The plain text of an `html_body` (a message given only as HTML). */
export function stripHtml(html: string): string {
  return html.replace(/<[^>]*>/g, '').trim();
}

/** The key's organization (every key has one). */
export function orgOf(s: CompanionState, key: ApiKeyRecord): Org {
  const org = s.world.org(key.orgId);
  if (!org) throw new Error('key of unknown org');
  return org;
}

/**
 * A ticket or message goes out on a connected channel (spec 4.4, 4.6): 400 when the org has none of that type,
 * or none with the given `channel_identifier`.
 */
export function checkConnected(org: Org, channel: Channel, identifier: string | undefined): void {
  const connected = org.channels.filter((c) => c.type === channel);
  if (connected.length === 0) throw validation(`channel ${channel} is not connected`);
  if (identifier !== undefined && !connected.some((c) => c.identifier === identifier)) {
    throw validation(`no connected ${channel} channel with identifier ${identifier}`);
  }
}

/** The id of the org's agent with this `assignee_email`; 400 when there is none. */
function assigneeOf(s: CompanionState, key: ApiKeyRecord, email: string): string {
  const a = s.world.agentByEmail(key.orgId, email);
  if (!a) throw validation('assignee_email is not an agent of this organization');
  return a.id;
}

export function ticketRoutes(s: CompanionState): Route[] {
  const list = keyedRoute('GET', '/tickets', 'list', 'tickets:read', (ctx, key) => {
    const q = parseQuery(ctx, TicketListQuery);
    const limit = q.limit ?? TICKET_PAGE_LIMIT.default;
    let view = null;
    if (q.view_id !== undefined) {
      view = s.world.views.find((v) => v.id === q.view_id) ?? null;
      if (!view || !viewVisible(view, key)) throw new ApiError(404, 'VIEW_NOT_FOUND', 'view not found');
    }
    const page = keysetPage(s, 'tickets', key, { view_id: q.view_id, include: q.include }, limit, q.cursor);
    const { after } = page;
    const sorted = s.world.ticketsSorted(key.orgId);
    // Walk backwards (created_at desc, id desc) from just below the cursor position.
    let lo = 0;
    let hi = sorted.length;
    if (after) {
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        const t = sorted[mid] as TicketRecord;
        if (cmpKey(t.createdAt, t.id, after.at, after.id) < 0) lo = mid + 1;
        else hi = mid;
      }
    } else lo = sorted.length;
    const realNow = s.world.settings.realNow();
    const out: TicketRecord[] = []; // one more than the page tells that there is a next one
    for (let i = lo - 1; i >= 0 && out.length <= limit; i--) {
      const t = sorted[i] as TicketRecord;
      if (!readable(s.world, t, realNow)) continue;
      if (view && !viewMatches(view, t, s.world.ticketReplicaState(t, realNow))) continue;
      out.push(t);
    }
    return page.reply(out, (t) => presentTicket(s, t, q.include === 'ticket_fields'), createdKey);
  });

  const one = '/tickets/:ticketNumber';
  const detail = keyedRoute('GET', one, 'detail', 'tickets:read', (ctx) => {
    const t = findTicket(s, ctx);
    const q = parseQuery(ctx, TicketListQuery.pick({ include: true }));
    return {
      status: 200,
      body: { success: true, data: presentTicket(s, t, q.include === 'ticket_fields') },
    };
  });

  const create = keyedRoute('POST', '/tickets', 'write', 'tickets:write', (ctx, key) => {
    const body = parseBody(ctx, CreateTicketBody);
    const org = orgOf(s, key);
    checkConnected(org, body.channel, body.channel_identifier);
    if (body.language !== undefined && !org.languages.includes(body.language)) {
      throw validation(`language ${body.language} is not a supported inbox language`);
    }
    const type = body.ticket_type ?? (body.parent_ticket_id ? 'side' : 'regular');
    if (type === 'side' && body.parent_ticket_id === undefined)
      throw validation('a side ticket needs parent_ticket_id');
    if (type === 'regular' && body.parent_ticket_id !== undefined) {
      throw validation('parent_ticket_id links a side ticket; ticket_type must be side');
    }
    if (body.parent_ticket_id !== undefined) {
      const parent = s.world.ticketById(body.parent_ticket_id);
      if (!parent || parent.orgId !== key.orgId || parent.deletedAt !== null) {
        throw validation('parent_ticket_id is not a ticket of this organization');
      }
    }
    const assigneeId = body.assignee_email === undefined ? null : assigneeOf(s, key, body.assignee_email);
    const messages = body.messages ?? [];
    if (messages.filter((m) => m.prefilled_input).length > 1) {
      throw validation('at most one message per request may have prefilled_input');
    }
    const allAttachmentIds: string[] = [];
    messages.forEach((m, i) => {
      if (m.body === undefined && m.html_body === undefined)
        throw validation(`messages.${i}: body or html_body is required`);
      if (m.prefilled_input && (m.attachment_ids?.length ?? 0) > 0) {
        throw validation(`messages.${i}: attachments are not supported on prefilled_input`);
      }
      if (m.channel !== undefined && !org.channels.some((c) => c.type === m.channel)) {
        throw validation(`messages.${i}: channel ${m.channel} is not connected`);
      }
      if (
        !m.from_agent &&
        !m.prefilled_input &&
        m.from?.email === undefined &&
        body.contact?.email === undefined
      ) {
        throw validation(`messages.${i}: from.email is required unless contact.email is set`);
      }
      allAttachmentIds.push(...(m.attachment_ids ?? []));
    });
    const attachments = takeAttachments(s, key.orgId, allAttachmentIds, false);
    let contactId: string | null = null;
    const c = body.contact ?? messages.find((m) => m.from !== undefined && !m.from_agent)?.from;
    if (c) {
      contactId = s.world.createContact(key.orgId, {
        email: c.email ?? null,
        firstName: c.first_name ?? null,
        lastName: c.last_name ?? null,
        phone: c.phone ?? null,
      }).id;
    }
    const linked = key.agentId ? s.world.agent(key.agentId) : undefined;
    const newMessages: NewMessageInput[] = messages.map((m) => {
      const text = m.body ?? stripHtml(m.html_body ?? '');
      if (m.prefilled_input) return { role: 'ai', visibility: 'draft', text, authorName: 'AI suggestion' };
      return m.from_agent
        ? {
            role: 'agent',
            text,
            authorName: org.name,
            attachmentIds: m.attachment_ids ?? [],
            ...(m.channel ? { channel: m.channel } : {}),
            status: m.skip_email ? 'delivered' : 'queued',
          }
        : {
            role: 'customer',
            text,
            authorName:
              [m.from?.first_name, m.from?.last_name].filter(Boolean).join(' ') ||
              (m.from?.email ?? 'Customer'),
            attachmentIds: m.attachment_ids ?? [],
            ...(m.channel ? { channel: m.channel } : {}),
            status: 'delivered',
          };
    });
    if (newMessages.length === 0 && body.note !== undefined) {
      newMessages.push({
        role: 'agent',
        visibility: 'internal_note',
        text: body.note,
        status: 'delivered',
        authorName: linked?.name ?? org.name,
      });
    }
    const ticket = s.world.createTicket(
      {
        channel: body.channel,
        ...(body.channel_identifier !== undefined ? { channelIdentifier: body.channel_identifier } : {}),
        subject: body.subject ?? null,
        status: body.status ?? 'open',
        priority: body.priority ?? 'medium',
        tags: body.tags ?? [],
        assigneeId,
        language: body.language ?? null,
        isSpam: body.is_spam ?? false,
        ticketType: type,
        parentTicketId: body.parent_ticket_id ?? null,
        contactId,
        metadata: body.metadata ?? {},
        messages: newMessages,
        actorAgentId: key.agentId,
      },
      key.orgId,
    );
    for (const m of s.world.messagesOf(ticket)) {
      for (const id of m.attachmentIds) {
        const a = attachments.get(id);
        if (a) a.usedByMessageId = m.id;
      }
    }
    return { status: 201, body: { success: true, data: presentTicket(s, ticket, false, false) } };
  });

  const update = keyedRoute('POST', one, 'ticket_update', 'tickets:write', (ctx, key) => {
    const t = findTicket(s, ctx, true);
    const body = parseBody(ctx, UpdateTicketBody);
    // null unassigns; absent leaves the assignee alone.
    const email = body.assignee_email;
    const assigneeId = email === null || email === undefined ? email : assigneeOf(s, key, email);
    s.world.updateTicket(
      t,
      {
        ...(body.status !== undefined ? { status: body.status } : {}),
        ...(body.priority !== undefined ? { priority: body.priority } : {}),
        ...(assigneeId !== undefined ? { assigneeId } : {}),
      },
      key.agentId,
    );
    return { status: 200, body: { success: true, data: presentTicket(s, t, false, false) } };
  });
  return [list, detail, create, update];
}
