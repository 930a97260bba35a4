// The executor's entry point: a process the front forks (src/supervisor.ts) to
// run scripts. It holds the egress guard, Chromium (through Puppeteer) and the
// isolates, and no secret: its configuration comes over IPC with the keys, key
// file, Redis URL and metrics token taken out, its environment is an allow-list,
// and as root it runs as an unprivileged user. Whatever a script or a page does
// here can end this process, never the front; the front fails this process's
// jobs and starts another.
//
// Nothing here imports from the front (http/, tenancy/, app, metrics, openapi).
import { isIP } from 'node:net';
import { pino } from 'pino';
import { background } from './background.js';
import { BrowserHost, rendererHeapMb } from './browser/browser-host.js';
import { BrowserLanes } from './browser/lanes.js';
import { PageMemoryWatchdog } from './browser/page-memory.js';
import {
  EgressChecker,
  systemAddresses,
  systemResolver,
  type ResolvedAddress,
  type Resolver,
} from './egress/checker.js';
import { EgressGuard, netConnector, type Connector } from './egress/guard.js';
import { ApiError, ERRORS } from './errors.js';
import type { ExecutorTestSeam, FromExecutor, ToExecutor, WireError } from './ipc.js';
import { collectWhenIdle } from './idle-gc.js';
import type { Logger } from './log.js';
import { releaseBundleCache } from './sandbox/bundle.js';
import { SandboxPool } from './sandbox/pool.js';
import { residentBytes } from './service-memory.js';
import { runScrape, type ScrapeDeps } from './scrape/job.js';

/** Extra time Puppeteer's protocol calls get beyond the request's own budget. */
const PROTOCOL_TIMEOUT_MARGIN_MS = 10_000;
/** How often the browser's state is compared with what the front was last told. */
const STATUS_EVERY_MS = 100;
/** How often the executor's and its Chromium's memory is read from /proc and sent to the front. */
const MEMORY_EVERY_MS = 1_000;
/** After a fatal error, how long the last messages (the log line) get to leave before the exit. */
const FATAL_FLUSH_MS = 200;
/** Exit status after a fatal error (EX_SOFTWARE). */
const EXIT_FATAL = 70;

function send(msg: FromExecutor): void {
  // The channel is gone when the front is: 'disconnect' below ends this process.
  if (process.connected) process.send?.(msg);
}

/** The executor's logger: pino lines, sent to the front, which writes them with its own. */
function ipcLogger(level: string): Logger {
  return pino(
    { level, base: { executor: process.pid } },
    { write: (line: string) => send({ type: 'log', line: line.trimEnd() }) },
  );
}

/** Writes to stderr: for the moments the IPC channel may already be gone. */
function stderr(what: string, e: unknown): void {
  process.stderr.write(
    `pagescript executor ${process.pid}: ${what}: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`,
  );
}

let logger: Logger | undefined;
let exiting = false;

/**
 * A fatal error: logged with its stack; the process exits so the front starts a
 * clean one. `hard`: an isolate's thread is stuck in native code, and exit()
 * would wait for ever to join it (isolated-vm's thread pool, measured: still
 * there 30 s later), so the process kills itself instead, as isolated-vm's
 * README advises (it says abort(), which may write a core of gigabytes).
 */
function fatal(what: string, e: unknown, hard = false): void {
  if (logger) logger.fatal({ err: e }, `${what}; the executor exits`);
  else stderr(what, e);
  if (exiting) return;
  exiting = true;
  // The front fails the jobs of this process when it sees it exit (RUNNER_STOPPED).
  setTimeout(() => (hard ? process.kill(process.pid, 'SIGKILL') : process.exit(EXIT_FATAL)), FATAL_FLUSH_MS);
}

// SECURITY: an error nobody caught (in a page's event handler, an upstream's
// parser, Puppeteer) ends this process loudly, never silently, and never the front.
process.on('uncaughtException', (e) => fatal('uncaught exception', e));
process.on('unhandledRejection', (e) => fatal('unhandled rejection', e));
// The front is gone (or closed the channel): nothing will read our replies.
process.on('disconnect', () => {
  if (!exiting) process.exit(0);
});

