// A slot process's entry point (built to dist/slot.js): the front forks one
// per request slot (src/front/slots/supervisor.ts) and gives it one job at a
// time. It holds its slot's Chromium (through Puppeteer) and the isolates, and no
// secret; the egress guard Chromium's traffic goes through runs in a process of
// its own (src/egress/main.ts), reached over a channel the front gives it at its
// spawn (src/slot/egress-client/remote.ts); the upstream proxies' credentials are there, never
// here. Its configuration comes over the front's wire (src/protocol/wire.ts) with the keys, key file, Redis URL,
// metrics token and proxies taken out, its environment is an allow-list,
// and as root it runs as its slot's unprivileged user. Whatever a script or a
// page does here can end this process, never the front or another slot; the
// front fails this process's job and starts another.
//
// Nothing here imports from the front (http/, tenancy/, app, metrics, openapi).
// SECURITY: first of all, as root, to its slot's user (src/slot/drop-user.ts), before it reads a message.
import './drop-user.js';
// SECURITY: first, before any script isolate is made: each keeps its own young generation and memory limit.
import './young-generation.js';
import { tmpdir } from 'node:os';
import { pino } from 'pino';
import { background } from '../common/background.js';
import { BrowserHost } from './browser/browser-host.js';
import { emptyClipboard, type EmptyClipboard } from './browser/clipboard.js';
import { rendererHeapMb } from './browser/chromium-flags.js';
import { liveProfiles } from './browser/chromium-process.js';
import { emptyTmp } from './tmp-empty.js';
import { cgroupSource, PageMemoryWatchdog } from './browser/page-memory.js';
import { WatchedLeases } from './browser/watched-lease.js';
import { RemoteGuard } from './egress-client/remote.js';
import { ApiError, ERRORS, internalFailure, type JobPhase } from '../common/errors.js';
import { type FromSlot, type ToSlot } from '../protocol/slot-wire.js';
import { EGRESS_STOPPED, toWireResult, wireTelemetry, type JobTelemetry, type WireError } from '../protocol/jobs.js';
import type { RawFault } from '../protocol/test-seams.js';
import { EGRESS_CHANNEL_FD, FRONT_WIRE_FD, frontWire, inheritedSocket } from '../protocol/wire.js';
import { collectWhenIdle } from '../common/idle-gc.js';
import { slotPidFields, type Logger } from '../common/log.js';
import { releaseBundleCache } from './membrane/bundle.js';
import { SandboxPool } from './membrane/pool.js';
import { runScrape, type ScrapeDeps } from './scrape/job.js';
import { within } from '../common/within.js';

/** Extra time Puppeteer's protocol calls get beyond the request's own budget. */
const PROTOCOL_TIMEOUT_MARGIN_MS = 10_000;
/** How often, while a job runs, its page memory (and the slot's) is sent to the front. */
const MEMORY_EVERY_MS = 1_000;
/**
 * How long a slot waits, at most, for its spare context and isolate before it
 * says it is ready or that its job is closed (a spare that cannot be made is no
 * reason not to serve).
 */
const WARM_WAIT_MS = 5_000;
/** After a fatal error, how long the last messages (the log line) get to leave before the exit. */
const FATAL_FLUSH_MS = 200;
/** Exit status after a fatal error (EX_SOFTWARE). */
const EXIT_FATAL = 70;

/**
 * The front's wire (given at the spawn, FRONT_WIRE_FD). What the front sends is trusted; the bounds are
 * the front's to hold on what this process sends it.
 */
const frontSocket = inheritedSocket(FRONT_WIRE_FD);
const front = frontWire<ToSlot, FromSlot>(
  frontSocket,
  (m) => onFront(m),
  (e) => fatal('the front sent what the slot process cannot read', e),
);

function send(msg: FromSlot): void {
  // The wire is gone when the front is: its close below ends this process.
  front.send(msg);
}

/** What the front's messages go to once the slot process has started (start()). */
let onStarted: ((msg: ToSlot) => void) | undefined;
let initSeen = false;

function onFront(msg: ToSlot): void {
  if (!initSeen) {
    initSeen = true;
    if (msg.type !== 'init') {
      fatal('the first message was not init', new Error(msg.type));
      return;
    }
    start(msg).catch((e: unknown) => fatal('the slot process could not start', e));
    return;
  }
  if (onStarted) onStarted(msg);
  // Asked to stop while still starting (the front's start failed elsewhere, or it
  // is shutting down): nothing runs yet, so exit now; Chromium, if it is being
  // launched, exits when its pipe closes.
  else if (msg.type === 'shutdown') process.exit(0);
}

