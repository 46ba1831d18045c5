import { inspect } from 'node:util';
import { z } from 'zod';

const REDACTED = '[redacted]';

/**
 * A secret string (API key, password). Every way a value normally leaks — string conversion, JSON,
 * util.inspect/console.log, structured clone into a Temporal payload — yields `[redacted]`. The only way
 * to read it is `reveal()`, which makes the few legitimate call sites (setting a request header) greppable.
 */
export class Secret {
  readonly #value: string;
  constructor(value: string) {
    this.#value = value;
  }
  reveal(): string {
    return this.#value;
  }
  toString(): string {
    return REDACTED;
  }
  toJSON(): string {
    return REDACTED;
  }
  [inspect.custom](): string {
    return REDACTED;
  }
  /** Removes every occurrence of this secret from a text (for messages built by third-party code). */
  scrub(text: string): string {
    return this.#value.length === 0 ? text : text.split(this.#value).join(REDACTED);
  }
}

/** A zod schema that turns a non-empty string into a Secret. */
export const SecretString = z
  .string()
  .min(1)
  .transform((value) => new Secret(value));
