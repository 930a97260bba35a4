// A slot process's entry point (built to dist/executor.js): the front forks one
// per request slot (src/front/children/supervisor.ts) and gives it one job at a
// time. It holds its slot's Chromium (through Puppeteer) and the isolates, and no
// secret; the egress guard Chromium's traffic goes through runs in a process of
// its own (src/egress/main.ts), reached over a channel the front hands both
// (src/slot/egress-client/remote.ts); the upstream proxies' credentials are there, never
// here. Its configuration comes over IPC with the keys, key file, Redis URL,
// metrics token and proxies taken out, its environment is an allow-list,
// and as root it runs as its slot's unprivileged user. Whatever a script or a
// page does here can end this process, never the front or another slot; the
// front fails this process's job and starts another.
//
// Nothing here imports from the front (http/, tenancy/, app, metrics, openapi).
// SECURITY: first, before any script isolate is made: each keeps its own young generation and memory limit.
import './young-generation.js';
import { writeSync } from 'node:fs';
import type { Socket } from 'node:net';
import { pino } from 'pino';
import { background } from '../common/background.js';
import { BrowserHost } from './browser/browser-host.js';
import { rendererHeapMb } from './browser/chromium-flags.js';
import { BrowserLanes } from './browser/lanes.js';
import { PageMemoryWatchdog } from './browser/page-memory.js';
import { RemoteGuard } from './egress-client/remote.js';
import { ApiError, ERRORS } from '../common/errors.js';
import { type FromExecutor, type ToExecutor } from '../protocol/executor-messages.js';
import { EGRESS_STOPPED, type WireError } from '../protocol/jobs.js';
import type { RawFault } from '../protocol/test-seams.js';
import { collectWhenIdle } from '../common/idle-gc.js';
import type { Logger } from '../common/log.js';
import { releaseBundleCache } from './membrane/bundle.js';
import { SandboxPool } from './membrane/pool.js';
import { residentBytes } from '../common/service-memory.js';
import { runScrape, type ScrapeDeps } from './scrape/job.js';

/** Extra time Puppeteer's protocol calls get beyond the request's own budget. */
const PROTOCOL_TIMEOUT_MARGIN_MS = 10_000;
/** How often the browser's state is compared with what the front was last told. */
const STATUS_EVERY_MS = 100;
/** How often the executor's and its Chromium's memory is read from /proc and sent to the front. */
const MEMORY_EVERY_MS = 1_000;
/**
 * How long a fresh process waits, at most, for its spare context and isolate
 * before it says it is ready (a spare that cannot be made is no reason not to serve).
 */
const WARM_WAIT_MS = 5_000;
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

