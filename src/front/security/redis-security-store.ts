// Keys' security points and blocks shared by every instance that uses the same
// Redis (REDIS_URL): each operation is one Lua script, atomic however many
// instances call at once, on Redis's clock. A key blocked on one instance is
// blocked on all, and a block outlives a restart (it lives in Redis).
import type { Redis } from 'ioredis';
import type { SecuritySettings } from '../../common/config.js';
import {
  BLOCK_MEMORY_MS,
  MAX_PAGE_TARGETS,
  MAX_SCORED_REQUESTS,
  type KeyEvents,
  type ScoredRequest,
  type ScoreInput,
  type ScoreResult,
  type SecurityStore,
} from './security-store.js';

const PREFIX = 'pagescript:security:';

// KEYS: the key's requests (zset: member "nonce|requestId|points|counts", score: ms), its page
// targets (zset: member host:port, score: last ms), its block (hash: till, blocks), the evidence
// of its last block (list of request members, for npm run key -- events).
// ARGV: windowMs, threshold, pageWeight, coolOffMs, coolOffMaxMs, blockMemoryMs, blocking (0/1),
// member ("" for none), maxRequests, maxTargets, then the page targets.
// Returns {score, blocked (0/1), till, blocks, members…}.
const ADD = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])
local from = now - window
if ARGV[8] ~= '' then redis.call('ZADD', KEYS[1], now, ARGV[8]) end
for i = 11, #ARGV do redis.call('ZADD', KEYS[2], now, ARGV[i]) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', from)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', from)
local n = redis.call('ZCARD', KEYS[1])
if n > tonumber(ARGV[9]) then redis.call('ZREMRANGEBYRANK', KEYS[1], 0, n - tonumber(ARGV[9]) - 1) end
n = redis.call('ZCARD', KEYS[2])
if n > tonumber(ARGV[10]) then redis.call('ZREMRANGEBYRANK', KEYS[2], 0, n - tonumber(ARGV[10]) - 1) end
redis.call('PEXPIRE', KEYS[1], window)
redis.call('PEXPIRE', KEYS[2], window)
local members = redis.call('ZRANGE', KEYS[1], 0, -1)
local points = 0
for _, m in ipairs(members) do
  local p = string.match(m, '^[^|]*|[^|]*|(%d+)|')
  if p then points = points + tonumber(p) end
