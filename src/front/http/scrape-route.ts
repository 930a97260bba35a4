// POST /api/scrape: who is calling, their limits, the body, a slot, the job,
// the reply, and one log line and the metrics for each request.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError } from '../../common/errors.js';
import type { Metrics } from '../metrics.js';
import type { Config } from '../../common/config.js';
import type { WireResult as ScrapeOutcome, JobRequest as ScrapeRequest } from '../../protocol/jobs.js';
import type { Logger } from '../../common/log.js';
import type { Supervisor } from '../children/supervisor.js';
import type { Client, KeyRing } from '../tenancy/keyring.js';
import type { FairScheduler } from '../tenancy/scheduler.js';
import type { LimitStore } from '../tenancy/store.js';
import { authenticate, clientAddress } from './auth.js';
import { checkContentEncoding, readBody } from './body.js';
import { requestTimedOut } from './edge.js';
import { AuthFailureLimiter, RateLimiter, rateHeaders as headersOf } from '../tenancy/rate-limit.js';
import { HTML_TYPE, JSON_TYPE, internalError, sendBody, sendError, setReplyOwner } from './reply.js';
import { parseScrapeRequest, requestProxy } from './validate.js';
import { background } from '../../common/background.js';
import { checkAgainstPolicy, jobLimits, securityThreshold } from '../tenancy/key-policy.js';
import { jobUsage, usageHeaders, type RequestUsage, type UsageLog } from '../usage.js';
import type { SecurityMonitor } from '../tenancy/security-monitor.js';
import { RUNNER_STOPPED } from '../../protocol/jobs.js';
import type { SecurityClass, SecurityReport } from '../../protocol/security.js';

export interface ScrapeRouteDeps {
  readonly config: Config;
  readonly logger: Logger;
  /** Runs the job in a script executor (another process). */
  readonly executors: Pick<Supervisor, 'run'>;
  readonly keys: KeyRing;
  readonly store: LimitStore;
  readonly scheduler: FairScheduler;
  readonly metrics: Metrics;
  /** Set while the service shuts down: new requests are refused. */
  draining(): boolean;
  /** Jobs in progress, so shutdown can end the ones that outlive the grace period. */
  readonly running: Set<AbortController>;
  /** Where each request's usage record goes (USAGE_LOG). */
  readonly usage: UsageLog;
  /** Scores each key's security events; refuses a blocked key's requests (403 KEY_BLOCKED). */
  readonly security: SecurityMonitor;
}

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

/** The body of an html reply: the string the script returned; see docs/api.md for other values. */
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

/** The outcome of a request whose client went away before its reply (nginx logs these as 499). */
export const CLIENT_CLOSED = 'CLIENT_CLOSED';

const round = (ms: number | undefined): number | undefined => (ms === undefined ? undefined : Math.round(ms));

