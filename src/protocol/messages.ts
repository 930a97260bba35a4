// The messages between the front (server, app, http/, tenancy/: holds the
// secrets, runs nothing untrusted) and its two kinds of child: an executor
// (src/slot/main.ts: scrape/, sandbox/, browser/: runs the scripts, Puppeteer and
// Chromium, holds no secrets) and the egress process (src/egress/main.ts:
// egress/: the guard Chromium's traffic goes through; runs no script and no
// Chromium). They travel over the IPC channel of child_process.fork with
// serialization 'advanced' (structured clone), so they are plain data only:
// no functions, no class instances, nothing that is a live reference. The one
// exception is the socket of an executor's channel to the egress process, which
// the front hands to both as a handle (see src/protocol/egress-channel.ts).
import type { Config, UpstreamProxy } from '../common/config.js';
import { ERRORS, type ErrorCode, type FailureDetails } from '../common/errors.js';
import type { RequestOptions } from './request-options.js';

/** The egress guard's time and size limits per connection (tests shorten them through the seam). */
export interface GuardLimits {
  readonly connectTimeoutMs: number;
  readonly idleTimeoutMs: number;
  readonly totalTimeoutMs: number;
  readonly maxBytesPerConnection: number;
}

/** What the egress guard has counted (tests read it through the seam). */
export interface GuardCounts {
  /** TCP connections accepted from the browser. */
  clientConnections: number;
  /** Connections and requests refused because they belonged to no live request. */
  unclaimed: number;
  /** Upstream connections opened. */
  upstreamConnections: number;
  /** Connections to a context's port from a process of another user than the executors' (closed unread). */
  otherUsers: number;
}

/** One job, as POST /api/scrape describes it once it is validated. */
export interface JobRequest {
  /** The request this job serves: its context's egress is counted and logged under this id. */
  readonly requestId?: string;
  readonly url: string;
  /** Absent: the reachability check. */
  readonly script?: string;
  readonly outputFormat: 'json' | 'html';
  /** How the page is set up before it loads (checked by the front; checked again before it is applied). */
  readonly options?: RequestOptions;
  /**
   * The upstream proxy this request leaves through, by name (options.proxy or
   * the key's default, checked by the front). SECURITY: a name only; the
   * credentials go to the egress guard at its start (EgressInit), never in a job.
   */
  readonly proxy?: string;
}

/** What can go wrong with a request's upstream proxy: each a label of pagescript_proxy_failures_total. */
export const PROXY_FAILURE_KINDS = ['unreachable', 'auth', 'refused', 'socks', 'protocol'] as const;
export type ProxyFailureKind = (typeof PROXY_FAILURE_KINDS)[number];

/** Where a request's egress stats count each kind of proxy failure (present once one happened). */
export const PROXY_FAILURE_STATS = {
  unreachable: 'proxyUnreachable',
  auth: 'proxyAuthRefused',
  refused: 'proxyRefusedTarget',
  socks: 'proxySocksError',
  protocol: 'proxyBadAnswer',
} as const satisfies Record<ProxyFailureKind, string>;
export type ProxyFailureStat = (typeof PROXY_FAILURE_STATS)[ProxyFailureKind];

/**
 * What the egress guard is given at its start, apart from the policy: the
 * upstream proxies with their credentials. SECURITY: a secret; whoever holds
 * the guard holds this, and nothing else of the service should: the front sends
 * it to the egress process (src/front/children/egress-supervisor.ts), never to an executor.
 */
export interface EgressInit {
  readonly proxies: readonly UpstreamProxy[];
}

/** Where a job's time went, in milliseconds (lease and isolate overlap). */
export interface JobTimings {
  lease?: number;
  isolate?: number;
  navigation?: number;
  script?: number;
}

export interface JobOutcome {
  /** The script's result as JSON text; absent when it returned undefined. */
  readonly json?: string;
  /** For the reachability check: the page summary or its HTML. */
  readonly value?: unknown;
  readonly logs: readonly string[];
  readonly executionTimeMs: number;
  readonly timings: JobTimings;
  /** What the request's context did through the egress guard (EgressStats), for the request's log line. */
  readonly egress?: Readonly<Record<string, number>>;
}

