// Builds the request handler from its parts. No globals: everything it uses is
// passed in, so tests can build the app with substitutes and without a socket.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError } from '../common/errors.js';
import { infoRoutes, type InfoDeps } from './info/info-routes.js';
import { playgroundRoutes } from './info/playground-page.js';
import { sendError } from './http/reply.js';
import { scrapeRoute } from './http/scrape-route.js';
import { memoryReport } from './memory-report.js';
import { Metrics } from './metrics.js';
import type { LimitsMode } from './tenancy/fallback-store.js';
import { KeyRing } from './tenancy/keyring.js';
import { FairScheduler } from './tenancy/scheduler.js';
import { MemoryStore, type LimitStore } from './tenancy/store.js';
import { background } from '../common/background.js';
import type { Config } from '../common/config.js';
import type { Logger } from '../common/log.js';
import type { KernelLockStatus } from './host/kernel-lock.js';
import type { Supervisor } from './slots/supervisor.js';
import { UsageLog } from './usage.js';
import { SecurityMonitor } from './security/security-monitor.js';
import { MemorySecurityStore, type SecurityStore } from './security/security-store.js';
import { FileSecurityStore, securityStatePath } from './security/file-security-store.js';

/** Keys and the store limits are counted in; the service builds them from the config (file, Redis). */
export interface Tenancy {
  readonly keys: KeyRing;
  readonly store: LimitStore;
  /** Keys' security points and blocks; this instance's memory when absent. */
  readonly security?: SecurityStore;
  mode(): LimitsMode;
}

/** The app needs the slot processes (jobs run there, in other processes), and keys and limits. */
export interface AppDeps {
  readonly config: Config;
  readonly logger: Logger;
  /** What /health and /metrics read (InfoDeps), and the jobs' entry. */
  readonly slots: InfoDeps['slots'] & Pick<Supervisor, 'run'>;
  readonly tenancy?: Tenancy;
  /** Whether the kernel backs the guard (src/front/host/kernel-lock.ts), for /health. */
  readonly kernelLock: KernelLockStatus;
}

export interface App {
  handle(req: IncomingMessage, res: ServerResponse): void;
  /** Scores keys' security events; the egress process's refusals are given to it (service.ts). */
  readonly security: SecurityMonitor;
  readonly scheduler: FairScheduler;
  readonly metrics: Metrics;
  /**
   * Shutdown, first step: /health turns 503 at once and new scrape requests get
   * 503; the ones already admitted (running, waiting for a slot, or still
   * sending their body) go on and are answered as usual.
   */
  drain(): void;
  /** Scrape requests admitted and not yet answered (their reply not yet finished): what a drain waits for. */
  readonly inFlight: number;
  /** Shutdown, after the grace period: requests still waiting and scripts still running are ended (503). */
  abortRunning(): void;
}

/** The configuration's keys, limits in this process's memory: one instance without Redis, and tests. */
export function localTenancy(config: AppDeps['config'], logger: AppDeps['logger']): Tenancy {
  return {
    keys: KeyRing.fromConfig(config, logger),
    store: new MemoryStore(),
    // Blocks beside the key file, so the key tool can read and end them and a restart keeps them.
    ...(config.apiKeysFile === undefined
      ? {}
      : {
          security: new FileSecurityStore(securityStatePath(config.apiKeysFile), Date.now, (e) =>
            logger.warn(
              { err: String(e), file: securityStatePath(config.apiKeysFile ?? '') },
              "the security state file cannot be written; keys' blocks are kept in memory only",
            ),
          ),
        }),
    mode: () => 'memory',
  };
}

const SCRAPE_PATH = '/api/scrape';
/** A per-key lease outlives the longest job by this, in case its release never comes. */
const LEASE_MARGIN_MS = 30_000;
const REQUEST_ID = /^[\w.:-]{1,128}$/;

/**
 * The path of a request target: origin-form ("/api/scrape?x") or absolute-form
 * ("http://host/api/scrape", which HTTP/1.1 servers must accept too).
 */
export function targetPath(target: string | undefined): string {
  const t = target ?? '/';
  if (/^https?:\/\//i.test(t)) {
    try {
      return new URL(t).pathname;
    } catch {
      return t;
    }
  }
  return t.split('?')[0] ?? '/';
}

