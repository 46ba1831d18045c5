import { z } from 'zod';
import { openId, openText, requiredId } from './open.js';

/*
 * `GET /me`: who the calling key is. Not in the spec — section 4 has no such endpoint, and nothing else tells a
 * client which agent its key is linked to (spec 5.7) or what that agent may see (4.12 restrictions, 4.13/4.14
 * dashboard permissions). Our choice, as real services offer it (a token's identity: Zendesk
 * `/users/me`, Front `/me`, Freshdesk `/agents/me`); the companion serves it (companion/README.md). A source
 * without it answers 404, and every field is read so that what is missing or of another shape is *not known*
 * (undefined), never taken for "no restriction": only an explicit null says that.
 */

/** A restriction list: names or ids, null for "not restricted"; anything else (or missing) is not known. */
const restriction = () => z.array(z.string()).nullable().optional().catch(undefined);

export const KeyIdentity = z.looseObject({
  organization_id: openId(),
  /** The key's scopes; null: a legacy key with none recorded, which has full access (spec 5.6). */
  scopes: z.array(z.string()).nullable().optional().catch(undefined),
  /** The linked agent (spec 5.7); null: the key is not linked to one. */
  agent: z
    .looseObject({
      id: requiredId(),
      name: openText(),
      dashboard_permissions: z.array(z.string()).optional().catch(undefined),
      /** The data restrictions reports answer within (spec 4.12). */
      restrictions: z
        .looseObject({ channels: restriction(), team_ids: restriction(), agent_ids: restriction() })
        .optional()
        .catch(undefined),
    })
    .nullable()
    .optional()
    .catch(undefined),
});
export type KeyIdentity = z.infer<typeof KeyIdentity>;
