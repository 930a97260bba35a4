// The front's side of the process boundary: starts the executors
// (src/slot/main.ts), gives each job to one of them, and when one dies fails only
// the jobs it was running and starts another. An executor gets an environment
// from an allow-list (no key, key file, Redis URL or metrics token), no file
// descriptor of the front but its stdio and the IPC channel, and, when the front
// runs as root, an unprivileged user of its own.
import { randomUUID } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import { rmSync } from 'node:fs';
import { JOB_CLOSE_MARGIN_MS, type Config } from '../../common/config.js';
import { awaitReady, forkChild, logChildOutput, stopChild } from './child-start.js';
import { ApiError } from '../../common/errors.js';
import type { EgressSupervisor } from './egress-supervisor.js';
import {
  checkFromExecutor,
  executorConfig,
  type BrowserStatus,
  type ExecutorMemory,
  type FromExecutor,
  type ToExecutor,
} from '../../protocol/executor-messages.js';
import {
  EGRESS_STOPPED,
  RUNNER_STOPPED,
  type JobOutcome,
  type JobRequest,
  type WireError,
} from '../../protocol/jobs.js';
import { type ExecutorTestSeam, type FaultKind } from '../../protocol/test-seams.js';
import type { Logger } from '../../common/log.js';
import { continueStopped } from './stopped-chromium.js';
import { executorUser, type RunAs } from './users.js';
import {
  EXECUTOR_CLOSE_TIMEOUT_MS,
  EXECUTOR_START_TIMEOUT_MS,
  childDir,
  childEntry,
  childEnv,
  restartBackoffMs,
  sendSocket,
  writeChildLine,
} from './child-start.js';

/** How long an executor may take, once the egress process died, to close every context that used it. */
export const EGRESS_DRAIN_TIMEOUT_MS = 10_000;

/**
 * How long a job may stay with its executor, from {run} to {closed}, before the
 * executor is taken for hung and killed. An executor that works answers within
 * the navigation and script limits plus the close margin, and closes the context
 * within Puppeteer's protocol timeout (the same limits again plus a margin): this
 * is both, so only an executor that no longer works reaches it.
 */
export function jobDeadlineMs(config: Pick<Config, 'navigationTimeoutMs' | 'scriptTimeoutMs'>): number {
  return 2 * (config.navigationTimeoutMs + config.scriptTimeoutMs + JOB_CLOSE_MARGIN_MS);
}

/**
 * The first message an executor gets. SECURITY: its configuration has every
 * secret taken out (executorConfig), the upstream proxies included: their
 * credentials go to the egress process alone (egressInitMessage), and the
 * executor names a request's proxy to it by name.
 */
export function executorInit(
  config: Config,
  logLevel: string,
  guardPort: number,
  seam: ExecutorTestSeam | undefined,
): Extract<ToExecutor, { type: 'init' }> {
  return {
    type: 'init',
    config: executorConfig(config),
    logLevel,
    guardPort,
    ...(seam ? { seam: { loopbackOnly: seam.loopbackOnly, reportDials: seam.reportDials, faults: seam.faults } } : {}),
  };
}

export interface SupervisorEvents {
  observe?(metric: 'navigation' | 'script', seconds: number): void;
  egressRefused?(): void;
}

export interface SupervisorOptions {
  readonly config: Config;
  readonly logger: Logger;
  /** The egress process the executors' Chromium goes through; started before them. */
  readonly egress: EgressSupervisor;
  readonly events?: SupervisorEvents;
  /** Tests only: faults on request, a small heap (the guard's part of the seam is the egress process's). */
  readonly seam?: ExecutorTestSeam;
}

interface Pending {
  readonly resolve: (o: JobOutcome) => void;
  readonly reject: (e: ApiError) => void;
  /** The job's context is closed (or its executor is gone). */
  readonly closed: () => void;
}

/** One executor process. */
class Executor {
  readonly child: ChildProcess;
  readonly dir: string;
  readonly jobs = new Map<number, Pending>();
  ready = false;
  gone = false;
  /**
   * The egress process whose channel it holds (its generation), 0 for none: it
   * got none yet, or it lost one and has closed every context that used it.
   */
  channelOf = 0;
  /** The front's number for the channel it holds (0 for none yet). */
  channelId = 0;
  /** Its channel is closed on the egress side: its egress process said so, or died. */
  channelClosed = false;
  /** It said it holds no context of a closed channel (egress-drained); its word alone frees nothing. */
  drainedSaid = false;
  chromiumSandbox: boolean | undefined;
  browser: BrowserStatus = { ready: false, pid: undefined, pids: [], restarts: 0, recycles: 0, contextsReady: 0 };
  memory: ExecutorMemory = { executorBytes: 0, chromiumBytes: 0, pageBytes: 0, pageLimitKills: 0 };
  /** Its name at the egress process (an executor's channel is its own). */
  readonly index: number;

