// Every setting of the service: its environment variable, default, unit and
// validation. Parsed once at start and frozen; nothing else reads process.env.
import { existsSync } from 'node:fs';
import { isIP } from 'node:net';
import { cpus } from 'node:os';
import { resolve as resolvePath } from 'node:path';
import pkg from '../../package.json' with { type: 'json' };
import { detectServiceMemoryMb } from './service-memory.js';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/**
 * Which Chromium: `shell` is chromium-headless-shell (Puppeteer's `headless:
 * 'shell'`, the old headless mode without the browser's UI layer: a fresh
 * context costs a quarter of the CPU), `full` the whole browser in its new
 * headless mode. docs/chromium.md.
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

/**
 * An upstream proxy the operator named in PROXIES (docs/network.md "Upstream proxies").
 * SECURITY: username and password are secrets like the API keys: the front
 * holds them and hands them to the egress guard only, never to a job.
 */
export interface UpstreamProxy {
  /** What requests (options.proxy) and key files name it by; shown in logs and metrics. */
  readonly name: string;
  readonly protocol: 'http' | 'https' | 'socks5';
  /** Host name or IP literal (without brackets). */
  readonly host: string;
  readonly port: number;
  readonly username?: string;
  readonly password?: string;
  /** The proxy is given host names (after the guard has checked them), not only the addresses the guard chose. */
  readonly mayResolve: boolean;
}

/**
 * Per-key monitoring of security events and the block past a threshold
 * (docs/security.md "Monitoring and blocking"). A key's policy may lower the threshold only.
 */
