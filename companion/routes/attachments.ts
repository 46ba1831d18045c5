import { createHmac, timingSafeEqual } from 'node:crypto';
import {
  ALLOWED_ATTACHMENT_MIME_TYPES,
  type ConfirmedAttachment,
  MAX_ATTACHMENT_BYTES,
  UploadUrlBody,
} from '../../schemas/api/index.js';
import { mustKey, noQuery, parseBody, type Route } from '../http/context.js';
import { ApiError, validation } from '../http/errors.js';
import { iso } from '../http/instants.js';
import { publicUrl } from '../present.js';
import { contentMatches } from '../rules/sniff.js';
import type { CompanionState } from '../state.js';

const URL_VALIDITY_MS = 30 * 60 * 1000;

function sign(s: CompanionState, id: string, expires: number): string {
  return createHmac('sha256', s.uploadSecret).update(`${id}.${expires}`).digest('base64url');
}

export function attachmentRoutes(s: CompanionState): Route[] {
  return [
    {
      method: 'POST',
      path: '/attachments/upload-url',
      routeClass: 'attachments',
      scope: 'tickets:write',
      handler: (ctx) => {
        const key = mustKey(ctx);
        noQuery(ctx);
        const body = parseBody(ctx, UploadUrlBody);
        if (!(ALLOWED_ATTACHMENT_MIME_TYPES as readonly string[]).includes(body.mime_type)) {
          throw validation(`mime_type ${body.mime_type} is not an allowed attachment type`);
        }
        if (body.size > MAX_ATTACHMENT_BYTES) throw validation('size exceeds 20 MB');
        const id = s.world.newId();
        const expires = s.now() + URL_VALIDITY_MS;
        s.attachments.set(id, {
          id,
          orgId: key.orgId,
          fileName: body.file_name,
          mimeType: body.mime_type,
          declaredSize: body.size,
          expiresAt: expires,
          data: null,
          confirmed: false,
          usedByMessageId: null,
        });
        return {
          status: 200,
          body: {
            success: true,
            data: {
              id,
              upload_url: `${s.baseUrl}/uploads/${id}?expires=${expires}&signature=${sign(s, id, expires)}`,
              public_url: publicUrl(s, id, body.file_name),
              expires_at: iso(expires),
            },
          },
        };
      },
    },
    {
      method: 'POST',
      path: '/attachments/:attachmentId/confirm',
      routeClass: 'attachments',
      scope: 'tickets:write',
      handler: async (ctx) => {
        const key = mustKey(ctx);
        noQuery(ctx);
        if (ctx.body.toString('utf8').trim().length > 0) throw validation('confirm takes no body');
        const a = s.attachments.get(ctx.params['attachmentId'] ?? '');
        if (!a || a.orgId !== key.orgId)
          throw new ApiError(404, 'ATTACHMENT_NOT_FOUND', 'attachment not found');
        if (a.confirmed) throw validation('attachment is already confirmed');
        if (a.data === null) throw validation('nothing has been uploaded to this attachment yet');
        if (a.data.length > MAX_ATTACHMENT_BYTES) throw validation('file exceeds 20 MB');
        if (a.data.length !== a.declaredSize) {
          throw validation(`uploaded size ${a.data.length} differs from the declared size ${a.declaredSize}`);
        }
        const sniffed = await contentMatches(a.data, a.mimeType);
        if (!sniffed.ok)
          throw validation(`file content is ${sniffed.detected}, not the declared ${a.mimeType}`);
        a.confirmed = true;
        const data: ConfirmedAttachment = {
          id: a.id,
          status: 'confirmed',
          file_name: a.fileName,
          mime_type: a.mimeType,
          size: a.data.length,
          public_url: publicUrl(s, a.id, a.fileName),
        };
        return { status: 200, body: { success: true, data } };
      },
    },
  ];
}

/**
 * The storage side that a signed `upload_url` points at (spec 4.7 step 2: not a call to the service, so it
 * answers like an object store: plain-text errors, no envelope, no key).
 */
export function uploadRoutes(s: CompanionState): Route[] {
  const text = (status: number, message: string) => ({
    status,
    body: null,
    raw: { contentType: 'text/plain', data: message },
  });
  return [
    {
      method: 'PUT',
      path: '/:attachmentId',
      routeClass: null,
      scope: null,
      handler: (ctx) => {
        const a = s.attachments.get(ctx.params['attachmentId'] ?? '');
        const expires = Number(ctx.query['expires']);
        const given = Buffer.from(ctx.query['signature'] ?? '');
        if (!a) return text(404, 'NoSuchUpload');
        const expected = Buffer.from(sign(s, a.id, expires));
        if (given.length !== expected.length || !timingSafeEqual(given, expected))
          return text(403, 'SignatureDoesNotMatch');
        if (s.now() >= expires) return text(403, 'Request has expired');
        if (a.data !== null) return text(409, 'Upload URL already used');
        const type = (ctx.req.headers['content-type'] ?? '').split(';')[0]?.trim();
        if (type !== a.mimeType) return text(400, `Content-Type must be ${a.mimeType}`);
        a.data = ctx.body;
        return text(200, 'OK');
      },
    },
  ];
}

export function fileRoutes(s: CompanionState): Route[] {
  return [
    {
      method: 'GET',
      path: '/:attachmentId/:fileName',
      routeClass: null,
      scope: null,
      handler: (ctx) => {
        const a = s.attachments.get(ctx.params['attachmentId'] ?? '');
        if (!a?.confirmed || a.data === null)
          return { status: 404, body: null, raw: { contentType: 'text/plain', data: 'Not found' } };
        return { status: 200, body: null, raw: { contentType: a.mimeType, data: a.data } };
      },
    },
  ];
}
