// The script's timers (setTimeout and setInterval in the isolate): a host timer
// each that tells the isolate when it fires, at most maxTimers at once, and none
// that would fire after the script's deadline.

export class ScriptTimers {
  /** The script's timers; undefined for one that would fire after the deadline (it never fires). */
  readonly #timers = new Map<number, NodeJS.Timeout | undefined>();
  readonly #limits: { readonly maxTimers: number };
  readonly #remainingMs: () => number;
  readonly #fire: (id: number) => void;

  constructor(limits: { readonly maxTimers: number }, remainingMs: () => number, fire: (id: number) => void) {
    this.#limits = limits;
    this.#remainingMs = remainingMs;
    this.#fire = fire;
  }

  /** Sets (or sets again) the script's timer id; its answer is the isolate's JSON reply. */
  set(id: unknown, ms: unknown): string {
    if (typeof id !== 'number' || typeof ms !== 'number') return '{"ok":false}';
    if (!this.#timers.has(id) && this.#timers.size >= this.#limits.maxTimers) {
      return JSON.stringify({
        ok: false,
        e: { name: 'RangeError', message: `too many timers (at most ${this.#limits.maxTimers})` },
      });
    }
    const old = this.#timers.get(id);
    if (old) clearTimeout(old);
    const delay = Math.max(0, ms);
    // SECURITY (honest time): a timer that cannot fire before the script's deadline
    // never fires; the deadline ends the script with the timeout error. Shortening
    // it to the deadline would let it win the race and return a wrong answer.
    if (delay >= this.#remainingMs()) {
      this.#timers.set(id, undefined);
      return '{"ok":true}';
    }
    this.#timers.set(
      id,
      setTimeout(() => {
        this.#timers.delete(id);
        this.#fire(id);
      }, delay),
    );
    return '{"ok":true}';
  }

  clear(id: number): void {
    const t = this.#timers.get(id);
    if (t) clearTimeout(t);
    this.#timers.delete(id);
  }

  dispose(): void {
    for (const t of this.#timers.values()) clearTimeout(t);
    this.#timers.clear();
  }
}