export interface SecuritySettings {
  /** SECURITY_BLOCKING: on (default) scores keys and blocks; off records and logs events only. */
  readonly blocking: boolean;
  /** The sliding window a key's points are summed over, in ms. */
  readonly windowMs: number;
  /** Points within the window at which a key is blocked. */
  readonly threshold: number;
  /** Points per event by how it came about (src/protocol/security.ts SecurityVia). */
  readonly weights: {
    /** The request's url, or a navigation through the membrane (goto, frame.goto, request.continue), refused. */
    readonly navigation: number;
    /** Each distinct host:port the page's own connections (subresources, redirects, fetches) were refused within the window. */
    readonly page: number;
    /** A page method or property the isolate refused. */
    readonly method: number;
    /** A slot process that died or was killed during the request (not a memory kill, not a timeout). */
    readonly slot: number;
  };
  /** The first block's length, in ms; each repeat block doubles it, up to coolOffMaxMs. */
  readonly coolOffMs: number;
  readonly coolOffMaxMs: number;
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
  /** Per-key monitoring of security events, and the block (SECURITY_*). */
  readonly security: SecuritySettings;
  /** Scripts at once: MAX_CONCURRENCY, or derived from memory and cores; never more than SERVICE_MEMORY_MB allows. */
  readonly maxConcurrency: number;
  /** MAX_CONCURRENCY as given, when it was more than SERVICE_MEMORY_MB allows (and was cut to maxConcurrency). */
  readonly maxConcurrencyAsked: number | undefined;
  /** Memory of the Chromium processes serving one request (its renderers, workers, its storage), in MiB. */
  readonly pageMemoryMb: number;
  /** What the whole service (front, egress, slot processes, isolates, every Chromium) may use: SERVICE_MEMORY_MB or detected. */
  readonly serviceMemoryMb: number;
  /** How serviceMemoryMb is shared out (see memoryPlan). */
  readonly memory: MemoryPlan;
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
  /** Open connections at once; past it, new connections are closed at once. Default: from SERVICE_MEMORY_MB. */
  readonly maxConnections: number;
  /** Open connections at once from one client address (IPv6: one /64); not applied behind TRUST_PROXY balancers. */
  readonly maxConnectionsPerAddress: number;
  readonly maxBodyBytes: number;
  readonly maxResultBytes: number;
  readonly maxLogLines: number;
  readonly maxLogBytes: number;
  /** Where each request's usage record goes (USAGE_LOG): nowhere, stdout, or appended to a file. */
  readonly usageLog:
    { readonly to: 'off' } | { readonly to: 'stdout' } | { readonly to: 'file'; readonly path: string };
  /** How many key names /metrics labels usage with; the others count under "_other". */
  readonly usageMetricsKeys: number;
  readonly prewarmedContexts: number;
  readonly prewarmedIsolates: number;
  /** Chromium is replaced after this many contexts; 0: never. */
  readonly browserRecycleContexts: number;
  /** Slot processes past the first (and their Chromium) are closed after this long with no request (relaunched on demand); 0: never. */
  readonly idleSlotCloseMs: number;
  /** A slot process is replaced after this many requests (its memory starts afresh); 0: never. */
  readonly slotRecycleRequests: number;
  /** On SIGTERM/SIGINT, how long running and queued requests may go on before they are ended. */
  readonly shutdownGraceMs: number;
  /** When set, GET /metrics needs `Authorization: Bearer <token>`. */
  readonly metricsToken: string | undefined;
  /** GET /playground and its assets; off: 404. */
  readonly playground: boolean;
  /**
   * Cgroups per slot (CPU, memory, tasks) where the front may make them
   * (src/front/cgroups/slot-groups.ts); SLOT_CGROUPS=off (or the deprecated SLOT_CPU_GROUPS=off): never.
   */
  readonly slotCgroups: boolean;
  /**
   * As root, whether a slot's Chromium runs from an execute-only copy with its SUID
   * sandbox helper, so that its processes are non-dumpable (SLOT_NON_DUMPABLE);
   * off: from its readable binary with its user-namespace sandbox (src/front/host/slot-privacy.ts).
   */
  readonly slotNonDumpable: boolean;
  /** Each slot's cap on tasks (processes and threads) with its CPU groups (src/front/cgroups/task-limits.ts); SLOT_MAX_TASKS. */
  readonly slotMaxTasks: number;
  /**
   * CPU_PROFILE_DIR: where the egress process and slot 0's process write a V8 CPU profile (`--cpu-prof`) when
   * they exit; unset: none. For `npm run bench -- --profile`; an operator's tool, never a tenant's.
   */
  readonly cpuProfileDir: string | undefined;
  readonly egressAllowlist: readonly EgressAllowEntry[];
  /** DNS servers the egress guard asks (DNS_SERVERS), as "ip" or "ip:port"; empty: those of /etc/resolv.conf. */
  readonly dnsServers: readonly string[];
  /** Upstream proxies a request may leave through (PROXIES); empty: every request leaves from this machine. */
  readonly proxies: readonly UpstreamProxy[];
  readonly chromium: ChromiumMode;
  readonly executablePath: string;
  /** As root, slot i's process and Chromium run as the user `${slotUserPrefix}${i}` (src/front/host/users.ts). */
  readonly slotUserPrefix: string;
  /** As root, the egress process's user: none of the slots' (SECURITY: it will hold proxy credentials). */
  readonly egressUser: string;
  /**
   * The loopback ports the egress guard listens on (EGRESS_PORTS), inclusive: the
   * only ones the kernel lets a slot's user reach (src/front/host/kernel-lock.ts).
   */
  readonly egressPorts: { readonly first: number; readonly last: number };
  /** As root, whether the kernel refuses the slots' users every connection but to the guard (EGRESS_KERNEL_LOCK). */
  readonly egressKernelLock: boolean;
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
 * The service's own memory, before any request, in MiB (anonymous + shared
 * resident memory): the front, a slot process (Node, Puppeteer, its prepared
 * isolate), and one slot's Chromium with its spare context (CHROMIUM_BASE_MB, by
 * Chromium mode), each what it holds at rest with room (docs/performance.md,
 * "Why the constants are what they are"); the egress process's is EGRESS_BASE_MB.
 */