end
local score = points + redis.call('ZCARD', KEYS[2]) * tonumber(ARGV[3])
if ARGV[7] ~= '1' or score < tonumber(ARGV[2]) then return {score, 0, 0, 0} end
local till = tonumber(redis.call('HGET', KEYS[3], 'till') or '0')
local blocks = tonumber(redis.call('HGET', KEYS[3], 'blocks') or '0')
if till > now then return {score, 0, till, blocks} end
if now - till >= tonumber(ARGV[6]) then blocks = 0 end
blocks = blocks + 1
local len = math.min(tonumber(ARGV[4]) * 2 ^ math.min(blocks - 1, 40), tonumber(ARGV[5]))
till = now + len
redis.call('HSET', KEYS[3], 'till', till, 'blocks', blocks)
redis.call('PEXPIRE', KEYS[3], len + tonumber(ARGV[6]))
redis.call('DEL', KEYS[1], KEYS[2], KEYS[4])
if #members > 0 then
  redis.call('RPUSH', KEYS[4], unpack(members, math.max(1, #members - 49)))
  redis.call('PEXPIRE', KEYS[4], len + tonumber(ARGV[6]))
end
local out = {score, 1, till, blocks}
for _, m in ipairs(members) do out[#out + 1] = m end
return out`;

// KEYS: the block. Returns {now, till, blocks}.
const BLOCKED = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return {now, tonumber(redis.call('HGET', KEYS[1], 'till') or '0'), tonumber(redis.call('HGET', KEYS[1], 'blocks') or '0')}`;

// KEYS: requests, targets, block. Ends the block (its count stays) and forgets the window. Returns 1 if it was blocked.
const UNBLOCK = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local till = tonumber(redis.call('HGET', KEYS[3], 'till') or '0')
redis.call('DEL', KEYS[1], KEYS[2])
if till > now then redis.call('HSET', KEYS[3], 'till', now) return 1 end
return 0`;

interface Scripts {
  psSecurityAdd(a: string, b: string, c: string, d: string, ...argv: (string | number)[]): Promise<(number | string)[]>;
  psSecurityBlocked(block: string): Promise<[number, number, number]>;
  psSecurityUnblock(a: string, b: string, c: string): Promise<number>;
}

function parseMember(m: string): ScoredRequest | undefined {
  const [at, requestId, points, ...counts] = m.split('|');
  try {
    return {
      at: Number(at?.split(':')[0]),
      requestId: requestId ?? '',
      points: Number(points),
      counts: JSON.parse(counts.join('|')) as Record<string, number>,
    };
  } catch {
    return undefined;
  }
}

export class RedisSecurityStore implements SecurityStore {
  readonly #redis: Redis & Scripts;
  #nonce = 0;

  constructor(redis: Redis) {
    redis.defineCommand('psSecurityAdd', { numberOfKeys: 4, lua: ADD });
    redis.defineCommand('psSecurityBlocked', { numberOfKeys: 1, lua: BLOCKED });
    redis.defineCommand('psSecurityUnblock', { numberOfKeys: 3, lua: UNBLOCK });
    this.#redis = redis as Redis & Scripts;
  }

  #keys(key: string): [string, string, string] {
    return [`${PREFIX}requests:${key}`, `${PREFIX}targets:${key}`, `${PREFIX}block:${key}`];
  }

  #evidence(key: string): string {
    return `${PREFIX}evidence:${key}`;
  }

  async add(key: string, input: ScoreInput, s: SecuritySettings): Promise<ScoreResult> {
    const r = input.request;
    const scored = r.points > 0 || input.pageTargets.length > 0;
    // The member's first field orders and separates two requests of one id; the request id has no "|".
    const member = scored
      ? `${r.at}:${(this.#nonce++).toString(36)}|${r.requestId}|${Math.round(r.points)}|${JSON.stringify(r.counts)}`
      : '';
    const out = await this.#redis.psSecurityAdd(
      ...this.#keys(key),
      this.#evidence(key),
      s.windowMs,
      input.threshold,
      s.weights.page,
      s.coolOffMs,
      s.coolOffMaxMs,
      BLOCK_MEMORY_MS,
      s.blocking ? 1 : 0,
      member,
      MAX_SCORED_REQUESTS,
      MAX_PAGE_TARGETS,
      ...input.pageTargets,
    );
    const score = Number(out[0]);
    if (Number(out[1]) !== 1) return { score };
    const requests = out
      .slice(4)
      .map((m) => parseMember(String(m)))
      .filter((x): x is ScoredRequest => x !== undefined);
    return { score, block: { until: Number(out[2]), blocks: Number(out[3]), score, requests } };
  }

  async blockedUntil(key: string): Promise<number | undefined> {
    const [now, till] = await this.#redis.psSecurityBlocked(this.#keys(key)[2]);
    // Redis's clock decides; the time returned is read on this instance's (Retry-After, the message).
    return Number(till) > Number(now) ? Date.now() + (Number(till) - Number(now)) : undefined;
  }

  async unblock(key: string): Promise<boolean> {
    return (await this.#redis.psSecurityUnblock(...this.#keys(key))) === 1;
  }

  async events(key: string, s: SecuritySettings): Promise<KeyEvents> {
    const [requests, targets, block] = this.#keys(key);
    const [now, till, blocks] = await this.#redis.psSecurityBlocked(block);
    const from = Number(now) - s.windowMs;
    // The last block's evidence, then the window's requests since.
    const members = [
      ...(await this.#redis.lrange(this.#evidence(key), 0, -1)),
      ...(await this.#redis.zrangebyscore(requests, from, '+inf')),
    ];
    const targetCount = await this.#redis.zcount(targets, from, '+inf');
    const list = members.map(parseMember).filter((x): x is ScoredRequest => x !== undefined);
    const inWindow = list.filter((r) => r.at > from);
    const score = inWindow.reduce((a, r) => a + r.points, 0) + targetCount * s.weights.page;
    return {
      requests: list,
      score,
      blocks: Number(blocks),
      ...(Number(till) > Number(now) ? { blockedUntil: Date.now() + (Number(till) - Number(now)) } : {}),
    };
  }
}
