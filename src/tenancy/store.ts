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

/** Entries kept before expired windows are swept. */
const SWEEP_AT_ENTRIES = 10_000;

export class MemoryStore implements LimitStore {
  readonly #windows = new Map<string, { end: number; count: number }>();
  readonly #leases = new Map<string, Map<string, number>>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  hit(id: string, windowMs: number): Promise<WindowCount> {
    const now = this.#now();
    const k = `${id}|${windowMs}`;
    let w = this.#windows.get(k);
    if (!w || now >= w.end) {
      if (this.#windows.size >= SWEEP_AT_ENTRIES) this.#sweep(now);
      w = { end: now + windowMs, count: 0 };
      this.#windows.set(k, w);
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
    this.#windows.clear();
    this.#leases.clear();
    return Promise.resolve();
  }

  #sweep(now: number): void {
    for (const [k, w] of this.#windows) if (now >= w.end) this.#windows.delete(k);
  }
}
