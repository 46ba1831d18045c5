import { ApiError, validation } from '../http/errors.js';
import type { AttachmentRecord, CompanionState } from '../state.js';

/**
 * Checks attachment ids for use on a message (spec 4.7, 7): unknown or another org's → 404
 * ATTACHMENT_NOT_FOUND; unconfirmed, already used or listed twice → 400 VALIDATION_ERROR.
 * Does not mark them used; the caller does once the message exists.
 */
export function takeAttachments(
  s: CompanionState,
  orgId: string,
  ids: string[],
  _markNow: boolean,
): Map<string, AttachmentRecord> {
  const out = new Map<string, AttachmentRecord>();
  for (const id of ids) {
    const a = s.attachments.get(id);
    if (!a || a.orgId !== orgId)
      throw new ApiError(404, 'ATTACHMENT_NOT_FOUND', `attachment ${id} not found`);
    if (out.has(id)) throw validation(`attachment ${id} is listed twice`);
    if (!a.confirmed) throw validation(`attachment ${id} is not confirmed`);
    if (a.usedByMessageId !== null) throw validation(`attachment ${id} is already used on a message`);
    out.set(id, a);
  }
  return out;
}