/** An error as it crosses: its public code and message, and what the reply and metrics need. */
export interface WireError {
  readonly code: ErrorCode;
  readonly message: string;
  readonly logs?: readonly string[];
  readonly timeout?: 'script' | 'navigation';
  /** For the front's log line only (never sent to a caller): what caused a 5xx. */
  readonly detail?: string;
  /** What the request's context did through the egress guard, for the front's log line. */
  readonly egress?: Readonly<Record<string, number>>;
  /** Where and why a script or navigation failed, for the error body. */
  readonly failure?: FailureDetails;
  /** Where the job's time went before it failed, for the front's log line. */
  readonly timings?: JobTimings;
}

/**
 * A data-only test seam: names answered from a table instead of DNS, upstream
 * connections limited to loopback, and faults on request. Functions cannot
 * cross a process hop, so the tests that used to inject a resolver and a
 * connector describe them here. The front sends it only when a test asks.
 */
export interface ExecutorTestSeam {
  /**
   * host → answers; each lookup of the host takes the next answer, in turn. Names not listed do not resolve.
   * Absent: the system's resolver (a test of what Chromium does on its own).
   */
  readonly hosts?: Readonly<Record<string, readonly (readonly string[])[]>>;
  /** Refuse (ECONNREFUSED) every upstream that is not 127.0.0.1 or ::1, without dialling it. */
  readonly loopbackOnly: boolean;
  /** Report each upstream the guard dials ({ type: 'dial' }). */
  readonly reportDials: boolean;
  /** Obey { type: 'fault' }: a test of what happens when an executor fails in a way no script can cause. */
  readonly faults: boolean;
  /** This machine's own addresses, for the egress checker, instead of the system's interfaces. */
  readonly localAddresses?: readonly string[];
  /** The guard's limits, where a test lowers them. */
  readonly guardLimits?: Partial<GuardLimits>;
  /** The executor's V8 heap limit (--max-old-space-size), where a test makes it run out. */
  readonly heapMb?: number;
}

/**
 * What the egress process runs with: the fields of the configuration it needs,
 * chosen one by one (an allow-list, unlike the executor's deny-list), so a
 * setting added later reaches it only when it is named here. SECURITY: the
 * front hands the egress process its configuration (and, with upstream proxies,
 * their credentials) directly over this channel; nothing of it passes through an
 * executor.
 */
export interface EgressConfig {
  readonly egressAllowlist: Config['egressAllowlist'];
  /** The address the service listens on: one of this machine's, refused unless allow-listed. */
  readonly host: Config['host'];
}

export function egressConfig(config: Config): EgressConfig {
  return { egressAllowlist: config.egressAllowlist, host: config.host };
}

/** The configuration an executor runs with: the front's, with every secret taken out. */
export type ExecutorConfig = Omit<Config, 'apiKeys' | 'apiKeysFile' | 'redisUrl' | 'metricsToken' | 'proxies'> & {
  readonly apiKeys: readonly never[];
  readonly apiKeysFile: undefined;
  readonly redisUrl: undefined;
  readonly metricsToken: undefined;
  readonly proxies: readonly never[];
};

/**
 * SECURITY: the executor is given the configuration without keys, key file,
 * Redis URL, metrics token or proxies (their credentials go to the egress guard
 * alone, as EgressInit).
 */
export function executorConfig(config: Config): ExecutorConfig {
  return {
    ...config,
    apiKeys: [],
    apiKeysFile: undefined,
    redisUrl: undefined,
    metricsToken: undefined,
    proxies: [],
  };
}

/** What the egress guard is started with (its proxies); see EgressInit. */
export function egressInit(config: Config): EgressInit {
  return { proxies: config.proxies };
}