/** The resolver and connector a test describes as data (see ExecutorTestSeam). */
function seamResolver(hosts: NonNullable<ExecutorTestSeam['hosts']>): Resolver {
  const turns = new Map<string, number>();
  return async (host) => {
    const answers = hosts[host];
    if (answers === undefined || answers.length === 0)
      throw Object.assign(new Error(`ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    const turn = turns.get(host) ?? 0;
    turns.set(host, turn + 1);
    const chosen = answers[turn % answers.length] ?? [];
    return chosen.map((address): ResolvedAddress => ({ address, family: isIP(address) === 6 ? 6 : 4 }));
  };
}

function seamConnector(seam: ExecutorTestSeam): Connector {
  return async (t, ms) => {
    if (seam.reportDials) send({ type: 'dial', address: t.address, port: t.port });
    if (seam.loopbackOnly && t.address !== '127.0.0.1' && t.address !== '::1')
      throw Object.assign(new Error('refused by the test seam'), { code: 'ECONNREFUSED' });
    return await netConnector(t, ms);
  };
}

function toWire(e: unknown): WireError {
  if (e instanceof ApiError)
    return {
      code: e.code,
      message: e.message,
      ...(e.logs === undefined ? {} : { logs: e.logs }),
      ...(e.timeout === undefined ? {} : { timeout: e.timeout }),
      ...(e.status >= 500 && e.cause !== undefined ? { detail: String(e.cause) } : {}),
      ...(e.egress === undefined ? {} : { egress: e.egress }),
      ...(e.failure === undefined ? {} : { failure: e.failure }),
      ...(e.timings === undefined ? {} : { timings: e.timings }),
    };
  return {
    code: 'INTERNAL_SERVER_ERROR',
    message: ERRORS.INTERNAL_SERVER_ERROR.message,
    detail: e instanceof Error ? (e.stack ?? e.message) : String(e),
  };
}

async function start(init: Extract<ToExecutor, { type: 'init' }>): Promise<void> {
  const { config } = init;
  const log = ipcLogger(init.logLevel);
  logger = log;
  let protectedPorts = [...init.protectedPorts];
  const interfaces = init.seam?.localAddresses
    ? (): readonly string[] => init.seam?.localAddresses ?? []
    : systemAddresses();
  let guard: EgressGuard | undefined;
  const resolve = init.seam?.hosts ? seamResolver(init.seam.hosts) : systemResolver;
  const checker = new EgressChecker({
    allowlist: config.egressAllowlist,
    // The per-context session ports are protected too: a page may not reach another context's port.
    protectedPorts: () => [...protectedPorts, ...(guard?.ports() ?? [])],
    resolve,
    // SECURITY: this machine's own addresses (and the one the service listens on) are not "public".
    localAddresses: () => [...interfaces(), config.host],
  });
  const theGuard = new EgressGuard({
    checker,
    logger: log,
    // SECURITY: the proxies' credentials live in the guard only (and, until the guard
    // has a process of its own, in this process's memory): never in a job or a log line.
    proxies: init.egress.proxies,
    resolveProxy: resolve,
    events: {
      // Only refusals for a request count; Chromium's own background requests do not.
      onRefused: (_host, _port, _reason, requestId) => {
        if (requestId !== undefined) send({ type: 'egress-refused' });
      },
    },
    ...(init.seam ? { connector: seamConnector(init.seam) } : {}),
    ...(init.seam?.guardLimits ? { limits: init.seam.guardLimits } : {}),
  });
  guard = theGuard;
  const guardPort = await theGuard.listen();
  protectedPorts.push(guardPort);
  // One Chromium per request slot of this executor (src/browser/lanes.ts), so
  // that each request's page memory can be counted and bounded (PAGE_MEMORY_MB).
  const browser = new BrowserLanes({
    count: config.memory.lanesPerExecutor,
    makeHost: (lane, onOutput) =>
      new BrowserHost({
        executablePath: config.executablePath,
        chromium: config.chromium,
        guardPort,
        openEgress: () => theGuard.openSession(),
        protocolTimeoutMs: config.scriptTimeoutMs + config.navigationTimeoutMs + PROTOCOL_TIMEOUT_MARGIN_MS,
        // A lane serves one request at a time: one context made ahead is enough.
        prewarmedContexts: Math.min(1, config.prewarmedContexts),
        recycleAfterContexts: config.browserRecycleContexts,
        rendererHeapMb: rendererHeapMb(config.pageMemoryMb),
        onOutput,
        logger: log.child({ lane }),
      }),
    watchdog: new PageMemoryWatchdog({ limitBytes: config.pageMemoryMb * 2 ** 20 }),
    logger: log,
  });
  const sandboxes = new SandboxPool(
    {
      memoryLimitMb: config.scriptMemoryMb,
      maxResultBytes: config.maxResultBytes,
      maxLogLines: config.maxLogLines,
      maxLogBytes: config.maxLogBytes,
      defaultTimeoutMs: config.scriptTimeoutMs,
      // isolated-vm's README: after a catastrophic error the process is in an
      // unknown state; end it. The front fails this executor's jobs and starts another.
      onCatastrophicError: (message) => fatal('isolated-vm catastrophic error', new Error(message), true),
    },
    config.prewarmedIsolates,
    log,
  );
  await browser.start();
  sandboxes.start();

  const deps: ScrapeDeps = {
    config,
    browser,
    sandboxes,
    checker,
    logger: log,
    metrics: {
      navigation: { observe: (seconds) => send({ type: 'observe', metric: 'navigation', seconds }) },
      script: { observe: (seconds) => send({ type: 'observe', metric: 'script', seconds }) },
      egressRefusals: { inc: () => send({ type: 'egress-refused' }) },
    },
  };
  const jobs = new Map<number, AbortController>();

  let lastStatus = '';
  const reportStatus = (): void => {
    const status = {
      ready: browser.ready,
      pid: browser.pid,
      pids: browser.pids.filter((p): p is number => p !== undefined),
      restarts: browser.restarts,
      recycles: browser.recycles,
      contextsReady: browser.contextsReady,
    };
    const text = JSON.stringify(status);
    if (text === lastStatus) return;
    lastStatus = text;
    send({ type: 'status', browser: status });
  };
  const statusTimer = setInterval(reportStatus, STATUS_EVERY_MS);
  const reportMemory = (): void => {
    send({
      type: 'memory',
      memory: {
        executorBytes: residentBytes('self'),
        chromiumBytes: browser.memoryBytes(),
        pageBytes: browser.pageMemoryBytes,
        pageLimitKills: browser.memoryKills,
      },
    });
  };
  const memoryTimer = setInterval(reportMemory, MEMORY_EVERY_MS);
  const stopCollecting = collectWhenIdle(() => jobs.size > 0);
  reportStatus();
  reportMemory();

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      clearInterval(statusTimer);
      clearInterval(memoryTimer);
      stopCollecting();
      for (const a of jobs.values()) a.abort(new ApiError('SERVICE_UNAVAILABLE', 'Service unavailable: shutting down'));
      // Every step runs even when one before it fails.
      const steps: [string, () => Promise<void> | void][] = [
        ['isolates', () => sandboxes.close()],
        ['chromium', () => browser.close()],
        ['egress guard', () => theGuard.close()],
        ['code caches', () => releaseBundleCache()],
      ];
      for (const [what, step] of steps) {
        try {
          await step();
        } catch (e) {
          log.error({ err: e, what }, 'executor close step failed');
        }
      }
    })();
    return closing;
  };

  const run = async (id: number, request: Extract<ToExecutor, { type: 'run' }>['request']): Promise<void> => {
    const aborter = new AbortController();
    jobs.set(id, aborter);
    let closingJob: Promise<void> = Promise.resolve();
    try {
      const outcome = await runScrape(request, deps, aborter.signal, (p) => {
        closingJob = p;
      });
      send({ type: 'done', id, outcome });
    } catch (e) {
      const error = toWire(e);
      if (error.code === 'INTERNAL_SERVER_ERROR') log.error({ err: e, id }, 'job failed');
      send({ type: 'failed', id, error });
    } finally {
      jobs.delete(id);
      await closingJob.catch((e: unknown) => log.error({ err: e, id }, 'closing a context failed'));
      send({ type: 'closed', id });
    }
  };

  process.on('message', (msg: ToExecutor) => {
    switch (msg.type) {
      case 'run':
        background(run(msg.id, msg.request), 'job', log);
        break;
      case 'abort': {
        const e = msg.error;
        jobs.get(msg.id)?.abort(e ? new ApiError(e.code, e.message) : undefined);
        break;
      }
      case 'protect':
        protectedPorts = [...new Set([...msg.ports, guardPort])];
        break;
      case 'close-guard':
        theGuard.close().then(
          () => send({ type: 'guard-closed', ask: msg.ask }),
          (e: unknown) => fatal('closing the egress guard', e),
        );
        break;
      case 'guard-counts':
        // Tests only: what the guard has seen (counts, no traffic).
        if (init.seam) send({ type: 'guard-counts', ask: msg.ask, counts: theGuard.counts() });
        break;
      case 'shutdown':
        close().then(
          () => process.exit(0),
          (e: unknown) => fatal('shutdown', e),
        );
        break;
      case 'fault':
        if (init.seam?.faults !== true) break;
        if (msg.kind === 'throw')
          setImmediate(() => {
            throw new Error('a fault the test asked for');
          });
        else if (msg.kind === 'oom') setImmediate(exhaustHeap);
        else if (msg.kind === 'send') process.send?.(msg.message);
        // eslint-disable-next-line @typescript-eslint/no-floating-promises -- the point: a rejection nobody handles
        else Promise.reject(new Error('a fault the test asked for'));
        break;
      case 'init':
        break;
    }
  });
  started = true;
  send({ type: 'ready', guardPort, chromiumSandbox: browser.sandboxed });
  log.info(
    { guardPort, chromiumPids: browser.pids, lanes: browser.lanes, chromiumSandbox: browser.sandboxed },
    'executor ready',
  );
}

/** Tests (seam.faults): fills this process's own V8 heap until V8 ends the process (seam.heapMb keeps that small). */
function exhaustHeap(): void {
  const kept: unknown[][] = [];
  for (;;) kept.push(Array.from({ length: 100_000 }, (_, i) => ({ i })));
}

let started = false;
// Asked to stop while still starting (the front's start failed elsewhere, or it
// is shutting down): nothing runs yet, so exit now; Chromium, if it is being
// launched, exits when its pipe closes.
process.on('message', (msg: ToExecutor) => {
  if (!started && msg.type === 'shutdown') process.exit(0);
});

process.once('message', (msg: ToExecutor) => {
  if (msg.type !== 'init') {
    fatal('the first message was not init', new Error(msg.type));
    return;
  }
  start(msg).catch((e: unknown) => fatal('the executor could not start', e));
});