/** The slot process's logger: pino lines, sent to the front, which writes them with its own. */
function wireLogger(level: string): Logger {
  return pino(
    { level, base: slotPidFields(process.pid) },
    { write: (line: string) => send({ type: 'log', line: line.trimEnd() }) },
  );
}

/** Writes to stderr: for the moments the front's wire may already be gone. */
function stderr(what: string, e: unknown): void {
  process.stderr.write(
    `pagescript slot process ${process.pid}: ${what}: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`,
  );
}

let logger: Logger | undefined;
let exiting = false;

/**
 * A fatal error: logged with its stack; the process exits so the front starts a
 * clean one. `hard`: an isolate's thread is stuck in native code, and exit()
 * would wait for ever to join it (isolated-vm's thread pool), so the process
 * kills itself instead, as isolated-vm's README advises (it says abort(), which
 * may write a core of gigabytes).
 */
function fatal(what: string, e: unknown, hard = false): void {
  if (logger) logger.fatal({ err: e }, `${what}; the slot process exits`);
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
// The front is gone (or closed the wire): nothing will read our replies.
front.onClose(() => {
  if (!exiting && !unwired) process.exit(0);
});

/** A failed job as it crosses: its error, and what the job measured until it failed (`t`). */
function toWire(e: unknown, t: JobTelemetry = {}): WireError {
  if (e instanceof ApiError)
    return {
      code: e.code,
      message: e.message,
      ...(e.logs === undefined ? {} : { logs: e.logs }),
      // The deadline is the front's own: a slot names only its own limits.
      ...(e.timeout === undefined || e.timeout === 'deadline' ? {} : { timeout: e.timeout }),
      ...(e.status >= 500 && e.cause !== undefined ? { detail: String(e.cause) } : {}),
      ...(e.failure === undefined ? {} : { failure: e.failure }),
      ...(e.housekeeping === undefined ? {} : { housekeeping: e.housekeeping }),
      ...(e.code === 'INTERNAL_SERVER_ERROR' ? { internal: e.internal ?? 'unexpected' } : {}),
      ...wireTelemetry(t),
      ...(t.phase === undefined ? {} : { phase: t.phase }),
    };
  return {
    code: 'INTERNAL_SERVER_ERROR',
    message: ERRORS.INTERNAL_SERVER_ERROR.message,
    detail: e instanceof Error ? (e.stack ?? e.message) : String(e),
    internal: 'unexpected',
  };
}

type Init = Extract<ToSlot, { type: 'init' }>;

async function start(init: Init): Promise<void> {
  const log = wireLogger(init.logLevel);
  logger = log;
  const slot = new SlotRuntime(init, log);
  await slot.start();
  onStarted = (msg) => slot.onMessage(msg);
  send({ type: 'ready', chromiumSandbox: slot.browser.sandboxed });
  log.info(
    {
      guardPort: init.guardPort,
      chromiumPids: slot.browser.pids,
      chromiumSandbox: slot.browser.sandboxed,
    },
    'slot process ready',
  );
}

/** This process's slot once init came: its egress channel, its Chromium, its isolates and its jobs. */
class SlotRuntime {
  readonly #init: Init;
  readonly #config: Init['config'];
  readonly #log: Logger;
  readonly #jobs = new Map<number, AbortController>();
  readonly #remote: RemoteGuard;
  readonly browser: BrowserHost;
  /** The browser's leases, one at a time, their page memory watched. */
  readonly #leases: WatchedLeases;
  readonly #sandboxes: SandboxPool;
  readonly #deps: ScrapeDeps;
  /** Whether the browser's state is told to the front when it changes (once the slot has started). */
  #reporting = false;
  #lastStatus = '';
  /** The page memory kills last told to the front. */
  #killsSent = 0;
  /** Sends the page memory while a job runs: at rest nothing changes that the front does not read itself. */
  #memoryTimer: NodeJS.Timeout | undefined;
  #stopCollecting: (() => void) | undefined;
  #closing: Promise<void> | undefined;

  constructor(init: Init, log: Logger) {
    this.#init = init;
    this.#config = init.config;
    this.#log = log;
    // The browser opens egress sessions only once started (start()), after its channel is attached here.
    this.#leases = this.#makeLeases();
    this.browser = this.#makeBrowser();
    this.#remote = this.#connectEgress();
    this.#sandboxes = this.#makeSandboxes();
    this.#deps = {
      config: this.#config,
      browser: this.#leases,
      sandboxes: this.#sandboxes,
      checker: this.#remote,
      logger: log,
      metrics: {
        navigation: { observe: (seconds) => send({ type: 'observe', metric: 'navigation', seconds }) },
        script: { observe: (seconds) => send({ type: 'observe', metric: 'script', seconds }) },
        egressRefusals: { inc: () => send({ type: 'egress-refused' }) },
      },
    };
  }

  /** Its one channel to the egress process, given at the spawn. */
  #connectEgress(): RemoteGuard {
    const remote = new RemoteGuard({
      logger: this.#log,
      onLost: () => {
        // SECURITY: the requests whose traffic went through it fail (the front has
        // failed them already), and no context that used a port of it is used again.
        for (const a of this.#jobs.values()) a.abort(internalFailure('egress-stopped', EGRESS_STOPPED));
        this.browser.dropSpares();
      },
      // The front replaces this process once its egress process is gone: nothing more to say.
      onDrained: () => undefined,
    });
    remote.attach(inheritedSocket(EGRESS_CHANNEL_FD));
    return remote;
  }

  /**
   * One Chromium, this slot's, serving one request at a time (src/slot/browser/watched-lease.ts),
   * so that its request's page memory can be counted and bounded (PAGE_MEMORY_MB).
   */
  #makeBrowser(): BrowserHost {
    const init = this.#init;
    const config = this.#config;
    const emptyClipboard = clipboardSeam(init);
    return new BrowserHost({
      // SECURITY: its execute-only copy where there is one: Chromium's processes are then non-dumpable.
      executablePath: init.execOnly?.chromium ?? config.executablePath,
      ...(init.execOnly === undefined ? {} : { readablePath: config.executablePath }),
      chromium: config.chromium,
      guardPort: init.guardPort,
      openEgress: () => this.#remote.openSession(),
      protocolTimeoutMs: config.scriptTimeoutMs + config.navigationTimeoutMs + PROTOCOL_TIMEOUT_MARGIN_MS,
      // One request at a time: one context made ahead is enough.
      prewarmedContexts: Math.min(1, config.prewarmedContexts),
      recycleAfterContexts: config.browserRecycleContexts,
      rendererHeapMb: rendererHeapMb(config.pageMemoryMb),
      ...(init.chromiumCgroup === undefined ? {} : { cgroupProcs: init.chromiumCgroup }),
      ...(init.execOnly === undefined ? {} : { shellPath: init.execOnly.shell }),
      ...(init.seam?.trustedSpki ? { testTrustedSpki: init.seam.trustedSpki } : {}),
      ...(emptyClipboard ? { emptyClipboard } : {}),
      onOutput: (text) => this.#leases.chromiumOutput(text),
      // A context made ahead began to be made, or is ready: the status may have changed.
      onSpares: () => {
        if (this.#reporting) this.#reportStatus();
      },
      logger: this.#log,
    });
  }

  #makeLeases(): WatchedLeases {
    const init = this.#init;
    return new WatchedLeases({
      open: (requestId, proxy) => this.browser.lease(requestId, proxy),
      // Where the kernel holds the page's memory (its Chromium's cgroup), nothing is polled during a request.
      watchdog: new PageMemoryWatchdog({
        limitBytes: this.#config.pageMemoryMb * 2 ** 20,
        ...(init.chromiumCgroup === undefined ? {} : { pollMs: 0, source: cgroupSource(init.chromiumCgroup) }),
      }),
      logger: this.#log,
    });
  }

  #makeSandboxes(): SandboxPool {
    const config = this.#config;
    return new SandboxPool(
      {
        memoryLimitMb: config.scriptMemoryMb,
        maxResultBytes: config.maxResultBytes,
        maxLogLines: config.maxLogLines,
        maxLogBytes: config.maxLogBytes,
        defaultTimeoutMs: config.scriptTimeoutMs,
        // isolated-vm's README: after a catastrophic error the process is in an
        // unknown state; end it. The front fails this slot process's jobs and starts another.
        onCatastrophicError: (message) => fatal('isolated-vm catastrophic error', new Error(message), true),
      },
      // One request at a time: one isolate made ahead is enough.
      Math.min(1, config.prewarmedIsolates),
      this.#log,
    );
  }

  /**
   * Ready once warm: what a fresh process makes ahead (a context, an isolate) is
   * made before its first job, whose CPU is its slot group's (slot-job.ts): a
   * slot replaced because of one key's job does not bill the next key for it.
   */
  async start(): Promise<void> {
    await this.browser.start();
    this.#sandboxes.start();
    await this.#prepared();
    this.#reporting = true;
    this.#stopCollecting = collectWhenIdle(() => this.#jobs.size > 0);
    this.#reportStatus();
    this.#reportMemory();
  }

  /** Its spare context and isolate, made ahead; bounded, and never a failure: one not made is made again later. */
  async #prepared(): Promise<void> {
    await within(
      Promise.all([this.browser.warm(), this.#sandboxes.made()]).catch(() => undefined),
      WARM_WAIT_MS,
      () => undefined,
    );
  }

  /** Tells the front of the browser's state when it changed. */
  #reportStatus(): void {
    const browser = this.browser;
    const status = {
      ready: browser.ready,
      pid: browser.pid,
      pids: browser.pids.filter((p): p is number => p !== undefined),
      restarts: browser.restarts,
      recycles: browser.recycles,
      contextsReady: browser.contextsReady,
    };
    const text = JSON.stringify(status);
    if (text === this.#lastStatus) return;
    this.#lastStatus = text;
    send({ type: 'status', browser: status });
  }

  #reportMemory(): void {
    send({
      type: 'memory',
      memory: {
        pageBytes: this.#leases.pageMemoryBytes,
        pageLimitKills: (this.#killsSent = this.#leases.memoryKills),
      },
    });
  }

  /** Every step runs even when one before it fails. */
  #close(): Promise<void> {
    this.#closing ??= (async () => {
      clearInterval(this.#memoryTimer);
      this.#stopCollecting?.();
      for (const a of this.#jobs.values())
        a.abort(new ApiError('SERVICE_UNAVAILABLE', 'Service unavailable: shutting down'));
      const steps: [string, () => Promise<void> | void][] = [
        ['isolates', () => this.#sandboxes.close()],
        ['chromium', () => this.browser.close()],
        ['page memory watch', () => this.#leases.close()],
        ['egress channel', () => this.#remote.close()],
        ['code caches', () => releaseBundleCache()],
      ];
      for (const [what, step] of steps) {
        try {
          await step();
        } catch (e) {
          this.#log.error({ err: e, what }, 'slot process close step failed');
        }
      }
    })();
    return this.#closing;
  }

  /** Job `id`: its outcome sent to the front, then the slot made ready for the next. */
  async #run(id: number, request: Extract<ToSlot, { type: 'run' }>['request']): Promise<void> {
    const aborter = new AbortController();
    this.#jobs.set(id, aborter);
    // Where the kernel holds the page's memory, the front reads it (and counts its kills) itself.
    if (this.#init.chromiumCgroup === undefined)
      this.#memoryTimer ??= setInterval(() => this.#reportMemory(), MEMORY_EVERY_MS);
    let closingJob: Promise<void> = Promise.resolve();
    const failed = (e: unknown, telemetry?: JobTelemetry): void => {
      const error = toWire(e, telemetry);
      // The front logs the one error line of a 500 (its request, key, slot, phase, cause); this is its stack.
      if (error.code === 'INTERNAL_SERVER_ERROR' || error.housekeeping) this.#log.warn({ err: e, id }, 'job failed');
      send({ type: 'failed', id, error });
    };
    try {
      const hold = (p: Promise<void>): void => {
        closingJob = p;
      };
      const phase = (p: JobPhase): void => send({ type: 'phase', id, phase: p });
      const outcome = await runScrape(request, this.#deps, aborter.signal, hold, phase);
      if (outcome.ok) send({ type: 'done', id, outcome: toWireResult(outcome.result, outcome.telemetry) });
      else failed(outcome.error, outcome.telemetry);
    } catch (e) {
      failed(e);
    } finally {
      this.#jobs.delete(id);
      await closingJob.catch((e: unknown) => this.#log.error({ err: e, id }, 'closing a context failed'));
      await this.#afterJob(id);
    }
  }

  /**
   * The slot's own work after the reply (its next context and isolate, a discarded Chromium's relaunch)
   * is done before the front offers the slot again: the next request waits for it in the queue, where
   * fairness is decided and no key is billed, rather than beside its own work. Bounded, never a failure.
   */
  async #afterJob(id: number): Promise<void> {
    await this.#prepared();
    // SECURITY: nothing this job's page or processes wrote is there for the next one; what cannot be
    // emptied ends this process, and the front starts a fresh one.
    // Only the directory the front gave it (TMPDIR): never the machine's own, which the default would be.
    const emptied =
      this.#jobs.size > 0 ||
      process.env.TMPDIR === undefined ||
      (await emptyTmp(tmpdir(), liveProfiles).then(
        () => true,
        (e: unknown) => {
          fatal('the temporary directory could not be emptied', e);
          return false;
        },
      ));
    if (this.#jobs.size === 0) {
      clearInterval(this.#memoryTimer);
      this.#memoryTimer = undefined;
    }
    // A renderer's own out-of-memory death is this slot's count to tell, with or without the kernel's limit.
    if (this.#init.chromiumCgroup === undefined || this.#leases.memoryKills !== this.#killsSent) this.#reportMemory();
    this.#reportStatus();
    // Not closed: the process is exiting, and its slot will not be offered again until it is replaced.
    if (emptied) send({ type: 'closed', id });
  }

  /** What the front asks once the slot has started. */
  onMessage(msg: ToSlot): void {
    switch (msg.type) {
      case 'run':
        background(this.#run(msg.id, msg.request), 'job', this.#log);
        break;
      case 'abort': {
        const e = msg.error;
        this.#jobs.get(msg.id)?.abort(e ? new ApiError(e.code, e.message) : undefined);
        break;
      }
      case 'shutdown':
        this.#close().then(
          () => process.exit(0),
          (e: unknown) => fatal('shutdown', e),
        );
        break;
      case 'fault':
        if (this.#init.seam?.faults === true) fault(msg);
        break;
      case 'init':
        break;
    }
  }
}

/** Tests (seam.clipboardFailures, clipboardHangs): the first emptyings fail or hang, as in a Chromium whose clipboard cannot be emptied. */
function clipboardSeam(init: Init): EmptyClipboard | undefined {
  let failures = init.seam?.clipboardFailures ?? 0;
  let hangs = init.seam?.clipboardHangs ?? 0;
  if (failures <= 0 && hangs <= 0) return undefined;
  return (page, selection) =>
    hangs-- > 0
      ? new Promise<boolean>(() => undefined)
      : failures-- > 0
        ? Promise.resolve(false)
        : emptyClipboard(page, selection);
}

/** Tests (seam.faults): the fault the test asked for. */
function fault(msg: Extract<ToSlot, { type: 'fault' }>): void {
  if (msg.kind === 'throw')
    setImmediate(() => {
      throw new Error('a fault the test asked for');
    });
  else if (msg.kind === 'oom') setImmediate(exhaustHeap);
  else if (msg.kind === 'hang') setImmediate(hang);
  else if (msg.kind === 'bloat') setImmediate(bloat);
  else if (msg.kind === 'retain') retained.push(Buffer.alloc(Number(msg.message) * 2 ** 20, 1));
  else if (msg.kind === 'send') front.send(msg.message as FromSlot);
  else if (msg.kind === 'raw') writeRaw(msg.message as RawFault);
  else if (msg.kind === 'unwire') {
    unwired = true;
    front.close();
  }
  // eslint-disable-next-line @typescript-eslint/no-floating-promises -- the point: a rejection nobody handles
  else Promise.reject(new Error('a fault the test asked for'));
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

/** Tests (seam.faults, `unwire`): the front's wire was closed by this process, which lives on (as escaped code could). */
let unwired = false;

/** Tests (seam.faults): memory outside V8's heap kept for the process's life (what a job could leave behind). */
const retained: Buffer[] = [];

/**
 * Tests (seam.faults): writes bytes to the front's wire's descriptor as they are, past its framing (what code
 * that escaped into this process could write).
 */
function writeRaw(fault: RawFault): void {
  const chunks = [Buffer.from(fault.bytes, 'base64')];
  const filler = Buffer.alloc(2 ** 20, 0x41);
  for (let i = 0; i < (fault.thenMiB ?? 0); i++) chunks.push(filler);
  // Queued at once (the filler is one buffer): nothing this process sends meanwhile lands inside them.
  for (const chunk of chunks) frontSocket.write(chunk);
}