/** What the executor says about its Chromium, whenever it changes. */
export interface BrowserStatus {
  readonly ready: boolean;
  /** The first lane's Chromium (the one a lone request uses). */
  readonly pid: number | undefined;
  /** Every lane's Chromium. */
  readonly pids: readonly number[];
  readonly restarts: number;
  readonly recycles: number;
  readonly contextsReady: number;
}

/** What an executor holds now (read from /proc every second), in bytes. */
export interface ExecutorMemory {
  /** The executor's own process: Node, the isolates, the egress guard. */
  readonly executorBytes: number;
  /** Every Chromium process of its lanes. */
  readonly chromiumBytes: number;
  /** What the running requests' pages hold, as counted against PAGE_MEMORY_MB. */
  readonly pageBytes: number;
  /** Requests whose pages were ended for PAGE_MEMORY_MB (or whose renderer died of memory). */
  readonly pageLimitKills: number;
}

/** The failures a test may ask of an executor or of the egress process (seam.faults). */
export type FaultKind = 'throw' | 'reject' | 'oom' | 'send';

export type ToExecutor =
  | {
      readonly type: 'init';
      readonly config: ExecutorConfig;
      /** The front's log level: the executor sends only the lines the front would write. */
      readonly logLevel: string;
      /** The egress guard's browser-wide port (Chromium's --proxy-server), the same across its restarts. */
      readonly guardPort: number;
      readonly seam?: ExecutorTestSeam;
    }
  /**
   * A channel to the (new) egress process: sent with the socket as its handle.
   * Sent only once the executor holds no context of a previous one (egress-drained).
   */
  | { readonly type: 'egress-channel' }
  | { readonly type: 'run'; readonly id: number; readonly request: JobRequest }
  /** The job's request was cancelled; `error` is the reason when it is a public error (shutdown). */
  | { readonly type: 'abort'; readonly id: number; readonly error?: WireError }
  /**
   * Tests (seam.faults): an exception nobody catches, a rejection nobody
   * handles, V8's heap exhausted, or `message` sent to the front as it is (what
   * an executor that escaped our code could send).
   */
  | { readonly type: 'fault'; readonly kind: FaultKind; readonly message?: unknown }
  /** Close everything and exit 0. */
  | { readonly type: 'shutdown' };

export type FromExecutor =
  | { readonly type: 'ready'; readonly chromiumSandbox: boolean }
  | { readonly type: 'status'; readonly browser: BrowserStatus }
  | { readonly type: 'memory'; readonly memory: ExecutorMemory }
  /** One log line of the executor's logger (pino JSON), for the front to write. */
  | { readonly type: 'log'; readonly line: string }
  | { readonly type: 'observe'; readonly metric: 'navigation' | 'script'; readonly seconds: number }
  | { readonly type: 'egress-refused' }
  | { readonly type: 'done'; readonly id: number; readonly outcome: JobOutcome }
  | { readonly type: 'failed'; readonly id: number; readonly error: WireError }
  /** The job's context and isolate are closed: its slot may be given to the next job. */
  | { readonly type: 'closed'; readonly id: number }
  /**
   * Its channel to the egress process is gone, and every context that used a
   * port of that process is closed: it may be given a channel to the next one.
   */
  | { readonly type: 'egress-drained' };

/** The fail message of a job whose executor stopped under it. */
export const RUNNER_STOPPED = 'Internal server error: the script runner stopped; the request was not completed';
/** The fail message of a job whose egress process stopped under it. */
export const EGRESS_STOPPED = 'Internal server error: the egress process stopped; the request was not completed';

/** The data-only test seam of the egress process: the part of ExecutorTestSeam that is the guard's. */
export interface EgressTestSeam {
  readonly hosts?: ExecutorTestSeam['hosts'];
  readonly loopbackOnly: boolean;
  readonly reportDials: boolean;
  /** Obey { type: 'fault' } (a test of an egress process that fails or misbehaves). */
  readonly faults: boolean;
  readonly localAddresses?: readonly string[];
  readonly guardLimits?: Partial<GuardLimits>;
}

