// Every setting of the service: its environment variable, default, unit and
// validation. Parsed once at start and frozen; nothing else reads process.env.
import { existsSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { resolve as resolvePath } from 'node:path';
import pkg from '../package.json' with { type: 'json' };

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/**
 * Which Chromium: `shell` is chromium-headless-shell (Puppeteer's `headless:
 * 'shell'`, the old headless mode without the browser's UI layer: a fresh
 * context costs a quarter of the CPU), `full` the whole browser in its new
 * headless mode. README, "Chromium: the headless shell or the full browser".
 */
export type ChromiumMode = 'shell' | 'full';

/**
 * Where Debian's packages put each (scripts/bootstrap.mjs installs them). Written
 * once, in package.json, because bootstrap.mjs (plain JavaScript, run before
 * anything is built) needs them too.
 */
export const CHROMIUM_PATHS: Readonly<Record<ChromiumMode, string>> = {
  shell: pkg.pagescript.chromiumShellPath,
  full: pkg.pagescript.chromiumPath,
};

export interface EgressAllowEntry {
  /** Lower-cased host name or IP literal, without brackets. */
  readonly host: string;
  readonly port: number;
}

export interface Config {
  readonly port: number;
  readonly host: string;
  /** Keys given in API_KEYS; when empty, one key is generated at start. */
  readonly apiKeys: readonly string[];
  /** The key file (absolute path), re-read when it changes. */
  readonly apiKeysFile: string | undefined;
  /** Failed authentications per client address per rate-limit window. */
  readonly authFailureLimit: number;
  /** Balancers in front of the service whose X-Forwarded-For is believed. */
  readonly trustProxy: number;
  /** Redis shared by every instance for limits; in-memory limits when unset. */
  readonly redisUrl: string | undefined;
  readonly gatewayHost: string | undefined;
  readonly scriptTimeoutMs: number;
  readonly scriptMemoryMb: number;
  readonly navigationTimeoutMs: number;
  readonly rateLimit: number;
  readonly rateLimitWindowMs: number;
  readonly maxConcurrency: number;
  readonly queueLimit: number;
  readonly queueTimeoutMs: number;
  /** A request's headers must arrive within this of its first byte (or of the connection, for the first request). */
  readonly headersTimeoutMs: number;
  /** A request's headers and whole body must arrive within this. Not the job: it ends once the body is in. */
  readonly requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  readonly keepAliveTimeoutMs: number;
  /** A reply whose reader takes nothing for this long is cut off and its memory freed. */
  readonly replyStallTimeoutMs: number;
  /** Bytes of replies held while their readers take them; past it, the oldest reply of the key holding most is cut off. */
  readonly replyMemoryBytes: number;
  /** Open connections at once; past it, new connections are closed at once. */
  readonly maxConnections: number;
  /** Open connections at once from one client address (IPv6: one /64); not applied behind TRUST_PROXY balancers. */
  readonly maxConnectionsPerAddress: number;
  readonly maxBodyBytes: number;
  readonly maxResultBytes: number;
  readonly maxLogLines: number;
  readonly maxLogBytes: number;
  readonly prewarmedContexts: number;
  readonly prewarmedIsolates: number;
  /** Chromium is replaced after this many contexts; 0: never. */
  readonly browserRecycleContexts: number;
  /** On SIGTERM/SIGINT, how long running scripts may go on before they are ended. */
  readonly shutdownGraceMs: number;
  /** When set, GET /metrics needs `Authorization: Bearer <token>`. */
  readonly metricsToken: string | undefined;
  /** GET /playground and its assets; off: 404. */
  readonly playground: boolean;
  readonly egressAllowlist: readonly EgressAllowEntry[];
  readonly chromium: ChromiumMode;
  readonly executablePath: string;
  /** Script executor processes (each with its own Chromium); see README, "How it is built". */
  readonly executors: number;
  /** When the service runs as root, executors and Chromium run as this unprivileged user. */
  readonly executorUser: string;
  readonly logLevel: LogLevel;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
  constructor(readonly problems: readonly string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
  }
}

type Env = Readonly<Record<string, string | undefined>>;

const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/**
 * The memory the service may use, in bytes: the limit of its cgroup (a
 * container's `--memory`, cgroup v1 or v2) when there is one, else the machine's.
 */
export function memoryBudgetBytes(
  // Node's reading of the cgroup limit: 0 or a huge number when there is none.
  limit: number = process.constrainedMemory(),
  machine: number = totalmem(),
): number {
  return limit > 0 && limit < machine ? limit : machine;
}

/**
 * The default concurrency: one script per core (at least two), and no more than
 * memory allows (~1 GiB each, of memoryBudgetBytes()). Chromium's work per request is CPU-bound: on 2
 * cores, 2 at once served 4.0–4.6 req/s where 4 at once served 3.6–3.7 (npm run
 * bench's page, 4 clients). Sites that keep scripts waiting on the network gain
 * from a higher MAX_CONCURRENCY.
 */
export function defaultConcurrency(): number {
  const byCores = Math.max(2, cpus().length);
  const byMemory = Math.max(1, Math.floor(memoryBudgetBytes() / 2 ** 30));
  return Math.min(byCores, byMemory);
}

/**
 * What a job may take after its navigation and script limits: closing its
 * context and isolate, and the reply. The queue timeout's default covers a
 * whole job, so that a request waiting behind another key's longest job (the
 * next free slot is its, by turn) still runs.
 */
export const JOB_CLOSE_MARGIN_MS = 15_000;

/** The default QUEUE_TIMEOUT_MS: the longest job (navigation + script + close), 60 s with the default limits. */
export function defaultQueueTimeoutMs(navigationTimeoutMs: number, scriptTimeoutMs: number): number {
  return navigationTimeoutMs + scriptTimeoutMs + JOB_CLOSE_MARGIN_MS;
}

/**
 * The default REPLY_MEMORY_BYTES: two full-size replies per script slot. A
 * reply is held whole until its reader has taken it; the slot is free again
 * as soon as the job ends, so without this bound the replies waiting for slow
 * readers are bounded only by how many requests a key may make.
 */
export function defaultReplyMemoryBytes(maxConcurrency: number, maxResultBytes: number): number {
  return 2 * maxConcurrency * maxResultBytes;
}

/**
 * The default MAX_CONNECTIONS: a fixed number until the service has a memory
 * budget to derive it from. An open connection costs a socket, a file
 * descriptor and a few KiB; the large costs (a script, a reply of up to
 * MAX_RESULT_BYTES) are bounded by MAX_CONCURRENCY and REPLY_MEMORY_BYTES, not
 * by this.
 */
export const DEFAULT_MAX_CONNECTIONS = 1024;

/**
 * The default MAX_CONNECTIONS_PER_ADDRESS: an eighth of MAX_CONNECTIONS, so
 * that one address (a client, or everyone behind one NAT) cannot take them
 * all, while an office behind one address still has room.
 */
export function defaultMaxConnectionsPerAddress(maxConnections: number): number {
  return Math.max(1, Math.floor(maxConnections / 8));
}

export function parseEgressAllowlist(value: string, problems: string[]): EgressAllowEntry[] {
  const out: EgressAllowEntry[] = [];
  for (const raw of value.split(',')) {
    const item = raw.trim();
    if (item === '') continue;
    // host:port, [v6]:port
    const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]\s]+)):(\d{1,5})$/.exec(item);
    const port = m ? Number(m[3]) : NaN;
    if (!m || !(port >= 1 && port <= 65535)) {
      problems.push(`EGRESS_ALLOWLIST: "${item}" is not host:port (e.g. 127.0.0.1:8080 or [::1]:8080)`);
      continue;
    }
    out.push({ host: (m[1] ?? m[2] ?? '').toLowerCase(), port });
  }
  return out;
}