function toWire(e: unknown): WireError {
  if (e instanceof ApiError)
    return {
      code: e.code,
      message: e.message,
      ...(e.logs === undefined ? {} : { logs: e.logs }),
      // The deadline is the front's own: a slot names only its own limits.
      ...(e.timeout === undefined || e.timeout === 'deadline' ? {} : { timeout: e.timeout }),
      ...(e.status >= 500 && e.cause !== undefined ? { detail: String(e.cause) } : {}),
      ...(e.egress === undefined ? {} : { egress: e.egress }),
      ...(e.failure === undefined ? {} : { failure: e.failure }),
      ...(e.timings === undefined ? {} : { timings: e.timings }),
      ...(e.usage === undefined ? {} : { usage: e.usage }),
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
  const jobs = new Map<number, AbortController>();
  let lanes: BrowserLanes | undefined;
  const remote = new RemoteGuard({
    logger: log,
    onLost: () => {
      // SECURITY: the requests whose traffic went through it fail (the front has
      // failed them already), and no context that used a port of it is used again.
      for (const a of jobs.values()) a.abort(new ApiError('INTERNAL_SERVER_ERROR', EGRESS_STOPPED));
      lanes?.dropSpares();
    },
    onDrained: () => send({ type: 'egress-drained' }),
  });
  // Before the first await: the front sends the channel right after init.
  process.on('message', (msg: ToExecutor, handle: unknown) => {
    if (msg.type === 'egress-channel' && handle && typeof (handle as Socket).write === 'function')
      remote.attach(handle as Socket);
  });
  const { guardPort } = init;
  // One Chromium, this slot's (src/slot/browser/lanes.ts), so that its request's
  // page memory can be counted and bounded (PAGE_MEMORY_MB).
  const browser = new BrowserLanes({
    count: 1,
    makeHost: (lane, onOutput, onSpares) =>
      new BrowserHost({
        executablePath: config.executablePath,
        chromium: config.chromium,
        guardPort,
        openEgress: () => remote.openSession(),
        protocolTimeoutMs: config.scriptTimeoutMs + config.navigationTimeoutMs + PROTOCOL_TIMEOUT_MARGIN_MS,
        // A lane serves one request at a time: one context made ahead is enough.
        prewarmedContexts: Math.min(1, config.prewarmedContexts),
        recycleAfterContexts: config.browserRecycleContexts,
        rendererHeapMb: rendererHeapMb(config.pageMemoryMb),
        onOutput,
        onSpares,
        logger: log.child({ lane }),
      }),
    watchdog: new PageMemoryWatchdog({ limitBytes: config.pageMemoryMb * 2 ** 20 }),
    // The front closes an idle slot's whole process (IDLE_SLOT_CLOSE_MS), its Chromium with it.
    idleCloseMs: 0,
    // For the CPU pause between slots: the front relays it to the others (src/front/children/cpu-share.ts).
    onActivity: (activity) => send({ type: 'activity', activity }),
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
    // One request at a time: one isolate made ahead is enough.
    Math.min(1, config.prewarmedIsolates),
    log,
  );
  lanes = browser;
  await browser.start();
  sandboxes.start();
  // Ready once warm: what a fresh process makes ahead (a context, an isolate) is
  // made before its first job, whose CPU is its slot group's (slot-job.ts): a
  // slot replaced because of one key's job does not bill the next key for it.
  // Bounded, and never a failure: a spare that cannot be made is made again later.
  let warmTimer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.all([browser.warm(), sandboxes.made()]).catch(() => undefined),
    new Promise<void>((resolve) => (warmTimer = setTimeout(resolve, WARM_WAIT_MS))),
  ]);
  clearTimeout(warmTimer);

  const deps: ScrapeDeps = {
    config,
    browser,
    sandboxes,
    checker: remote,
    logger: log,
    metrics: {
      navigation: { observe: (seconds) => send({ type: 'observe', metric: 'navigation', seconds }) },
      script: { observe: (seconds) => send({ type: 'observe', metric: 'script', seconds }) },
      egressRefusals: { inc: () => send({ type: 'egress-refused' }) },
    },
  };
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
        ['egress channel', () => remote.close()],
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
      case 'others':
        browser.setOthersRunning(msg.running === true);
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
        else if (msg.kind === 'hang') setImmediate(hang);
        else if (msg.kind === 'bloat') setImmediate(bloat);
        else if (msg.kind === 'send') process.send?.(msg.message);
        else if (msg.kind === 'raw') writeRaw(msg.message as RawFault);
        // eslint-disable-next-line @typescript-eslint/no-floating-promises -- the point: a rejection nobody handles
        else Promise.reject(new Error('a fault the test asked for'));
        break;
      case 'init':
      case 'egress-channel':
        break;
    }
  });
  started = true;
  send({ type: 'ready', chromiumSandbox: browser.sandboxed });
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

/** Tests (seam.faults): a main thread that never yields (what a catastrophic regular expression does). */
function hang(): void {
  for (;;);
}

/** Tests (seam.faults): resident memory outside V8's heap (Buffers), grown until something ends the process. */
function bloat(): void {
  const kept: Buffer[] = [];
  const grow = (): void => {
    kept.push(Buffer.alloc(16 * 2 ** 20, 1));
    setTimeout(grow, 5);
  };
  grow();
}

/**
 * Tests (seam.faults): writes bytes to the IPC channel's descriptor as they are, past Node's framing (what code
 * that escaped into this process could write). The descriptor is non-blocking: a full pipe is waited for.
 */
function writeRaw(fault: RawFault): void {
  const fd = (process.channel as unknown as { fd?: number } | undefined)?.fd;
  if (typeof fd !== 'number') return;
  const chunks = [Buffer.from(fault.bytes, 'base64')];
  const filler = Buffer.alloc(2 ** 20, 0x41);
  for (let i = 0; i < (fault.thenMiB ?? 0); i++) chunks.push(filler);
  let offset = 0;
  const next = (): void => {
    while (chunks.length > 0) {
      const chunk = chunks[0] as Buffer;
      try {
        offset += writeSync(fd, chunk, offset);
      } catch (e) {
        // The pipe is full: the front reads on. Anything else (the front closed it): stop.
        if ((e as NodeJS.ErrnoException).code === 'EAGAIN') setTimeout(next, 1);
        return;
      }
      if (offset >= chunk.length) {
        chunks.shift();
        offset = 0;
      }
    }
  };
  next();
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
