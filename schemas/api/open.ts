import { z } from 'zod';
import { Timestamp } from './common.js';

/**
 * The reading rule (a tolerant reader, style guide rule 2): the connector parses strictly only what the spec
 * defines exactly, and accepts as it comes whatever the spec leaves open.
 *
 *  - STRICT: ids the spec types as UUID, ticket numbers, timestamps, the closed sets it lists (ticket status,
 *    priority, channel, CSAT attribution source, metric format/aggregation/attribution), scores, counts, and
 *    the envelope (`success`, `data`, `pagination`). An item that breaks one of these cannot be stored
 *    faithfully: it is set aside in `_rejected` with the reason (the rest of its page commits).
 *  - OPEN: every field the spec marks "not shown", "for example", "possibly others" or "can contain more",
 *    and every plain string, boolean or opaque id it types only loosely. An open field is read with one of
 *    the helpers below: a value of another JSON type is coerced where the meaning is unambiguous (a number
 *    id → its decimal string) and otherwise becomes null in its typed column. Nothing is lost: every item
 *    is stored whole in `_raw`, and unknown fields are accepted everywhere (objects are loose).
 *
 * Each helper is a `z.preprocess` into a plain nullable schema, so the warehouse still derives the column
 * type from the output (schemas/warehouse.ts walks `pipe` → `out`).
 */

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Open text: strings as they come; numbers and booleans as their text; anything else (or missing) null. */
export const openText = () =>
  z.preprocess(
    (v) => (typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : null),
    z.string().nullable(),
  );

/**
 * The values an open enum is known to take (the spec's examples, the companion's choices), by schema: what
 * the drift reader (schemas/api/drift.ts) compares a served value with to report a new one.
 */
export const openEnumValues = z.registry<{ readonly known: readonly string[] }>();

/**
 * Open enum (role, direction, delivery status, agent kind, …): any non-empty string is a value, a number is
 * its text, anything else null. The values we know (`known`) are documentation and the baseline of schema
 * drift (`_schema_changes`), never a filter.
 */
export const openEnum = (known: readonly string[]) => openText().register(openEnumValues, { known });

/** An opaque id (agent ids, contact ids, tag ids …): a string, or a number as its decimal text; else null. */
export const openId = () =>
  z.preprocess(
    (v) =>
      typeof v === 'string' && v !== ''
        ? v
        : typeof v === 'number' && Number.isFinite(v)
          ? String(v)
          : isObject(v) && (typeof v['id'] === 'string' || typeof v['id'] === 'number')
            ? String(v['id'])
            : null,
    z.string().nullable(),
  );

/** An opaque id the item cannot be stored without (its primary key): as `openId`, but required. */
export const requiredId = () =>
  z.preprocess(
    (v) => (typeof v === 'number' && Number.isFinite(v) ? String(v) : v),
    z.string().min(1, 'an id is required to store the item'),
  );

/** An open boolean: true/false as they come, anything else null (the value stays in `_raw`). */
export const openBool = () =>
  z.preprocess((v) => (typeof v === 'boolean' ? v : null), z.boolean().nullable());

/** An open timestamp (a field the spec does not define, e.g. `resolved_at`): an ISO instant, else null. */
export const openTimestamp = () =>
  z.preprocess((v) => (Timestamp.safeParse(v).success ? v : null), Timestamp.nullable());

/** Open JSON (filters, attachments, custom-field values, …): any JSON value kept whole; missing → null. */
export const openJson = () => z.preprocess((v) => (v === undefined ? null : v), z.unknown().nullable());

/** An open list of opaque ids (team members, an agent's teams): ids as `openId` reads them; else empty. */
export const openIdList = () =>
  z.preprocess(
    (v) =>
      Array.isArray(v)
        ? v.flatMap((x) => {
            const id = openId().safeParse(x);
            return id.success && id.data !== null ? [id.data] : [];
          })
        : null,
    z.array(z.string()).nullable(),
  );

/**
 * An open object whose shape the spec does not show (the ticket's contact): an object as it comes (loose:
 * unknown keys kept), read through `shape`; a bare id is read as `{ id }`; anything else null.
 */
export function openObject<S extends z.ZodRawShape>(shape: S) {
  return z.preprocess(
    (v) => (isObject(v) ? v : typeof v === 'string' || typeof v === 'number' ? { id: v } : null),
    z.looseObject(shape).nullable(),
  );
}
