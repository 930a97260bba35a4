// Requests per window, counted in the limit store (memory, or Redis shared by
// every instance): per API key, and per client address for requests with a
// wrong key, so that guessing keys is slow.
import { ApiError } from '../../common/errors.js';
import type { LimitStore } from './store.js';

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
 * Wrong keys per client address: the brake on guessing. Past the limit in a
 * window, a wrong key from that address is answered 429 instead of 401 until
 * the window ends; a valid key never is, from any address.
 * SECURITY: it slows and flags guessing, it does not protect the keys: they
 * carry 128 bits or more, beyond any number of guesses (see docs/keys-and-limits.md). Refusing
 * valid keys instead would let anyone behind the same NAT, proxy or office
 * address lock every other tenant there out with a few bad requests.
 */
export class AuthFailureLimiter {
  readonly #store: LimitStore;
  readonly #limit: number;
  readonly #windowMs: number;

  constructor(store: LimitStore, limit: number, windowMs: number) {
    this.#store = store;
    this.#limit = limit;
    this.#windowMs = windowMs;
  }

  /** Counts a wrong key from address (already normalised); resolves to the 429 to send instead of the 401 when it is over the limit. */
  async failed(address: string): Promise<ApiError | undefined> {
    const { count, resetMs } = await this.#store.hit(`auth-failures:${address}`, this.#windowMs);
    if (count <= this.#limit) return undefined;
    return new ApiError('RATE_LIMIT_EXCEEDED', 'Rate limit exceeded: too many wrong API keys from this address', {
      headers: { 'Retry-After': retryAfter(resetMs) },
    });
  }
}
