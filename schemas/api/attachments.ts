import { z } from 'zod';
import { Timestamp, Uuid } from './common.js';

/** Allowed types (spec 4.7): images, PDF, plain text, CSV, Word (.docx), Excel (.xlsx), MP4, MP3. */
export const ALLOWED_ATTACHMENT_MIME_TYPES = [
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/webp',
  'application/pdf',
  'text/plain',
  'text/csv',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  'video/mp4',
  'audio/mpeg',
] as const;
export const MAX_ATTACHMENT_BYTES = 20 * 1024 * 1024;

/** Body of `POST /attachments/upload-url` (spec 4.7). */
export const UploadUrlBody = z.strictObject({
  file_name: z.string().min(1).max(255),
  mime_type: z.string().min(1),
  size: z.number().int().positive(),
});
export type UploadUrlBody = z.infer<typeof UploadUrlBody>;

/** `data` of the upload-url operation (spec 2.5). */
export const UploadUrl = z.object({
  id: Uuid,
  upload_url: z.url(),
  public_url: z.url(),
  expires_at: Timestamp,
});
export type UploadUrl = z.infer<typeof UploadUrl>;

/** Response of `POST /attachments/:id/confirm`. Not shown (spec 4.7); our choice. */
export const ConfirmedAttachment = z.object({
  id: Uuid,
  status: z.literal('confirmed'),
  file_name: z.string(),
  mime_type: z.string(),
  size: z.number().int().nonnegative(),
  public_url: z.url(),
});
export type ConfirmedAttachment = z.infer<typeof ConfirmedAttachment>;
