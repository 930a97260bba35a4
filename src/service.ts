// Wires the service together and starts it: egress guard, Chromium, the HTTP
// server. Used by server.ts (the process) and by the end-to-end tests.
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { buildApp, localTenancy, type App, type Tenancy } from './app.js';
import { BrowserHost } from './browser/browser.js';
import { withConfig, type Config } from './config.js';
import { EgressChecker, systemAddresses, systemResolver, type Resolver } from './egress/checker.js';
import { EgressGuard, type Connector, type GuardLimits } from './egress/guard.js';
import type { Logger } from './log.js';
import { releaseBundleCache } from './sandbox/bundle.js';
import { SandboxPool } from './sandbox/pool.js';
import { FallbackStore } from './tenancy/fallback-store.js';
import { KeyRing } from './tenancy/keyring.js';
import { RedisStore } from './tenancy/redis-store.js';

export interface Service {
  readonly config: Config;
  readonly port: number;
  readonly guard: EgressGuard;
  readonly browser: BrowserHost;
  readonly sandboxes: SandboxPool;
  readonly app: App;
  readonly tenancy: Tenancy;
  readonly server: Server;
  /**
   * Graceful stop: no new connections; new and waiting requests get 503;
   * running scripts may finish for up to graceMs (SHUTDOWN_GRACE_MS), then
   * they are ended (503); then everything is closed, Chromium included.
   */
  shutdown(graceMs?: number): Promise<void>;
  /** Closes everything now; requests in flight fail. */
  close(): Promise<void>;
}

/**
 * After this long with no script running or waiting, the service's V8 heap is
 * collected once, so memory taken under load goes back to the system instead of
 * staying at its high-water mark. Needs node --expose-gc, which npm start, the
 * container and the bench pass; without it nothing is done.
 *
 * The collection is V8's last-resort kind (what V8 does before giving up on
 * memory): it compacts and hands pooled and emptied pages back. A plain full
 * collection frees objects but keeps the pages: measured after a soak, heap
 * used 40 MB with 173 MB committed and RSS 261 MB; the last-resort kind brought
 * them to 47 MB committed and RSS 169 MB. It takes ~30 ms on a 70 MB heap
 * (measured), once, while nothing runs.
 */
const IDLE_GC_MS = 5_000;

type GcOptions = { type: 'major'; execution: 'sync'; flavor: 'last-resort' };

function collectWhenIdle(app: App): () => void {
  const gc = (globalThis as { gc?: (options?: GcOptions) => void }).gc;
  if (typeof gc !== 'function') return () => undefined;
  let lastBusy = Date.now();
  let collected = true;
  const timer = setInterval(() => {
    if (app.scheduler.running + app.scheduler.queued > 0) {
      lastBusy = Date.now();
      collected = false;
    } else if (!collected && Date.now() - lastBusy >= IDLE_GC_MS) {
      collected = true;
      gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
    }
  }, 1000);
  timer.unref();
  return () => clearInterval(timer);
}

/** After the grace period, how long ended scripts get to send their 503. */
const ABORT_SETTLE_MS = 5_000;

async function waitUntil(cond: () => boolean, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 25));
}

export interface ServiceOptions {
  readonly resolver?: Resolver;
  readonly connector?: Connector;
  /** This machine's addresses, for the egress checker; tests pass a list. */
  readonly localAddresses?: () => readonly string[];
  readonly guardLimits?: Partial<GuardLimits>;
  /** Called with the generated key when API_KEYS is unset. */
  readonly onGeneratedKey?: (key: string) => void;
}

/** Extra time Puppeteer's protocol calls get beyond the request's own budget. */
const PROTOCOL_TIMEOUT_MARGIN_MS = 10_000;

export function generateKey(): string {
  return `ps_${randomBytes(24).toString('base64url')}`;
}

/** Keys (API_KEYS and the key file) and the limit store (Redis with a local fallback, or memory). */
async function startTenancy(config: Config, logger: Logger): Promise<Tenancy> {
  if (config.redisUrl === undefined) return localTenancy(config, logger);
  const keys = KeyRing.fromConfig(config, logger);
  const redis = new RedisStore(config.redisUrl);
  await redis.connect();
  const store = new FallbackStore(redis, logger);
  return { keys, store, mode: () => store.mode };
}

