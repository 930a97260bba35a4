// Builds the request handler from its parts. No globals: everything it uses is
// passed in, so tests can build the app with substitutes and without a socket.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError } from './errors.js';
import { authenticate, clientAddress } from './http/auth.js';
import { readBody } from './http/body.js';
import { AuthFailureLimiter, RateLimiter, rateHeaders as headersOf } from './http/rate-limit.js';
import { HTML_TYPE, JSON_TYPE, internalError, sendBody, sendError, sendJson } from './http/reply.js';
import { parseScrapeRequest } from './http/validate.js';
import { runScrape, type ScrapeDeps, type ScrapeOutcome, type ScrapeRequest } from './scrape/job.js';
import type { LimitsMode } from './tenancy/fallback-store.js';
import { KeyRing, type Client } from './tenancy/keyring.js';
import { FairScheduler } from './tenancy/scheduler.js';
import { MemoryStore, type LimitStore } from './tenancy/store.js';

/** Keys and the store limits are counted in; the service builds them from the config (file, Redis). */
export interface Tenancy {
  readonly keys: KeyRing;
  readonly store: LimitStore;
  mode(): LimitsMode;
}

/** The app needs what a job needs (it passes them on to runScrape), and keys and limits. */
export type AppDeps = ScrapeDeps & { readonly tenancy?: Tenancy };

export interface App {
  handle(req: IncomingMessage, res: ServerResponse): void;
  readonly scheduler: FairScheduler;
}

/** Keys from API_KEYS only, limits in this process's memory: enough for tests and a single instance. */
export function localTenancy(config: AppDeps['config'], logger: AppDeps['logger']): Tenancy {
  const keys = new KeyRing({
    envKeys: config.apiKeys,
    file: undefined,
    defaultRateLimit: config.rateLimit,
    defaultRateLimitWindowMs: config.rateLimitWindowMs,
    logger,
  });
  return { keys, store: new MemoryStore(), mode: () => 'memory' };
}

const SCRAPE_PATH = '/api/scrape';
/** A per-key lease outlives the longest job by this, in case its release never comes. */
const LEASE_MARGIN_MS = 30_000;
const REQUEST_ID = /^[\w.:-]{1,128}$/;

function contentTypeIsJson(req: IncomingMessage): boolean {
  const ct = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  return ct === 'application/json';
}

function successMessage(req: ScrapeRequest, out: ScrapeOutcome): string {
  if (req.script !== undefined) return 'Script executed successfully';
  const v = out.value as { ok?: boolean; status?: number | null } | undefined;
  if (v && typeof v === 'object' && v.ok === false) return `URL responded with HTTP status ${v.status ?? 'unknown'}`;
  return 'URL is reachable';
}

/** The body of an html reply: the string the script returned; see the README for other values. */
function htmlBody(out: ScrapeOutcome): string {
  if (typeof out.value === 'string') return out.value;
  if (out.json === undefined) return '';
  const v: unknown = JSON.parse(out.json);
  if (typeof v === 'string') return v;
  return v === null ? '' : out.json;
}

/** The Server-Timing header: where the request's time went, in milliseconds. */
function serverTiming(t: Record<string, number | undefined>): string {
  return Object.entries(t)
    .filter((e): e is [string, number] => e[1] !== undefined)
    .map(([name, ms]) => `${name};dur=${ms.toFixed(1)}`)
    .join(', ');
}

