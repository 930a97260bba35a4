// Limits shared by every instance that uses the same Redis (REDIS_URL). Each
// operation is one Lua script, so it is atomic however many instances call at
// once, and lease expiry uses Redis's clock, so instances' clocks may differ.
import { Redis } from 'ioredis';
import type { LimitStore, WindowCount } from './store.js';

const PREFIX = 'pagescript:';

/** A Redis command that does not answer within this is a failure (the caller falls back). */
export const REDIS_COMMAND_TIMEOUT_MS = 1000;
/** Reconnect delays grow to this and stay there while Redis is away. */
const REDIS_RECONNECT_MAX_MS = 2000;

const HIT = `
local c = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {c, ttl}`;

const ACQUIRE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`;

interface Scripts {
  psHit(key: string, windowMs: number): Promise<[number, number]>;
  psAcquire(key: string, cap: number, ttlMs: number, token: string): Promise<number>;
}

export class RedisStore implements LimitStore {
  readonly #redis: Redis & Scripts;
  readonly #listeners = new Set<(up: boolean) => void>();
  #up = false;

  constructor(url: string) {
    const redis = new Redis(url, {
      lazyConnect: true,
      // Fail at once while disconnected: the caller falls back to local limits
      // instead of holding requests until Redis returns.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
      connectTimeout: REDIS_COMMAND_TIMEOUT_MS * 2,
      retryStrategy: (times) => Math.min(times * 200, REDIS_RECONNECT_MAX_MS),
    });
    redis.defineCommand('psHit', { numberOfKeys: 1, lua: HIT });
    redis.defineCommand('psAcquire', { numberOfKeys: 1, lua: ACQUIRE });
    redis.on('ready', () => this.#set(true));
    redis.on('close', () => this.#set(false));
    // Errors are reported through the status (and the fallback's log); an
    // 'error' event without a listener would end the process.
    redis.on('error', () => undefined);
    this.#redis = redis as Redis & Scripts;
  }

  /** Starts connecting; resolves when connected or when the first attempt failed (it keeps trying). */
  async connect(): Promise<void> {
    await this.#redis.connect().catch(() => undefined);
  }

  /** The connection, for the stores that share it (the security scores: redis-security-store.ts). */
  get client(): Redis {
    return this.#redis;
  }

  get up(): boolean {
    return this.#up;
  }

  onStatus(listener: (up: boolean) => void): void {
    this.#listeners.add(listener);
  }

  async hit(id: string, windowMs: number): Promise<WindowCount> {
    const [count, resetMs] = await this.#redis.psHit(`${PREFIX}rate:${id}:${windowMs}`, windowMs);
    return { count: Number(count), resetMs: Number(resetMs) };
  }

  async acquire(id: string, cap: number, token: string, ttlMs: number): Promise<boolean> {
    return (await this.#redis.psAcquire(`${PREFIX}lease:${id}`, cap, ttlMs, token)) === 1;
  }

  async release(id: string, token: string): Promise<void> {
    await this.#redis.zrem(`${PREFIX}lease:${id}`, token);
  }

  async close(): Promise<void> {
    this.#listeners.clear();
    this.#redis.disconnect(false);
    await Promise.resolve();
  }

  #set(up: boolean): void {
    if (up === this.#up) return;
    this.#up = up;
    for (const l of this.#listeners) l(up);
  }
}
