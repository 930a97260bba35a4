// npm run key -- create --name acme [--rate 60/min] [--concurrency 2] [--proxy de] [--proxies de,us]
// npm run key -- list | revoke --name acme | activate --name acme
// npm run key -- proxies --name acme [--proxy de|none] [--proxies de,us|*|none]
// npm run key -- usage --name acme [--since 2026-11-01] [--until 2026-12-01] [--usage-file PATH]
// npm run key -- policy --name acme [--script-timeout-ms 10000] [--hosts '*.acme.example,acme.example'] …
// npm run key -- events --name acme | unblock --name acme
//
// Manages the API key file (API_KEYS_FILE, else ./pagescript-keys.json, or
// --file PATH). A new key is printed once and only its SHA-256 is stored. A
// running service picks changes up within a second, without a restart.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig, PROXY_NAME } from '../src/common/config.js';
import { parseKeyPolicy, POLICY_LIMITS, type KeyPolicy, type PolicyLimit } from '../src/front/tenancy/key-policy.js';
import { sumUsage } from '../src/front/usage.js';
import { Redis } from 'ioredis';
import { FileSecurityStore, securityStatePath } from '../src/front/security/file-security-store.js';
import { RedisSecurityStore } from '../src/front/security/redis-security-store.js';
import type { SecurityStore } from '../src/front/security/security-store.js';
import {
  ALL_PROXIES,
  formatRate,
  hashKey,
  ENV_KEY_NAME,
  KEY_NAME,
  parseKeyFile,
  parseRate,
  writeKeyFile,
  type KeyFile,
  type KeyRecord,
} from '../src/front/tenancy/keyfile.js';

const USAGE = `usage:
  npm run key -- create --name NAME [--rate N/min] [--concurrency N] [--proxy NAME] [--proxies A,B] [--file PATH]
  npm run key -- list [--file PATH]
  npm run key -- revoke --name NAME [--file PATH]
  npm run key -- activate --name NAME [--file PATH]
  npm run key -- proxies --name NAME [--proxy NAME|none] [--proxies A,B|*|none] [--file PATH]
  npm run key -- policy --name NAME [--script-timeout-ms N] [--navigation-timeout-ms N]
                        [--max-result-bytes N] [--max-log-lines N] [--script-memory-mb N]
                        [--page-memory-mb N] [--options A,B|all]
                        [--output-formats json,html|all] [--hosts PATTERN,…|any]
                        [--security-threshold N] [--file PATH]
  npm run key -- usage --name NAME [--since DATE] [--until DATE] [--usage-file PATH]
  npm run key -- events --name NAME [--file PATH]
  npm run key -- unblock --name NAME [--file PATH]
The file is --file, else $API_KEYS_FILE, else ./pagescript-keys.json.
--rate: N/s, N/min, N/h, N/day or N/<ms>ms (default: the service's RATE_LIMIT per RATE_LIMIT_WINDOW_MS).
--proxy: the upstream proxy (a name in PROXIES) the key's requests leave through when they name none.
--proxies: the proxies its requests may name in options.proxy ("*": every one in PROXIES; default: none).
policy: each field optional, falling back to the service's setting and never above it ("default" removes a
limit); --options: the request options its requests may set; --hosts: the hosts they may reach, e.g.
'*.acme.example,acme.example:8443' (the address policy still applies first); --security-threshold: the
security points at which the key is blocked (at most SECURITY_THRESHOLD).
events: the key's recent requests with security events, its score and its block; unblock: ends its block.
Both use Redis when REDIS_URL is set, else the state file beside the key file (<file>.security.json).
usage: sums the key's records in the usage file (--usage-file, else USAGE_LOG when it is a path); --since
is inclusive, --until exclusive (ISO dates or times, UTC).`;

class UsageError extends Error {}

function load(file: string): KeyFile {
  if (!existsSync(file)) return { version: 1, keys: [] };
  return parseKeyFile(readFileSync(file, 'utf8'));
}

function find(data: KeyFile, name: string | undefined): KeyRecord {
  if (name === undefined) throw new UsageError('--name is required');
  const rec = data.keys.find((k) => k.name === name);
  if (!rec) throw new UsageError(`no key named "${name}"`);
  return rec;
}

function replace(data: KeyFile, rec: KeyRecord): KeyFile {
  return { version: 1, keys: data.keys.map((k) => (k.name === rec.name ? rec : k)) };
}