export type ToEgress =
  | {
      readonly type: 'init';
      readonly config: EgressConfig;
      readonly logLevel: string;
      /** The service's own port, which no page may reach. */
      readonly servicePort: number;
      /** The browser-wide port to listen on: the previous egress process's (Chromium was started with it), or 0. */
      readonly port: number;
      /**
       * The guard's upstream proxies with their credentials. SECURITY: sent to
       * this process alone; an executor names a request's proxy by name only.
       */
      readonly egress: EgressInit;
      /**
       * SECURITY: as root, the executors' uid: a context's port takes connections
       * only from sockets of this user (their Chromium). Absent: from any local process.
       */
      readonly clientUid?: number;
      readonly seam?: EgressTestSeam;
    }
  /**
   * The egress end of a new channel for executor `executor`, sent with the socket
   * as its handle; `channel` is the front's number for it (channel-closed names it).
   * An executor has one channel at a time: its previous one is closed.
   */
  | { readonly type: 'attach'; readonly executor: number; readonly channel: number }
  /**
   * SECURITY: executor `executor` may bind one session to request `requestId`,
   * leaving through `proxy` (by name; absent: no proxy). Sent when the front
   * hands the executor the request; the egress process refuses every bind that
   * matches no unused grant, so an executor cannot pick another request's id or
   * a proxy its request's key may not use.
   */
  | {
      readonly type: 'grant';
      readonly grant: number;
      readonly executor: number;
      readonly requestId: string;
      readonly proxy?: string;
    }
  /** The request of grant `grant` is over: no session may be bound with it any more. */
  | { readonly type: 'revoke'; readonly grant: number }
  /** Closes the egress guard (a test of what happens when it is down). */
  | { readonly type: 'close-guard'; readonly ask: number }
  /** Tests (any seam): the guard's counts, answered with { type: 'guard-counts' } and the same `ask`. */
  | { readonly type: 'guard-counts'; readonly ask: number }
  | { readonly type: 'fault'; readonly kind: FaultKind; readonly message?: unknown }
  | { readonly type: 'shutdown' };

export type FromEgress =
  | { readonly type: 'ready'; readonly guardPort: number }
  | { readonly type: 'log'; readonly line: string }
  /** A refusal of a request's traffic (counted in pagescript_egress_refusals_total). */
  | { readonly type: 'egress-refused' }
  | { readonly type: 'dial'; readonly address: string; readonly port: number }
  /** What the egress process holds now (read from /proc every second), in bytes. */
  | { readonly type: 'memory'; readonly bytes: number }
  /**
   * An executor sent what the egress process cannot read on its channel: the
   * channel is closed, and the front kills that executor as it would for a
   * malformed message to itself.
   */
  | { readonly type: 'executor-misbehaved'; readonly executor: number }
  /**
   * A channel is closed on the egress side (the executor closed it, or it was
   * replaced or misbehaved), every session of it with it. SECURITY: only this
   * lets the front hand that executor another channel; an executor's own word
   * (egress-drained) is not enough.
   */
  | { readonly type: 'channel-closed'; readonly executor: number; readonly channel: number }
  | { readonly type: 'guard-closed'; readonly ask: number }
  | { readonly type: 'guard-counts'; readonly ask: number; readonly counts: GuardCounts };

/** The longest log line the front takes from an executor (its own lines are far shorter). */
export const MAX_EXECUTOR_LOG_LINE = 64 * 1024;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
const isPort = (v: unknown): boolean => Number.isInteger(v) && (v as number) >= 1 && (v as number) <= 65_535;
/** A finite amount that is not negative (seconds, bytes). */
const isSeconds = (v: unknown): boolean => typeof v === 'number' && Number.isFinite(v) && v >= 0;

/**
 * More items than any list an executor sends holds (MAX_LOG_LINES is at most
 * 100 000, pids one per lane, page calls a few dozen).
 */
const MAX_WIRE_LIST = 200_000;