/**
 * CHROMIUM and PUPPETEER_EXECUTABLE_PATH together. CHROMIUM names the mode; the
 * path, when given, wins over the mode's Debian path. With a path and no mode,
 * the mode is read from the file name (Chrome's and Debian's headless shells
 * are named *headless[-_]shell). With neither, the shell where it is installed,
 * else the full browser.
 */
export function chooseChromium(
  env: Env,
  problems: string[],
  installed: (path: string) => boolean = existsSync,
): { chromium: ChromiumMode; executablePath: string } {
  const rawMode = env.CHROMIUM?.trim().toLowerCase() ?? '';
  const path = env.PUPPETEER_EXECUTABLE_PATH?.trim() ?? '';
  let mode: ChromiumMode | undefined;
  if (rawMode === 'shell' || rawMode === 'full') mode = rawMode;
  else if (rawMode !== '') problems.push(`CHROMIUM: "${env.CHROMIUM}" must be shell or full`);
  if (path !== '')
    return { chromium: mode ?? (/headless[-_]shell/i.test(path) ? 'shell' : 'full'), executablePath: path };
  mode ??= installed(CHROMIUM_PATHS.shell) || !installed(CHROMIUM_PATHS.full) ? 'shell' : 'full';
  return { chromium: mode, executablePath: CHROMIUM_PATHS[mode] };
}