function describe(k: KeyRecord): string {
  const rate =
    k.rateLimit !== undefined && k.rateLimitWindowMs !== undefined
      ? formatRate(k.rateLimit, k.rateLimitWindowMs)
      : k.rateLimit !== undefined || k.rateLimitWindowMs !== undefined
        ? `${k.rateLimit ?? 'RATE_LIMIT'} per ${k.rateLimitWindowMs ?? 'RATE_LIMIT_WINDOW_MS'} ms`
        : 'default';
  return [
    k.name,
    k.active ? 'active' : 'revoked',
    `rate ${rate}`,
    `concurrency ${k.maxConcurrency ?? 'default'}`,
    `proxy ${k.proxy ?? '-'}`,
    `proxies ${k.proxies?.join(',') ?? '-'}`,
    `policy ${k.policy === undefined ? '-' : describePolicy(k.policy)}`,
    `sha256 ${k.sha256.slice(0, 12)}…`,
    k.createdAt ?? '',
  ].join('\t');
}

/** A policy on one line: "scriptTimeoutMs=10000 hosts=*.acme.example,acme.example". */
function describePolicy(p: KeyPolicy): string {
  const parts = Object.entries(p).map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(',') : String(v)}`);
  return parts.length === 0 ? '-' : parts.join(' ');
}

/** The policy flags, by the policy field each sets. */
const POLICY_FLAGS: Record<PolicyLimit | 'options' | 'outputFormats' | 'hosts' | 'securityThreshold', string> = {
  scriptTimeoutMs: 'script-timeout-ms',
  navigationTimeoutMs: 'navigation-timeout-ms',
  maxResultBytes: 'max-result-bytes',
  maxLogLines: 'max-log-lines',
  scriptMemoryMb: 'script-memory-mb',
  pageMemoryMb: 'page-memory-mb',
  options: 'options',
  outputFormats: 'output-formats',
  hosts: 'hosts',
  securityThreshold: 'security-threshold',
};

/**
 * The key's policy with the flags given applied; throws UsageError naming the
 * flag when a value is not one, or is above the service's setting.
 */
function nextPolicy(old: KeyPolicy | undefined, values: Record<string, string | boolean | undefined>): KeyPolicy {
  const raw: Record<string, unknown> = { ...old };
  let given = false;
  for (const [field, flag] of Object.entries(POLICY_FLAGS)) {
    const v = values[flag];
    if (typeof v !== 'string') continue;
    given = true;
    const all = field === 'hosts' ? 'any' : 'all';
    if (v === 'default' || v === all) delete raw[field];
    else if (field in POLICY_LIMITS || field === 'securityThreshold') raw[field] = /^\d+$/.test(v) ? Number(v) : v;
    else {
      const list = [...new Set(v.split(',').map((s) => s.trim()))].filter((s) => s !== '');
      // Names are case-insensitive; the key file holds them as the guard compares them.
      raw[field] = field === 'hosts' ? list.map((h) => h.toLowerCase()) : list;
    }
  }
  if (!given) throw new UsageError(`give at least one of --${Object.values(POLICY_FLAGS).join(', --')}`);
  const problems: string[] = [];
  const policy = parseKeyPolicy(raw, 'policy', problems) ?? {};
  const flagOf = (p: string): string => {
    const field = /^policy\.(\w+)/.exec(p)?.[1] ?? '';
    return field in POLICY_FLAGS ? `--${POLICY_FLAGS[field as keyof typeof POLICY_FLAGS]}` : p;
  };
  if (problems.length > 0)
    throw new UsageError(problems.map((p) => `${flagOf(p)}: ${p.replace(/^policy\.\w+: /, '')}`).join('; '));
  // Never above the service's setting (as this shell's environment gives it; the service also cuts to its own).
  const config = loadConfig(process.env);
  for (const [field, { setting }] of Object.entries(POLICY_LIMITS) as [PolicyLimit, { setting: string }][]) {
    const v = policy[field];
    if (v !== undefined && v > config[field])
      throw new UsageError(`--${POLICY_FLAGS[field]} ${v} is above the service's ${setting} (${config[field]})`);
  }
  if (policy.securityThreshold !== undefined && policy.securityThreshold > config.security.threshold)
    throw new UsageError(
      `--security-threshold ${policy.securityThreshold} is above the service's SECURITY_THRESHOLD (${config.security.threshold})`,
    );
  return policy;
}

