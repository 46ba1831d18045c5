import { request } from 'undici';
import { SupportApiClient } from '../../connectors/support-api/client.js';
import { UploadError } from '../../connectors/support-api/errors.js';
import { ConfirmedAttachment, UploadUrl, type UploadUrlBody } from '../../schemas/api/attachments.js';
import { type CreateTagBody, Tag } from '../../schemas/api/directory.js';
import { Message, type SendMessageBody } from '../../schemas/api/messages.js';
import { type CreateTicketBody, Ticket, type UpdateTicketBody } from '../../schemas/api/tickets.js';

/**
 * A client that also writes (spec 4.4–4.8), for tests and benches: the sync only reads, so the product
 * client has no writes. It writes through the very client machinery it reads with — the governor, the
 * retries and `send`'s rule that a write is repeated only when that is harmless.
 */
export class WritingApiClient extends SupportApiClient {
  /** `POST /tickets` (not retried after a possibly-processed failure: each request creates a ticket). */
  createTicket(body: CreateTicketBody): Promise<Ticket> {
    return this.getOne({ method: 'POST', path: '/tickets', body }, Ticket);
  }

  /** `POST /tickets/:ticketNumber`: status, priority or assignee. Setting the same values again is harmless. */
  updateTicket(ticketNumber: number, body: UpdateTicketBody): Promise<Ticket> {
    return this.getOne(
      { method: 'POST', path: `/tickets/${ticketPathSegment(ticketNumber)}`, body, idempotent: true },
      Ticket,
    );
  }

  /**
   * `POST /tickets/:ticketNumber/messages`. With `idempotencyKey` the request is retried safely (spec 4.6:
   * same key + same body returns the cached response); without one it is never retried once sent.
   */
  sendMessage(
    ticketNumber: number,
    body: SendMessageBody,
    options: { idempotencyKey?: string } = {},
  ): Promise<Message> {
    return this.getOne(
      {
        method: 'POST',
        path: `/tickets/${ticketPathSegment(ticketNumber)}/messages`,
        body,
        idempotent: options.idempotencyKey !== undefined,
        ...(options.idempotencyKey ? { headers: { 'idempotency-key': options.idempotencyKey } } : {}),
      },
      Message,
    );
  }

  /** `POST /tags`. */
  createTag(body: CreateTagBody): Promise<Tag> {
    return this.getOne({ method: 'POST', path: '/tags', body }, Tag);
  }

  /** `POST /attachments/upload-url` (step 1 of 4.7). Retrying leaves at most an unused upload slot. */
  createUploadUrl(body: UploadUrlBody): Promise<UploadUrl> {
    return this.getOne(
      { method: 'POST', path: '/attachments/upload-url', body, idempotent: true },
      UploadUrl,
    );
  }

  /** `POST /attachments/:id/confirm` (step 3 of 4.7). */
  confirmAttachment(attachmentId: string): Promise<ConfirmedAttachment> {
    return this.getOne(
      { method: 'POST', path: `/attachments/${encodeURIComponent(attachmentId)}/confirm`, idempotent: true },
      ConfirmedAttachment,
    );
  }

  /** The whole upload flow of 4.7: upload URL → PUT of the bytes to the signed URL → confirm. */
  async uploadAttachment(file: {
    fileName: string;
    mimeType: string;
    bytes: Uint8Array;
  }): Promise<ConfirmedAttachment> {
    const slot = await this.createUploadUrl({
      file_name: file.fileName,
      mime_type: file.mimeType,
      size: file.bytes.byteLength,
    });
    await putUpload(slot.upload_url, file.bytes, file.mimeType);
    return this.confirmAttachment(slot.id);
  }
}

/**
 * `PUT` of the raw bytes to the signed URL (step 2 of 4.7). Not a call to the API: no `cx-api-key`, no
 * `/public/v1`, no governor.
 */
async function putUpload(uploadUrl: string, bytes: Uint8Array, mimeType: string): Promise<void> {
  const res = await request(uploadUrl, {
    method: 'PUT',
    headers: { 'content-type': mimeType, 'content-length': String(bytes.byteLength) },
    body: bytes,
  });
  const text = await res.body.text();
  if (res.statusCode < 200 || res.statusCode >= 300) {
    // Object-store style answer: plain text, no envelope.
    throw new UploadError(`PUT ${new URL(uploadUrl).pathname}`, res.statusCode, text.slice(0, 200));
  }
}

function ticketPathSegment(ticketNumber: number): string {
  if (!Number.isInteger(ticketNumber) || ticketNumber <= 0)
    throw new TypeError(`invalid ticket number ${ticketNumber}`);
  return String(ticketNumber);
}