export function buildApp(deps: AppDeps): App {
  const { config, logger, slots } = deps;
  const tenancy = deps.tenancy ?? localTenancy(config, logger);
  const scheduler = new FairScheduler({
    maxConcurrency: config.maxConcurrency,
    queueLimit: config.queueLimit,
    queueTimeoutMs: config.queueTimeoutMs,
    store: tenancy.store,
    leaseTtlMs: config.navigationTimeoutMs + config.scriptTimeoutMs + LEASE_MARGIN_MS,
  });
  const metrics = new Metrics({
    running: () => scheduler.running,
    queued: () => scheduler.queued,
    slots: () => config.maxConcurrency,
    contextsReady: () => slots.browser.contextsReady,
    browserRestarts: () => slots.browser.restarts,
    browserRecycles: () => slots.browser.recycles,
    slotRestarts: () => slots.restarts,
    egressRestarts: () => slots.egress.restarts,
    keyFileStale: () => tenancy.keys.fileStatus === 'stale',
    keyFileReloadFailures: () => tenancy.keys.reloadFailures,
    memory: () => memoryReport(config, scheduler.running, slots),
    pageMemoryKills: () => slots.memory.pageLimitKills,
  });
  metrics.maxLabelledKeys = config.usageMetricsKeys;
  const security = new SecurityMonitor({
    settings: config.security,
    store: tenancy.security ?? new MemorySecurityStore(),
    logger,
    metrics,
  });
  const running = new Set<AbortController>();
  let draining = false;
  let inFlight = 0;
  const scrape = scrapeRoute({
    ...deps,
    keys: tenancy.keys,
    store: tenancy.store,
    scheduler,
    metrics,
    running,
    draining: () => draining,
    security,
    usage: new UsageLog(config, deps.logger, { onDropped: () => metrics.usageRecordsDropped.inc() }),
  });
  const info = infoRoutes({
    config,
    slots,
    kernelLock: deps.kernelLock,
    scheduler,
    metrics,
    limitsMode: () => tenancy.mode(),
    keyFileStatus: () => tenancy.keys.fileStatus,
    draining: () => draining,
    fail: (res, e) => failed(res, e),
  });
  const playground = config.playground ? playgroundRoutes((res, e) => failed(res, e)) : undefined;

  /** A request other than a scrape that failed inside the service: one error line, counted, 500. */
  function failed(res: ServerResponse, e: unknown): void {
    const requestId = res.getHeader('X-Request-Id');
    // The path is the caller's: bounded in the log as in a 404's message.
    const path = targetPath(res.req.url).slice(0, 200);
    logger.error({ requestId, path, cause: 'unexpected', err: String(e) }, 'request failed');
    metrics.internalErrors.inc({ cause: 'unexpected' });
    if (res.headersSent) res.destroy();
    else sendError(res, new ApiError('INTERNAL_SERVER_ERROR', undefined, { cause: e }));
  }

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const given = req.headers['x-request-id'];
    const requestId = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    res.setHeader('X-Request-Id', requestId);
    const path = targetPath(req.url);
    if (path === SCRAPE_PATH) {
      if (req.method !== 'POST') {
        sendError(res, new ApiError('METHOD_NOT_ALLOWED', 'Method not allowed: use POST'), { Allow: 'POST' });
        return;
      }
      // Counted until its reply is finished or its connection gone, so a drain never cuts a reply short.
      inFlight++;
      res.once('close', () => inFlight--);
      // While draining, the connection closes after its reply: the caller's next request opens a new one,
      // which the closed listener refuses and a balancer sends elsewhere.
      if (draining) res.setHeader('Connection', 'close');
      background(scrape(req, res, requestId), 'scrape request', logger);
      return;
    }
    try {
      if (info.handle(path, req, res)) return;
      if (playground?.handle(path, req, res)) return;
    } catch (e) {
      // SECURITY: a defect in one of these routes fails its request, never the front.
      failed(res, e);
      return;
    }
    sendError(res, new ApiError('NOT_FOUND', `Not found: ${req.method ?? 'GET'} ${path.slice(0, 200)}`));
  }

  return {
    handle,
    security,
    scheduler,
    metrics,
    get inFlight() {
      return inFlight;
    },
    drain(): void {
      draining = true;
    },
    abortRunning(): void {
      const e = new ApiError('SERVICE_UNAVAILABLE', 'Service unavailable: shutting down');
      scheduler.rejectWaiting(e);
      for (const a of running) a.abort(e);
    },
  };
}
