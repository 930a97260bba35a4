// Where limits are counted: request counts per fixed window, and leases that
// cap how many scripts of one key run at once. One small contract, two
// stores: this in-memory one (one instance) and Redis (several instances).

export interface WindowCount {
  /** Requests counted in the current window, this one included. */
  readonly count: number;
  /** Milliseconds until the window ends. */
  readonly resetMs: number;
}

export interface LimitStore {
  /** Counts one request for id in its current window of windowMs. */
  hit(id: string, windowMs: number): Promise<WindowCount>;
  /** Takes one of cap leases for id, held until release or ttlMs; false when all are taken. */
  acquire(id: string, cap: number, token: string, ttlMs: number): Promise<boolean>;
  release(id: string, token: string): Promise<void>;
  close(): Promise<void>;
}

/** Windows the memory store keeps, for API keys and for everything else (client addresses) apart. */
export const MEMORY_STORE_CAPACITY = 100_000;

type Window = { end: number; count: number };

/**
 * A map of at most capacity entries that forgets the least recently used one
 * first; O(1) per operation (a Map keeps insertion order; a hit re-inserts).
 */
class Lru<V> {
  readonly #map = new Map<string, V>();
  constructor(readonly capacity: number) {}

  get size(): number {
    return this.#map.size;
  }

  get(k: string): V | undefined {
    const v = this.#map.get(k);
    if (v !== undefined) {
      this.#map.delete(k);
      this.#map.set(k, v);
    }
    return v;
  }

  set(k: string, v: V): void {
    this.#map.delete(k);
    this.#map.set(k, v);
    if (this.#map.size > this.capacity) {
      const oldest = this.#map.keys().next();
      if (oldest.done !== true) this.#map.delete(oldest.value);
    }
  }

  clear(): void {
    this.#map.clear();
  }
}

export class MemoryStore implements LimitStore {
  /**
   * SECURITY: two LRUs, so that windows keyed by client data (addresses,
   * which a client can make many of) can only push out each other, never an
   * API key's request count (which would reset that key's rate limit).
   */
  readonly #keyWindows: Lru<Window>;
  readonly #otherWindows: Lru<Window>;
  readonly #leases = new Map<string, Map<string, number>>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now, capacity = MEMORY_STORE_CAPACITY) {
    this.#now = now;
    this.#keyWindows = new Lru(capacity);
    this.#otherWindows = new Lru(capacity);
  }

  /** Windows held now, both kinds together. */
  get size(): number {
    return this.#keyWindows.size + this.#otherWindows.size;
  }

  hit(id: string, windowMs: number): Promise<WindowCount> {
    const now = this.#now();
    const windows = id.startsWith('key:') ? this.#keyWindows : this.#otherWindows;
    const k = `${id}|${windowMs}`;
    let w = windows.get(k);
    if (!w || now >= w.end) {
      w = { end: now + windowMs, count: 0 };
      windows.set(k, w);
    }
    w.count++;
    return Promise.resolve({ count: w.count, resetMs: w.end - now });
  }

  acquire(id: string, cap: number, token: string, ttlMs: number): Promise<boolean> {
    const now = this.#now();
    let held = this.#leases.get(id);
    if (!held) {
      held = new Map();
      this.#leases.set(id, held);
    }
    for (const [t, until] of held) if (until <= now) held.delete(t);
    if (held.size >= cap) return Promise.resolve(false);
    held.set(token, now + ttlMs);
    return Promise.resolve(true);
  }

  release(id: string, token: string): Promise<void> {
    const held = this.#leases.get(id);
    held?.delete(token);
    if (held?.size === 0) this.#leases.delete(id);
    return Promise.resolve();
  }

  close(): Promise<void> {
    this.#keyWindows.clear();
    this.#otherWindows.clear();
    this.#leases.clear();
    return Promise.resolve();
  }
}
