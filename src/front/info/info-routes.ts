// The GET endpoints about the service itself: /health, /ready, /live, /metrics,
// /openapi.json and /docs. None needs an API key; /metrics needs METRICS_TOKEN when set.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Config } from '../../common/config.js';
import { ApiError } from '../../common/errors.js';
import type { Metrics } from '../metrics.js';
import { memoryReport } from '../memory-report.js';
import { openApiDocument } from './openapi.js';
import type { LimitsMode } from '../tenancy/fallback-store.js';
import type { EgressSupervisor } from '../egress-process/egress-supervisor.js';
import type { KernelLockStatus } from '../host/kernel-lock.js';
import type { Supervisor } from '../slots/supervisor.js';
import { whyNoUsers } from '../host/users.js';
import type { KeyFileStatus } from '../tenancy/keyring.js';
import type { FairScheduler } from '../tenancy/scheduler.js';
import { DOCS_CSP, renderDocs } from './docs-page.js';
import { HTML_TYPE, JSON_TYPE, sendBody, sendError, sendJson } from '../http/reply.js';

export interface InfoDeps {
  readonly config: Config;
  /** The slot processes and their Chromium. */
  readonly slots: Pick<
    Supervisor,
    | 'browser'
    | 'serving'
    | 'restarts'
    | 'chromiumSandbox'
    | 'memory'
    | 'slotCgroups'
    | 'slotNonDumpable'
    | 'slotPrivateTmp'
    | 'users'
  > & {
    readonly egress: Pick<EgressSupervisor, 'ready' | 'restarts'>;
  };
  readonly scheduler: FairScheduler;
  readonly kernelLock: KernelLockStatus;
  readonly metrics: Metrics;
  limitsMode(): LimitsMode;
  keyFileStatus(): KeyFileStatus;
  draining(): boolean;
  /** Answers a request that failed inside the service: 500, logged and counted once. */
  fail(res: ServerResponse, e: unknown): void;
}

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/** SECURITY: compared as digests in constant time, so timing says nothing of the token. */
function bearerMatches(req: IncomingMessage, token: string): boolean {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
  return m !== null && timingSafeEqual(digest(m[1] ?? ''), digest(token));
}