export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = [];

  const int = (name: string, def: number, min: number, max: number): number => {
    const raw = env[name];
    if (raw === undefined || raw.trim() === '') return def;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) {
      problems.push(`${name}: "${raw}" must be a whole number from ${min} to ${max}`);
      return def;
    }
    return n;
  };

  const apiKeys = (env.API_KEYS ?? '')
    .split(',')
    .map((k) => k.trim())
    .filter((k) => k !== '');
  for (const k of apiKeys) {
    if (k.length < 16) problems.push('API_KEYS: every key must be at least 16 characters long');
  }

  const logLevel = (env.LOG_LEVEL ?? 'info').trim().toLowerCase() as LogLevel;
  if (!LOG_LEVELS.includes(logLevel))
    problems.push(`LOG_LEVEL: "${env.LOG_LEVEL}" must be one of ${LOG_LEVELS.join(', ')}`);

  const host = (env.HOST ?? '127.0.0.1').trim();
  if (host === '') problems.push('HOST: must not be empty');

  const apiKeysFile = env.API_KEYS_FILE?.trim() ? resolvePath(env.API_KEYS_FILE.trim()) : undefined;
  const redisUrl = env.REDIS_URL?.trim() ? env.REDIS_URL.trim() : undefined;
  if (redisUrl !== undefined && !/^rediss?:\/\/[^\s]+$/.test(redisUrl))
    problems.push('REDIS_URL: must be redis://[user:password@]host:port[/db] or rediss://…');

  const playground = (env.PLAYGROUND ?? 'on').trim().toLowerCase();
  if (playground !== 'on' && playground !== 'off') problems.push(`PLAYGROUND: "${env.PLAYGROUND}" must be on or off`);

  const { chromium, executablePath } = chooseChromium(env, problems);
  const executorUser = (env.EXECUTOR_USER ?? 'pagescript-exec').trim();
  if (!/^[a-z_][a-z0-9_-]{0,31}$/.test(executorUser))
    problems.push(`EXECUTOR_USER: "${executorUser}" is not a user name`);

  const navigationTimeoutMs = int('NAVIGATION_TIMEOUT_MS', 15_000, 100, 600_000);
  const scriptTimeoutMs = int('SCRIPT_TIMEOUT_MS', 30_000, 100, 600_000);
  const headersTimeoutMs = int('HEADERS_TIMEOUT_MS', 20_000, 100, 600_000);
  const requestTimeoutMs = int('REQUEST_TIMEOUT_MS', 30_000, 100, 600_000);
  if (requestTimeoutMs < headersTimeoutMs)
    problems.push(
      `REQUEST_TIMEOUT_MS: ${requestTimeoutMs} must not be less than HEADERS_TIMEOUT_MS (${headersTimeoutMs}); it covers the headers too`,
    );

  const maxConnections = int('MAX_CONNECTIONS', DEFAULT_MAX_CONNECTIONS, 1, 1_000_000);
  const maxConcurrency = int('MAX_CONCURRENCY', defaultConcurrency(), 1, 256);
  const maxResultBytes = int('MAX_RESULT_BYTES', 10 * 1024 * 1024, 1024, 256 * 1024 * 1024);
  const replyMemoryBytes = int(
    'REPLY_MEMORY_BYTES',
    defaultReplyMemoryBytes(maxConcurrency, maxResultBytes),
    1024 * 1024,
    64 * 1024 ** 3,
  );
  if (replyMemoryBytes < maxResultBytes)
    problems.push(
      `REPLY_MEMORY_BYTES: ${replyMemoryBytes} must not be less than MAX_RESULT_BYTES (${maxResultBytes}); one reply must fit`,
    );

  const config: Config = {
    port: int('PORT', 3000, 0, 65535),
    host,
    apiKeys: [...new Set(apiKeys)],
    apiKeysFile,
    authFailureLimit: int('AUTH_FAILURE_LIMIT', 20, 1, 1_000_000),
    trustProxy: int('TRUST_PROXY', 0, 0, 16),
    redisUrl,
    gatewayHost: env.GATEWAY_HOST?.trim() ? env.GATEWAY_HOST.trim().toLowerCase() : undefined,
    scriptTimeoutMs,
    scriptMemoryMb: int('SCRIPT_MEMORY_MB', 128, 16, 4096),
    navigationTimeoutMs,
    rateLimit: int('RATE_LIMIT', 60, 1, 1_000_000),
    rateLimitWindowMs: int('RATE_LIMIT_WINDOW_MS', 60_000, 100, 86_400_000),
    maxConcurrency,
    queueLimit: int('QUEUE_LIMIT', 100, 0, 100_000),
    queueTimeoutMs: int('QUEUE_TIMEOUT_MS', defaultQueueTimeoutMs(navigationTimeoutMs, scriptTimeoutMs), 0, 1_800_000),
    headersTimeoutMs,
    requestTimeoutMs,
    keepAliveTimeoutMs: int('KEEP_ALIVE_TIMEOUT_MS', 10_000, 100, 600_000),
    replyStallTimeoutMs: int('REPLY_STALL_TIMEOUT_MS', 30_000, 100, 600_000),
    replyMemoryBytes,
    maxConnections,
    maxConnectionsPerAddress: int(
      'MAX_CONNECTIONS_PER_ADDRESS',
      defaultMaxConnectionsPerAddress(maxConnections),
      1,
      1_000_000,
    ),
    maxBodyBytes: int('MAX_BODY_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    maxResultBytes,
    maxLogLines: int('MAX_LOG_LINES', 1000, 1, 100_000),
    maxLogBytes: int('MAX_LOG_BYTES', 256 * 1024, 1024, 16 * 1024 * 1024),
    prewarmedContexts: int('PREWARM_CONTEXTS', 2, 0, 64),
    prewarmedIsolates: int('PREWARM_ISOLATES', 2, 0, 64),
    browserRecycleContexts: int('BROWSER_RECYCLE_CONTEXTS', 1000, 0, 10_000_000),
    shutdownGraceMs: int('SHUTDOWN_GRACE_MS', 10_000, 0, 600_000),
    metricsToken: env.METRICS_TOKEN?.trim() ? env.METRICS_TOKEN.trim() : undefined,
    playground: playground !== 'off',
    egressAllowlist: parseEgressAllowlist(env.EGRESS_ALLOWLIST ?? '', problems),
    chromium,
    executablePath,
    executors: int('EXECUTORS', 1, 1, 16),
    executorUser,
    logLevel: LOG_LEVELS.includes(logLevel) ? logLevel : 'info',
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}

/** Returns a copy of the config with the given keys, for tests and for the generated key. */
export function withConfig(config: Config, patch: Partial<Config>): Config {
  return Object.freeze({ ...config, ...patch });
}
