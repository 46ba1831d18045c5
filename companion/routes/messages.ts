import { createHash } from 'node:crypto';
import { MESSAGE_PAGE_LIMIT, MessageListQuery, SendMessageBody } from '../../schemas/api/index.js';
import { keyedRoute, parseBody, parseQuery, type Route } from '../http/context.js';
import { ApiError, validation } from '../http/errors.js';
import { presentMessage } from '../present.js';
import { takeAttachments } from '../rules/attachments.js';
import { byCreated, createdKey, keysetPage } from '../rules/paging.js';
import type { CompanionState } from '../state.js';
import type { MessageRecord } from '../world/index.js';
import { checkConnected, findTicket, orgOf, stripHtml } from './tickets.js';

const IDEMPOTENCY_TTL_MS = 60 * 60 * 1000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function messageRoutes(s: CompanionState): Route[] {
  const path = '/tickets/:ticketNumber/messages';
  const list = keyedRoute('GET', path, 'detail', 'tickets:read', (ctx, key) => {
    const t = findTicket(s, ctx);
    const q = parseQuery(ctx, MessageListQuery);
    const order = q.order ?? 'asc';
    const limit = q.limit ?? MESSAGE_PAGE_LIMIT.default;
    const page = keysetPage(s, `messages/${t.id}`, key, { order }, limit, q.cursor);
    const realNow = s.world.settings.realNow();
    const sign = order === 'asc' ? 1 : -1;
    // Reads exclude internal notes, drafts and system events (spec 2.3).
    const items = s.world
      .messagesOf(t)
      .filter((m) => m.visibility === 'public' && m.visibleAt <= realNow)
      .sort((a, c) => sign * byCreated(a, c))
      .filter((m) => page.follows(m.createdAt, m.id, sign));
    return page.reply(items, (m) => presentMessage(s, m, t), createdKey);
  });

  const send = keyedRoute('POST', path, 'write', 'tickets:write', async (ctx, key) => {
    const t = findTicket(s, ctx, true);
    const body = parseBody(ctx, SendMessageBody);
    const header = ctx.req.headers['idempotency-key'];
    const idemKey = Array.isArray(header) ? header[0] : header;
    if (idemKey !== undefined && (idemKey.length === 0 || idemKey.length > 255)) {
      throw validation('Idempotency-Key must be 1–255 characters');
    }
    const cacheKey = idemKey === undefined ? null : `${key.orgId}|${key.label}|${idemKey}`;
    const bodyHash = createHash('sha256')
      .update(`${t.number}\n${ctx.body.toString('utf8')}`)
      .digest('hex');
    const now = s.now();
    if (cacheKey !== null) {
      const hit = s.idempotency.get(cacheKey);
      if (hit && hit.expiresAt > now) {
        if (hit.bodyHash !== bodyHash) {
          throw new ApiError(
            400,
            'IDEMPOTENCY_KEY_CONFLICT',
            'Idempotency-Key was used with a different body',
          );
        }
        if (hit.state === 'processing') {
          throw new ApiError(
            409,
            'IDEMPOTENCY_KEY_IN_PROGRESS',
            'a request with this Idempotency-Key is still processing',
          );
        }
        return { status: hit.status, body: hit.body, headers: { 'idempotent-replayed': 'true' } };
      }
      s.idempotency.set(cacheKey, {
        bodyHash,
        state: 'processing',
        status: 0,
        body: null,
        expiresAt: now + IDEMPOTENCY_TTL_MS,
      });
    }
    try {
      const org = orgOf(s, key);
      const channel = body.channel ?? t.channel;
      checkConnected(org, channel, body.channel_identifier);
      let author = null;
      if (body.from_agent !== undefined) {
        author = s.world.agentByEmail(key.orgId, body.from_agent) ?? null;
        if (!author) throw validation('from_agent is not an agent of this organization');
      }
      const attachments = takeAttachments(s, key.orgId, body.attachment_ids ?? [], false);
      // Hand-off to the sending pipeline: the request is "processing" meanwhile (idempotency rule 4).
      await sleep(s.options.sendDelayMs);
      const note = body.type === 'note';
      const m: MessageRecord = s.world.appendMessage(t, {
        role: 'agent',
        visibility: note ? 'internal_note' : 'public',
        text: body.body ?? stripHtml(body.html_body ?? ''),
        authorAgentId: author?.id ?? null,
        authorName: author?.name ?? org.name,
        channel,
        status: note ? 'delivered' : 'queued',
        attachmentIds: body.attachment_ids ?? [],
      });
      for (const a of attachments.values()) a.usedByMessageId = m.id;
      const reply = { status: 201, body: { success: true, data: presentMessage(s, m, t, true) } };
      if (cacheKey !== null) {
        s.idempotency.set(cacheKey, {
          bodyHash,
          state: 'done',
          status: 201,
          body: reply.body,
          expiresAt: now + IDEMPOTENCY_TTL_MS,
        });
      }
      return reply;
    } catch (e) {
      // Failed requests release the key so that a corrected retry can use it (our choice).
      if (cacheKey !== null) s.idempotency.delete(cacheKey);
      throw e;
    }
  });
  return [list, send];
}