export function scrapeRoute(
  deps: ScrapeRouteDeps,
): (req: IncomingMessage, res: ServerResponse, requestId: string) => Promise<void> {
  const { config, logger, metrics, scheduler } = deps;
  const rate = new RateLimiter(deps.store);
  const authFailures = new AuthFailureLimiter(deps.store, config.authFailureLimit, config.rateLimitWindowMs);

  /**
   * Authenticates; throws 401, or 429 for a wrong key from an address past
   * AUTH_FAILURE_LIMIT. SECURITY: the key is looked up first, always, so no
   * one else's failures from the same address ever refuse a valid key.
   */
  async function identify(req: IncomingMessage): Promise<Client> {
    const auth = authenticate(req, deps.keys, config.gatewayHost);
    if (auth.ok) return auth.client;
    if (auth.guess) throw (await authFailures.failed(clientAddress(req, config.trustProxy))) ?? auth.error;
    throw auth.error;
  }

  /** The request's usage record and per-key counters; for authenticated requests only. */
  function account(keyName: string, requestId: string, code: string, status: number, u: RequestUsage, slotMs?: number) {
    deps.usage.record({ time: new Date().toISOString(), key: keyName, requestId, code, status, ...u });
    metrics.countKeyUsage(keyName, code, { ...u, ...(slotMs === undefined ? {} : { browserMs: slotMs }) });
  }

  return async function scrape(req, res, requestId) {
    const t0 = performance.now();
    let tSlot: number | undefined;
    let rateHeaders: Record<string, string> = {};
    let host: string | undefined;
    let keyName: string | undefined;
    let queueMs: number | undefined;
    let proxy: string | undefined;
    /** The request's security events once it has run (its log line's counts by class). */
    let security: Partial<Record<SecurityClass, number>> | undefined;
    try {
      if (deps.draining())
        throw new ApiError('SERVICE_UNAVAILABLE', 'Service unavailable: shutting down', {
          headers: { Connection: 'close' },
        });
      const client = await identify(req);
      keyName = client.name;
      // Its reply counts towards REPLY_MEMORY_BYTES as this key's.
      setReplyOwner(res, client.name);
      rateHeaders = headersOf(await rate.hit(client.name, client.rateLimit, client.rateLimitWindowMs));
      // SECURITY: a blocked key's request ends here, before its body is read or a slot is touched.
      await deps.security.check(client.name);
      if (!contentTypeIsJson(req)) throw new ApiError('UNSUPPORTED_MEDIA_TYPE');
      checkContentEncoding(req);
      const parsed = parseScrapeRequest(await readBody(req, config.maxBodyBytes));
      host = new URL(parsed.url).host;
      // Before any slot or page: a proxy this key may not use is 400 INVALID_OPTIONS.
      const proxied = requestProxy(parsed, client, config.proxies);
      proxy = proxied.proxy;
      // Before any slot or page: what the key's policy does not allow is refused here.
      checkAgainstPolicy(client.policy, parsed, config);
      const limits = jobLimits(client.policy, config);
      const hosts = client.policy?.policy.hosts;
      const job = { ...proxied, ...(limits ? { limits } : {}), ...(hosts ? { hosts } : {}) };

      const aborter = new AbortController();
      const onClose = (): void => {
        if (!res.writableFinished) aborter.abort();
      };
      res.once('close', onClose);
      deps.running.add(aborter);
      let out: ScrapeOutcome;
      const watched = deps.security.begin(requestId, client.name);
      const threshold = securityThreshold(client.policy?.policy, config);
      try {
        const tQueue = performance.now();
        const release = await scheduler.acquire(
          { client: client.name, maxConcurrency: client.maxConcurrency },
          aborter.signal,
        );
        tSlot = performance.now();
        queueMs = tSlot - tQueue;
        metrics.queueWait.observe(queueMs / 1000);
        // The slot is held until the context is closed, which happens after the reply.
        let closing: Promise<void> = Promise.resolve();
        try {
          if (proxy !== undefined) metrics.proxyRequests.inc({ proxy });
          out = await deps.executors.run(
            { ...job, requestId },
            aborter.signal,
            (p) => {
              closing = p;
            },
            client.name,
            // Signs of an escape into its slot go in the request's own record (escape-signs.ts).
            watched.record,
          );
        } finally {
          background(closing.finally(release), 'closing a context', logger);
        }
        security = (
          await deps.security.finish(requestId, watched, {
            ...(out.security ? { report: out.security } : {}),
            threshold,
          })
        ).security;
      } catch (e) {
        const err = e instanceof ApiError ? e : undefined;
        // A slot process that died under its request (not a memory kill, not a deadline): a security event.
        const died = err?.code === 'INTERNAL_SERVER_ERROR' && err.internal === 'runner-stopped';
        security = (
          await deps.security.finish(requestId, watched, {
            // Checked as it crossed from the slot (isWireError): a SecurityReport.
            ...(err?.security ? { report: err.security as SecurityReport } : {}),
            ...(died ? { slotDied: String(err.cause ?? RUNNER_STOPPED) } : {}),
            threshold,
          })
        ).security;
        throw e;
      } finally {
        deps.running.delete(aborter);
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
        body = JSON.stringify({
          message: successMessage(parsed, out),
          data,
          executionTime: out.executionTimeMs,
          logs: out.logs,
        });
      }
      const tReply = performance.now();
      const usage: RequestUsage = { wallMs: tReply - t0, queueMs, ...jobUsage(out.usage, out.egress) };
      const headers = {
        ...rateHeaders,
        'X-Queue-Time-Ms': String(Math.round(queueMs)),
        'Server-Timing': serverTiming({ queue: queueMs, ...out.timings, serialize: tReply - tSerialize }),
        ...usageHeaders(usage),
      };
      sendBody(res, 200, type, body, headers);
      // Served: a defect in what follows (accounting, the log line) is the service's, never the caller's 500.
      try {
        account(client.name, requestId, 'OK', 200, usage, tReply - (tSlot ?? tReply));
        if (proxy !== undefined) metrics.countProxyEgress(proxy, out.egress);
        const ms = performance.now() - t0;
        metrics.requests.inc({ code: 'OK' });
        metrics.duration.observe(ms / 1000);
        logger.info(
          {
            requestId,
            keyName,
            host,
            ...(proxy === undefined ? {} : { proxy }),
            status: 200,
            code: 'OK',
            ms: Math.round(ms),
            queueMs: Math.round(queueMs),
            leaseMs: round(out.timings.lease),
            isolateMs: round(out.timings.isolate),
            navigationMs: round(out.timings.navigation),
            scriptMs: round(out.timings.script),
            executionMs: out.executionTimeMs,
            egress: out.egress,
            ...(security ? { security } : {}),
          },
          'scrape done',
        );
      } catch (e) {
        logger.error({ requestId, keyName, err: String(e) }, 'accounting a served request failed');
      }
    } catch (e) {
      const ms = performance.now() - t0;
      if (res.destroyed && !res.writableFinished) {
        // No reply can be sent: the client went away, or its body ran out of time (the edge answered 408).
        // Its own outcome, at info: neither a 500 nor an error of the service.
        const timedOut = requestTimedOut(req.socket);
        const code = timedOut ? 'REQUEST_TIMEOUT' : CLIENT_CLOSED;
        metrics.requests.inc({ code });
        // No reply, but what the request cost is still the key's.
        if (keyName !== undefined) {
          const cost = e instanceof ApiError ? jobUsage(e.usage, e.egress) : {};
          const u: RequestUsage = { wallMs: ms, ...(queueMs === undefined ? {} : { queueMs }), ...cost };
          account(keyName, requestId, code, timedOut ? 408 : 499, u, tSlot === undefined ? undefined : t0 + ms - tSlot);
        }
        metrics.duration.observe(ms / 1000);
        // A failure of the service's own under it still counts, though no 500 could be sent.
        const cause = e instanceof ApiError ? e.internal : undefined;
        if (cause !== undefined) metrics.internalErrors.inc({ cause });
        logger.info(
          {
            requestId,
            keyName,
            host,
            status: timedOut ? 408 : 499,
            code,
            ms: Math.round(ms),
            queueMs: round(queueMs),
            ...(cause === undefined ? {} : { cause }),
          },
          timedOut ? 'scrape failed: request not received in time' : 'scrape abandoned: the client went away',
        );
        return;
      }
      const err = e instanceof ApiError ? e : internalError(e);
      // Every reply after authentication says what the request cost, as far as it got.
      const usage: RequestUsage | undefined =
        keyName === undefined
          ? undefined
          : { wallMs: ms, ...(queueMs === undefined ? {} : { queueMs }), ...jobUsage(err.usage, err.egress) };
      sendError(res, err, usage ? { ...rateHeaders, ...usageHeaders(usage) } : rateHeaders);
      if (usage && keyName !== undefined)
        account(keyName, requestId, err.code, err.status, usage, tSlot === undefined ? undefined : t0 + ms - tSlot);
      if (proxy !== undefined) metrics.countProxyEgress(proxy, err.egress);
      metrics.requests.inc({ code: err.code });
      metrics.duration.observe(ms / 1000);
      if (err.code === 'MEMORY_LIMIT_EXCEEDED') metrics.memoryKills.inc();
      if (err.timeout !== undefined) metrics.timeouts.inc({ phase: err.timeout });
      const internal = err.code === 'INTERNAL_SERVER_ERROR' ? (err.internal ?? 'unexpected') : undefined;
      if (internal !== undefined) metrics.internalErrors.inc({ cause: internal });
      if (err.housekeeping !== undefined) metrics.notPrepared.inc({ cause: err.housekeeping });
      // A 500 is the one error line of its request; a 503 (shutting down, nothing prepared in time) is no defect.
      const log =
        err.status === 500
          ? logger.error.bind(logger)
          : err.status >= 500
            ? logger.warn.bind(logger)
            : logger.info.bind(logger);
      log(
        {
          requestId,
          keyName,
          host,
          ...(proxy === undefined ? {} : { proxy }),
          status: err.status,
          code: err.code,
          ms: Math.round(ms),
          queueMs: round(queueMs),
          leaseMs: round(err.timings?.lease),
          isolateMs: round(err.timings?.isolate),
          navigationMs: round(err.timings?.navigation),
          scriptMs: round(err.timings?.script),
          slot: err.slot,
          phase: err.phase,
          cause: internal ?? err.housekeeping,
          err: err.status >= 500 ? String(err.cause ?? err) : undefined,
          egress: err.egress,
          ...(security ? { security } : {}),
        },
        'scrape failed',
      );
    }
  };
}
