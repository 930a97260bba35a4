// Wires the front together and starts it: keys and limits, the HTTP server, and
// the slot processes (other processes, see src/front/slots/supervisor.ts). Used by
// server.ts (the process) and by the end-to-end tests.
import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import { buildApp, localTenancy, type App, type Tenancy } from './app.js';
import { withConfig, type Config } from '../common/config.js';
import { createEdgeServer } from './http/edge.js';
import { ApiError } from '../common/errors.js';
import { sendError } from './http/reply.js';
import type { GuardCounts } from '../protocol/egress.js';
import type { BrowserStatus } from '../protocol/slot-wire.js';
import type { SlotTestSeam } from '../protocol/test-seams.js';
import type { Logger } from '../common/log.js';
import { collectWhenIdle } from '../common/idle-gc.js';
import { EgressSupervisor } from './egress-process/egress-supervisor.js';
import { Supervisor } from './slots/supervisor.js';
import { setKernelLock, type KernelLockStatus } from './host/kernel-lock.js';
import { slotUsers } from './host/users.js';
import { FallbackStore } from './tenancy/fallback-store.js';
import { FallbackSecurityStore } from './security/fallback-security-store.js';
import { KeyRing } from './tenancy/keyring.js';
import { RedisStore } from './tenancy/redis-store.js';

export interface Service {
  readonly config: Config;
  readonly port: number;
  /** The slot processes: processes that run Chromium and the isolates. */
  readonly slots: Supervisor;
  /** The egress process: the guard every Chromium's traffic goes through. */
  readonly egress: EgressSupervisor;
  /** Whether the kernel refuses the slots' users every connection but to the guard (src/front/host/kernel-lock.ts). */
  readonly kernelLock: KernelLockStatus;
  /** The slot processes' Chromium, as one (pid, ready, restarts, recycles). */
  readonly browser: BrowserStatus;
  /** The egress guard: close() closes it (a test of what happens when the guard is down). */
  readonly guard: { close(): Promise<void>; counts(): Promise<GuardCounts> };
  readonly app: App;
  readonly tenancy: Tenancy;
  readonly server: Server;
  /**
   * Graceful stop: /health turns 503 and the listener closes at once (a
   * balancer sends new connections elsewhere); requests already admitted,
   * running or queued, are answered as usual for up to graceMs
   * (SHUTDOWN_GRACE_MS), then ended (503); then everything is closed.
   */
  shutdown(graceMs?: number): Promise<void>;
  /** Closes everything now; requests in flight fail. Every step runs, even when one before it fails. */
  close(): Promise<void>;
}

/** After the grace period, how long ended scripts get to send their 503. */
const ABORT_SETTLE_MS = 5_000;

async function waitUntil(cond: () => boolean, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 25));
}

export interface ServiceOptions {
  /**
   * Tests only: the egress process answers names from this table instead of
   * DNS, dials only loopback, and reports each upstream it dials to onDial.
   * Data, because the guard runs in another process.
   */
  readonly egressSeam?: Partial<SlotTestSeam> & {
    onDial?(address: string, port: number): void;
    /** Names are resolved by the system, not from `hosts` (a test of Chromium's own requests). */
    systemResolver?: boolean;
  };
  /** Tests only: where nft is looked for (a test of a machine without it). */
  readonly nftPaths?: readonly string[];
  /** Called with the generated key when API_KEYS is unset. */
  readonly onGeneratedKey?: (key: string) => void;
}

export function generateKey(): string {
  return `ps_${randomBytes(24).toString('base64url')}`;
}

/** Keys (API_KEYS and the key file) and the limit store (Redis with a local fallback, or memory). */
async function startTenancy(config: Config, logger: Logger): Promise<Tenancy> {
  if (config.redisUrl === undefined) return localTenancy(config, logger);
  const keys = KeyRing.fromConfig(config, logger);
  const redis = new RedisStore(config.redisUrl);
  try {
    await redis.connect();
  } catch (e) {
    keys.close();
    await redis.close();
    throw e;
  }
  const store = new FallbackStore(redis, logger);
  // Scores and blocks shared through the same Redis; this instance's own while it is away.
  const security = new FallbackSecurityStore(redis);
  return { keys, store, security, mode: () => store.mode };
}

/** A close step that logs its failure instead of skipping the steps after it. */
function step(logger: Logger, what: string, fn: () => unknown): () => Promise<void> {
  return async () => {
    try {
      await fn();
    } catch (e) {
      logger.error({ err: e, what }, 'close step failed');
    }
  };
}