export const FRONT_BASE_MB = 128;
export const SLOT_BASE_MB = 128;
/** A slot process's V8 heap beyond what its request's host-side queues may hold (Puppeteer, the membrane), in MiB. */
export const SLOT_HEAP_BASE_MB = 64;
/**
 * A slot process's V8 semi-space limit (--max-semi-space-size), in MiB: its
 * young generation is at most three of these. Left to V8, a long-lived slot
 * process's young generation grows until it squeezes the old space under
 * --max-old-space-size, which is then collected back to back (docs/performance.md,
 * "Why the constants are what they are").
 */
export const SLOT_SEMI_SPACE_MB = 16;
/**
 * The egress process: Node and the guard, with room over what it holds at rest and
 * with pages loading through it (docs/performance.md); its connections' buffers
 * are bounded by the guard's limits per connection.
 */
export const EGRESS_BASE_MB = 64;
export const CHROMIUM_BASE_MB: Readonly<Record<ChromiumMode, number>> = { shell: 192, full: 320 };
/**
 * What the host may hold for one request beyond its isolate, in MiB: what
 * src/slot/membrane/budgets.ts lets wait on the membrane (32 M characters in flight and
 * 32 M queued toward the isolate, one byte a character) and four copies of the
 * largest result (the isolate's string, its JSON, and the reply on the front's
 * wire: its JSON line, the result's text escaped once more, and that line's bytes).
 */
export function hostRequestMb(maxResultBytes: number): number {
  return 64 + 4 * Math.ceil(maxResultBytes / 2 ** 20);
}

/** How SERVICE_MEMORY_MB is shared out, in MiB; what /health and /metrics show. */
export interface MemoryPlan {
  /** The front and the egress process. */
  readonly baseMb: number;
  /** One slot process at rest (Node, Puppeteer, a prepared isolate); there is one per slot (MAX_CONCURRENCY). */
  readonly slotBaseMb: number;
  /** One slot's Chromium at rest. */
  readonly chromiumBaseMb: number;
  /** What one running request may add: PAGE_MEMORY_MB + SCRIPT_MEMORY_MB + its host-side queues. */
  readonly perRequestMb: number;
  /**
   * The hard ceiling of one slot process (its host side: Node, Puppeteer, the
   * membrane, the isolate): slotBaseMb + SCRIPT_MEMORY_MB + the host-side
   * queues. The front reads its resident memory from /proc; past it the
   * request is 400 MEMORY_LIMIT_EXCEEDED and the process is replaced.
   */
  readonly slotHostLimitMb: number;
  /** The slot process's V8 heap limit (--max-old-space-size): SLOT_HEAP_BASE_MB + the host-side queues. */
  readonly slotHeapMb: number;
  /** What the service may use with every slot busy: baseMb + the slots at rest + perRequestMb per slot. */
  readonly plannedMb: number;
}

export function memoryPlan(opts: {
  readonly concurrency: number;
  readonly chromium: ChromiumMode;
  readonly pageMemoryMb: number;
  readonly scriptMemoryMb: number;
  readonly maxResultBytes: number;
}): MemoryPlan {
  const baseMb = FRONT_BASE_MB + EGRESS_BASE_MB;
  const chromiumBaseMb = CHROMIUM_BASE_MB[opts.chromium];
  const hostMb = hostRequestMb(opts.maxResultBytes);
  const perRequestMb = opts.pageMemoryMb + opts.scriptMemoryMb + hostMb;
  const plannedMb = baseMb + opts.concurrency * (SLOT_BASE_MB + chromiumBaseMb + perRequestMb);
  return {
    baseMb,
    slotBaseMb: SLOT_BASE_MB,
    chromiumBaseMb,
    perRequestMb,
    slotHostLimitMb: SLOT_BASE_MB + opts.scriptMemoryMb + hostMb,
    slotHeapMb: SLOT_HEAP_BASE_MB + hostMb,
    plannedMb,
  };
}