  constructor(child: ChildProcess, dir: string, index: number) {
    this.child = child;
    this.dir = dir;
    this.index = index;
  }

  send(msg: ToExecutor, handle?: Socket): void {
    // A message to an executor that is going away is lost; its exit fails its jobs.
    if (!this.child.connected) handle?.destroy();
    else if (handle) sendSocket(this.child, msg, handle);
    else this.child.send(msg, (e) => void e);
  }
}

export class Supervisor {
  readonly #opts: SupervisorOptions;
  readonly #runAs: RunAs | undefined;
  readonly #executors = new Set<Executor>();
  readonly #waiting = new Set<() => void>();
  #nextId = 1;
  #nextExecutor = 1;
  #drainTimer: NodeJS.Timeout | undefined;
  #restarts = 0;
  #failedStarts = 0;
  /** Chromium restarts and recycles, and page memory kills, counted by executors that are gone. */
  #pastBrowser = { restarts: 0, recycles: 0, pageLimitKills: 0 };
  #closed = false;
  readonly #timers = new Set<NodeJS.Timeout>();

  constructor(opts: SupervisorOptions) {
    this.#opts = opts;
    this.#runAs = executorUser(opts.config);
  }

  /** Starts the executors and waits until each is ready (its Chromium launched). */
  async start(): Promise<void> {
    const started: Promise<void>[] = [];
    for (let i = 0; i < this.#opts.config.executors; i++) started.push(this.#spawn());
    await Promise.all(started);
  }

  /** Executors that died and were replaced. */
  get restarts(): number {
    return this.#restarts;
  }

  /** The executors' process ids, for tests and health checks. */
  get pids(): number[] {
    return [...this.#executors].filter((e) => !e.gone).map((e) => e.child.pid ?? 0);
  }

  /** The user executors run as (undefined: the front's own). */
  get runAs(): RunAs | undefined {
    return this.#runAs;
  }

  /** Chromium runs in its own sandbox in every executor (undefined until one is ready). */
  get chromiumSandbox(): boolean | undefined {
    let all: boolean | undefined;
    for (const e of this.#executors) if (e.chromiumSandbox !== undefined) all = (all ?? true) && e.chromiumSandbox;
    return all;
  }

  /** The executors' Chromium, as one: ready when one is; counts summed, those of replaced executors included. */
  get browser(): BrowserStatus {
    const live = [...this.#executors].filter((e) => e.ready && !e.gone);
    return {
      ready: live.some((e) => e.browser.ready),
      pid: live.find((e) => e.browser.pid !== undefined)?.browser.pid,
      pids: live.flatMap((e) => e.browser.pids),
      restarts: this.#pastBrowser.restarts + live.reduce((n, e) => n + e.browser.restarts, 0),
      recycles: this.#pastBrowser.recycles + live.reduce((n, e) => n + e.browser.recycles, 0),
      contextsReady: live.reduce((n, e) => n + e.browser.contextsReady, 0),
    };
  }

  /**
   * What the executors hold now, summed (each reads it from /proc every second;
   * an executor that is gone holds nothing); page limit kills include those of
   * executors that are gone.
   */
  get memory(): ExecutorMemory {
    const live = [...this.#executors].filter((e) => !e.gone);
    let executorBytes = 0;
    let chromiumBytes = 0;
    let pageBytes = 0;
    let pageLimitKills = this.#pastBrowser.pageLimitKills;
    for (const e of live) {
      executorBytes += e.memory.executorBytes;
      chromiumBytes += e.memory.chromiumBytes;
      pageBytes += e.memory.pageBytes;
      pageLimitKills += e.memory.pageLimitKills;
    }
    return { executorBytes, chromiumBytes, pageBytes, pageLimitKills };
  }

  /** Tests (seam.faults): makes every executor fail as asked. */
  fault(kind: FaultKind, message?: unknown): void {
    for (const e of this.#executors) e.send({ type: 'fault', kind, ...(message === undefined ? {} : { message }) });
  }

  /** The egress process (restarts, readiness) that the executors' traffic goes through. */
  get egress(): EgressSupervisor {
    return this.#opts.egress;
  }

  /**
   * The egress process died: the requests in flight fail with 500 now (their
   * traffic went through it); each executor ends them, closes every context that
   * used a port of it and says so (egress-drained). An executor that has not
   * within EGRESS_DRAIN_TIMEOUT_MS is killed (and replaced).
   */
  egressStopped(): void {
    const generation = this.#opts.egress.generation;
    for (const e of this.#executors) {
      // Every channel of the dead process is closed with it.
      if (e.channelOf === generation) e.channelClosed = true;
      this.#free(e);
      for (const [id, job] of e.jobs) {
        job.reject(new ApiError('INTERNAL_SERVER_ERROR', EGRESS_STOPPED, { cause: 'the egress process exited' }));
        e.send({ type: 'abort', id, error: { code: 'INTERNAL_SERVER_ERROR', message: EGRESS_STOPPED } });
      }
    }
    clearTimeout(this.#drainTimer);
    this.#drainTimer = setTimeout(() => {
      for (const e of this.#executors)
        if (!e.gone && e.channelOf !== 0 && e.channelOf <= generation) {
          this.#opts.logger.error(
            { pid: e.child.pid, ms: EGRESS_DRAIN_TIMEOUT_MS },
            'an executor did not close the contexts of the stopped egress process in time; killing it',
          );
          e.child.kill('SIGKILL');
        }
    }, EGRESS_DRAIN_TIMEOUT_MS);
    this.#drainTimer.unref();
  }

  /**
   * The egress process closed executor `index`'s channel `channel`: once the
   * executor has closed the contexts that used it too (egress-drained), it gets
   * another.
   */
  egressChannelClosed(index: number, channel: number): void {
    for (const e of this.#executors)
      if (e.index === index && e.channelId === channel && e.channelOf === this.#opts.egress.generation) {
        e.channelClosed = true;
        this.#free(e);
      }
  }

  /**
   * SECURITY: an executor is given a new channel only when both sides agree its
   * last one is gone: the egress process closed it (or died) AND the executor
   * closed every context that used it. An executor's egress-drained alone, while
   * its channel is open, changes nothing (a forged one used to make the front
   * hand a new channel for each, without end, and let one executor hold many).
   */
  #free(e: Executor): void {
    if (e.channelOf === 0 || !e.channelClosed || !e.drainedSaid || e.gone) return;
    e.channelOf = 0;
    e.channelId = 0;
    e.channelClosed = false;
    e.drainedSaid = false;
    this.#giveChannels();
  }

  /** A (new) egress process is ready: executors without a channel get one, once none holds the old one's. */
  egressReady(): void {
    this.#giveChannels();
  }

  /** The egress process says executor `index` sent it what it cannot read: it is killed, as for a bad message. */
  executorMisbehaved(index: number): void {
    for (const e of this.#executors)
      if (e.index === index && !e.gone) {
        this.#opts.logger.error({ pid: e.child.pid }, 'an executor sent the egress process a bad message; killing it');
        e.child.kill('SIGKILL');
      }
  }

  /**
   * SECURITY: channels to the current egress process are handed out only while
   * no executor holds a context of a previous one: such a context's port could
   * otherwise be given, by the new process, to another request's context.
   */
  #giveChannels(): void {
    const egress = this.#opts.egress;
    if (this.#closed || !egress.ready) return;
    const current = egress.generation;
    const live = [...this.#executors].filter((e) => !e.gone);
    if (live.some((e) => e.channelOf !== 0 && e.channelOf !== current)) return;
    clearTimeout(this.#drainTimer);
    for (const e of live) {
      if (e.channelOf !== 0) continue;
      e.channelOf = current;
      e.channelId = 0;
      e.channelClosed = false;
      e.drainedSaid = false;
      egress.channel(e.index).then(
        ({ socket, channel }) => {
          if (!e.gone && !socket.destroyed && e.channelOf === current) {
            e.channelId = channel;
            e.send({ type: 'egress-channel' }, socket);
            return;
          }
          socket.destroy();
          // The egress process stopped while the channel was made (its end was closed):
          // sent now, it would carry no socket, and the executor would wait for one
          // it never gets. It gets a channel to the next egress process instead.
          if (!e.gone && e.channelOf === current) {
            e.channelOf = 0;
            this.#giveChannels();
          }
        },
        (err: unknown) => {
          // The egress process stopped meanwhile (its replacement hands another), or no socket could be made.
          if (e.channelOf === current) e.channelOf = 0;
          this.#opts.logger.error({ err, pid: e.child.pid }, 'no channel to the egress process for an executor');
          if (egress.ready && egress.generation === current) e.child.kill('SIGKILL');
        },
      );
    }
  }

  /**
   * Runs one job in an executor: runScrape's shape across the process hop. The
   * context is closed after the job; `deferClose` receives that closing (it ends
   * when the executor says the context is closed, or when the executor is gone).
   */
  async run(
    request: JobRequest,
    signal?: AbortSignal,
    deferClose?: (closing: Promise<void>) => void,
  ): Promise<JobOutcome> {
    const executor = await this.#pick(signal);
    const id = this.#nextId++;
    // SECURITY: the egress process lets this executor bind one session to this
    // request, through this proxy (checked against the key by the front) and no other.
    const requestId = request.requestId ?? randomUUID();
    const grant = this.#opts.egress.grant(executor.index, requestId, request.proxy);
    // SECURITY: an executor that stops answering (stopped, deadlocked, stuck in
    // native code) would hold this request, and its slot, for ever: past the
    // deadline it is killed, which fails its jobs and starts another.
    const deadlineMs = jobDeadlineMs(this.#opts.config);
    const deadline = setTimeout(() => {
      this.#opts.logger.error(
        { pid: executor.child.pid, job: id, deadlineMs },
        'a job outlived its deadline: the executor is hung; killing it',
      );
      executor.child.kill('SIGKILL');
    }, deadlineMs);
    deadline.unref();
    let closed!: () => void;
    const closing = new Promise<void>(
      (resolve) =>
        (closed = () => {
          clearTimeout(deadline);
          this.#opts.egress.revoke(grant);
          resolve();
        }),
    );
    const result = new Promise<JobOutcome>((resolve, reject) => {
      executor.jobs.set(id, { resolve, reject, closed });
    });
    const onAbort = (): void => {
      const reason: unknown = signal?.reason;
      executor.send({
        type: 'abort',
        id,
        ...(reason instanceof ApiError ? { error: { code: reason.code, message: reason.message } } : {}),
      });
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    executor.send({ type: 'run', id, request: { ...request, requestId } });
    try {
      return await result;
    } finally {
      signal?.removeEventListener('abort', onAbort);
      if (deferClose) deferClose(closing);
      else await closing;
    }
  }

  /** The ready executor with the fewest jobs; waits for one (a replacement) within the request's time. */
  async #pick(signal?: AbortSignal): Promise<Executor> {
    for (;;) {
      if (this.#closed) throw new ApiError('SERVICE_UNAVAILABLE', 'Service unavailable: shutting down');
      if (signal?.aborted)
        throw signal.reason instanceof ApiError
          ? signal.reason
          : new ApiError('SERVICE_UNAVAILABLE', 'The request was cancelled');
      let best: Executor | undefined;
      for (const e of this.#executors)
        if (e.ready && !e.gone && (best === undefined || e.jobs.size < best.jobs.size)) best = e;
      if (best) return best;
      await new Promise<void>((resolve) => {
        const wake = (): void => {
          this.#waiting.delete(wake);
          signal?.removeEventListener('abort', wake);
          resolve();
        };
        this.#waiting.add(wake);
        signal?.addEventListener('abort', wake, { once: true });
      });
    }
  }

  #wakeWaiting(): void {
    for (const wake of [...this.#waiting]) wake();
  }

  #later(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this.#timers.delete(t);
      fn();
    }, ms);
    t.unref();
    this.#timers.add(t);
  }

  #spawn(): Promise<void> {
    const { config, logger } = this.#opts;
    // SECURITY: a home and temporary directory of the executor's own (Chromium's
    // profile goes there), which only its user may enter.
    const dir = childDir('pagescript-exec-', this.#runAs);
    const env = childEnv(dir);
    // Puppeteer makes a `debug` logger for every protocol message it sends or
    // receives, and each asks whether stderr is a terminal (a system call)
    // unless this says: ~2 ms of the executor's CPU per request (profiled).
    env.DEBUG_COLORS = 'no';
    const { file, execArgv } = childEntry('executor', this.#opts.seam?.heapMb);
    const child = forkChild(file, execArgv, env, this.#runAs);
    const executor = new Executor(child, dir, this.#nextExecutor++);
    this.#executors.add(executor);
    logChildOutput(child, logger, { executor: child.pid }, 'executor output');
    return awaitReady(child, {
      logger,
      timeoutMs: EXECUTOR_START_TIMEOUT_MS,
      begin: () => {
        executor.send(executorInit(config, logger.level, this.#opts.egress.guardPort, this.#opts.seam));
        // Its channel to the egress process, right after init (or once that process is ready).
        this.#giveChannels();
      },
      check: checkFromExecutor,
      onMessage: (msg) => this.#onMessage(executor, msg),
      kill: () => child.kill('SIGKILL'),
      wasReady: () => executor.ready,
      onExit: (code, signal) => this.#onExit(executor, code, signal),
      words: {
        timeout: 'executor did not start in time; killing it',
        badMessage: 'bad message from an executor; killing it',
        error: 'executor process error',
        who: 'the script executor',
      },
    });
  }

  #onMessage(e: Executor, msg: FromExecutor): void {
    const { logger, events } = this.#opts;
    switch (msg.type) {
      case 'log':
        this.#log(e, msg.line);
        return;
      case 'status':
        e.browser = msg.browser;
        return;
      case 'memory':
        e.memory = msg.memory;
        return;
      case 'ready': {
        e.ready = true;
        e.chromiumSandbox = msg.chromiumSandbox;
        this.#failedStarts = 0;
        logger.info({ pid: e.child.pid, user: this.#runAs?.user, restarts: this.#restarts }, 'executor ready');
        this.#wakeWaiting();
        return;
      }
      case 'observe':
        events?.observe?.(msg.metric, msg.seconds);
        return;
      case 'egress-refused':
        events?.egressRefused?.();
        return;
      case 'done':
        e.jobs.get(msg.id)?.resolve(msg.outcome);
        return;
      case 'failed':
        e.jobs.get(msg.id)?.reject(fromWire(msg.error));
        return;
      case 'closed': {
        const job = e.jobs.get(msg.id);
        e.jobs.delete(msg.id);
        job?.closed();
        return;
      }
      case 'egress-drained':
        e.drainedSaid = true;
        this.#free(e);
        return;
    }
  }

  /** An executor's log line, written by the front's logger with the executor's pid. */
  #log(e: Executor, line: string): void {
    writeChildLine(this.#opts.logger, line, { executor: e.child.pid }, 'executor');
  }

  #onExit(e: Executor, code: number | null, signal: NodeJS.Signals | null): void {
    if (e.gone) return;
    e.gone = true;
    const wasReady = e.ready;
    e.ready = false;
    this.#executors.delete(e);
    this.#pastBrowser.restarts += e.browser.restarts;
    this.#pastBrowser.recycles += e.browser.recycles;
    this.#pastBrowser.pageLimitKills += e.memory.pageLimitKills;
    rmSync(e.dir, { recursive: true, force: true, maxRetries: 3 });
    // What the executor's CPU pause left stopped runs again, sees the closed pipe and exits.
    const continued = continueStopped(e.browser.pids, this.#runAs?.uid ?? process.getuid?.() ?? -1);
    if (continued > 0)
      this.#opts.logger.warn(
        { executor: e.child.pid, continued },
        'continued Chromium processes a dead executor left stopped',
      );
    const failed = e.jobs.size;
    for (const job of e.jobs.values()) {
      job.reject(
        new ApiError('INTERNAL_SERVER_ERROR', RUNNER_STOPPED, {
          cause: `executor ${e.child.pid} exited (${code ?? signal})`,
        }),
      );
      job.closed();
    }
    e.jobs.clear();
    // It may have been the last to hold a context of a stopped egress process.
    this.#giveChannels();
    if (this.#closed) return;
    this.#restarts++;
    if (!wasReady) this.#failedStarts++;
    const backoff = restartBackoffMs(this.#failedStarts);
    this.#opts.logger.error(
      { pid: e.child.pid, code, signal, failedJobs: failed, restarts: this.#restarts, backoffMs: backoff },
      'executor stopped; starting another',
    );
    this.#later(backoff, () => {
      if (this.#closed) return;
      this.#spawn().catch((err: unknown) => this.#opts.logger.error({ err }, 'executor replacement failed'));
    });
  }

  /** Asks every executor to close Chromium and exit; kills those that do not in time. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    this.#wakeWaiting();
    await Promise.all(
      [...this.#executors].map(async (e) => {
        if (e.gone) return;
        await stopChild(e.child, () => e.send({ type: 'shutdown' }), EXECUTOR_CLOSE_TIMEOUT_MS);
      }),
    );
  }
}

function fromWire(w: WireError): ApiError {
  const e = new ApiError(w.code, w.message, w.detail === undefined ? {} : { cause: w.detail });
  if (w.logs !== undefined) e.logs = w.logs;
  if (w.timeout !== undefined) e.timeout = w.timeout;
  if (w.egress !== undefined) e.egress = w.egress;
  if (w.failure !== undefined) e.failure = w.failure;
  if (w.timings !== undefined) e.timings = w.timings;
  if (w.usage !== undefined) e.usage = { ...w.usage };
  return e;
}