/**
 * SECURITY: a list of at most MAX_WIRE_LIST items, each one checked, holes
 * included. Structured clone sends a sparse array by its length: a message of
 * a few bytes can be an array of 2^32 - 1 holes, and Array.prototype.every
 * visits every index (minutes of the front's event loop), skipping the holes.
 */
function isList(v: unknown, is: (item: unknown) => boolean): boolean {
  if (!Array.isArray(v) || v.length > MAX_WIRE_LIST) return false;
  for (let i = 0; i < v.length; i++) if (!is(v[i])) return false;
  return true;
}

function isBrowserStatus(b: unknown): boolean {
  return (
    isObject(b) &&
    typeof b.ready === 'boolean' &&
    (b.pid === undefined || isCount(b.pid)) &&
    isList(b.pids, isCount) &&
    isCount(b.restarts) &&
    isCount(b.recycles) &&
    isCount(b.contextsReady)
  );
}

const isOptional = (v: unknown, is: (v: unknown) => boolean): boolean => v === undefined || is(v);
const isString = (v: unknown): v is string => typeof v === 'string';
const isLogs = (v: unknown): boolean => isList(v, isString);
/**
 * SECURITY: no field but the named ones. What the front copies whole (failure
 * details into the reply, timings into Server-Timing) must hold nothing it does
 * not check: structured clone carries values JSON cannot write (a BigInt, a cycle),
 * and a reply that throws as it is written is never sent.
 */
const hasOnly = (o: Record<string, unknown>, keys: readonly string[]): boolean =>
  Object.keys(o).every((k) => keys.includes(k));
/** The most fields an egress summary has (EgressStats has a dozen); more is not one. */
const MAX_EGRESS_FIELDS = 64;

/** JobTimings: each phase a duration in ms, or absent. */
function isTimings(t: unknown): boolean {
  return (
    isObject(t) &&
    hasOnly(t, ['lease', 'isolate', 'navigation', 'script']) &&
    isOptional(t.lease, isSeconds) &&
    isOptional(t.isolate, isSeconds) &&
    isOptional(t.navigation, isSeconds) &&
    isOptional(t.script, isSeconds)
  );
}

/** An egress summary: counts by name (the front reads some by name and logs the whole). */
function isEgress(e: unknown): boolean {
  return isObject(e) && Object.keys(e).length <= MAX_EGRESS_FIELDS && Object.values(e).every(isCount);
}

function isPageCall(c: unknown): boolean {
  return (
    isObject(c) &&
    hasOnly(c, ['method', 'durationMs', 'outcome', 'error']) &&
    isString(c.method) &&
    isSeconds(c.durationMs) &&
    (c.outcome === 'ok' || c.outcome === 'error' || c.outcome === 'pending') &&
    isOptional(c.error, isString)
  );
}

/** FailureDetails, whose fields the front copies into the error body. */
function isFailure(f: unknown): boolean {
  return (
    isObject(f) &&
    hasOnly(f, ['phase', 'finalUrl', 'line', 'column', 'stack', 'pageCalls', 'screenshot', 'screenshotOmitted']) &&
    isOptional(f.phase, (v) => v === 'navigation' || v === 'script') &&
    isOptional(f.finalUrl, isString) &&
    isOptional(f.line, isCount) &&
    isOptional(f.column, isCount) &&
    isOptional(f.stack, isString) &&
    isOptional(f.pageCalls, (v) => isList(v, isPageCall)) &&
    isOptional(f.screenshot, isString) &&
    isOptional(f.screenshotOmitted, isString)
  );
}

function isOutcome(o: unknown): boolean {
  return (
    isObject(o) &&
    isOptional(o.json, isString) &&
    isLogs(o.logs) &&
    isSeconds(o.executionTimeMs) &&
    isTimings(o.timings) &&
    isOptional(o.egress, isEgress)
  );
}

