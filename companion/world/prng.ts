/**
 * A small, fast, seeded PRNG (sfc32) and helpers. Deterministic across platforms: integer arithmetic only.
 * World generation draws everything from one stream so a seed always gives the same world.
 */
export class Prng {
  #a: number;
  #b: number;
  #c: number;
  #d: number;

  constructor(seed: number, stream = 0) {
    this.#a = 0x9e3779b9 ^ stream;
    this.#b = 0x243f6a88;
    this.#c = 0xb7e15162;
    this.#d = seed >>> 0;
    for (let i = 0; i < 15; i++) this.u32();
  }

  /** A uniform unsigned 32-bit integer. */
  u32(): number {
    const a = this.#a;
    const b = this.#b;
    const c = this.#c;
    const d = this.#d;
    const t = (((a + b) | 0) + d) | 0;
    this.#d = (d + 1) | 0;
    this.#a = b ^ (b >>> 9);
    this.#b = (c + (c << 3)) | 0;
    this.#c = ((c << 21) | (c >>> 11)) + t;
    return t >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    return this.u32() / 4294967296;
  }

  /** An integer in [min, max] (inclusive). */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    const item = items[Math.floor(this.next() * items.length)];
    if (item === undefined) throw new Error('pick from an empty list');
    return item;
  }

  /** Picks by weight; `weights` are aligned with `items`. */
  weighted<T>(items: readonly T[], weights: readonly number[]): T {
    let total = 0;
    for (const w of weights) total += w;
    let r = this.next() * total;
    for (let i = 0; i < items.length; i++) {
      r -= weights[i] ?? 0;
      if (r < 0) return items[i] as T;
    }
    return items[items.length - 1] as T;
  }

  /** An exponentially distributed value with the given mean. */
  exp(mean: number): number {
    return -Math.log(1 - this.next()) * mean;
  }

  /** A random version-4 UUID drawn from this stream. */
  uuid(): string {
    return uuidFromWords(this.u32(), this.u32(), this.u32(), this.u32());
  }

  /** Lowercase hex of `bytes` random bytes. */
  hex(bytes: number): string {
    const parts: string[] = [];
    for (let i = 0; i < bytes; i += 4) parts.push(hex8(this.u32()));
    return parts.join('').slice(0, bytes * 2);
  }
}

// Strings are written into a scratch buffer and decoded once: a flat 36-byte string per UUID instead of a
// rope of concatenated pieces (which costs several times the memory across 100k tickets' threads).
const HEX_CODES = new Uint8Array(16);
for (let i = 0; i < 16; i++) HEX_CODES[i] = i.toString(16).charCodeAt(0);
const SCRATCH = Buffer.alloc(64);

/** Writes `count` hex digits of `w`, most significant first starting at nibble `from` (0 = top). */
function putHex(w: number, from: number, count: number, at: number): void {
  for (let i = 0; i < count; i++) SCRATCH[at + i] = HEX_CODES[(w >>> (28 - 4 * (from + i))) & 15] as number;
}

function putHex8(w: number, at: number): void {
  putHex(w, 0, 8, at);
}

function hex8(w: number): string {
  putHex8(w, 0);
  return SCRATCH.toString('latin1', 0, 8);
}

function uuidFromWords(w0: number, w1: number, w2: number, w3: number): string {
  const v1 = ((w1 & 0xffff0fff) | 0x00004000) >>> 0; // version 4
  const v2 = ((w2 & 0x3fffffff) | 0x80000000) >>> 0; // variant 10
  putHex8(w0, 0);
  putHex(v1, 0, 4, 9);
  putHex(v1, 4, 4, 14);
  putHex(v2, 0, 4, 19);
  putHex(v2, 4, 4, 24);
  putHex8(w3, 28);
  SCRATCH[8] = 45;
  SCRATCH[13] = 45;
  SCRATCH[18] = 45;
  SCRATCH[23] = 45;
  return SCRATCH.toString('latin1', 0, 36);
}
