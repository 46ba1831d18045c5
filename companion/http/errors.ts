import type { ErrorCode } from '../../schemas/api/index.js';

/** A failure that becomes the error envelope of spec 2.1 with its HTTP status. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
    readonly retryAfter?: number,
  ) {
    super(message);
  }
}

export const validation = (message: string) => new ApiError(400, 'VALIDATION_ERROR', message);
export const forbidden = (message: string) => new ApiError(403, 'FORBIDDEN_SCOPE', message);