/** --proxy: a proxy's name; "none" (with clear) removes it. */
function proxyOption(value: string | undefined, clear: boolean): string | null | undefined {
  if (value === undefined) return undefined;
  if (clear && value === 'none') return null;
  if (!PROXY_NAME.test(value)) throw new UsageError(`--proxy "${value}" is not a proxy's name (as in PROXIES)`);
  return value;
}

/** --proxies: names, or "*" for all; "none" (with clear) removes the list. */
function proxiesOption(value: string | undefined, clear: boolean): string[] | null | undefined {
  if (value === undefined) return undefined;
  if (clear && value === 'none') return null;
  const names = [...new Set(value.split(',').map((n) => n.trim()))].filter((n) => n !== '');
  for (const n of names) {
    if (n !== ALL_PROXIES && !PROXY_NAME.test(n))
      throw new UsageError(`--proxies: "${n}" is not a proxy's name (as in PROXIES), nor *`);
  }
  return names;
}

/** A --since or --until date; throws UsageError naming the flag when it is not one. */
function dateOption(flag: string, v: string | undefined): Date | undefined {
  if (v === undefined) return undefined;
  const d = new Date(v);
  if (Number.isNaN(d.getTime())) throw new UsageError(`--${flag} "${v}" is not a date (e.g. 2026-11-01)`);
  return d;
}

/** npm run key -- usage: one key's records in the usage file, summed. */
function usage(values: Record<string, string | boolean | undefined>): void {
  const name = values.name;
  if (typeof name !== 'string') throw new UsageError('--name is required');
  const fromEnv = process.env.USAGE_LOG?.trim();
  const path =
    typeof values['usage-file'] === 'string' ? values['usage-file'] : fromEnv?.startsWith('/') ? fromEnv : undefined;
  if (path === undefined)
    throw new UsageError('give --usage-file PATH (or set USAGE_LOG to the file the service writes)');
  const since = dateOption('since', values.since as string | undefined);
  const until = dateOption('until', values.until as string | undefined);
  const sum = sumUsage(readFileSync(path, 'utf8'), name, since, until);
  process.stdout.write(
    `${JSON.stringify({ key: name, ...(since ? { since } : {}), ...(until ? { until } : {}), ...sum }, null, 2)}\n`,
  );
}

