import type { AgentSession, CsatSurvey, Message, Ticket, TicketFieldValue } from '../schemas/api/index.js';
import { iso, isoMicros } from './http/instants.js';
import type { CompanionState } from './state.js';
import { type Presented, varyMessage, varySession, varySurvey, varyTicket } from './variant.js';
import {
  type MessageRecord,
  messageText,
  type SessionRecord,
  type SurveyRecord,
  type TicketRecord,
} from './world/index.js';

/** Message text in reads is cut to 10,000 characters (spec 2.3, 8). */
export const READ_TEXT_MAX = 10_000;

export function presentTicket(
  s: CompanionState,
  t: TicketRecord,
  includeFields: boolean,
  replica = true,
): Ticket | Presented {
  const st = replica ? s.world.ticketReplicaState(t) : t;
  const contact = t.contactId ? s.world.contact(t.contactId) : undefined;
  const out: Ticket = {
    id: t.id,
    ticket_number: t.number,
    subject: t.subject,
    status: st.status,
    priority: st.priority,
    channel: t.channel,
    created_at: iso(t.createdAt),
    updated_at: iso(st.updatedAt),
    tags: st.tags,
    contact: contact
      ? {
          id: contact.id,
          email: contact.email,
          first_name: contact.firstName,
          last_name: contact.lastName,
          phone: contact.phone,
        }
      : null,
    ticket_type: t.ticketType,
    parent_ticket_id: t.parentTicketId,
    assignee_id: st.assigneeId,
    team_id: st.teamId,
    language: t.language,
    is_spam: t.isSpam,
    resolved_at: st.resolvedAt === null ? null : iso(st.resolvedAt),
  };
  if (includeFields) {
    const defs = s.world.ticketFields.filter((f) => f.orgId === t.orgId);
    out.ticket_fields = defs.map(
      (f, i): TicketFieldValue => ({
        field_id: f.id,
        name: f.name,
        type: f.type,
        value: t.fieldValues[i] ?? null,
      }),
    );
  }
  return varyTicket(s.variant, out);
}

/** Delivery state advances with age for queued sends (moves after `queued`: not shown; our choice). */
function deliveryStatus(s: CompanionState, m: MessageRecord): string {
  if (m.status !== 'queued' || m.visibility !== 'public') return m.status;
  const age = s.now() - m.createdAt;
  const { sentAfterMs, deliveredAfterMs } = s.options;
  return age >= deliveredAfterMs ? 'delivered' : age >= sentAfterMs ? 'sent' : 'queued';
}

export function presentMessage(
  s: CompanionState,
  m: MessageRecord,
  t: TicketRecord,
  atWrite = false,
): Message | Presented {
  const text = messageText(m);
  const out: Message = {
    id: m.id,
    ticket_id: t.id,
    ticket_number: t.number,
    role: m.role,
    direction: m.direction,
    text: text.length > READ_TEXT_MAX ? text.slice(0, READ_TEXT_MAX) : text,
    channel: m.channel,
    author_name: m.authorName,
    status: atWrite ? m.status : deliveryStatus(s, m),
    created_at: iso(m.createdAt),
    attachments: m.attachmentIds.flatMap((id) => {
      const a = s.attachments.get(id);
      return a
        ? [
            {
              id,
              file_name: a.fileName,
              mime_type: a.mimeType,
              size: a.data?.length ?? 0,
              public_url: publicUrl(s, a.id, a.fileName),
            },
          ]
        : [];
    }),
  };
  return varyMessage(s.variant, out);
}

export function publicUrl(s: CompanionState, id: string, fileName: string): string {
  return `${s.baseUrl}/files${s.storagePath}/${id}/${encodeURIComponent(fileName)}`;
}

/** The replica's view of a survey (answers can lag). */
export function surveyState(s: CompanionState, r: SurveyRecord) {
  const sh = r.replicaShadow;
  return sh !== null && s.world.settings.realNow() < sh.until ? sh : r;
}

export function presentSurvey(
  s: CompanionState,
  r: SurveyRecord,
  withComment: boolean,
): CsatSurvey | Presented {
  const st = surveyState(s, r);
  const ticket = s.world.tickets[r.ticketIdx];
  const agent = r.creditedAgentId === null ? undefined : s.world.agent(r.creditedAgentId);
  const out: CsatSurvey = {
    id: r.id,
    ticket_id: ticket?.id ?? r.id,
    ticket_number: ticket?.number ?? null,
    credited_agent_id: r.creditedAgentId,
    credited_agent_name: agent && agent.deletedAt === null && agent.orgId === r.orgId ? agent.name : null,
    attribution_source: r.creditedAgentId === null ? 'unattributed' : 'survey_agent_id',
    score: st.score,
    sent_at: isoMicros(r.sentAt),
    submitted_at: st.submittedAt === null ? null : isoMicros(st.submittedAt),
  };
  if (withComment) out.comment = st.comment;
  return varySurvey(s.variant, out);
}

export function sessionState(s: CompanionState, r: SessionRecord) {
  const sh = r.replicaShadow;
  return sh !== null && s.world.settings.realNow() < sh.until ? sh : r;
}

export function presentSession(s: CompanionState, r: SessionRecord): AgentSession | Presented {
  const st = sessionState(s, r);
  const out: AgentSession = {
    id: r.id,
    agent_id: r.agentId,
    session_start: iso(r.start),
    session_end: st.end === null ? null : iso(st.end),
    last_activity: iso(st.lastActivity),
    updated_at: iso(st.updatedAt),
  };
  return varySession(s.variant, out);
}