export async function startService(base: Config, logger: Logger, opts: ServiceOptions = {}): Promise<Service> {
  let config = base;
  if (config.apiKeys.length === 0 && config.apiKeysFile === undefined) {
    const key = generateKey();
    config = withConfig(config, { apiKeys: [key] });
    opts.onGeneratedKey?.(key);
  }
  // Whatever is opened is closed again if a later step of the start fails: the
  // stack is disposed at the end of this block unless its contents are moved out.
  await using opened = new AsyncDisposableStack();
  // First, so that a bad key file stops the start before anything else is running.
  const tenancy = await startTenancy(config, logger);
  opened.defer(step(logger, 'limit store', () => tenancy.store.close()));
  opened.defer(step(logger, 'key file watch', () => tenancy.keys.close()));
  // SECURITY: set before any slot process starts, and (disposed in reverse order)
  // removed only after every one has stopped: no slot ever runs without it.
  const kernelLock = await setKernelLock(
    config,
    slotUsers(config)?.map((u) => u.uid),
    logger,
    opts.nftPaths ? { nftPaths: opts.nftPaths } : {},
  );
  opened.defer(step(logger, 'kernel lock', () => kernelLock.close()));

  let app: App | undefined;
  // Timeouts and the connection cap: src/front/http/edge.ts.
  const server = createEdgeServer(
    config,
    logger,
    (req, res) => {
      // SECURITY: never leave a request without an answer (there is no await between
      // the listen and buildApp below, so this is a guard, not a path).
      if (app) app.handle(req, res);
      else sendError(res, new ApiError('SERVICE_UNAVAILABLE', 'Service unavailable: starting'));
    },
    {
      onDropped: () => app?.metrics.connectionsDropped.inc(),
      onDroppedPerAddress: () => app?.metrics.connectionsDroppedPerAddress.inc(),
      onRequestTimeout: () => app?.metrics.requestTimeouts.inc(),
      onReplyCut: (reason) => app?.metrics.repliesCut.inc({ reason }),
    },
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  opened.defer(
    step(
      logger,
      'http server',
      () =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
        }),
    ),
  );
  const addr = server.address();
  const servicePort = typeof addr === 'object' && addr ? addr.port : config.port;

  const seam = opts.egressSeam;
  let slots: Supervisor | undefined;
  // SECURITY: the egress process gets its configuration from here (egressConfig
  // in src/protocol/egress-messages.ts), directly: nothing of it passes through a slot process.
  const egress = new EgressSupervisor({
    config,
    logger,
    servicePort,
    events: {
      egressRefused: (r) => {
        app?.metrics.egressRefusals.inc();
        // A refusal of a request's page by address: a security event of its key (docs/security.md).
        if (r.requestId !== undefined && r.kind !== undefined)
          app?.security.egressRefused(r.requestId, r.kind, r.host ?? '', r.port ?? 0);
      },
      stopped: () => slots?.egressStopped(),
      ready: () => slots?.egressReady(),
      slotMisbehaved: (index) => slots?.slotMisbehaved(index),
      channelClosed: (index, channel) => slots?.egressChannelClosed(index, channel),
    },
    ...(seam
      ? {
          seam: {
            ...(seam.systemResolver === true ? {} : { hosts: seam.hosts ?? {} }),
            loopbackOnly: seam.loopbackOnly ?? false,
            reportDials: seam.onDial !== undefined,
            faults: seam.faults ?? false,
            ...(seam.localAddresses ? { localAddresses: seam.localAddresses } : {}),
            ...(seam.publicTargets ? { publicTargets: seam.publicTargets } : {}),
            ...(seam.guardLimits ? { guardLimits: seam.guardLimits } : {}),
            ...(seam.onDial ? { onDial: seam.onDial } : {}),
          },
        }
      : {}),
  });
  opened.defer(step(logger, 'egress process', () => egress.close()));
  const theSlots = new Supervisor({
    config,
    logger,
    egress,
    kernelLock,
    events: {
      observe: (metric, seconds) => app?.metrics[metric].observe(seconds),
      egressRefused: () => app?.metrics.egressRefusals.inc(),
      preparationCpu: (seconds) => app?.metrics.slotPreparationCpu.inc(seconds),
    },
    ...(seam
      ? {
          seam: {
            loopbackOnly: seam.loopbackOnly ?? false,
            reportDials: false,
            faults: seam.faults ?? false,
            ...(seam.heapMb === undefined ? {} : { heapMb: seam.heapMb }),
            ...(seam.trustedSpki ? { trustedSpki: seam.trustedSpki } : {}),
            ...(seam.clipboardFailures ? { clipboardFailures: seam.clipboardFailures } : {}),
            ...(seam.clipboardHangs ? { clipboardHangs: seam.clipboardHangs } : {}),
          },
        }
      : {}),
  });
  slots = theSlots;
  opened.defer(step(logger, 'slot processes', () => theSlots.close()));
  // SECURITY: the app exists before anything is awaited after the listen: the
  // server accepts connections from then on, and a request that arrives while the
  // egress process starts would otherwise find no app and never be answered.
  // Until the slot processes are ready, /health says "starting" and scrapes wait in the
  // queue like any other.
  app = buildApp({ config, slots: theSlots, tenancy, logger, kernelLock: kernelLock.status });
  const theApp = app;
  await egress.start();
  await theSlots.start();
  logger.info(
    {
      host: config.host,
      port: servicePort,
      slotPids: theSlots.pids,
      // Deprecated: slotPids, its new name; kept one release (docs/operations.md).
      executors: theSlots.pids,
      slotUsers: theSlots.users?.map((u) => u.user),
      egress: egress.pid,
      egressUser: egress.runAs?.user,
      chromiumSandbox: slots.chromiumSandbox,
      kernelLock: kernelLock.status.on ? 'on' : `off: ${kernelLock.status.why}`,
      maxConcurrency: config.maxConcurrency,
      serviceMemoryMb: config.serviceMemoryMb,
      // Deprecated: laneBaseMb, chromiumBaseMb's old name; kept one release (docs/operations.md).
      memoryPlan: { ...config.memory, laneBaseMb: config.memory.chromiumBaseMb },
      keys: tenancy.keys.activeKeys,
      limits: tenancy.mode(),
    },
    'pagescript listening',
  );

  if (config.maxConcurrencyAsked !== undefined)
    logger.warn(
      {
        asked: config.maxConcurrencyAsked,
        maxConcurrency: config.maxConcurrency,
        serviceMemoryMb: config.serviceMemoryMb,
        perRequestMb: config.memory.perRequestMb,
      },
      'MAX_CONCURRENCY is more than SERVICE_MEMORY_MB allows; requests beyond what fits wait in the queue',
    );
  if (config.memory.plannedMb > config.serviceMemoryMb)
    logger.warn(
      { serviceMemoryMb: config.serviceMemoryMb, plannedMb: config.memory.plannedMb },
      'SERVICE_MEMORY_MB is less than one request at a time needs (PAGE_MEMORY_MB + SCRIPT_MEMORY_MB + the processes at rest); lower those limits or give the service more memory',
    );

  const stopCollecting = collectWhenIdle(() => theApp.scheduler.running + theApp.scheduler.queued > 0);
  opened.defer(stopCollecting);
  // From here the service owns what was opened; close() disposes it.
  const owned = opened.move();
  let closing: Promise<void> | undefined;
  let shuttingDown: Promise<void> | undefined;
  const service: Service = {
    config,
    port: servicePort,
    slots: theSlots,
    egress,
    kernelLock: kernelLock.status,
    get browser() {
      return theSlots.browser;
    },
    guard: { close: () => egress.closeGuard(), counts: () => egress.guardCounts() },
    app: theApp,
    tenancy,
    server,
    close() {
      closing ??= owned.disposeAsync();
      return closing;
    },
    shutdown(graceMs = config.shutdownGraceMs) {
      shuttingDown ??= (async () => {
        const t0 = Date.now();
        logger.info(
          { running: theApp.scheduler.running, queued: theApp.scheduler.queued, graceMs },
          'shutting down: not ready, no new requests; finishing the admitted ones',
        );
        // At once, before anything is awaited: a SIGTERM to the whole group reaches the children too.
        theSlots.stopping();
        egress.stopping();
        theApp.drain();
        server.close();
        server.closeIdleConnections();
        await waitUntil(() => theApp.inFlight === 0, graceMs);
        const ended = theApp.inFlight;
        if (ended > 0) {
          logger.warn(
            { inFlight: ended, running: theApp.scheduler.running, queued: theApp.scheduler.queued },
            'shutting down: grace period over, ending the requests still running or waiting',
          );
          theApp.abortRunning();
          await waitUntil(() => theApp.inFlight === 0, ABORT_SETTLE_MS);
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
