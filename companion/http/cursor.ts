import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { validation } from './errors.js';

/** What a cursor is bound to (spec 4.13/4.14 pagination rule 1; the same binding is used by every list). */
export interface CursorBinding {
  route: string;
  keyLabel: string;
  orgId: string;
  agentId: string | null;
  scopes: string;
  /** Every filter of the request except the cursor itself, including `limit`. */
  filters: Record<string, string | undefined>;
}

export type CursorPosition = Array<string | number>;

function bindingHash(b: CursorBinding): string {
  const filters = Object.keys(b.filters)
    .sort()
    .filter((k) => b.filters[k] !== undefined)
    .map((k) => [k, b.filters[k]]);
  return createHash('sha256')
    .update(JSON.stringify([b.route, b.keyLabel, b.orgId, b.agentId, b.scopes, filters]))
    .digest('base64url')
    .slice(0, 22);
}

/**
 * Opaque, HMAC-signed cursors: `base64url(payload).signature`, the payload holding the keyset position and a
 * hash of the binding. A cursor from another key, workspace, route or filter set fails with 400.
 */
export class CursorCodec {
  readonly #secret: Buffer;
  constructor(secret: string) {
    this.#secret = Buffer.from(secret);
  }

  encode(binding: CursorBinding, position: CursorPosition): string {
    const payload = Buffer.from(JSON.stringify({ b: bindingHash(binding), p: position })).toString(
      'base64url',
    );
    return `${payload}.${this.#sign(payload)}`;
  }

  decode(binding: CursorBinding, cursor: string): CursorPosition {
    const [payload, sig, extra] = cursor.split('.');
    if (payload === undefined || sig === undefined || extra !== undefined)
      throw validation('cursor is malformed');
    const expected = Buffer.from(this.#sign(payload));
    const given = Buffer.from(sig);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
      throw validation('cursor is invalid');
    }
    let parsed: { b?: unknown; p?: unknown };
    try {
      parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { b?: unknown; p?: unknown };
    } catch {
      throw validation('cursor is malformed');
    }
    if (parsed.b !== bindingHash(binding)) {
      throw validation('cursor does not match this key, workspace or filters; start again without cursor');
    }
    if (!Array.isArray(parsed.p)) throw validation('cursor is malformed');
    return parsed.p as CursorPosition;
  }

  #sign(payload: string): string {
    return createHmac('sha256', this.#secret).update(payload).digest('base64url').slice(0, 27);
  }
}
