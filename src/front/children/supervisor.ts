// The front's side of the process boundary: each request slot (MAX_CONCURRENCY
// of them) runs its host-side work in a slot process of its own (src/slot/main.ts,
// built to dist/executor.js) with one Chromium, and is given at most one job at
// a time. The front holds each job's deadline and each slot process's memory
// ceiling, whatever the process says or does: past either it answers the caller
// itself, kills that process (SIGKILL) and starts another; the other slots go on
// serving. A slot process gets an environment from an allow-list (no key, key
// file, Redis URL or metrics token), no file descriptor of the front but its
// stdio and the IPC channel, and, when the front runs as root, a user of its own
// slot's (users.ts slotUsers), so that slots cannot reach each other.
import { randomUUID } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import { rmSync } from 'node:fs';
import type { Config } from '../../common/config.js';
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
import { clampNavigationTimeoutMs } from '../../protocol/request-options.js';
import { type ExecutorTestSeam, type FaultKind } from '../../protocol/test-seams.js';
import type { Logger } from '../../common/log.js';
import { residentBytes } from '../../common/service-memory.js';
import { continueStopped } from './stopped-chromium.js';
import { slotUsers, type RunAs } from './users.js';
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
import { treeCpuMs } from '../../common/proc.js';
import { CpuGroups } from './cpu-groups.js';
import { ACTIVE_GRACE_MS } from '../tenancy/scheduler.js';
import { CpuShare } from './cpu-share.js';

/** How long a slot process may take, once the egress process died, to close every context that used it. */
export const EGRESS_DRAIN_TIMEOUT_MS = 10_000;

/**
 * What a job gets past its navigation and script limits before the front ends
 * it: leasing its context and isolate, collecting its result, and the answer.
 */
export const JOB_GRACE_MS = 5_000;

/**
 * How long a slot process that has answered may take to close the job's context
 * before it is taken for hung (and replaced): counted from the deadline, or
 * from the answer when that came later.
 */
export const JOB_CLOSE_GRACE_MS = 5_000;

/** How often the front reads each slot process's resident memory from /proc. */
export const SLOT_MEMORY_POLL_MS = 100;

/** Node's own words on stderr when a process's V8 heap is exhausted (it then aborts). */
const HEAP_EXHAUSTED = /JavaScript heap out of memory|Reached heap limit|Ineffective mark-compacts near heap limit/;

/** How long an exiting slot process's last stderr lines are waited for before its job's failure is chosen. */
const EXIT_OUTPUT_WAIT_MS = 1_000;

/**
 * The front's deadline for a job, from the moment it is handed to a slot
 * process: its navigation limit (the request's own, when lower) and, when it
 * has a script, the script limit, plus JOB_GRACE_MS.
 */
export function jobDeadlineMs(
  config: Pick<Config, 'navigationTimeoutMs' | 'scriptTimeoutMs'>,
  request?: Pick<JobRequest, 'options' | 'script' | 'limits'>,
): number {
  const navigationLimit = request?.limits?.navigationTimeoutMs ?? config.navigationTimeoutMs;
  const navigation = clampNavigationTimeoutMs(request?.options?.navigationTimeoutMs, navigationLimit);
  const scriptLimit = request?.limits?.scriptTimeoutMs ?? config.scriptTimeoutMs;
  const script = request !== undefined && request.script === undefined ? 0 : scriptLimit;
  return navigation + script + JOB_GRACE_MS;
}

/** The caller's answer when the front's deadline ends a job: the timeout as a script's own would be. */
export function deadlineError(deadlineMs: number): ApiError {
  const e = new ApiError(
    'SCRAPING_FAILED',
    `Script execution failed: the request did not finish within ${deadlineMs} ms (its navigation and script limits and ${JOB_GRACE_MS} ms to set up and answer)`,
  );
  // Counted in pagescript_timeouts_total{phase="deadline"}: the slot process did not answer by it.
  e.timeout = 'deadline';
  return e;
}

/**
 * The caller's answer when the host side of its request (its slot process) went
 * past its memory ceiling: `limitMb` of resident memory, or of V8 heap.
 */
export function hostMemoryError(limitMb: number, what: 'resident' | 'heap'): ApiError {
  return new ApiError(
    'MEMORY_LIMIT_EXCEEDED',
    what === 'resident'
      ? `Memory limit exceeded: the host side of the request (its slot process) used more than ${limitMb} MiB`
      : `Memory limit exceeded: the host side of the request (its slot process) used more than its ${limitMb} MiB heap`,
  );
}