/** The most requests at once whose plan fits in serviceMemoryMb (at least one, even when one does not fit). */
export function concurrencyByMemory(
  serviceMemoryMb: number,
  plan: Omit<Parameters<typeof memoryPlan>[0], 'concurrency'>,
): number {
  let fits = 1;
  for (let c = 2; c <= MAX_CONCURRENCY_LIMIT; c++) {
    if (memoryPlan({ ...plan, concurrency: c }).plannedMb > serviceMemoryMb) break;
    fits = c;
  }
  return fits;
}

/** MAX_CONCURRENCY's upper bound. */
export const MAX_CONCURRENCY_LIMIT = 256;

/**
 * The default concurrency: one script per core (at least two), and no more than
 * fits in SERVICE_MEMORY_MB (concurrencyByMemory). Chromium's work per request is
 * CPU-bound, so more scripts than cores serve fewer requests a second (docs/performance.md).
 * Sites that keep scripts waiting on the network gain from a higher MAX_CONCURRENCY.
 */
export function defaultConcurrency(byMemory: number, cores: number = cpus().length): number {
  return Math.min(Math.max(2, cores), byMemory);
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

/** SHUTDOWN_GRACE_MS's ceiling, set or derived. */
export const MAX_SHUTDOWN_GRACE_MS = 600_000;
/**
 * The egress guard's ports unless EGRESS_PORTS says: below Linux's default
 * ephemeral range (32768-60999), so the kernel never gives one of them to an
 * outgoing connection, and shared by every instance of a machine (each takes free ones).
 */
export const DEFAULT_EGRESS_PORTS = Object.freeze({ first: 28_000, last: 28_999 });
/** The fewest ports EGRESS_PORTS may hold: the browser-wide one and a few per slot. */
export const MIN_EGRESS_PORTS = 64;

/**
 * The default SHUTDOWN_GRACE_MS: the longest an admitted request can take, so
 * that a drain finishes every one of them: its wait for a slot (QUEUE_TIMEOUT_MS)
 * and then a whole job (navigation + script + close). 120 s with the default limits.
 */
export function defaultShutdownGraceMs(
  queueTimeoutMs: number,
  navigationTimeoutMs: number,
  scriptTimeoutMs: number,
): number {
  return Math.min(MAX_SHUTDOWN_GRACE_MS, queueTimeoutMs + defaultQueueTimeoutMs(navigationTimeoutMs, scriptTimeoutMs));
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
 * The default MAX_CONNECTIONS: one per MiB of SERVICE_MEMORY_MB (1024 for
 * 1 GiB), from 256 to 16384. An open connection costs a socket, a file
 * descriptor, the parser and a few KiB of buffers: budgeting 64 KiB for each
 * gives all of them together a sixteenth of the memory. The large costs (a
 * script, a reply of up to MAX_RESULT_BYTES) are bounded by MAX_CONCURRENCY and
 * REPLY_MEMORY_BYTES, not by this; the upper bound stays well under the usual
 * open-file limits.
 */
export function defaultMaxConnections(serviceMemoryMb: number): number {
  return Math.min(16_384, Math.max(256, serviceMemoryMb));
}

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

/** EGRESS_PORTS: "first-last", at least MIN_EGRESS_PORTS of them, none privileged. */
export function parseEgressPorts(value: string, problems: string[]): { first: number; last: number } {
  const m = /^(\d{4,5})-(\d{4,5})$/.exec(value.trim());
  const first = Number(m?.[1]);
  const last = Number(m?.[2]);
  if (!m || !(first >= 1024 && last <= 65535 && last - first + 1 >= MIN_EGRESS_PORTS)) {
    problems.push(
      `EGRESS_PORTS: "${value}" is not a range of at least ${MIN_EGRESS_PORTS} ports within 1024-65535 (e.g. 28000-28999)`,
    );
    return DEFAULT_EGRESS_PORTS;
  }
  return { first, last };
}

export function parseDnsServers(value: string, problems: string[]): string[] {
  const out: string[] = [];
  for (const raw of value.split(',')) {
    const item = raw.trim();
    if (item === '') continue;
    // ip, ip:port, [v6]:port, or a bare v6 address (as resolv.conf and c-ares write them)
    const m = /^(?:\[([0-9a-fA-F:.]+)\]|(\d{1,3}(?:\.\d{1,3}){3}))(?::(\d{1,5}))?$/.exec(item);
    const ip = m ? (m[1] ?? m[2] ?? '') : isIP(item) === 6 ? item : '';
    const port = m?.[3] === undefined ? 53 : Number(m[3]);
    if (isIP(ip) === 0 || !(port >= 1 && port <= 65535)) {
      problems.push(
        `DNS_SERVERS: "${item}" is not an IP address with an optional port (e.g. 10.0.0.2 or 10.0.0.2:5353)`,
      );
      continue;
    }
    out.push(isIP(ip) === 6 ? `[${ip}]:${port}` : `${ip}:${port}`);
  }
  return out;
}

/** A proxy's name: what options.proxy and the key file say. */
export const PROXY_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const PROXY_DEFAULT_PORTS: Readonly<Record<UpstreamProxy['protocol'], number>> = { http: 80, https: 443, socks5: 1080 };
/** The flag after a proxy's URL: it may resolve host names itself. */
const MAY_RESOLVE = ';resolve';

/**
 * PROXIES: `name=URL[;resolve]`, comma-separated, e.g.
 * `de=http://user:pass@proxy.example:3128,geo=socks5://u:p@10.0.0.5:1080;resolve`.
 * SECURITY: a problem names the entry by its position and name, never by its
 * text, which holds a password.
 */
export function parseProxies(value: string, problems: string[]): UpstreamProxy[] {
  const out: UpstreamProxy[] = [];
  const names = new Set<string>();
  const entries = value.split(',');
  entries.forEach((raw, i) => {
    const item = raw.trim();
    if (item === '') return;
    const eq = item.indexOf('=');
    const name = eq > 0 ? item.slice(0, eq) : '';
    const at = `PROXIES: entry ${i + 1}${PROXY_NAME.test(name) ? ` ("${name}")` : ''}`;
    if (!PROXY_NAME.test(name)) {
      problems.push(
        `${at} is not name=URL (a name of letters, digits, "_", "." or "-"; a comma inside a password must be written %2C)`,
      );
      return;
    }
    if (names.has(name)) {
      problems.push(`${at}: the name is used twice`);
      return;
    }
    names.add(name);
    let text = item.slice(eq + 1);
    const mayResolve = text.endsWith(MAY_RESOLVE);
    if (mayResolve) text = text.slice(0, -MAY_RESOLVE.length);
    let u: URL;
    try {
      u = new URL(text);
    } catch {
      problems.push(`${at}: not a URL`);
      return;
    }
    const protocol = u.protocol.slice(0, -1);
    if (protocol !== 'http' && protocol !== 'https' && protocol !== 'socks5') {
      problems.push(`${at}: the URL must be http://, https:// or socks5://`);
      return;
    }
    if ((u.pathname !== '' && u.pathname !== '/') || u.search !== '' || u.hash !== '' || text.includes(';')) {
      problems.push(
        `${at}: the URL must be scheme://[user:password@]host[:port] (percent-encode ";", "@", "/" and "," in the password)`,
      );
      return;
    }
    const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname.toLowerCase();
    if (host === '') {
      problems.push(`${at}: the URL has no host`);
      return;
    }
    let username: string | undefined;
    let password: string | undefined;
    try {
      username = u.username === '' ? undefined : decodeURIComponent(u.username);
      password = u.password === '' ? undefined : decodeURIComponent(u.password);
    } catch {
      problems.push(`${at}: the user or password is not percent-encoded correctly`);
      return;
    }
    if ((username === undefined) !== (password === undefined)) {
      problems.push(`${at}: give both a user and a password, or neither`);
      return;
    }
    // RFC 1929: each at most 255 bytes.
    if (Buffer.byteLength(username ?? '') > 255 || Buffer.byteLength(password ?? '') > 255) {
      problems.push(`${at}: the user and the password must be at most 255 bytes each`);
      return;
    }
    out.push({
      name,
      protocol,
      host,
      port: Number(u.port || PROXY_DEFAULT_PORTS[protocol]),
      ...(username === undefined ? {} : { username, password: password ?? '' }),
      mayResolve,
    });
  });
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

/**
 * SLOT_MAX_TASKS unless set: a slot at rest has ~64 tasks (its host side's
 * threads, Chromium's processes and theirs), a heavy page a few hundred.
 */
export const DEFAULT_SLOT_MAX_TASKS = 2048;

/** IDLE_SLOT_CLOSE_MS unless set (docs/configuration.md). */
export const DEFAULT_IDLE_SLOT_CLOSE_MS = 30_000;

/** Settings that are gone, and what an operator who still sets one is told (the service refuses to start). */
const GONE_SETTINGS: Readonly<Record<string, string>> = {
  EXECUTORS:
    'is gone: every request slot (MAX_CONCURRENCY of them) now runs in a slot process of its own; remove EXECUTORS and set MAX_CONCURRENCY',
  EXECUTOR_USER:
    'is gone: as root, slot i runs as its own user SLOT_USER_PREFIX + i (pagescript-slot-0, pagescript-slot-1, …); remove EXECUTOR_USER',
  IDLE_CHROMIUM_CLOSE_MS:
    'is now IDLE_SLOT_CLOSE_MS: idle slot processes past the first are closed with their Chromium; rename the setting',
};

/** USAGE_LOG: off (or unset), stdout, or an absolute file path the records are appended to. */
function parseUsageLog(text: string, problems: string[]): Config['usageLog'] {
  const v = text.trim();
  if (v === '' || v === 'off') return { to: 'off' };
  if (v === 'stdout') return { to: 'stdout' };
  if (!v.startsWith('/')) {
    problems.push('USAGE_LOG: off, stdout, or an absolute path of a file to append records to');
    return { to: 'off' };
  }
  return { to: 'file', path: v };
}

export function loadConfig(env: Env = process.env, detectMemoryMb: () => number = detectServiceMemoryMb): Config {
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
  const onOff = (name: string, def: 'on' | 'off'): boolean => {
    const v = (env[name] ?? def).trim().toLowerCase();
    if (v !== 'on' && v !== 'off') problems.push(`${name}: "${env[name]}" must be on or off`);
    return (v === 'off' ? 'off' : v === 'on' ? 'on' : def) === 'on';
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
  const cpuProfileDir = env.CPU_PROFILE_DIR?.trim() ? env.CPU_PROFILE_DIR.trim() : undefined;
  if (cpuProfileDir !== undefined && !cpuProfileDir.startsWith('/'))
    problems.push('CPU_PROFILE_DIR: must be an absolute path (a directory the children may write to)');
  const redisUrl = env.REDIS_URL?.trim() ? env.REDIS_URL.trim() : undefined;
  if (redisUrl !== undefined && !/^rediss?:\/\/[^\s]+$/.test(redisUrl))
    problems.push('REDIS_URL: must be redis://[user:password@]host:port[/db] or rediss://…');

  const playground = (env.PLAYGROUND ?? 'on').trim().toLowerCase();
  if (playground !== 'on' && playground !== 'off') problems.push(`PLAYGROUND: "${env.PLAYGROUND}" must be on or off`);
  // SLOT_CPU_GROUPS is SLOT_CGROUPS's old name, read for one release (docs/configuration.md).
  const slotCgroupsName =
    env.SLOT_CGROUPS !== undefined || env.SLOT_CPU_GROUPS === undefined ? 'SLOT_CGROUPS' : 'SLOT_CPU_GROUPS';
  const slotCgroups = (env[slotCgroupsName] ?? 'on').trim().toLowerCase();
  if (slotCgroups !== 'on' && slotCgroups !== 'off')
    problems.push(`${slotCgroupsName}: "${env[slotCgroupsName]}" must be on or off`);

  const slotNonDumpable = (env.SLOT_NON_DUMPABLE ?? 'on').trim().toLowerCase();
  if (slotNonDumpable !== 'on' && slotNonDumpable !== 'off')
    problems.push(`SLOT_NON_DUMPABLE: "${env.SLOT_NON_DUMPABLE}" must be on or off`);

  for (const [name, why] of Object.entries(GONE_SETTINGS))
    if (env[name] !== undefined && env[name].trim() !== '') problems.push(`${name} ${why}`);

  const { chromium, executablePath } = chooseChromium(env, problems);
  // User names are at most 32 characters: the prefix leaves room for a slot number up to MAX_CONCURRENCY_LIMIT.
  const slotUserPrefix = (env.SLOT_USER_PREFIX ?? 'pagescript-slot-').trim();
  if (!/^[a-z_][a-z0-9_-]{0,28}$/.test(slotUserPrefix))
    problems.push(`SLOT_USER_PREFIX: "${slotUserPrefix}" is not the start of a user name (at most 29 characters)`);
  const egressUser = (env.EGRESS_USER ?? 'pagescript-egress').trim();
  if (!/^[a-z_][a-z0-9_-]{0,31}$/.test(egressUser)) problems.push(`EGRESS_USER: "${egressUser}" is not a user name`);
  else if (egressUser.startsWith(slotUserPrefix) && /^\d+$/.test(egressUser.slice(slotUserPrefix.length)))
    problems.push(`EGRESS_USER: "${egressUser}" must not be a slot's user (SLOT_USER_PREFIX + a number)`);

  const kernelLock = (env.EGRESS_KERNEL_LOCK ?? 'on').trim();
  if (kernelLock !== 'on' && kernelLock !== 'off')
    problems.push(`EGRESS_KERNEL_LOCK: "${env.EGRESS_KERNEL_LOCK}" must be on or off`);

  const navigationTimeoutMs = int('NAVIGATION_TIMEOUT_MS', 15_000, 100, 600_000);
  const scriptTimeoutMs = int('SCRIPT_TIMEOUT_MS', 30_000, 100, 600_000);
  const queueTimeoutMs = int(
    'QUEUE_TIMEOUT_MS',
    defaultQueueTimeoutMs(navigationTimeoutMs, scriptTimeoutMs),
    0,
    1_800_000,
  );
  const headersTimeoutMs = int('HEADERS_TIMEOUT_MS', 20_000, 100, 600_000);
  const requestTimeoutMs = int('REQUEST_TIMEOUT_MS', 30_000, 100, 600_000);
  if (requestTimeoutMs < headersTimeoutMs)
    problems.push(
      `REQUEST_TIMEOUT_MS: ${requestTimeoutMs} must not be less than HEADERS_TIMEOUT_MS (${headersTimeoutMs}); it covers the headers too`,
    );

  const scriptMemoryMb = int('SCRIPT_MEMORY_MB', 128, 16, 4096);
  const pageMemoryMb = int('PAGE_MEMORY_MB', 512, 64, 65_536);
  const maxResultBytes = int('MAX_RESULT_BYTES', 10 * 1024 * 1024, 1024, 256 * 1024 * 1024);
  const serviceMemoryMb = env.SERVICE_MEMORY_MB?.trim()
    ? int('SERVICE_MEMORY_MB', 0, 256, 64 * 1024 * 1024)
    : detectMemoryMb();
  const shape = { chromium, pageMemoryMb, scriptMemoryMb, maxResultBytes };
  const byMemory = concurrencyByMemory(serviceMemoryMb, shape);
  const asked = int('MAX_CONCURRENCY', defaultConcurrency(byMemory), 1, MAX_CONCURRENCY_LIMIT);
  // SECURITY: a request that would not fit in SERVICE_MEMORY_MB waits in the
  // queue for a slot: an explicit MAX_CONCURRENCY is cut to what fits (logged at start).
  const maxConcurrency = Math.min(asked, byMemory);
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
  const maxConnections = int('MAX_CONNECTIONS', defaultMaxConnections(serviceMemoryMb), 1, 1_000_000);

  const securityCoolOffMs = int('SECURITY_COOL_OFF_MS', 900_000, 1_000, 2_592_000_000);

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
    scriptMemoryMb,
    navigationTimeoutMs,
    rateLimit: int('RATE_LIMIT', 60, 1, 1_000_000),
    rateLimitWindowMs: int('RATE_LIMIT_WINDOW_MS', 60_000, 100, 86_400_000),
    security: {
      blocking: onOff('SECURITY_BLOCKING', 'on'),
      windowMs: int('SECURITY_WINDOW_MS', 600_000, 1_000, 86_400_000),
      threshold: int('SECURITY_THRESHOLD', 200, 1, 1_000_000),
      weights: {
        navigation: int('SECURITY_WEIGHT_NAVIGATION', 10, 0, 1_000_000),
        page: int('SECURITY_WEIGHT_PAGE', 1, 0, 1_000_000),
        method: int('SECURITY_WEIGHT_METHOD', 5, 0, 1_000_000),
        slot: int('SECURITY_WEIGHT_SLOT', 20, 0, 1_000_000),
      },
      coolOffMs: securityCoolOffMs,
      coolOffMaxMs: int(
        'SECURITY_COOL_OFF_MAX_MS',
        Math.max(86_400_000, securityCoolOffMs),
        securityCoolOffMs,
        2_592_000_000,
      ),
    },
    maxConcurrency,
    maxConcurrencyAsked: asked > maxConcurrency ? asked : undefined,
    pageMemoryMb,
    serviceMemoryMb,
    memory: memoryPlan({ ...shape, concurrency: maxConcurrency }),
    queueLimit: int('QUEUE_LIMIT', 100, 0, 100_000),
    queueTimeoutMs,
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
    idleSlotCloseMs: int('IDLE_SLOT_CLOSE_MS', DEFAULT_IDLE_SLOT_CLOSE_MS, 0, 86_400_000),
    slotRecycleRequests: int('SLOT_RECYCLE_REQUESTS', 1000, 0, 10_000_000),
    shutdownGraceMs: int(
      'SHUTDOWN_GRACE_MS',
      defaultShutdownGraceMs(queueTimeoutMs, navigationTimeoutMs, scriptTimeoutMs),
      0,
      MAX_SHUTDOWN_GRACE_MS,
    ),
    metricsToken: env.METRICS_TOKEN?.trim() ? env.METRICS_TOKEN.trim() : undefined,
    usageLog: parseUsageLog(env.USAGE_LOG ?? '', problems),
    usageMetricsKeys: int('USAGE_METRICS_KEYS', 1000, 0, 100_000),
    playground: playground !== 'off',
    slotCgroups: slotCgroups !== 'off',
    slotNonDumpable: slotNonDumpable !== 'off',
    slotMaxTasks: int('SLOT_MAX_TASKS', DEFAULT_SLOT_MAX_TASKS, 256, 65_536),
    cpuProfileDir,
    egressAllowlist: parseEgressAllowlist(env.EGRESS_ALLOWLIST ?? '', problems),
    dnsServers: parseDnsServers(env.DNS_SERVERS ?? '', problems),
    proxies: parseProxies(env.PROXIES ?? '', problems),
    chromium,
    executablePath,
    slotUserPrefix,
    egressUser,
    egressPorts: env.EGRESS_PORTS?.trim() ? parseEgressPorts(env.EGRESS_PORTS, problems) : DEFAULT_EGRESS_PORTS,
    egressKernelLock: kernelLock !== 'off',
    logLevel: LOG_LEVELS.includes(logLevel) ? logLevel : 'info',
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}

/** Returns a copy of the config with the given keys, for tests and for the generated key. */
export function withConfig(config: Config, patch: Partial<Config>): Config {
  return Object.freeze({ ...config, ...patch });
}
