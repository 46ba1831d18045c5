import { createHmac, timingSafeEqual } from 'node:crypto';
import {
  ALLOWED_ATTACHMENT_MIME_TYPES,
  type ConfirmedAttachment,
  MAX_ATTACHMENT_BYTES,
  UploadUrlBody,
} from '../../schemas/api/index.js';
import {
  keyedRoute,
  noQuery,
  parseBody,
  type Reply,
  type RequestContext,
  type Route,
} from '../http/context.js';
import { ApiError, validation } from '../http/errors.js';
import { iso } from '../http/instants.js';
import { publicUrl } from '../present.js';
import { contentMatches } from '../rules/sniff.js';
import type { AttachmentRecord, CompanionState } from '../state.js';
import type { ApiKeyRecord } from '../world/index.js';

const URL_VALIDITY_MS = 30 * 60 * 1000;

function sign(s: CompanionState, id: string, expires: number): string {
  return createHmac('sha256', s.uploadSecret).update(`${id}.${expires}`).digest('base64url');
}

export function attachmentRoutes(s: CompanionState): Route[] {
  /** Step 1 of spec 4.7: a record for the file, and a signed URL to put its bytes at. */
  const uploadUrl = (ctx: RequestContext, key: ApiKeyRecord): Reply => {
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
          upload_url: `${s.baseUrl}/uploads${s.storagePath}/${id}?expires=${expires}&signature=${sign(s, id, expires)}`,
          public_url: publicUrl(s, id, body.file_name),
          expires_at: iso(expires),
        },
      },
    };
  };
  /** Step 3: the uploaded bytes are checked against what step 1 declared. */
  const confirm = async (ctx: RequestContext, key: ApiKeyRecord): Promise<Reply> => {
    noQuery(ctx);
    if (ctx.body.toString('utf8').trim().length > 0) throw validation('confirm takes no body');
    const a = s.attachments.get(ctx.params['attachmentId'] ?? '');
    if (!a || a.orgId !== key.orgId) throw new ApiError(404, 'ATTACHMENT_NOT_FOUND', 'attachment not found');
    if (a.confirmed) throw validation('attachment is already confirmed');
    if (a.data === null) throw validation('nothing has been uploaded to this attachment yet');
    if (a.data.length > MAX_ATTACHMENT_BYTES) throw validation('file exceeds 20 MB');
    if (a.data.length !== a.declaredSize) {
      throw validation(`uploaded size ${a.data.length} differs from the declared size ${a.declaredSize}`);
    }
    const sniffed = await contentMatches(a.data, a.mimeType);
    if (!sniffed.ok) throw validation(`file content is ${sniffed.detected}, not the declared ${a.mimeType}`);
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
  };
  return [
    keyedRoute('POST', '/attachments/upload-url', 'attachments', 'tickets:write', uploadUrl),
    keyedRoute('POST', '/attachments/:attachmentId/confirm', 'attachments', 'tickets:write', confirm),
  ];
}

/**
 * The storage side of attachments, where a signed `upload_url` and a `public_url` point (spec 4.7 step 2: not
 * a call to the service, so it answers like an object store: plain-text replies, no envelope, no key, no rate
 * class). The handler gets the attachment named by the path, if there is one.
 */
function storageRoute(
  s: CompanionState,
  method: string,
  path: string,
  handler: (ctx: RequestContext, a: AttachmentRecord | undefined) => Reply,
): Route {
  return {
    method,
    path,
    routeClass: null,
    scope: null,
    handler: (ctx) => handler(ctx, s.attachments.get(ctx.params['attachmentId'] ?? '')),
  };
}

const raw = (status: number, contentType: string, data: Buffer | string): Reply => ({
  status,
  body: null,
  raw: { contentType, data },
});
const text = (status: number, message: string) => raw(status, 'text/plain', message);

export function uploadRoutes(s: CompanionState): Route[] {
  return [
    storageRoute(s, 'PUT', '/:attachmentId', (ctx, a) => {
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
    }),
  ];
}

export function fileRoutes(s: CompanionState): Route[] {
  return [
    storageRoute(s, 'GET', '/:attachmentId/:fileName', (_ctx, a) =>
      !a?.confirmed || a.data === null ? text(404, 'Not found') : raw(200, a.mimeType, a.data),
    ),
  ];
}
