import { inspect } from 'node:util';
import { z } from 'zod';

const REDACTED = '[redacted]';

/** What every way a value normally leaks shows of a secret: `[redacted]`. */
class Redacted {
  toString(): string {
    return REDACTED;
  }
  toJSON(): string {
    return REDACTED;
  }
  [inspect.custom](): string {
    return REDACTED;
  }
}

/**
 * A secret string (API key, password). Every way a value normally leaks — string conversion, JSON,
 * util.inspect/console.log, structured clone into a Temporal payload — yields `[redacted]`. The only way
 * to read it is `reveal()`, which makes the few legitimate call sites (setting a request header) greppable.
 */
export class Secret extends Redacted {
  readonly #value: string;
  constructor(value: string) {
    super();
    this.#value = value;
  }
  reveal(): string {
    return this.#value;
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

/** The secrets among a configuration's values. */
export function secretsOf(values: object): Secret[] {
  return Object.values(values).filter((v): v is Secret => v instanceof Secret);
}

/**
 * The secrets of a process, scrubbed together (longest first, so a secret holding another goes whole). It
 * grows as secrets become known: a Temporal profile's API key is read after the logger is made.
 */
export class Secrets extends Redacted {
  readonly #list: Secret[] = [];
  constructor(secrets: Iterable<Secret | undefined> = []) {
    super();
    for (const s of secrets) this.add(s);
  }
  add(secret: Secret | undefined): void {
    if (secret === undefined || secret.reveal() === '') return;
    if (this.#list.some((s) => s.reveal() === secret.reveal())) return;
    this.#list.push(secret);
    this.#list.sort((a, b) => b.reveal().length - a.reveal().length);
  }
  scrub(text: string): string {
    let out = text;
    for (const s of this.#list) out = s.scrub(out);
    return out;
  }
}
