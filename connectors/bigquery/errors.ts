import { errorMapping, type WithErrorMapping } from '../errors.js';

/**
 * BigQuery's error mapping: an OAuth token the client might quote (`access_token=…`, `Bearer …`) leaves no
 * message. No code is kept: the client's codes are HTTP statuses nobody branches on.
 */
export function bigQueryErrors(): WithErrorMapping {
  return errorMapping({
    scrub: (text) => text.replace(/(access_token|Bearer)[=: ]+\S+/gi, '$1 [redacted]'),
    keepCode: false,
  });
}
