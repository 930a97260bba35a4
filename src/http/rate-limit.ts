// Requests per window, counted in the limit store (memory, or Redis shared by
// every instance): per API key, and per client address for requests whose key
// is missing or wrong, so that guessing keys is slow.
import { ApiError } from '../errors.js';
import type { LimitStore } from '../tenancy/store.js';

export interface RateDecision {
  readonly limit: number;
  readonly remaining: number;
  readonly resetMs: number;
}

export function rateHeaders(d: RateDecision): Record<string, string> {
  return {
    'RateLimit-Limit': String(d.limit),
    'RateLimit-Remaining': String(d.remaining),
    'RateLimit-Reset': String(Math.ceil(d.resetMs / 1000)),
  };
}

/** The Retry-After value for a wait of ms: whole seconds, at least 1. */
export function retryAfter(resetMs: number): string {
  return String(Math.max(1, Math.ceil(resetMs / 1000)));
}

export class RateLimiter {
  readonly #store: LimitStore;

  constructor(store: LimitStore) {
    this.#store = store;
  }

  /** Counts one request of a key; throws 429 RATE_LIMIT_EXCEEDED when it is over its limit. */
  async hit(client: string, limit: number, windowMs: number): Promise<RateDecision> {
    const { count, resetMs } = await this.#store.hit(`key:${client}`, windowMs);
    const decision = { limit, remaining: Math.max(0, limit - count), resetMs };
    if (count > limit) {
      throw new ApiError('RATE_LIMIT_EXCEEDED', undefined, {
        headers: { ...rateHeaders(decision), 'Retry-After': retryAfter(resetMs) },
      });
    }
    return decision;
  }
}

/**
 * Failed authentications per client address. Each failure is counted in the
 * store; an address over the limit is then refused on this instance, before its
 * key is looked at, until the window ends.
 */
export class AuthFailureLimiter {
  readonly #store: LimitStore;
  readonly #limit: number;
  readonly #windowMs: number;
  readonly #blocked = new Map<string, number>();

  constructor(store: LimitStore, limit: number, windowMs: number) {
    this.#store = store;
    this.#limit = limit;
    this.#windowMs = windowMs;
  }

  /** Throws 429 when the address is refused now. */
  check(address: string, now = Date.now()): void {
    const until = this.#blocked.get(address);
    if (until === undefined) return;
    if (until <= now) {
      this.#blocked.delete(address);
      return;
    }
    throw this.#refusal(until - now);
  }

  /** Counts a failure; resolves to the 429 to send instead of the 401 when the address is over the limit. */
  async failed(address: string, now = Date.now()): Promise<ApiError | undefined> {
    const { count, resetMs } = await this.#store.hit(`auth-failures:${address}`, this.#windowMs);
    if (count <= this.#limit) return undefined;
    if (this.#blocked.size > 100_000) for (const [a, t] of this.#blocked) if (t <= now) this.#blocked.delete(a);
    this.#blocked.set(address, now + resetMs);
    return this.#refusal(resetMs);
  }

  #refusal(resetMs: number): ApiError {
    return new ApiError(
      'RATE_LIMIT_EXCEEDED',
      'Rate limit exceeded: too many requests without a valid API key from this address',
      {
        headers: { 'Retry-After': retryAfter(resetMs) },
      },
    );
  }
}