/**
 * The first message a slot process gets. SECURITY: its configuration has every
 * secret taken out (executorConfig), the upstream proxies included: their
 * credentials go to the egress process alone (egressInitMessage), and the
 * slot names a request's proxy to it by name.
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
  /** The egress process the slots' Chromium goes through; started before them. */
  readonly egress: EgressSupervisor;
  readonly events?: SupervisorEvents;
  /** Tests only: faults on request, a small heap (the guard's part of the seam is the egress process's). */
  readonly seam?: ExecutorTestSeam;
}

interface Pending {
  readonly resolve: (o: JobOutcome) => void;
  readonly reject: (e: ApiError) => void;
  /** The job's context is closed (or its slot process is gone). */
  readonly closed: () => void;
  /** The caller has its answer (from the slot process, or the front's own). */
  answered: boolean;
}

/** A request slot: its number, its user, and its process while it has one. */
interface Slot {
  readonly index: number;
  readonly runAs: RunAs | undefined;
  /** Its process (starting or ready); undefined while it has none (closed while idle, or between two). */
  proc: SlotProcess | undefined;
  /** A job holds it, from the moment it is picked until its context is closed. */
  busy: boolean;
  /** Its replacement is due (after a backoff). */
  restartTimer: NodeJS.Timeout | undefined;
  /** Closes its process once it has been idle for IDLE_SLOT_CLOSE_MS. */
  idleTimer: NodeJS.Timeout | undefined;
  /** The key of the last job it ran, and when that job was picked or, once it ended, ended (Date.now()). */
  last?: { readonly client: string; readonly at: number };
}

/** One slot process. */
class SlotProcess {
  readonly child: ChildProcess;
  readonly dir: string;
  readonly slot: Slot;
  readonly jobs = new Map<number, Pending>();
  ready = false;
  gone = false;
  /** Given no new work: being killed by the front (its exit is then a replacement), closed while idle or retired. */
  retiring = false;
  /** Asked to close (idle, or retired after SLOT_RECYCLE_REQUESTS): its exit is no failure. */
  closedOnPurpose = false;
  /** It wrote that its V8 heap was exhausted (its own words: they can only fail its own request). */
  heapExhausted = false;
  /** Requests it has served (SLOT_RECYCLE_REQUESTS). */
  served = 0;
  /** When it was forked (performance.now()), and whether a request asked for it (its slot had none). */
  readonly startedAt = performance.now();
  onDemand = false;
  /** Its resident memory as the front last read it from /proc. */
  residentBytes = 0;
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
  /** Its name at the egress process (a process's channel is its own; never reused). */
  readonly index: number;

  constructor(child: ChildProcess, dir: string, index: number, slot: Slot) {
    this.child = child;
    this.dir = dir;
    this.index = index;
    this.slot = slot;
  }

  /** Ready and given work. */
  get serving(): boolean {
    return this.ready && !this.gone && !this.retiring;
  }

  send(msg: ToExecutor, handle?: Socket): void {
    // A message to a process that is going away is lost; its exit fails its job.
    if (!this.child.connected) handle?.destroy();
    else if (handle) sendSocket(this.child, msg, handle);
    else this.child.send(msg, (e) => void e);
  }
}

export class Supervisor {
  readonly #opts: SupervisorOptions;
  /** Tells each slot whether another slot's request runs that it yields to (the CPU pause between slots), and weighs their groups. */
  #share = this.#newShare(undefined);
  readonly #users: RunAs[] | undefined;
  readonly #slots: Slot[];
  readonly #procs = new Set<SlotProcess>();
  readonly #waiting = new Set<() => void>();
  #nextId = 1;
  #nextProc = 1;
  #drainTimer: NodeJS.Timeout | undefined;
  #memoryTimer: NodeJS.Timeout | undefined;
  #restarts = 0;
  #recycles = 0;
  #failedStarts = 0;
  /** Chromium restarts and recycles, and page memory kills, counted by slot processes that are gone. */
  #pastBrowser = { restarts: 0, recycles: 0, pageLimitKills: 0 };
  #closed = false;
  /** The slot processes' V8 heap limit: the plan's (a test may set a smaller one). */
  readonly #heapMb: number;
  /** A CPU cgroup per slot, when the front may make them (cpu-groups.ts). */
  #groups: CpuGroups | undefined;