export function infoRoutes(deps: InfoDeps): {
  handle(path: string, req: IncomingMessage, res: ServerResponse): boolean;
} {
  const { config, slots, scheduler, metrics } = deps;
  /** Why the slots share the front's user, if they do (read once: what the runtime gave does not change). */
  const noSlotUsers = whyNoUsers();
  // Made at the first request for them, not at start.
  let docs: { json: string; html: string } | undefined;
  const document = (): { json: string; html: string } => {
    if (docs) return docs;
    const doc = openApiDocument(config);
    docs = { json: JSON.stringify(doc), html: renderDocs(doc) };
    return docs;
  };

  function health(req: IncomingMessage, res: ServerResponse): void {
    const browser = slots.browser;
    // SECURITY: the front's own view of its slots, never a slot's word (Supervisor.serving).
    const ready = slots.serving;
    const limits = deps.limitsMode();
    const keys = deps.keyFileStatus();
    const degraded = limits === 'local-fallback' || keys === 'stale';
    const status = deps.draining() ? 'draining' : !ready ? 'starting' : degraded ? 'degraded' : 'ok';
    // SECURITY: how busy the service is and how often Chromium died is other
    // tenants' work: shown only with METRICS_TOKEN, as /metrics is.
    const trusted = config.metricsToken !== undefined && bearerMatches(req, config.metricsToken);
    const counts = trusted
      ? {
          browserRestarts: browser.restarts,
          browserRecycles: browser.recycles,
          slotRestarts: slots.restarts,
          /** Deprecated: slotRestarts, its new name; kept one release (docs/operations.md). */
          executorRestarts: slots.restarts,
          egress: slots.egress.ready ? 'ready' : 'not ready',
          egressRestarts: slots.egress.restarts,
          running: scheduler.running,
          queued: scheduler.queued,
        }
      : {};
    // The budget is how the service is set up (shown to all); what is in use is other tenants' work (token only).
    // SECURITY: what is in use is read (a walk of every slot's processes) only for a caller who may see it,
    // so that unauthenticated /health calls cost the front nothing another tenant would feel.
    const m = memoryReport(config, scheduler.running, slots, trusted);
    const memory = {
      serviceMb: m.serviceMb,
      plannedMb: m.plannedMb,
      perRequestMb: m.perRequestMb,
      pageLimitMb: m.pageLimitMb,
      scriptLimitMb: m.scriptLimitMb,
      slotHostLimitMb: config.memory.slotHostLimitMb,
      maxConcurrency: config.maxConcurrency,
      ...(trusted
        ? {
            reservedMb: m.reservedMb,
            inUseMb: m.inUseMb,
            frontMb: m.frontMb,
            slotsMb: m.slotsMb,
            /** Deprecated: slotsMb, its new name; kept one release (docs/operations.md). */
            executorsMb: m.slotsMb,
            chromiumMb: m.chromiumMb,
            pagesMb: m.pagesMb,
          }
        : {}),
    };
    // Limits on local memory while Redis is away, or keys from an older file, is degraded, not down: it still serves.
    sendJson(res, ready && status !== 'draining' ? 200 : 503, {
      status,
      // As the slots say (display): a slot's word decides nothing here.
      browser: browser.ready ? 'ready' : 'not ready',
      // Which Chromium (CHROMIUM): the headless shell or the full browser; how the service is set up, shown to all.
      chromium: config.chromium,
      chromiumSandbox: slots.chromiumSandbox ?? null,
      // How the service is set up (shown to all): whether the kernel backs the egress guard.
      kernelLock: deps.kernelLock.on ? 'on' : `off: ${deps.kernelLock.why}`,
      // The user each slot runs as, slot i's at i (how the service is set up, shown to all), or why they share one.
      slotUsers: slots.users?.map((u) => u.user) ?? `off: ${noSlotUsers ?? 'not started'}`,
      // Whether the kernel holds each slot's CPU, memory and tasks (docs/budgets.md), shown to all.
      slotCgroups: slots.slotCgroups,
      // Whether no process of a slot's user can read the slot's processes, and each slot's tmp is its own (shown to all).
      slotNonDumpable: slots.slotNonDumpable,
      slotPrivateTmp: slots.slotPrivateTmp,
      ...counts,
      memory,
      limits,
      keys,
    });
  }

  async function metricsText(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (config.metricsToken !== undefined && !bearerMatches(req, config.metricsToken)) {
      sendError(res, new ApiError('INVALID_METRICS_TOKEN'), { 'WWW-Authenticate': 'Bearer' });
      return;
    }
    sendBody(res, 200, metrics.contentType, await metrics.text());
  }

  /** For a balancer or Kubernetes: whether to send this instance requests. Saturation is not unreadiness (429 says it). */
  function ready(res: ServerResponse): void {
    const status = deps.draining() ? 'draining' : slots.serving ? 'ready' : 'starting';
    sendJson(res, status === 'ready' ? 200 : 503, { status });
  }

  const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => void> = {
    '/health': (req, res) => health(req, res),
    '/ready': (_req, res) => ready(res),
    // Liveness: the process answers. Never 503 while starting or draining, so that neither restarts it.
    '/live': (_req, res) => sendJson(res, 200, { status: 'alive' }),
    '/metrics': (req, res) => {
      metricsText(req, res).catch((e: unknown) => deps.fail(res, e));
    },
    '/openapi.json': (_req, res) => sendBody(res, 200, JSON_TYPE, document().json),
    '/docs': (_req, res) => sendBody(res, 200, HTML_TYPE, document().html, { 'Content-Security-Policy': DOCS_CSP }),
  };

  return {
    handle(path, req, res) {
      const route = routes[path];
      if (route === undefined) return false;
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        sendError(res, new ApiError('METHOD_NOT_ALLOWED', 'Method not allowed: use GET'), { Allow: 'GET, HEAD' });
        return true;
      }
      route(req, res);
      return true;
    },
  };
}
