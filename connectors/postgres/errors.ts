import type { Secret } from '../../schemas/secret.js';
import { errorMapping, type WithErrorMapping } from '../errors.js';

/** Removes user:password from any URL in a text. */
export function scrubUrls(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)([^/@\s]*)@/gi, '$1[redacted]@');
}

/** The password of a connection string (empty when it has none, or is in key=value form). */
export function passwordOf(connectionString: string): string {
  try {
    return decodeURIComponent(new URL(connectionString).password);
  } catch {
    return ''; // not a URL (key=value form): nothing to extract
  }
}

/**
 * PostgreSQL's error mapping: the connection's password and any URL credentials leave no message (pg and
 * the server may quote the connection string); the SQLSTATE `code` stays on the error for whoever reads it.
 */
export function postgresErrors(password: Secret): WithErrorMapping {
  return errorMapping({ scrub: (text) => password.scrub(scrubUrls(text)), keepCode: true });
}
