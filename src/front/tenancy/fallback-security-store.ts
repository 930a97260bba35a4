// Keys' security scores and blocks in Redis when it answers, in this
// instance's memory when it does not (as the rate limits fall back): while
// Redis is away an instance scores and blocks on its own, and blocks made on
// Redis are not seen; once it is back, Redis's are used again.
import type { SecuritySettings } from '../../common/config.js';
import type { RedisStore } from './redis-store.js';
import { RedisSecurityStore } from './redis-security-store.js';
import {
  MemorySecurityStore,
  type KeyEvents,
  type ScoreInput,
  type ScoreResult,
  type SecurityStore,
} from './security-store.js';

export class FallbackSecurityStore implements SecurityStore {
  readonly #status: RedisStore;
  readonly #shared: RedisSecurityStore;
  readonly #local: SecurityStore;

  constructor(redis: RedisStore, local: SecurityStore = new MemorySecurityStore()) {
    this.#status = redis;
    this.#shared = new RedisSecurityStore(redis.client);
    this.#local = local;
  }

  async #either<T>(op: (s: SecurityStore) => Promise<T>): Promise<T> {
    if (this.#status.up) {
      try {
        return await op(this.#shared);
      } catch {
        // Redis failed this command: this instance's own scores (the limits' fallback logs Redis's state).
      }
    }
    return await op(this.#local);
  }

  add(key: string, input: ScoreInput, s: SecuritySettings): Promise<ScoreResult> {
    return this.#either((st) => st.add(key, input, s));
  }

  blockedUntil(key: string): Promise<number | undefined> {
    return this.#either((st) => st.blockedUntil(key));
  }

  unblock(key: string): Promise<boolean> {
    return this.#either((st) => st.unblock(key));
  }

  events(key: string, s: SecuritySettings): Promise<KeyEvents> {
    return this.#either((st) => st.events(key, s));
  }
}