/** events / unblock: the key's security state, in Redis (REDIS_URL) or beside the key file. */
async function security(command: 'events' | 'unblock', name: string, file: string): Promise<void> {
  const config = loadConfig(process.env);
  let redis: Redis | undefined;
  let store: SecurityStore;
  if (config.redisUrl !== undefined) {
    redis = new Redis(config.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await redis.connect();
    store = new RedisSecurityStore(redis);
  } else store = new FileSecurityStore(securityStatePath(file));
  try {
    if (command === 'unblock') {
      const was = await store.unblock(name);
      process.stdout.write(`${name}: ${was ? 'block ended' : 'was not blocked'}\n`);
      return;
    }
    const e = await store.events(name, config.security);
    const out = {
      key: name,
      ...(e.blockedUntil === undefined ? {} : { blockedUntil: new Date(e.blockedUntil).toISOString() }),
      blocks: e.blocks,
      score: e.score,
      threshold: config.security.threshold,
      requests: e.requests.map((r) => ({ time: new Date(r.at).toISOString(), ...r, at: undefined })),
    };
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
  } finally {
    redis?.disconnect();
  }
}

async function main(argv: string[]): Promise<void> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      rate: { type: 'string' },
      concurrency: { type: 'string' },
      file: { type: 'string' },
      proxy: { type: 'string' },
      proxies: { type: 'string' },
      ...Object.fromEntries(Object.values(POLICY_FLAGS).map((f) => [f, { type: 'string' as const }])),
      since: { type: 'string' },
      until: { type: 'string' },
      'usage-file': { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  const command = positionals[0];
  if (values.help || command === undefined) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (command === 'usage') {
    usage(values);
    return;
  }
  const file = resolve(values.file ?? process.env.API_KEYS_FILE ?? 'pagescript-keys.json');
  if (command === 'events' || command === 'unblock') {
    if (typeof values.name !== 'string') throw new UsageError('--name is required');
    await security(command, values.name, file);
    return;
  }
  const data = load(file);
  switch (command) {
    case 'create': {
      const name = values.name;
      if (name === undefined || !KEY_NAME.test(name))
        throw new UsageError('--name is required: letters, digits, "_", "." or "-", at most 64');
      if (ENV_KEY_NAME.test(name)) throw new UsageError(`--name "${name}" is reserved for keys from API_KEYS`);
      if (data.keys.some((k) => k.name === name))
        throw new UsageError(`a key named "${name}" exists; revoke it or choose another name`);
      const rate = values.rate === undefined ? undefined : parseRate(values.rate);
      if (values.rate !== undefined && rate === undefined)
        throw new UsageError(`--rate "${values.rate}" is not N/s, N/min, N/h, N/day or N/<ms>ms`);
      const concurrency = values.concurrency === undefined ? undefined : Number(values.concurrency);
      if (concurrency !== undefined && !(Number.isInteger(concurrency) && concurrency >= 1 && concurrency <= 256)) {
        throw new UsageError('--concurrency must be a whole number from 1 to 256');
      }
      const proxy = proxyOption(values.proxy, false) ?? undefined;
      const proxies = proxiesOption(values.proxies, false) ?? undefined;
      const key = `ps_${randomBytes(32).toString('base64url')}`;
      const rec: KeyRecord = {
        name,
        sha256: hashKey(key),
        active: true,
        ...(rate ? { rateLimit: rate.limit, rateLimitWindowMs: rate.windowMs } : {}),
        ...(concurrency !== undefined ? { maxConcurrency: concurrency } : {}),
        ...(proxy !== undefined ? { proxy } : {}),
        ...(proxies !== undefined ? { proxies } : {}),
        createdAt: new Date().toISOString(),
      };
      writeKeyFile(file, { version: 1, keys: [...data.keys, rec] });
      process.stdout.write(
        `Created key "${name}" in ${file}.\nIt is shown this once; only its hash is stored:\n\n  ${key}\n\n` +
          `Send it as X-Gateway-Key. The service reads this file when started with API_KEYS_FILE=${file}\n`,
      );
      return;
    }
    case 'list':
      if (data.keys.length === 0) process.stdout.write(`no keys in ${file}\n`);
      for (const k of data.keys) process.stdout.write(`${describe(k)}\n`);
      return;
    case 'revoke':
    case 'activate': {
      const rec = find(data, values.name);
      const active = command === 'activate';
      const { revokedAt: _drop, ...rest } = rec;
      writeKeyFile(
        file,
        replace(data, active ? { ...rest, active } : { ...rest, active, revokedAt: new Date().toISOString() }),
      );
      process.stdout.write(`${active ? 'Activated' : 'Revoked'} key "${rec.name}" in ${file}.\n`);
      return;
    }
    case 'proxies': {
      const rec = find(data, values.name);
      const proxy = proxyOption(values.proxy, true);
      const proxies = proxiesOption(values.proxies, true);
      if (proxy === undefined && proxies === undefined) throw new UsageError('give --proxy, --proxies or both');
      const { proxy: oldProxy, proxies: oldProxies, ...rest } = rec;
      const nextProxy = proxy === undefined ? oldProxy : (proxy ?? undefined);
      const nextProxies = proxies === undefined ? oldProxies : (proxies ?? undefined);
      const next: KeyRecord = {
        ...rest,
        ...(nextProxy !== undefined ? { proxy: nextProxy } : {}),
        ...(nextProxies !== undefined ? { proxies: nextProxies } : {}),
      };
      writeKeyFile(file, replace(data, next));
      process.stdout.write(`${describe(next)}\n`);
      return;
    }
    case 'policy': {
      const rec = find(data, values.name);
      const policy = nextPolicy(rec.policy, values);
      const { policy: _old, ...rest } = rec;
      const next: KeyRecord = { ...rest, ...(Object.keys(policy).length > 0 ? { policy } : {}) };
      writeKeyFile(file, replace(data, next));
      process.stdout.write(`${describe(next)}\n`);
      return;
    }
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

main(process.argv.slice(2)).catch((e: unknown) => {
  process.stderr.write(`key: ${(e as Error).message}\n${e instanceof UsageError ? `${USAGE}\n` : ''}`);
  process.exitCode = 2;
});