// SECURITY: every field the front reads is checked, not only the code: a
// `timeout` becomes a metric label (any string would make label values without
// end), `egress` is counted per proxy, `failure` is copied into the reply.
function isWireError(e: unknown): boolean {
  return (
    isObject(e) &&
    isString(e.code) &&
    Object.hasOwn(ERRORS, e.code) &&
    isString(e.message) &&
    isOptional(e.logs, isLogs) &&
    isOptional(e.timeout, (v) => v === 'script' || v === 'navigation') &&
    isOptional(e.detail, isString) &&
    isOptional(e.egress, isEgress) &&
    isOptional(e.failure, isFailure) &&
    isOptional(e.timings, isTimings)
  );
}

function isGuardCounts(c: unknown): boolean {
  return (
    isObject(c) &&
    isCount(c.clientConnections) &&
    isCount(c.unclaimed) &&
    isCount(c.upstreamConnections) &&
    isCount(c.otherUsers)
  );
}

/** Whether each kind of message has the fields the front reads, of the types it reads them as. */
const SHAPES: Record<FromExecutor['type'], (m: Record<string, unknown>) => boolean> = {
  ready: (m) => typeof m.chromiumSandbox === 'boolean',
  status: (m) => isBrowserStatus(m.browser),
  memory: (m) =>
    isObject(m.memory) &&
    isSeconds(m.memory.executorBytes) &&
    isSeconds(m.memory.chromiumBytes) &&
    isSeconds(m.memory.pageBytes) &&
    isCount(m.memory.pageLimitKills),
  log: (m) => typeof m.line === 'string' && m.line.length <= MAX_EXECUTOR_LOG_LINE,
  observe: (m) => (m.metric === 'navigation' || m.metric === 'script') && isSeconds(m.seconds),
  'egress-refused': () => true,
  done: (m) => isCount(m.id) && isOutcome(m.outcome),
  failed: (m) => isCount(m.id) && isWireError(m.error),
  closed: (m) => isCount(m.id),
  'egress-drained': () => true,
};

/**
 * SECURITY: what the front takes from an executor. An executor runs hostile
 * scripts and pages; one that escaped its isolate could send anything, and a
 * field of the wrong type read later in an event handler (a process exit's, a
 * health check's) would end the front. Throws on anything that is not a
 * FromExecutor the front can read; the supervisor then kills the executor.
 */
export function checkFromExecutor(msg: unknown): FromExecutor {
  if (!isObject(msg) || typeof msg.type !== 'string' || !Object.hasOwn(SHAPES, msg.type))
    throw new Error('an executor sent a message of no known type');
  if (!SHAPES[msg.type as FromExecutor['type']](msg))
    throw new Error(`an executor sent a ${msg.type} message the front cannot read`);
  return msg as unknown as FromExecutor;
}

const EGRESS_SHAPES: Record<FromEgress['type'], (m: Record<string, unknown>) => boolean> = {
  ready: (m) => isPort(m.guardPort),
  log: (m) => typeof m.line === 'string' && m.line.length <= MAX_EXECUTOR_LOG_LINE,
  'egress-refused': () => true,
  dial: (m) => typeof m.address === 'string' && m.address.length <= 64 && isPort(m.port),
  memory: (m) => isSeconds(m.bytes),
  'executor-misbehaved': (m) => isCount(m.executor),
  'channel-closed': (m) => isCount(m.executor) && isCount(m.channel),
  'guard-closed': (m) => isCount(m.ask),
  'guard-counts': (m) => isCount(m.ask) && isGuardCounts(m.counts),
};

/**
 * SECURITY: what the front takes from the egress process. It runs no script,
 * but it parses what hostile pages and upstreams send; one that a bug or an
 * upstream took over could send anything. Throws on anything that is not a
 * FromEgress the front can read; the front then kills the egress process.
 */
export function checkFromEgress(msg: unknown): FromEgress {
  if (!isObject(msg) || typeof msg.type !== 'string' || !Object.hasOwn(EGRESS_SHAPES, msg.type))
    throw new Error('the egress process sent a message of no known type');
  if (!EGRESS_SHAPES[msg.type as FromEgress['type']](msg))
    throw new Error(`the egress process sent a ${msg.type} message the front cannot read`);
  return msg as unknown as FromEgress;
}
