// POST /api/scrape: who is calling, their limits, the body, a slot, the job,
// the reply, and one log line and the metrics for each request.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError, type InternalCause } from '../../common/errors.js';
import type { Metrics } from '../metrics.js';
import type { Config } from '../../common/config.js';
import {
  failedJob,
  type FailedJob,
  type JobOutcome,
  type JobRequest as ScrapeRequest,
  type JobResult,
  type JobTelemetry,
  type JobTimings,
} from '../../protocol/jobs.js';
import type { Logger } from '../../common/log.js';
import type { Supervisor } from '../slots/supervisor.js';
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
import type { SecurityMonitor } from '../security/security-monitor.js';
import { RUNNER_STOPPED } from '../../protocol/jobs.js';
import type { SecurityClass } from '../../protocol/security.js';

export interface ScrapeRouteDeps {
  readonly config: Config;
  readonly logger: Logger;
  /** Runs the job in a slot process (another process). */
  readonly slots: Pick<Supervisor, 'run'>;
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

function successMessage(req: ScrapeRequest, out: JobResult): string {
  if (req.script !== undefined) return 'Script executed successfully';
  const v = out.value as { ok?: boolean; status?: number | null } | undefined;
  if (v && typeof v === 'object' && v.ok === false) return `URL responded with HTTP status ${v.status ?? 'unknown'}`;
  return 'URL is reachable';
}

/** The body of an html reply: the string the script returned; see docs/api.md for other values. */
function htmlBody(out: JobResult): string {
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

/** What the route learns of a request on its way, for its one finish. */
interface Progress {
  readonly t0: number;
  /** When it got its slot (performance.now()). */
  tSlot?: number;
  rateHeaders: Record<string, string>;
  host?: string;
  keyName?: string;
  queueMs?: number;
  proxy?: string;
  /** The request once its body is checked: how its result is replied. */
  parsed?: ScrapeRequest;
  /** The request's security events once it has run (its log line's counts by class). */
  security?: Partial<Record<SecurityClass, number>>;
}

/** An admitted request: its key's client and the job it asks for. */
interface Admitted {
  readonly client: Client;
  readonly job: Omit<ScrapeRequest, 'requestId'>;
}

/** How a request ends, for finish(): what is counted, accounted and logged of it. */
interface Ending {
  readonly status: number;
  readonly code: string;
  /** What it cost, accounted to its key when it has one. */
  readonly usage?: RequestUsage;
  /** Its wall time as billed, where it failed (the log line and the histogram read the same figure). */
  readonly ms?: number;
  /** From its slot to its end, in ms, when it had a slot. */
  readonly slotMs?: number;
  /** What its context did through its proxy, counted per proxy. */
  readonly egress?: Readonly<Record<string, number>>;
  /** The error its reply carried (none: served, or no reply could be sent). */
  readonly replied?: ApiError;
  /** Why a 500 happened (the cause label of pagescript_internal_errors_total). */
  readonly internal?: InternalCause;
  readonly level: 'info' | 'warn' | 'error';
  readonly message: string;
  /** Its log line's fields after the common ones. */
  readonly fields: Record<string, unknown>;
  /** Whether its log line names the request's proxy. */
  readonly namesProxy: boolean;
}

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

  /** Who is calling, their limits and their body, all checked before any slot or page: the job to run. */
  async function admit(req: IncomingMessage, res: ServerResponse, p: Progress): Promise<Admitted> {
    if (deps.draining())
      throw new ApiError('SERVICE_UNAVAILABLE', 'Service unavailable: shutting down', {
        headers: { Connection: 'close' },
      });
    const client = await identify(req);
    p.keyName = client.name;
    // Its reply counts towards REPLY_MEMORY_BYTES as this key's.
    setReplyOwner(res, client.name);
    p.rateHeaders = headersOf(await rate.hit(client.name, client.rateLimit, client.rateLimitWindowMs));
    // SECURITY: a blocked key's request ends here, before its body is read or a slot is touched.
    await deps.security.check(client.name);
    if (!contentTypeIsJson(req)) throw new ApiError('UNSUPPORTED_MEDIA_TYPE');
    checkContentEncoding(req);
    const parsed = parseScrapeRequest(await readBody(req, config.maxBodyBytes));
    p.host = new URL(parsed.url).host;
    // Before any slot or page: a proxy this key may not use is 400 INVALID_OPTIONS.
    const proxied = requestProxy(parsed, client, config.proxies);
    p.proxy = proxied.proxy;
    // Before any slot or page: what the key's policy does not allow is refused here.
    checkAgainstPolicy(client.policy, parsed, config);
    const limits = jobLimits(client.policy, config);
    const hosts = client.policy?.policy.hosts;
    p.parsed = parsed;
    return { client, job: { ...proxied, ...(limits ? { limits } : {}), ...(hosts ? { hosts } : {}) } };
  }

  /**
   * The job, in a slot of the key's fair share, cancelled when the client goes away; then its security
   * events scored for its key. Its outcome, whether it ran or not.
   */
  async function runJob(res: ServerResponse, requestId: string, p: Progress, admitted: Admitted): Promise<JobOutcome> {
    const { client, job } = admitted;
    const aborter = new AbortController();
    const onClose = (): void => {
      if (!res.writableFinished) aborter.abort();
    };
    res.once('close', onClose);
    deps.running.add(aborter);
    const watched = deps.security.begin(requestId, client.name);
    try {
      let out: JobOutcome;
      try {
        const tQueue = performance.now();
        const release = await scheduler.acquire(
          { client: client.name, maxConcurrency: client.maxConcurrency },
          aborter.signal,
        );
        p.tSlot = performance.now();
        p.queueMs = p.tSlot - tQueue;
        metrics.queueWait.observe(p.queueMs / 1000);
        // The slot is held until the context is closed, which happens after the reply.
        let closing: Promise<void> = Promise.resolve();
        try {
          if (p.proxy !== undefined) metrics.proxyRequests.inc({ proxy: p.proxy });
          const hold = (c: Promise<void>): void => {
            closing = c;
          };
          // Signs of an escape into its slot go in the request's own record (escape-signs.ts).
          out = await deps.slots.run({ ...job, requestId }, aborter.signal, hold, client.name, watched.record);
        } finally {
          background(closing.finally(release), 'closing a context', logger);
        }
      } catch (e) {
        out = failedJob(e instanceof ApiError ? e : internalError(e));
      }
      const err = out.ok ? undefined : out.error;
      // A slot process that died under its request (not a memory kill, not a deadline): a security event.
      const died = err?.code === 'INTERNAL_SERVER_ERROR' && err.internal === 'runner-stopped';
      const report = out.telemetry.security;
      p.security = (
        await deps.security.finish(requestId, watched, {
          // Checked as it crossed from the slot (isWireResult, isWireError).
          ...(report ? { report } : {}),
          ...(died ? { slotDied: String(err.cause ?? RUNNER_STOPPED) } : {}),
          threshold: securityThreshold(client.policy?.policy, config),
        })
      ).security;
      return out;
    } finally {
      deps.running.delete(aborter);
      res.off('close', onClose);
    }
  }

  /** The 200 reply of a job that succeeded; returns its usage. */
  function reply(res: ServerResponse, p: Progress, result: JobResult, t: JobTelemetry): RequestUsage {
    const parsed = p.parsed as ScrapeRequest;
    const queueMs = p.queueMs as number;
    const tSerialize = performance.now();
    let type = HTML_TYPE;
    let body: string;
    if (parsed.outputFormat === 'html') {
      body = htmlBody(result);
    } else {
      type = JSON_TYPE;
      const data = result.json !== undefined ? (JSON.parse(result.json) as unknown) : result.value;
      body = JSON.stringify({
        message: successMessage(parsed, result),
        data,
        executionTime: result.executionTimeMs,
        logs: result.logs,
      });
    }
    const tReply = performance.now();
    const usage: RequestUsage = { wallMs: tReply - p.t0, queueMs, ...jobUsage(t.usage, t.egress) };
    const headers = {
      ...p.rateHeaders,
      'X-Queue-Time-Ms': String(Math.round(queueMs)),
      'Server-Timing': serverTiming({ queue: queueMs, ...t.timings, serialize: tReply - tSerialize }),
      ...usageHeaders(usage),
    };
    sendBody(res, 200, type, body, headers);
    return usage;
  }

  const timingFields = (t: JobTimings | undefined): Record<string, number | undefined> => ({
    leaseMs: round(t?.lease),
    isolateMs: round(t?.isolate),
    navigationMs: round(t?.navigation),
    scriptMs: round(t?.script),
  });

  /** A job that succeeded: its 200 reply sent. */
  function served(res: ServerResponse, p: Progress, result: JobResult, t: JobTelemetry): Ending {
    const usage = reply(res, p, result, t);
    return {
      status: 200,
      code: 'OK',
      usage,
      ...(p.tSlot === undefined ? {} : { slotMs: p.t0 + usage.wallMs - p.tSlot }),
      ...(t.egress === undefined ? {} : { egress: t.egress }),
      level: 'info',
      message: 'scrape done',
      fields: {
        ...timingFields(t.timings),
        executionMs: result.executionTimeMs,
        egress: t.egress,
        ...(p.security ? { security: p.security } : {}),
      },
      namesProxy: true,
    };
  }

  /**
   * No reply can be sent: the client went away, or its body ran out of time (the edge answered 408). Its
   * own outcome, at info: neither a 500 nor an error of the service; what it cost is still the key's.
   */
  function abandoned(req: IncomingMessage, p: Progress, failed: FailedJob): Ending {
    const ms = performance.now() - p.t0;
    const timedOut = requestTimedOut(req.socket);
    // A failure of the service's own under it still counts, though no 500 could be sent.
    const cause = failed.error.internal;
    return {
      status: timedOut ? 408 : 499,
      code: timedOut ? 'REQUEST_TIMEOUT' : CLIENT_CLOSED,
      usage: costOf(p, ms, failed.telemetry),
      ms,
      ...(p.tSlot === undefined ? {} : { slotMs: p.t0 + ms - p.tSlot }),
      ...(cause === undefined ? {} : { internal: cause }),
      level: 'info',
      message: timedOut ? 'scrape failed: request not received in time' : 'scrape abandoned: the client went away',
      fields: { ...(cause === undefined ? {} : { cause }), ...(p.security ? { security: p.security } : {}) },
      namesProxy: false,
    };
  }

  /** What a request that did not succeed cost: its wall and queue time, and what its job measured. */
  const costOf = (p: Progress, ms: number, t: JobTelemetry): RequestUsage => ({
    wallMs: ms,
    ...(p.queueMs === undefined ? {} : { queueMs: p.queueMs }),
    ...jobUsage(t.usage, t.egress),
  });

  /** A job or a request that failed: its error reply sent, with what it cost as far as it got. */
  function failedWith(res: ServerResponse, p: Progress, failed: FailedJob): Ending {
    const ms = performance.now() - p.t0;
    const { error: err, telemetry: t } = failed;
    // Every reply after authentication says what the request cost, as far as it got.
    const usage = p.keyName === undefined ? undefined : costOf(p, ms, t);
    sendError(res, err, usage ? { ...p.rateHeaders, ...usageHeaders(usage) } : p.rateHeaders);
    const internal = err.code === 'INTERNAL_SERVER_ERROR' ? (err.internal ?? 'unexpected') : undefined;
    return {
      status: err.status,
      code: err.code,
      ...(usage === undefined ? {} : { usage }),
      ms,
      ...(p.tSlot === undefined ? {} : { slotMs: p.t0 + ms - p.tSlot }),
      ...(t.egress === undefined ? {} : { egress: t.egress }),
      replied: err,
      ...(internal === undefined ? {} : { internal }),
      // A 500 is the one error line of its request; a 503 (shutting down, nothing prepared in time) is no defect.
      level: err.status === 500 ? 'error' : err.status >= 500 ? 'warn' : 'info',
      message: 'scrape failed',
      fields: {
        ...timingFields(t.timings),
        slot: t.slot,
        phase: t.phase,
        cause: internal ?? err.housekeeping,
        err: err.status >= 500 ? String(err.cause ?? err) : undefined,
        egress: t.egress,
        ...(p.security ? { security: p.security } : {}),
      },
      namesProxy: true,
    };
  }

  /** How the request ends: its reply sent (when one can still be sent), and what is to be counted of it. */
  function endingOf(req: IncomingMessage, res: ServerResponse, p: Progress, outcome: JobOutcome): Ending {
    if (outcome.ok) {
      try {
        return served(res, p, outcome.result, outcome.telemetry);
      } catch (e) {
        // The reply could not be made of the result: the service's 500, billed what the job measured.
        return endingOf(req, res, p, failedJob(internalError(e), outcome.telemetry));
      }
    }
    return res.destroyed && !res.writableFinished ? abandoned(req, p, outcome) : failedWith(res, p, outcome);
  }

  /**
   * The one end of every request, whatever its outcome: its reply, then its usage record, its metrics
   * and its one log line.
   */
  function finish(req: IncomingMessage, res: ServerResponse, requestId: string, p: Progress, outcome: JobOutcome) {
    const e = endingOf(req, res, p, outcome);
    const { keyName, host, proxy } = p;
    const { status, code } = e;
    // Replied (or not repliable): a defect in what follows is the service's, never the caller's 500. The bill
    // apart: its failure leaves the metrics and the request's log line.
    try {
      if (e.usage && keyName !== undefined) account(keyName, requestId, code, status, e.usage, e.slotMs);
    } catch (err) {
      logger.error({ requestId, keyName, status, code, err: String(err) }, 'accounting a request failed');
    }
    try {
      if (proxy !== undefined) metrics.countProxyEgress(proxy, e.egress);
      const ms = e.ms ?? performance.now() - p.t0;
      metrics.requests.inc({ code: e.code });
      metrics.duration.observe(ms / 1000);
      const err = e.replied;
      if (err?.code === 'MEMORY_LIMIT_EXCEEDED') metrics.memoryKills.inc();
      if (err?.timeout !== undefined) metrics.timeouts.inc({ phase: err.timeout });
      if (e.internal !== undefined) metrics.internalErrors.inc({ cause: e.internal });
      if (err?.housekeeping !== undefined) metrics.notPrepared.inc({ cause: err.housekeeping });
      const named = e.namesProxy && proxy !== undefined ? { proxy } : {};
      logger[e.level](
        {
          requestId,
          keyName,
          host,
          ...named,
          status,
          code,
          ms: Math.round(ms),
          queueMs: round(p.queueMs),
          ...e.fields,
        },
        e.message,
      );
    } catch (err) {
      logger.error({ requestId, keyName, status, code, err: String(err) }, 'finishing a request failed');
    }
  }

  return async function scrape(req, res, requestId) {
    const p: Progress = { t0: performance.now(), rateHeaders: {} };
    let outcome: JobOutcome;
    try {
      outcome = await runJob(res, requestId, p, await admit(req, res, p));
    } catch (e) {
      outcome = failedJob(e instanceof ApiError ? e : internalError(e));
    }
    finish(req, res, requestId, p, outcome);
  };
}
