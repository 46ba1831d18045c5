import type { ExportPass } from '../../schemas/streams.js';
import { bookkeeping } from '../activity-proxies.js';

/**
 * The high-water mark moves of one export pass: how far its contiguous prefix of complete windows reaches
 * (`upTo`), the passes it covers (FIRST_READ_COVERED_BY: their marks move with its own), and its moves, one
 * after the other — a move waits for the one before, so marks never cross.
 */
export class PassMarks {
  upTo: string | null = null;
  /** The passes this one covers: each mark move of this pass moves theirs too. */
  readonly covered: ExportPass[] = [];
  #moves: Promise<void> = Promise.resolve();

  /** Settles when every move asked for so far has been made. */
  get moved(): Promise<void> {
    return this.#moves;
  }

  /** Moves the marks of `streams()` (asked when the move is made) to `value`, after the moves before it. */
  move(streams: () => readonly string[], value: string): void {
    this.#moves = this.#moves.then(async () => {
      for (const stream of streams()) await bookkeeping.advanceHighWaterMark({ stream, value });
    });
  }

  /** This pass's contiguous prefix reaches `value`: its mark and those of the passes it covers move there. */
  reach(own: ExportPass, value: string): void {
    this.upTo = value;
    this.move(() => [own, ...this.covered], value);
  }

  /** `pass` is covered by this one: its mark catches up with this one's now and moves with it from now on. */
  cover(pass: ExportPass): void {
    this.covered.push(pass);
    if (this.upTo) this.move(() => [pass], this.upTo);
  }
}

/** The mark moves of every export pass of a run, by pass. */
export class RunMarks {
  readonly #byPass = new Map<ExportPass, PassMarks>();

  of(pass: ExportPass): PassMarks {
    const known = this.#byPass.get(pass);
    if (known) return known;
    const fresh = new PassMarks();
    this.#byPass.set(pass, fresh);
    return fresh;
  }
}

/** The windows of a pass, oldest first, and how far the contiguous prefix of complete ones reaches. */
export class CompletePrefix {
  readonly #ends: readonly string[];
  readonly #done: boolean[];
  #length = 0;

  constructor(ends: readonly string[], done: readonly boolean[]) {
    this.#ends = ends;
    this.#done = [...done];
  }

  /** Window `i` is complete: the prefix's new end when it grew, else null. */
  complete(i: number): string | null {
    this.#done[i] = true;
    let next = this.#length;
    while (next < this.#done.length && this.#done[next]) next += 1;
    if (next === this.#length) return null;
    this.#length = next;
    return this.#ends[next - 1]!;
  }
}
