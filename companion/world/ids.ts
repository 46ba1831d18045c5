import { Prng } from './prng.js';

/** The kinds of generated record whose ids an id space fixes (one stream each). */
const ID_KINDS = [
  'team',
  'agent',
  'tag',
  'field',
  'contact',
  'ticket',
  'message',
  'automation_run',
  'order',
  'survey',
  'session',
  'view',
] as const;
export type IdKind = (typeof ID_KINDS)[number];

/**
 * Where generation draws record ids from. Without an id space, from the world's one stream (the seeded world
 * as it always was). With one, each kind of record has a stream of its own seeded by the space alone, so the
 * n-th ticket, message, survey… of every world in that space has the same id whatever the world's seed and
 * size: the colliding ids of many workspaces served side by side (companion/README.md, "Workspaces").
 */
export class IdSource {
  private constructor(
    private readonly world: Prng,
    private readonly streams: Map<IdKind, Prng> | null,
  ) {}

  static of(world: Prng, space: number | undefined): IdSource {
    const streams =
      space === undefined ? null : new Map(ID_KINDS.map((kind, i) => [kind, new Prng(space, 0x1d00 + i)]));
    return new IdSource(world, streams);
  }

  /** The same id space, falling back to another stream of the world (a pass with a stream of its own). */
  over(world: Prng): IdSource {
    return new IdSource(world, this.streams);
  }

  #stream(kind: IdKind): Prng {
    return this.streams?.get(kind) ?? this.world;
  }

  uuid(kind: IdKind): string {
    return this.#stream(kind).uuid();
  }

  /** `prefix_` + `bytes` random bytes in hex (teams, agents, tags, fields). */
  prefixed(kind: IdKind, prefix: string, bytes: number): string {
    return `${prefix}_${this.#stream(kind).hex(bytes)}`;
  }
}
