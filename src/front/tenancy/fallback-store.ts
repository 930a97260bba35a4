// Redis when it answers, this instance's own memory when it does not: the
// service keeps serving (on local limits) while Redis is away, says so in the
// log and in /health, and goes back to Redis once it is back.
import type { Logger } from '../../common/log.js';
import type { RedisStore } from './redis-store.js';
import { MemoryStore, type LimitStore, type WindowCount } from './store.js';

export type LimitsMode = 'memory' | 'redis' | 'local-fallback';

export class FallbackStore implements LimitStore {
  readonly #redis: RedisStore;
  readonly #local = new MemoryStore();
  readonly #logger: Logger;
  /** Which store granted each lease, so it is returned to the same one. */
  readonly #leaseStore = new Map<string, LimitStore>();
  #shared = true;

  /** Give it a store that has tried to connect once; when that failed, it starts on local limits. */
  constructor(redis: RedisStore, logger: Logger) {
    this.#redis = redis;
    this.#logger = logger;
    redis.onStatus((up) => (up ? this.#back() : this.#lost('connection closed')));
    if (!redis.up) this.#lost('cannot connect');
  }

  get mode(): LimitsMode {
    return this.#shared ? 'redis' : 'local-fallback';
  }

  async hit(id: string, windowMs: number): Promise<WindowCount> {
    return await this.#either((s) => s.hit(id, windowMs));
  }

  async acquire(id: string, cap: number, token: string, ttlMs: number): Promise<boolean> {
    let used: LimitStore = this.#local;
    const ok = await this.#either((s) => {
      used = s;
      return s.acquire(id, cap, token, ttlMs);
    });
    if (ok) this.#leaseStore.set(token, used);
    return ok;
  }

  async release(id: string, token: string): Promise<void> {
    const store = this.#leaseStore.get(token) ?? this.#local;
    this.#leaseStore.delete(token);
    // A lease Redis cannot take back now ends with its TTL.
    await store.release(id, token).catch(() => undefined);
  }

  async close(): Promise<void> {
    await this.#redis.close();
    await this.#local.close();
  }

  async #either<T>(op: (s: LimitStore) => Promise<T>): Promise<T> {
    if (this.#redis.up) {
      try {
        const result = await op(this.#redis);
        this.#back();
        return result;
      } catch (e) {
        this.#lost((e as Error).message);
      }
    }
    return await op(this.#local);
  }

  #lost(reason: string): void {
    if (!this.#shared) return;
    this.#shared = false;
    this.#logger.warn(
      { reason, limits: 'local' },
      'Redis unavailable; rate and concurrency limits are enforced per instance until it is back',
    );
  }

  #back(): void {
    if (this.#shared) return;
    this.#shared = true;
    this.#logger.info({ limits: 'redis' }, 'Redis is back; rate and concurrency limits are shared again');
  }
}
