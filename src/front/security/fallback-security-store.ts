// Keys' security scores and blocks in Redis when it answers, in this
// instance's memory when it does not (as the rate limits fall back): while
// Redis is away, or one of its commands fails, an instance scores and blocks on
// its own, and blocks made on Redis are not seen; once it is back, Redis's are
// used again. A block made here holds on this instance until its cool-off ends,
// Redis back or not: a request scored here is not lost to the key's score.
import type { SecuritySettings } from '../../common/config.js';
import type { RedisStore } from '../tenancy/redis-store.js';
import { RedisSecurityStore } from './redis-security-store.js';
import {
  MemorySecurityStore,
  type KeyEvents,
  type ScoreInput,
  type ScoreResult,
  type SecurityStore,
} from './security-store.js';

export class FallbackSecurityStore implements SecurityStore {
  readonly #status: Pick<RedisStore, 'up'>;
  readonly #shared: SecurityStore;
  readonly #local: SecurityStore;

  /** `shared`: Redis's scores (tests give another store). */
  constructor(
    redis: Pick<RedisStore, 'up' | 'client'>,
    local: SecurityStore = new MemorySecurityStore(),
    shared: SecurityStore = new RedisSecurityStore(redis.client),
  ) {
    this.#status = redis;
    this.#shared = shared;
    this.#local = local;
  }

  /** Redis's answer, or undefined while it is away or when the command fails. */
  async #fromShared<T>(op: (s: SecurityStore) => Promise<T>): Promise<{ value: T } | undefined> {
    if (!this.#status.up) return undefined;
    try {
      return { value: await op(this.#shared) };
    } catch {
      // Redis failed this command: this instance's own scores (the limits' fallback logs Redis's state).
      return undefined;
    }
  }

  async #either<T>(op: (s: SecurityStore) => Promise<T>): Promise<T> {
    const shared = await this.#fromShared(op);
    return shared ? shared.value : await op(this.#local);
  }

  add(key: string, input: ScoreInput, s: SecuritySettings): Promise<ScoreResult> {
    return this.#either((st) => st.add(key, input, s));
  }

  /** The later of Redis's block and this instance's own (made while Redis could not score). */
  async blockedUntil(key: string): Promise<number | undefined> {
    const mine = await this.#local.blockedUntil(key);
    const shared = (await this.#fromShared((st) => st.blockedUntil(key)))?.value;
    if (mine === undefined) return shared;
    return shared === undefined ? mine : Math.max(mine, shared);
  }

  /** Ends the key's block in both. */
  async unblock(key: string): Promise<boolean> {
    const mine = await this.#local.unblock(key);
    const shared = (await this.#fromShared((st) => st.unblock(key)))?.value ?? false;
    return mine || shared;
  }

  events(key: string, s: SecuritySettings): Promise<KeyEvents> {
    return this.#either((st) => st.events(key, s));
  }
}
