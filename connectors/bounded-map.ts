/**
 * A map that keeps at most `max` entries, dropping the least recently used: for a worker's caches that are
 * only a saving (a miss reads the warehouse), whose keys would otherwise grow with the workspace — one per
 * ticket thread, say, over a sync of 100k tickets (a worker's memory must not grow with the world).
 */
export class BoundedMap<K, V> {
  readonly #entries = new Map<K, V>();

  constructor(readonly max: number) {
    if (!(max >= 1)) throw new Error(`BoundedMap needs room for an entry (max ${max})`);
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The entry, now the most recently used. */
  get(key: K): V | undefined {
    const value = this.#entries.get(key);
    if (value !== undefined) {
      this.#entries.delete(key);
      this.#entries.set(key, value);
    }
    return value;
  }

  /** Sets the entry (the most recently used); the least recently used goes when the map is full. */
  set(key: K, value: V): this {
    this.#entries.delete(key);
    this.#entries.set(key, value);
    if (this.#entries.size > this.max) this.#entries.delete(this.#entries.keys().next().value as K);
    return this;
  }

  delete(key: K): boolean {
    return this.#entries.delete(key);
  }

  /** The values, least recently used first (reading them does not make them used). */
  values(): IterableIterator<V> {
    return this.#entries.values();
  }
}