export async function startService(base: Config, logger: Logger, opts: ServiceOptions = {}): Promise<Service> {
  let config = base;
  if (config.apiKeys.length === 0 && config.apiKeysFile === undefined) {
    const key = generateKey();
    config = withConfig(config, { apiKeys: [key], apiKeysGenerated: true });
    opts.onGeneratedKey?.(key);
  }
  // First, so that a bad key file stops the start before anything else is running.
  const tenancy = await startTenancy(config, logger);
  let servicePort = config.port;
  let guard: EgressGuard | undefined;
  const interfaces = opts.localAddresses ?? systemAddresses();
  const checker = new EgressChecker({
    allowlist: config.egressAllowlist,
    protectedPorts: () => [servicePort, ...(guard?.ports() ?? [])],
    resolve: opts.resolver ?? systemResolver,
    // SECURITY: this machine's own addresses (and the one the service listens on) are not "public".
    localAddresses: () => [...interfaces(), config.host],
  });
  let app: App | undefined;
  guard = new EgressGuard({
    checker,
    logger,
    events: {
      onRefused: (_host, _port, _reason, requestId) => {
        if (requestId !== undefined) app?.metrics.egressRefusals.inc();
      },
    },
    ...(opts.connector ? { connector: opts.connector } : {}),
    ...(opts.guardLimits ? { limits: opts.guardLimits } : {}),
  });
  const theGuard = guard;
  await guard.listen();

  const browser = new BrowserHost({
    executablePath: config.executablePath,
    guardPort: guard.port,
    openEgress: () => theGuard.openSession(),
    protocolTimeoutMs: config.scriptTimeoutMs + config.navigationTimeoutMs + PROTOCOL_TIMEOUT_MARGIN_MS,
    prewarmedContexts: config.prewarmedContexts,
    recycleAfterContexts: config.browserRecycleContexts,
    logger,
  });
  const sandboxes = new SandboxPool(
    {
      memoryLimitMb: config.scriptMemoryMb,
      maxResultBytes: config.maxResultBytes,
      maxLogLines: config.maxLogLines,
      maxLogBytes: config.maxLogBytes,
      defaultTimeoutMs: config.scriptTimeoutMs,
      onCatastrophicError: (message) => logger.fatal({ message }, 'isolated-vm catastrophic error'),
    },
    config.prewarmedIsolates,
    logger,
  );
  app = buildApp({
    config,
    browser,
    sandboxes,
    checker,
    tenancy,
    logger,
  });
  const theApp = app;
  const server = createServer({ keepAlive: true, requestTimeout: 0 }, (req, res) => theApp.handle(req, res));
  server.keepAliveTimeout = 65_000;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.port, config.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const addr = server.address();
    servicePort = typeof addr === 'object' && addr ? addr.port : config.port;
    await browser.start();
    sandboxes.start();
  } catch (e) {
    server.close();
    await sandboxes.close();
    await browser.close();
    await theGuard.close();
    tenancy.keys.close();
    await tenancy.store.close();
    throw e;
  }
  logger.info(
    {
      host: config.host,
      port: servicePort,
      guardPort: theGuard.port,
      maxConcurrency: config.maxConcurrency,
      keys: tenancy.keys.activeKeys,
      limits: tenancy.mode(),
    },
    'pagescript listening',
  );

  const stopCollecting = collectWhenIdle(theApp);
  let closing: Promise<void> | undefined;
  let shuttingDown: Promise<void> | undefined;
  const service: Service = {
    config,
    port: servicePort,
    guard: theGuard,
    browser,
    sandboxes,
    app: theApp,
    tenancy,
    server,
    close() {
      closing ??= (async () => {
        stopCollecting();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
        });
        await sandboxes.close();
        await browser.close();
        await theGuard.close();
        tenancy.keys.close();
        await tenancy.store.close();
        releaseBundleCache();
      })();
      return closing;
    },
    shutdown(graceMs = config.shutdownGraceMs) {
      shuttingDown ??= (async () => {
        const t0 = Date.now();
        logger.info(
          { running: theApp.scheduler.running, queued: theApp.scheduler.queued, graceMs },
          'shutting down: no new requests',
        );
        theApp.drain();
        server.close();
        server.closeIdleConnections();
        await waitUntil(() => theApp.scheduler.running === 0, graceMs);
        const ended = theApp.scheduler.running;
        if (ended > 0) {
          logger.warn({ running: ended }, 'shutting down: grace period over, ending the scripts still running');
          theApp.abortRunning();
          await waitUntil(() => theApp.scheduler.running === 0, ABORT_SETTLE_MS);
        }
        server.closeAllConnections();
        await service.close();
        logger.info({ ms: Date.now() - t0, ended }, 'shut down');
      })();
      return shuttingDown;
    },
  };
  return service;
}