export function buildApp(deps: AppDeps): App {
  const { config, logger } = deps;
  const tenancy = deps.tenancy ?? localTenancy(config, logger);
  const rate = new RateLimiter(tenancy.store);
  const authFailures = new AuthFailureLimiter(tenancy.store, config.authFailureLimit, config.rateLimitWindowMs);
  const scheduler = new FairScheduler({
    maxConcurrency: config.maxConcurrency,
    queueLimit: config.queueLimit,
    queueTimeoutMs: config.queueTimeoutMs,
    store: tenancy.store,
    leaseTtlMs: config.navigationTimeoutMs + config.scriptTimeoutMs + LEASE_MARGIN_MS,
  });

  /** Authenticates, counting failures per client address; throws 401 or, past the limit, 429. */
  async function identify(req: IncomingMessage): Promise<Client> {
    const address = clientAddress(req, config.trustProxy);
    authFailures.check(address);
    try {
      return authenticate(req, tenancy.keys, config.gatewayHost);
    } catch (e) {
      if (e instanceof ApiError && (e.code === 'MISSING_API_KEY' || e.code === 'INVALID_API_KEY')) throw (await authFailures.failed(address)) ?? e;
      throw e;
    }
  }

  async function scrape(req: IncomingMessage, res: ServerResponse, requestId: string): Promise<void> {
    const t0 = performance.now();
    let rateHeaders: Record<string, string> = {};
    let host: string | undefined;
    let keyName: string | undefined;
    try {
      const client = await identify(req);
      keyName = client.name;
      rateHeaders = headersOf(await rate.hit(client.name, client.rateLimit, client.rateLimitWindowMs));
      if (!contentTypeIsJson(req)) throw new ApiError('UNSUPPORTED_MEDIA_TYPE');
      const parsed = parseScrapeRequest(await readBody(req, config.maxBodyBytes));
      host = new URL(parsed.url).host;

      const aborter = new AbortController();
      const onClose = (): void => {
        if (!res.writableFinished) aborter.abort();
      };
      res.once('close', onClose);
      const tQueue = performance.now();
      const release = await scheduler.acquire({ client: client.name, maxConcurrency: client.maxConcurrency }, aborter.signal);
      const queueMs = performance.now() - tQueue;
      let out: ScrapeOutcome;
      // The slot is held until the context is closed, which happens after the reply.
      let closing: Promise<void> = Promise.resolve();
      try {
        out = await runScrape(parsed, deps, aborter.signal, (p) => {
          closing = p;
        });
      } finally {
        void closing.finally(release);
        res.off('close', onClose);
      }
      const tSerialize = performance.now();
      let type = HTML_TYPE;
      let body: string;
      if (parsed.outputFormat === 'html') {
        body = htmlBody(out);
      } else {
        type = JSON_TYPE;
        const data = out.json !== undefined ? (JSON.parse(out.json) as unknown) : out.value;
        body = JSON.stringify({ message: successMessage(parsed, out), data, executionTime: out.executionTimeMs, logs: out.logs });
      }
      const headers = {
        ...rateHeaders,
        'X-Queue-Time-Ms': String(Math.round(queueMs)),
        'Server-Timing': serverTiming({ queue: queueMs, ...out.timings, serialize: performance.now() - tSerialize }),
      };
      sendBody(res, 200, type, body, headers);
      logger.info({ requestId, keyName, host, status: 200, ms: Math.round(performance.now() - t0), queueMs: Math.round(queueMs) }, 'scrape done');
    } catch (e) {
      const err = e instanceof ApiError ? e : internalError(e);
      sendError(res, err, rateHeaders);
      const log = err.status >= 500 ? logger.error.bind(logger) : logger.info.bind(logger);
      log(
        { requestId, keyName, host, status: err.status, code: err.code, ms: Math.round(performance.now() - t0), err: err.status >= 500 ? String(err.cause ?? err) : undefined },
        'scrape failed',
      );
    }
  }

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const given = req.headers['x-request-id'];
    const requestId = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    res.setHeader('X-Request-Id', requestId);
    const path = (req.url ?? '/').split('?')[0];
    if (path === SCRAPE_PATH) {
      if (req.method !== 'POST') {
        sendError(res, new ApiError('METHOD_NOT_ALLOWED', 'Method not allowed: use POST'), { Allow: 'POST' });
        return;
      }
      void scrape(req, res, requestId);
      return;
    }
    if (path === '/health') {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        sendError(res, new ApiError('METHOD_NOT_ALLOWED', 'Method not allowed: use GET'), { Allow: 'GET, HEAD' });
        return;
      }
      const ready = deps.browser.ready;
      const limits = tenancy.mode();
      // Limits on local memory while Redis is away is degraded, not down: it still serves.
      sendJson(res, ready ? 200 : 503, {
        status: !ready ? 'starting' : limits === 'local-fallback' ? 'degraded' : 'ok',
        browser: ready ? 'ready' : 'not ready',
        browserRestarts: deps.browser.restarts,
        running: scheduler.running,
        queued: scheduler.queued,
        limits,
      });
      return;
    }
    sendError(res, new ApiError('NOT_FOUND', `Not found: ${req.method ?? 'GET'} ${path?.slice(0, 200) ?? ''}`));
  }

  return { handle, scheduler };
}
