// Requests per key per window (fixed window, in memory).
import { createHash } from 'node:crypto';
import { ApiError } from '../errors.js';

export interface RateDecision {
  readonly limit: number;
  readonly remaining: number;
  readonly resetMs: number;
}

export class RateLimiter {
  readonly #limit: number;
  readonly #windowMs: number;
  readonly #windows = new Map<string, { start: number; count: number }>();

  constructor(limit: number, windowMs: number) {
    this.#limit = limit;
    this.#windowMs = windowMs;
  }

  /** Counts one request for the key; throws 429 when over the limit. */
  hit(key: string, now = Date.now()): RateDecision {
    // Keys are held hashed, never as given.
    const id = createHash('sha256').update(key).digest('base64');
    let w = this.#windows.get(id);
    if (!w || now - w.start >= this.#windowMs) {
      if (this.#windows.size > 100_000) this.#sweep(now);
      w = { start: now, count: 0 };
      this.#windows.set(id, w);
    }
    const resetMs = w.start + this.#windowMs - now;
    if (w.count >= this.#limit) {
      throw new ApiError('RATE_LIMIT_EXCEEDED', undefined, {
        headers: {
          ...RateLimiter.headers({ limit: this.#limit, remaining: 0, resetMs }),
          'Retry-After': String(Math.max(1, Math.ceil(resetMs / 1000))),
        },
      });
    }
    w.count++;
    return { limit: this.#limit, remaining: this.#limit - w.count, resetMs };
  }

  static headers(d: RateDecision): Record<string, string> {
    return {
      'RateLimit-Limit': String(d.limit),
      'RateLimit-Remaining': String(d.remaining),
      'RateLimit-Reset': String(Math.ceil(d.resetMs / 1000)),
    };
  }

  #sweep(now: number): void {
    for (const [k, w] of this.#windows) if (now - w.start >= this.#windowMs) this.#windows.delete(k);
  }
}
