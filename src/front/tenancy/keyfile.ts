// The API key file (API_KEYS_FILE): keys by SHA-256 hash, each with a name, an
// active flag and optional limits. Read by the service (KeyRing) and written by
// `npm run key`. Never holds a key itself.
import { createHash } from 'node:crypto';
import { renameSync, writeFileSync } from 'node:fs';
import { PROXY_NAME } from '../../common/config.js';
import { parseKeyPolicy, type KeyPolicy } from './key-policy.js';

export interface KeyRecord {
  /** Shown in logs and metrics in place of the key. */
  readonly name: string;
  /** Hex SHA-256 of the key's UTF-8 bytes. */
  readonly sha256: string;
  /** An inactive key is refused like an unknown one (401 INVALID_API_KEY). */
  readonly active: boolean;
  /** Requests per window; RATE_LIMIT when absent. */
  readonly rateLimit?: number;
  /** The window of rateLimit; RATE_LIMIT_WINDOW_MS when absent. */
  readonly rateLimitWindowMs?: number;
  /** Scripts of this key running at once (across instances with Redis); no cap of its own when absent. */
  readonly maxConcurrency?: number;
  /** The upstream proxy (a name in PROXIES) this key's requests leave through when they name none. */
  readonly proxy?: string;
  /** The proxies (names in PROXIES, or "*" for all) its requests may name in options.proxy; none when absent. */
  readonly proxies?: readonly string[];
  /** What this key's requests may take and where they may go (docs/keys-and-limits.md); the service's settings when absent. */
  readonly policy?: KeyPolicy;
  readonly createdAt?: string;
  readonly revokedAt?: string;
}

export interface KeyFile {
  readonly version: 1;
  readonly keys: readonly KeyRecord[];
}

export class KeyFileError extends Error {
  override name = 'KeyFileError';
}

export const KEY_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
/** The names API_KEYS entries get (env-1, env-2, … in order); a key file may not use them. */
export const ENV_KEY_NAME = /^env-\d+$/;
const SHA256_HEX = /^[0-9a-f]{64}$/;
/** In a key's proxies: every proxy in PROXIES. */
export const ALL_PROXIES = '*';
const MAX_KEY_PROXIES = 64;

export function hashKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

function positiveInt(v: unknown, max: number): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= max;
}

/** Parses and checks a key file; throws KeyFileError naming every problem. */
export function parseKeyFile(text: string): KeyFile {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new KeyFileError(`not JSON: ${(e as Error).message}`);
  }
  if (typeof raw !== 'object' || raw === null || !Array.isArray((raw as { keys?: unknown }).keys)) {
    throw new KeyFileError('expected an object { "version": 1, "keys": [...] }');
  }
  // SECURITY: a file of a version this service does not know may mean something it cannot read (a revocation).
  const version = (raw as { version?: unknown }).version;
  if (version !== 1)
    throw new KeyFileError(`version: ${JSON.stringify(version) ?? 'missing'}, this service reads version 1`);
  const problems: string[] = [];
  const names = new Set<string>();
  const hashes = new Set<string>();
  const keys: KeyRecord[] = [];
  (raw as { keys: unknown[] }).keys.forEach((k, i) => {
    const at = `keys[${i}]`;
    if (typeof k !== 'object' || k === null) {
      problems.push(`${at}: not an object`);
      return;
    }
    const r = k as Record<string, unknown>;
    if (typeof r.name !== 'string' || !KEY_NAME.test(r.name))
      problems.push(`${at}.name: letters, digits, "_", "." or "-", at most 64`);
    else if (ENV_KEY_NAME.test(r.name)) problems.push(`${at}.name: "${r.name}" is reserved for keys from API_KEYS`);
    else if (names.has(r.name)) problems.push(`${at}.name: "${r.name}" is used twice`);
    if (typeof r.sha256 !== 'string' || !SHA256_HEX.test(r.sha256))
      problems.push(`${at}.sha256: 64 lower-case hex digits`);
    else if (hashes.has(r.sha256)) problems.push(`${at}.sha256: the same key is listed twice`);
    if (typeof r.active !== 'boolean') problems.push(`${at}.active: true or false`);
    if (r.rateLimit !== undefined && !positiveInt(r.rateLimit, 1_000_000))
      problems.push(`${at}.rateLimit: a whole number from 1 to 1000000`);
    if (
      r.rateLimitWindowMs !== undefined &&
      !(positiveInt(r.rateLimitWindowMs, 86_400_000) && r.rateLimitWindowMs >= 100)
    ) {
      problems.push(`${at}.rateLimitWindowMs: a whole number from 100 to 86400000`);
    }
    if (r.maxConcurrency !== undefined && !positiveInt(r.maxConcurrency, 256))
      problems.push(`${at}.maxConcurrency: a whole number from 1 to 256`);
    if (r.proxy !== undefined && !(typeof r.proxy === 'string' && PROXY_NAME.test(r.proxy)))
      problems.push(`${at}.proxy: the name of a proxy in PROXIES`);
    if (
      r.proxies !== undefined &&
      !(
        Array.isArray(r.proxies) &&
        r.proxies.length <= MAX_KEY_PROXIES &&
        r.proxies.every((p) => typeof p === 'string' && (p === ALL_PROXIES || PROXY_NAME.test(p)))
      )
    )
      problems.push(`${at}.proxies: an array of at most ${MAX_KEY_PROXIES} names of proxies in PROXIES, or ["*"]`);
    const policy = r.policy === undefined ? undefined : parseKeyPolicy(r.policy, `${at}.policy`, problems);
    if (typeof r.name === 'string') names.add(r.name);
    if (typeof r.sha256 === 'string') hashes.add(r.sha256);
    keys.push({
      name: r.name as string,
      sha256: r.sha256 as string,
      active: r.active as boolean,
      ...(r.rateLimit !== undefined ? { rateLimit: r.rateLimit as number } : {}),
      ...(r.rateLimitWindowMs !== undefined ? { rateLimitWindowMs: r.rateLimitWindowMs as number } : {}),
      ...(r.maxConcurrency !== undefined ? { maxConcurrency: r.maxConcurrency as number } : {}),
      ...(r.proxy !== undefined ? { proxy: r.proxy as string } : {}),
      ...(r.proxies !== undefined ? { proxies: [...new Set(r.proxies as string[])] } : {}),
      ...(policy !== undefined ? { policy } : {}),
      ...(typeof r.createdAt === 'string' ? { createdAt: r.createdAt } : {}),
      ...(typeof r.revokedAt === 'string' ? { revokedAt: r.revokedAt } : {}),
    });
  });
  if (problems.length > 0) throw new KeyFileError(problems.join('; '));
  return { version: 1, keys };
}

