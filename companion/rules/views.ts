import type { ApiKeyRecord, TicketRecord, TicketState, ViewRecord, World } from '../world/index.js';

/** Whether a key sees a view (spec 4.9, 5.7): same org, and visible to the linked agent if any. */
export function viewVisible(view: ViewRecord, key: ApiKeyRecord): boolean {
  if (view.orgId !== key.orgId) return false;
  if (key.agentId === null || view.visibleToAgentIds === null) return true;
  return view.visibleToAgentIds.includes(key.agentId);
}

function attribute(t: TicketRecord, st: TicketState, condition: string): string[] {
  switch (condition) {
    case 'status':
      return [st.status];
    case 'channel':
      return [t.channel];
    case 'priority':
      return [st.priority];
    case 'tag':
      return st.tags;
    case 'team':
      return st.teamId === null ? [] : [st.teamId];
    case 'assignee':
      return st.assigneeId === null ? [] : [st.assigneeId];
    default:
      return [];
  }
}

/** A view's saved filters (all must hold). */
export function viewMatches(view: ViewRecord, t: TicketRecord, st: TicketState): boolean {
  for (const f of view.filters) {
    const values = attribute(t, st, f.condition);
    const hit = values.some((v) => f.options.includes(v));
    if (f.operator === 'is_not' ? hit : !hit) return false;
  }
  return true;
}

/** Tickets a read shows: not deleted and already on the replica. */
export function readable(_world: World, t: TicketRecord, realNow: number): boolean {
  return t.deletedAt === null && t.visibleAt <= realNow;
}