  constructor(opts: SupervisorOptions) {
    this.#opts = opts;
    this.#heapMb = opts.seam?.heapMb ?? opts.config.memory.slotHeapMb;
    this.#users = slotUsers(opts.config);
    this.#slots = Array.from({ length: opts.config.maxConcurrency }, (_, index) => ({
      index,
      runAs: this.#users?.[index],
      proc: undefined,
      busy: false,
      restartTimer: undefined,
      idleTimer: undefined,
    }));
  }

  #newShare(groups: CpuGroups | undefined): CpuShare {
    return new CpuShare({
      tell: (index, running) => this.#slots[index]?.proc?.send({ type: 'others', running }),
      cpuMs: treeCpuMs,
      ...(groups && { weigh: (index: number, low: boolean) => groups.weigh(index, low) }),
    });
  }

  /** Starts a process for every slot and waits until each is ready (its Chromium launched). */
  async start(): Promise<void> {
    this.#memoryTimer = setInterval(() => this.#watchMemory(), SLOT_MEMORY_POLL_MS);
    this.#memoryTimer.unref();
    if (this.#opts.config.slotCpuGroups) this.#groups = CpuGroups.open(this.#slots.length, this.#opts.logger);
    this.#share = this.#newShare(this.#groups);
    await Promise.all(this.#slots.map((slot) => this.#spawn(slot)));
  }

  /** Slot processes that died or were killed by the front, and were replaced. */
  get restarts(): number {
    return this.#restarts;
  }

  /** Slot processes retired after SLOT_RECYCLE_REQUESTS requests. */
  get recycles(): number {
    return this.#recycles;
  }

  /** The live slot processes' ids, for tests and health checks. */
  get pids(): number[] {
    return [...this.#procs].filter((e) => !e.gone).map((e) => e.child.pid ?? 0);
  }

  /** The slot processes ready (started, not gone), for tests. */
  get readyPids(): number[] {
    return [...this.#procs].filter((e) => e.ready && !e.gone).map((e) => e.child.pid ?? 0);
  }

  /** Each slot's process id, by slot (undefined: it has none now), for tests. */
  get slotPids(): (number | undefined)[] {
    return this.#slots.map((s) => (s.proc && !s.proc.gone ? s.proc.child.pid : undefined));
  }

  /** Which slots hold a job now, by slot, for tests. */
  get busySlots(): boolean[] {
    return this.#slots.map((s) => s.busy);
  }

  /** The users slot processes run as, slot i's at i (undefined: the front's own). */
  get users(): readonly RunAs[] | undefined {
    return this.#users;
  }

  /** Chromium runs in its own sandbox in every slot (undefined until one is ready). */
  get chromiumSandbox(): boolean | undefined {
    let all: boolean | undefined;
    for (const e of this.#procs) if (e.chromiumSandbox !== undefined) all = (all ?? true) && e.chromiumSandbox;
    return all;
  }

  /** The slots' Chromium, as one: ready when one is; counts summed, those of replaced processes included. */
  get browser(): BrowserStatus {
    const live = [...this.#procs].filter((e) => e.ready && !e.gone);
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
   * What the slots hold now, summed: each slot process's own memory as the
   * front reads it from /proc (SECURITY: not as the process says), its
   * Chromium's as the process reports it every second; page limit kills include
   * those of processes that are gone.
   */
  get memory(): ExecutorMemory {
    const live = [...this.#procs].filter((e) => !e.gone);
    let executorBytes = 0;
    let chromiumBytes = 0;
    let pageBytes = 0;
    let pageLimitKills = this.#pastBrowser.pageLimitKills;
    for (const e of live) {
      executorBytes += e.residentBytes;
      chromiumBytes += e.memory.chromiumBytes;
      pageBytes += e.memory.pageBytes;
      pageLimitKills += e.memory.pageLimitKills;
    }
    return { executorBytes, chromiumBytes, pageBytes, pageLimitKills };
  }

  /** Tests (seam.faults): makes every slot process (or slot `slot`'s alone) fail as asked. */
  fault(kind: FaultKind, message?: unknown, slot?: number): void {
    for (const e of this.#procs)
      if (slot === undefined || e.slot.index === slot)
        e.send({ type: 'fault', kind, ...(message === undefined ? {} : { message }) });
  }

  /** The egress process (restarts, readiness) that the slots' traffic goes through. */
  get egress(): EgressSupervisor {
    return this.#opts.egress;
  }

  /**
   * The egress process died: the requests in flight fail with 500 now (their
   * traffic went through it); each slot process ends them, closes every context
   * that used a port of it and says so (egress-drained). One that has not
   * within EGRESS_DRAIN_TIMEOUT_MS is killed (and replaced).
   */
  egressStopped(): void {
    const generation = this.#opts.egress.generation;
    for (const e of this.#procs) {
      // Every channel of the dead process is closed with it.
      if (e.channelOf === generation) e.channelClosed = true;
      this.#free(e);
      for (const [id, job] of e.jobs) {
        this.#answer(
          job,
          new ApiError('INTERNAL_SERVER_ERROR', EGRESS_STOPPED, { cause: 'the egress process exited' }),
        );
        e.send({ type: 'abort', id, error: { code: 'INTERNAL_SERVER_ERROR', message: EGRESS_STOPPED } });
      }
    }
    clearTimeout(this.#drainTimer);
    this.#drainTimer = setTimeout(() => {
      for (const e of this.#procs)
        if (!e.gone && e.channelOf !== 0 && e.channelOf <= generation) {
          this.#opts.logger.error(
            { pid: e.child.pid, slot: e.slot.index, ms: EGRESS_DRAIN_TIMEOUT_MS },
            'a slot process did not close the contexts of the stopped egress process in time; killing it',
          );
          this.#kill(e);
        }
    }, EGRESS_DRAIN_TIMEOUT_MS);
    this.#drainTimer.unref();
  }

  /**
   * The egress process closed slot process `index`'s channel `channel`: once the
   * process has closed the contexts that used it too (egress-drained), it gets
   * another.
   */
  egressChannelClosed(index: number, channel: number): void {
    for (const e of this.#procs)
      if (e.index === index && e.channelId === channel && e.channelOf === this.#opts.egress.generation) {
        e.channelClosed = true;
        this.#free(e);
      }
  }

  /**
   * SECURITY: a slot process is given a new channel only when both sides agree
   * its last one is gone: the egress process closed it (or died) AND the slot
   * process closed every context that used it. Its egress-drained alone, while
   * its channel is open, changes nothing (a forged one used to make the front
   * hand a new channel for each, without end, and let one process hold many).
   */
  #free(e: SlotProcess): void {
    if (e.channelOf === 0 || !e.channelClosed || !e.drainedSaid || e.gone) return;
    e.channelOf = 0;
    e.channelId = 0;
    e.channelClosed = false;
    e.drainedSaid = false;
    this.#giveChannels();
  }

  /** A (new) egress process is ready: slot processes without a channel get one, once none holds the old one's. */
  egressReady(): void {
    this.#giveChannels();
  }

  /** The egress process says slot process `index` sent it what it cannot read: it is killed, as for a bad message. */
  executorMisbehaved(index: number): void {
    for (const e of this.#procs)
      if (e.index === index && !e.gone) {
        this.#opts.logger.error(
          { pid: e.child.pid, slot: e.slot.index },
          'a slot process sent the egress process a bad message; killing it',
        );
        this.#kill(e);
      }
  }

  /**
   * SECURITY: channels to the current egress process are handed out only while
   * no slot process holds a context of a previous one: such a context's port
   * could otherwise be given, by the new process, to another request's context.
   */
  #giveChannels(): void {
    const egress = this.#opts.egress;
    if (this.#closed || !egress.ready) return;
    const current = egress.generation;
    const live = [...this.#procs].filter((e) => !e.gone);
    if (live.some((e) => e.channelOf !== 0 && e.channelOf !== current)) return;
    clearTimeout(this.#drainTimer);
    for (const e of live) {
      if (e.channelOf !== 0) continue;
      e.channelOf = current;
      e.channelId = 0;
      e.channelClosed = false;
      e.drainedSaid = false;
      // SECURITY: as root, the context ports opened over this channel take its slot's user's sockets alone.
      egress.channel(e.index, e.slot.runAs?.uid).then(
        ({ socket, channel }) => {
          if (!e.gone && !socket.destroyed && e.channelOf === current) {
            e.channelId = channel;
            e.send({ type: 'egress-channel' }, socket);
            return;
          }
          socket.destroy();
          // The egress process stopped while the channel was made (its end was closed):
          // sent now, it would carry no socket, and the slot process would wait for one
          // it never gets. It gets a channel to the next egress process instead.
          if (!e.gone && e.channelOf === current) {
            e.channelOf = 0;
            this.#giveChannels();
          }
        },
        (err: unknown) => {
          // The egress process stopped meanwhile (its replacement hands another), or no socket could be made.
          if (e.channelOf === current) e.channelOf = 0;
          this.#opts.logger.error({ err, pid: e.child.pid }, 'no channel to the egress process for a slot process');
          if (egress.ready && egress.generation === current) this.#kill(e);
        },
      );
    }
  }

  /**
   * Runs one job in a slot process of its own: runScrape's shape across the
   * process hop. The context is closed after the job; `deferClose` receives that
   * closing (it ends when the process says the context is closed, or when the
   * process is gone).
   */
  async run(
    request: JobRequest,
    signal?: AbortSignal,
    deferClose?: (closing: Promise<void>) => void,
    client?: string,
  ): Promise<JobOutcome> {
    const { config, logger } = this.#opts;
    const slot = await this.#pick(signal, client);
    const proc = slot.proc as SlotProcess;
    const id = this.#nextId++;
    // SECURITY: the egress process lets this slot process bind one session to this
    // request, through this proxy (checked against the key by the front) and no other.
    const requestId = request.requestId ?? randomUUID();
    const grant = this.#opts.egress.grant(proc.index, requestId, request.proxy, request.hosts);
    // SECURITY: the deadline is the front's: whatever the slot process does
    // (frozen, stopped, looping in native code), the caller is answered at it,
    // and the process, which may still hold the request's work, is killed and
    // replaced. Its own limits answer first when it works.
    const deadlineMs = jobDeadlineMs(config, request);
    let closeTimer: NodeJS.Timeout | undefined;
    const deadline = setTimeout(() => {
      const job = proc.jobs.get(id);
      if (job === undefined) return;
      if (!job.answered) {
        logger.warn(
          { pid: proc.child.pid, slot: slot.index, job: id, requestId, deadlineMs },
          'a request reached its deadline in its slot process; answering it and replacing the process',
        );
        this.#answer(job, deadlineError(deadlineMs));
        this.#kill(proc);
        return;
      }
      // Answered, still closing its context: a little longer, then it is taken for hung.
      closeTimer = setTimeout(() => {
        if (!proc.jobs.has(id)) return;
        logger.error(
          { pid: proc.child.pid, slot: slot.index, job: id, ms: JOB_CLOSE_GRACE_MS },
          'a slot process did not close its context after the deadline; replacing it',
        );
        this.#kill(proc);
      }, JOB_CLOSE_GRACE_MS);
      closeTimer.unref();
    }, deadlineMs);
    deadline.unref();
    let closed!: () => void;
    const closing = new Promise<void>(
      (resolve) =>
        (closed = () => {
          if (pid !== undefined) this.#share.jobEnded(slot.index, pid);
          clearTimeout(deadline);
          clearTimeout(closeTimer);
          this.#opts.egress.revoke(grant);
          resolve();
        }),
    );
    const result = new Promise<JobOutcome>((resolve, reject) => {
      proc.jobs.set(id, { resolve, reject, closed, answered: false });
    });
    const onAbort = (): void => {
      const reason: unknown = signal?.reason;
      proc.send({
        type: 'abort',
        id,
        ...(reason instanceof ApiError ? { error: { code: reason.code, message: reason.message } } : {}),
      });
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    // SECURITY: the request's CPU is what the kernel counted for its slot
    // process's tree (the slot and its Chromium) while it ran, never the slot's word.
    const pid = proc.child.pid;
    const cpuBefore = pid === undefined ? undefined : treeCpuMs(pid);
    const cpuMs = (): number | undefined => {
      const now = pid === undefined || cpuBefore === undefined ? undefined : treeCpuMs(pid);
      return now === undefined || cpuBefore === undefined ? undefined : Math.max(0, now - cpuBefore);
    };
    const withCpu = <U extends { readonly cpuMs?: number }>(
      usage: U | undefined,
    ): Omit<U, 'cpuMs'> & { cpuMs?: number } => {
      const { cpuMs: _claimed, ...rest } = usage ?? ({} as U);
      const measured = cpuMs();
      return measured === undefined ? rest : { ...rest, cpuMs: measured };
    };
    if (pid !== undefined && cpuBefore !== undefined) this.#share.jobStarted(slot.index, pid, cpuBefore);
    proc.send({ type: 'run', id, request: { ...request, requestId } });
    try {
      const outcome = await result;
      return { ...outcome, usage: withCpu(outcome.usage) };
    } catch (e) {
      if (e instanceof ApiError) e.usage = withCpu(e.usage);
      throw e;
    } finally {
      signal?.removeEventListener('abort', onAbort);
      if (deferClose) deferClose(closing);
      else await closing;
    }
  }

  /**
   * A free slot whose process is ready, the lowest first (a lone request takes
   * slot 0, whose process is never closed while idle); else a free slot without
   * a process gets one started, and the request waits for it (or for any slot
   * that frees first) within the request's time. A slot whose process is being
   * replaced is given nothing.
   */
  async #pick(signal?: AbortSignal, client?: string): Promise<Slot> {
    for (;;) {
      if (this.#closed) throw new ApiError('SERVICE_UNAVAILABLE', 'Service unavailable: shutting down');
      if (signal?.aborted)
        throw signal.reason instanceof ApiError
          ? signal.reason
          : new ApiError('SERVICE_UNAVAILABLE', 'The request was cancelled');
      const ready = choose(
        this.#slots.filter((s) => !s.busy && s.proc?.serving === true),
        client,
        Date.now(),
      );
      if (ready) {
        ready.busy = true;
        if (client !== undefined) ready.last = { client, at: Date.now() };
        clearTimeout(ready.idleTimer);
        ready.idleTimer = undefined;
        return ready;
      }
      const closed = this.#slots.find((s) => !s.busy && s.proc === undefined && s.restartTimer === undefined);
      if (closed) {
        this.#opts.logger.info({ slot: closed.index }, 'starting the process of a slot closed while idle');
        this.#spawn(closed, true).catch((err: unknown) => {
          // Stopped with the service before it was ready: nothing to say.
          if (!this.#closed) this.#opts.logger.error({ err, slot: closed.index }, 'a slot process did not start');
        });
      }
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

  /** Answers a job's caller (once): the slot process's answer, or the front's own. */
  #answer(job: Pending, outcome: JobOutcome | ApiError): void {
    if (job.answered) return;
    job.answered = true;
    if (outcome instanceof ApiError) job.reject(outcome);
    else job.resolve(outcome);
  }

  /** Ends a slot process now: it gets no new work, and its exit frees its slot for a replacement. */
  #kill(e: SlotProcess): void {
    e.retiring = true;
    e.child.kill('SIGKILL');
  }

  /**
   * SECURITY: each slot process's resident memory (anonymous + shared), read by
   * the front from /proc, against the plan's ceiling for a slot's host side.
   * Past it, its request is answered 400 MEMORY_LIMIT_EXCEEDED and the process
   * is killed and replaced; nothing it reports about itself is used.
   */
  #watchMemory(): void {
    const limit = this.#opts.config.memory.slotHostLimitMb * 2 ** 20;
    for (const e of this.#procs) {
      const pid = e.child.pid;
      if (e.gone || pid === undefined) continue;
      e.residentBytes = residentBytes(pid);
      if (e.residentBytes <= limit || e.retiring) continue;
      this.#opts.logger.warn(
        { pid, slot: e.slot.index, mb: Math.round(e.residentBytes / 2 ** 20), limitMb: limit / 2 ** 20 },
        'a slot process went over its memory ceiling; answering its request and replacing the process',
      );
      for (const job of e.jobs.values()) this.#answer(job, hostMemoryError(limit / 2 ** 20, 'resident'));
      this.#kill(e);
    }
  }

  /**
   * After IDLE_SLOT_CLOSE_MS with no job, the process of a slot past the first is
   * closed, its Chromium with it (~200 MB of PSS together, most of the service's
   * memory at rest); the next request that needs the slot waits for its start.
   */
  #closeWhenIdle(slot: Slot): void {
    const ms = this.#opts.config.idleSlotCloseMs;
    if (ms <= 0 || slot.index === 0 || slot.busy || this.#closed) return;
    clearTimeout(slot.idleTimer);
    slot.idleTimer = setTimeout(() => {
      slot.idleTimer = undefined;
      const e = slot.proc;
      if (slot.busy || e === undefined || !e.serving) return;
      this.#opts.logger.info({ slot: slot.index, pid: e.child.pid }, 'slot process closed while idle');
      this.#retire(e);
    }, ms);
    slot.idleTimer.unref();
  }

  /** Asks an idle slot process to close and exit; its exit leaves the slot without one (started on demand). */
  #retire(e: SlotProcess): void {
    e.retiring = true;
    e.closedOnPurpose = true;
    stopChild(e.child, () => e.send({ type: 'shutdown' }), EXECUTOR_CLOSE_TIMEOUT_MS).catch(() => undefined);
  }

  #spawn(slot: Slot, onDemand = false): Promise<void> {
    const { config, logger } = this.#opts;
    clearTimeout(slot.restartTimer);
    slot.restartTimer = undefined;
    // SECURITY: a home and temporary directory of the slot's own (Chromium's
    // profile goes there), which only its user may enter.
    const dir = childDir('pagescript-exec-', slot.runAs);
    const env = childEnv(dir);
    // Puppeteer makes a `debug` logger for every protocol message it sends or
    // receives, and each asks whether stderr is a terminal (a system call)
    // unless this says: ~2 ms of the process's CPU per request (profiled).
    env.DEBUG_COLORS = 'no';
    // SECURITY: the V8 heap of a slot's host side has a hard limit from the memory plan.
    const { file, execArgv } = childEntry('executor', this.#heapMb);
    const child = forkChild(file, execArgv, env, slot.runAs);
    // Placed before it is sent `init` (which launches its Chromium): its whole tree is born in the slot's group.
    if (child.pid !== undefined) this.#groups?.place(slot.index, child.pid);
    const proc = new SlotProcess(child, dir, this.#nextProc++, slot);
    proc.onDemand = onDemand;
    slot.proc = proc;
    this.#procs.add(proc);
    logChildOutput(child, logger, { executor: child.pid, slot: slot.index }, 'executor output', (line) => {
      if (HEAP_EXHAUSTED.test(line)) proc.heapExhausted = true;
    });
    return awaitReady(child, {
      logger,
      timeoutMs: EXECUTOR_START_TIMEOUT_MS,
      begin: () => {
        proc.send(executorInit(config, logger.level, this.#opts.egress.guardPort, this.#opts.seam));
        // Its channel to the egress process, right after init (or once that process is ready).
        this.#giveChannels();
      },
      check: checkFromExecutor,
      onMessage: (msg) => this.#onMessage(proc, msg),
      kill: () => this.#kill(proc),
      wasReady: () => proc.ready,
      onExit: (code, signal) => this.#onExit(proc, code, signal),
      words: {
        timeout: 'slot process did not start in time; killing it',
        badMessage: 'bad message from a slot process; killing it',
        error: 'slot process error',
        who: 'the slot process',
      },
    });
  }

  #onMessage(e: SlotProcess, msg: FromExecutor): void {
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
        logger.info(
          {
            pid: e.child.pid,
            slot: e.slot.index,
            user: e.slot.runAs?.user,
            restarts: this.#restarts,
            // What a request that met a slot closed while idle waited for (docs/configuration.md, IDLE_SLOT_CLOSE_MS).
            startMs: Math.round(performance.now() - e.startedAt),
            ...(e.onDemand ? { onDemand: true } : {}),
          },
          'slot process ready',
        );
        // A process no request takes (the one that asked for it took another slot) is closed in time too.
        this.#closeWhenIdle(e.slot);
        this.#wakeWaiting();
        return;
      }
      case 'observe':
        events?.observe?.(msg.metric, msg.seconds);
        return;
      case 'egress-refused':
        events?.egressRefused?.();
        return;
      case 'activity':
        // A claim, checked against the kernel's count before another slot yields to it (cpu-share.ts).
        if (e.slot.proc === e && e.jobs.size > 0) this.#share.said(e.slot.index, msg.activity);
        return;
      case 'done': {
        const job = e.jobs.get(msg.id);
        if (job) this.#answer(job, msg.outcome);
        return;
      }
      case 'failed': {
        const job = e.jobs.get(msg.id);
        if (job) this.#answer(job, fromWire(msg.error));
        return;
      }
      case 'closed': {
        const job = e.jobs.get(msg.id);
        if (!job) return;
        e.jobs.delete(msg.id);
        job.closed();
        this.#jobEnded(e);
        return;
      }
      case 'egress-drained':
        e.drainedSaid = true;
        this.#free(e);
        return;
    }
  }

  /** A job's context is closed: its slot serves the next, or its process is retired after SLOT_RECYCLE_REQUESTS. */
  #jobEnded(e: SlotProcess): void {
    const slot = e.slot;
    if (slot.proc !== e || e.jobs.size > 0) return;
    slot.busy = false;
    // Recent from when its job ended, not began: a long job's key is between two requests now.
    if (slot.last) slot.last = { client: slot.last.client, at: Date.now() };
    e.served++;
    const recycleAfter = this.#opts.config.slotRecycleRequests;
    if (recycleAfter > 0 && e.served >= recycleAfter && e.serving && !this.#closed) {
      this.#opts.logger.info(
        { pid: e.child.pid, slot: slot.index, served: e.served },
        'slot process retired after SLOT_RECYCLE_REQUESTS requests',
      );
      this.#recycles++;
      this.#retire(e);
      // Its replacement starts at once: a retired process is no failure.
      slot.proc = undefined;
      this.#spawn(slot).catch((err: unknown) => this.#opts.logger.error({ err }, 'slot process replacement failed'));
      return;
    }
    this.#closeWhenIdle(slot);
    this.#wakeWaiting();
  }

  /** A slot process's log line, written by the front's logger with the process's pid. */
  #log(e: SlotProcess, line: string): void {
    writeChildLine(this.#opts.logger, line, { executor: e.child.pid, slot: e.slot.index }, 'executor');
  }

  #onExit(e: SlotProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (e.gone) return;
    e.gone = true;
    const wasReady = e.ready;
    e.ready = false;
    this.#procs.delete(e);
    this.#pastBrowser.restarts += e.browser.restarts;
    this.#pastBrowser.recycles += e.browser.recycles;
    this.#pastBrowser.pageLimitKills += e.memory.pageLimitKills;
    rmSync(e.dir, { recursive: true, force: true, maxRetries: 3 });
    // What the process's CPU pause left stopped runs again, sees the closed pipe and exits.
    const continued = continueStopped(e.browser.pids, e.slot.runAs?.uid ?? process.getuid?.() ?? -1);
    if (continued > 0)
      this.#opts.logger.warn(
        { executor: e.child.pid, continued },
        'continued Chromium processes a dead slot process left stopped',
      );
    // Its last stderr lines (V8's heap exhausted) may arrive after its exit: they choose its job's answer.
    const stderr = e.child.stderr;
    if (e.jobs.size === 0 || e.heapExhausted || stderr === null || stderr.readableEnded) {
      this.#afterExit(e, wasReady, code, signal);
      return;
    }
    const timer = setTimeout(() => this.#afterExit(e, wasReady, code, signal), EXIT_OUTPUT_WAIT_MS);
    timer.unref();
    stderr.once('end', () => {
      clearTimeout(timer);
      this.#afterExit(e, wasReady, code, signal);
    });
  }

  /** A slot process is gone: its job fails (unless answered), and its slot gets another process or none. */
  #afterExit(e: SlotProcess, wasReady: boolean, code: number | null, signal: NodeJS.Signals | null): void {
    const slot = e.slot;
    if (slot.proc !== e && e.jobs.size === 0) return;
    const error = e.heapExhausted
      ? hostMemoryError(this.#heapMb, 'heap')
      : new ApiError('INTERNAL_SERVER_ERROR', RUNNER_STOPPED, {
          cause: `slot process ${e.child.pid} exited (${code ?? signal})`,
        });
    let failed = 0;
    for (const job of e.jobs.values()) {
      if (!job.answered) failed++;
      this.#answer(job, error);
      job.closed();
    }
    e.jobs.clear();
    // It may have been the last to hold a context of a stopped egress process.
    this.#giveChannels();
    if (slot.proc !== e) return;
    slot.proc = undefined;
    slot.busy = false;
    this.#wakeWaiting();
    // Closed while idle: the slot starts again on demand.
    if (this.#closed || e.closedOnPurpose) return;
    this.#restarts++;
    if (!wasReady) this.#failedStarts++;
    const backoff = restartBackoffMs(this.#failedStarts);
    this.#opts.logger.error(
      {
        pid: e.child.pid,
        slot: slot.index,
        code,
        signal,
        failedJobs: failed,
        restarts: this.#restarts,
        backoffMs: backoff,
      },
      'slot process stopped; starting another',
    );
    slot.restartTimer = setTimeout(() => {
      slot.restartTimer = undefined;
      if (this.#closed || slot.proc !== undefined) return;
      this.#spawn(slot).catch((err: unknown) => this.#opts.logger.error({ err }, 'slot process replacement failed'));
    }, backoff);
    slot.restartTimer.unref();
  }

  /** Asks every slot process to close Chromium and exit; kills those that do not in time. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#share.stop();
    clearInterval(this.#memoryTimer);
    for (const slot of this.#slots) {
      clearTimeout(slot.restartTimer);
      clearTimeout(slot.idleTimer);
    }
    this.#wakeWaiting();
    await Promise.all(
      [...this.#procs].map(async (e) => {
        if (e.gone) return;
        await stopChild(e.child, () => e.send({ type: 'shutdown' }), EXECUTOR_CLOSE_TIMEOUT_MS);
      }),
    );
    await this.#groups?.close();
  }

  /** Slot i's CPU cgroup directory, when slots have them (tests). */
  cpuGroupDir(index: number): string | undefined {
    return this.#groups?.dir(index);
  }
}

/**
 * Which free slot a job of `client` takes. Not one another key used within
 * ACTIVE_GRACE_MS while another is free: that key is between two requests, and
 * a slot whose Chromium is relaunched after a heavy request is then left to
 * the key whose request made it so. Among those, one whose Chromium has a
 * context ready (a relaunching one would make the request wait); else the lowest.
 */
export function choose<S extends Pick<Slot, 'last'> & { proc?: { browser: BrowserStatus } | undefined }>(
  free: readonly S[],
  client: string | undefined,
  now: number,
): S | undefined {
  const othersRecent = (s: S): boolean =>
    s.last !== undefined && s.last.client !== client && now - s.last.at < ACTIVE_GRACE_MS;
  const preferred = free.filter((s) => !othersRecent(s));
  const pool = preferred.length > 0 ? preferred : free;
  return pool.find((s) => s.proc?.browser.ready === true && s.proc.browser.contextsReady > 0) ?? pool[0];
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