/**
 * Every proxy the keys name that is not in PROXIES, as problems ("keys[2].proxy:
 * …"); the service refuses such a file, as it refuses any other invalid one.
 */
export function unknownProxies(file: KeyFile, configured: readonly string[]): string[] {
  const problems: string[] = [];
  file.keys.forEach((k, i) => {
    if (k.proxy !== undefined && !configured.includes(k.proxy))
      problems.push(`keys[${i}].proxy: "${k.proxy}" is not a proxy in PROXIES`);
    for (const p of k.proxies ?? []) {
      if (p !== ALL_PROXIES && !configured.includes(p))
        problems.push(`keys[${i}].proxies: "${p}" is not a proxy in PROXIES`);
    }
  });
  return problems;
}

export function serializeKeyFile(file: KeyFile): string {
  return `${JSON.stringify({ version: 1, keys: file.keys }, null, 2)}\n`;
}

/** Writes the file whole and renames it into place, so a reader never sees half of it; readable by the owner only. */
export function writeKeyFile(file: string, data: KeyFile): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, serializeKeyFile(data), { mode: 0o600 });
  renameSync(tmp, file);
}

const UNITS_MS: Record<string, number> = {
  s: 1000,
  sec: 1000,
  second: 1000,
  min: 60_000,
  minute: 60_000,
  h: 3_600_000,
  hour: 3_600_000,
  day: 86_400_000,
};

/** "60/min", "5/s", "1000/day", "10/1500ms" → { limit, windowMs }; undefined when it is not one. */
export function parseRate(text: string): { limit: number; windowMs: number } | undefined {
  const m = /^\s*(\d+)\s*\/\s*(?:(\d+)\s*ms|(\d*)\s*([a-z]+))\s*$/i.exec(text);
  if (!m) return undefined;
  const limit = Number(m[1]);
  let windowMs: number;
  if (m[2] !== undefined) windowMs = Number(m[2]);
  else {
    const unit = UNITS_MS[(m[4] ?? '').toLowerCase()];
    if (unit === undefined) return undefined;
    windowMs = unit * (m[3] ? Number(m[3]) : 1);
  }
  if (!(limit >= 1 && limit <= 1_000_000 && windowMs >= 100 && windowMs <= 86_400_000)) return undefined;
  return { limit, windowMs };
}

export function formatRate(limit: number, windowMs: number): string {
  for (const [unit, ms] of [
    ['day', 86_400_000],
    ['h', 3_600_000],
    ['min', 60_000],
    ['s', 1000],
  ] as const) {
    if (windowMs === ms) return `${limit}/${unit}`;
  }
  return `${limit}/${windowMs}ms`;
}
