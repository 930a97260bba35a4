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
//
// This file ties the parts together: a slot process's life (started at start,
// on demand or as a replacement; ready; closed while idle or retired after
// SLOT_RECYCLE_REQUESTS; its exit and restart with backoff) and the service's
// view of the slots. Each part is a file of its own: slot-process.ts (a slot
// and its process), slot-start.ts, slot-table.ts and slot-choice.ts (which slot
// a job takes), slot-job.ts (one job over IPC) and job-deadline.ts,
// slot-messages.ts and wire-error.ts, slot-channels.ts (the egress channels),
// slot-memory.ts and slot-status.ts.
import type { Config } from '../../common/config.js';
import { ApiError } from '../../common/errors.js';
import type { Logger } from '../../common/log.js';
import { treeCpuMs } from '../../common/proc.js';
import {
  checkFromExecutor,
  executorConfig,
  maxSlotMessageBytes,
  type BrowserStatus,
  type ExecutorMemory,
  type ToExecutor,
} from '../../protocol/executor-messages.js';
import { RUNNER_STOPPED, type JobOutcome, type JobRequest } from '../../protocol/jobs.js';
import { type ExecutorTestSeam, type FaultKind } from '../../protocol/test-seams.js';
import {
  EXECUTOR_CLOSE_TIMEOUT_MS,
  EXECUTOR_START_TIMEOUT_MS,
  awaitReady,
  restartBackoffMs,
  stopChild,
} from './child-start.js';
import { CpuGroups } from './cpu-groups.js';
import { CpuShare } from './cpu-share.js';
import type { EgressSupervisor } from './egress-supervisor.js';
import { SlotChannels } from './slot-channels.js';
import { runInSlot, type SlotJobOptions } from './slot-job.js';
import { SLOT_MEMORY_POLL_MS, hostMemoryError, watchMemory } from './slot-memory.js';
import { onSlotMessage, type SlotEvents, type SlotMessageHooks } from './slot-messages.js';
import { answer, retireAfter, type Slot, type SlotProcess } from './slot-process.js';
import { cleanUpSlot, forkSlot } from './slot-start.js';
import { SlotStatus } from './slot-status.js';
import { SlotTable } from './slot-table.js';
import { slotUsers, type RunAs } from './users.js';

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

/** What the supervisor tells the service of its slots' work (metrics). */
export type SupervisorEvents = SlotEvents;

export interface SupervisorOptions {
  readonly config: Config;
  readonly logger: Logger;
  /** The egress process the slots' Chromium goes through; started before them. */
  readonly egress: EgressSupervisor;
  readonly events?: SupervisorEvents;
  /** Tests only: faults on request, a small heap (the guard's part of the seam is the egress process's). */
  readonly seam?: ExecutorTestSeam;
}

export class Supervisor {
  readonly #opts: SupervisorOptions;
  /** Tells each slot whether another slot's request runs that it yields to (the CPU pause between slots), and weighs their CPU cgroups. */
  readonly #share = new CpuShare({
    tell: (index, running) => this.#table.slots[index]?.proc?.send({ type: 'others', running }),
    cpuMs: treeCpuMs,
  });
  readonly #users: RunAs[] | undefined;
  readonly #table: SlotTable;
  readonly #procs = new Set<SlotProcess>();
  #nextId = 1;
  #nextProc = 1;
  #memoryTimer: NodeJS.Timeout | undefined;
  #restarts = 0;
  #recycles = 0;
  #failedStarts = 0;
  #closed = false;
  /** The slot processes' V8 heap limit: the plan's (a test may set a smaller one). */
  readonly #heapMb: number;
  /** A CPU cgroup per slot, when the front may make them (cpu-groups.ts). */
  #groups: CpuGroups | undefined;
  /** The slots' Chromium and memory as one, for /health and /metrics. */
  readonly #status = new SlotStatus(this.#procs);
  /** The slot processes' channels to the egress process. */
  readonly #channels: SlotChannels;
  /** What running a job in a slot process needs (slot-job.ts). */
  readonly #jobOptions: SlotJobOptions;
  /** What a slot process's messages change besides its own state (slot-messages.ts). */
  readonly #hooks: SlotMessageHooks;

  constructor(opts: SupervisorOptions) {
    this.#opts = opts;
    const { config, logger, egress } = opts;
    this.#heapMb = opts.seam?.heapMb ?? config.memory.slotHeapMb;
    this.#users = slotUsers(config);
    const closed = (): boolean => this.#closed;
    const kill = (e: SlotProcess): void => this.#kill(e);
    this.#table = new SlotTable({
      count: config.maxConcurrency,
      users: this.#users,
      logger,
      closed,
      start: (slot) => this.#spawn(slot, true),
    });
    this.#channels = new SlotChannels({ egress, logger, procs: this.#procs, kill, closed });
    this.#jobOptions = {
      config,
      logger,
      egress,
      share: this.#share,
      kill,
      groupCpuMs: (index) => this.#groups?.usageMs(index),
    };
    this.#hooks = {
      logger,
      events: opts.events,
      share: this.#share,
      channels: this.#channels,
      ready: (e) => this.#ready(e),
      jobEnded: (e) => this.#jobEnded(e),
    };
  }

  /** Starts a process for every slot and waits until each is ready (its Chromium launched). */
  async start(): Promise<void> {
    const { config, logger } = this.#opts;
    this.#memoryTimer = setInterval(
      () => watchMemory(this.#procs, config.memory.slotHostLimitMb, logger, (e) => this.#kill(e)),
      SLOT_MEMORY_POLL_MS,
    );
    this.#memoryTimer.unref();
    if (config.slotCpuGroups) this.#groups = CpuGroups.open(this.#table.slots.length, config.slotMaxTasks, logger);
    const groups = this.#groups;
    if (groups)
      this.#share.weighWith({
        weigh: (index, low) => groups.weigh(index, low),
        // The slot's live processes (a retired one may still be closing its Chromium) keep their trees.
        sweep: (index) => groups.sweep(index, this.#rootsOf(index)),
        usageMs: (index) => groups.usageMs(index),
      });
    await Promise.all(this.#table.slots.map((slot) => this.#spawn(slot)));
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
    return this.#table.slots.map((s) => (s.proc && !s.proc.gone ? s.proc.child.pid : undefined));
  }

  /** Which slots hold a job now, by slot, for tests. */
  get busySlots(): boolean[] {
    return this.#table.slots.map((s) => s.busy);
  }

  /** The users slot processes run as, slot i's at i (undefined: the front's own). */
  get users(): readonly RunAs[] | undefined {
    return this.#users;
  }

  /** Chromium runs in its own sandbox in every slot (undefined until one is ready). */
  get chromiumSandbox(): boolean | undefined {
    return this.#status.chromiumSandbox;
  }

  /** The slots' Chromium, as one: ready when one is; counts summed, those of replaced processes included. */
  get browser(): BrowserStatus {
    return this.#status.browser;
  }

  /** What the slots hold now, summed (slot-status.ts): their own memory as the front reads it from /proc. */
  get memory(): ExecutorMemory {
    return this.#status.memory;
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

  /** The egress process died: its requests fail now, and each slot process drains it (slot-channels.ts). */
  egressStopped(): void {
    this.#channels.egressStopped();
  }

  /** The egress process closed slot process `index`'s channel `channel` (slot-channels.ts). */
  egressChannelClosed(index: number, channel: number): void {
    this.#channels.egressChannelClosed(index, channel);
  }

  /** A (new) egress process is ready: slot processes without a channel get one, once none holds the old one's. */
  egressReady(): void {
    this.#channels.give();
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
    const slot = await this.#table.pick(signal, client);
    return runInSlot(this.#jobOptions, slot.proc as SlotProcess, this.#nextId++, request, signal, deferClose, client);
  }

  /** Ends a slot process now: it gets no new work, and its exit frees its slot for a replacement. */
  #kill(e: SlotProcess): void {
    e.retiring = true;
    e.child.kill('SIGKILL');
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

  /** Starts slot `slot`'s process; resolves once it is ready (rejects if it exits before). */
  #spawn(slot: Slot, onDemand = false): Promise<void> {
    const { config, logger } = this.#opts;
    clearTimeout(slot.restartTimer);
    slot.restartTimer = undefined;
    const proc = forkSlot(slot, this.#nextProc++, this.#heapMb, this.#groups, logger);
    const child = proc.child;
    proc.onDemand = onDemand;
    slot.proc = proc;
    this.#procs.add(proc);
    return awaitReady(child, {
      logger,
      timeoutMs: EXECUTOR_START_TIMEOUT_MS,
      maxMessageBytes: maxSlotMessageBytes(config.maxResultBytes, config.maxLogBytes),
      begin: () => {
        proc.send(executorInit(config, logger.level, this.#opts.egress.guardPort, this.#opts.seam));
        // Its channel to the egress process, right after init (or once that process is ready).
        this.#channels.give();
      },
      check: checkFromExecutor,
      onMessage: (msg) => onSlotMessage(proc, msg, this.#hooks),
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

  /** Slot process `e` is ready: the waiting jobs look again. */
  #ready(e: SlotProcess): void {
    this.#failedStarts = 0;
    this.#opts.logger.info(
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
    this.#table.wake();
  }

  /** A job's context is closed: its slot serves the next, or its process is retired after SLOT_RECYCLE_REQUESTS. */
  #jobEnded(e: SlotProcess): void {
    const slot = e.slot;
    if (slot.proc !== e || e.jobs.size > 0) return;
    slot.busy = false;
    // Recent from when its job ended, not began: a long job's key is between two requests now.
    if (slot.last) slot.last = { client: slot.last.client, at: Date.now() };
    e.served++;
    const recycleAfter = retireAfter(
      this.#opts.config.slotRecycleRequests,
      slot.index,
      this.#table.slots.length,
      slot.retiredOnce,
    );
    if (recycleAfter > 0 && e.served >= recycleAfter && e.serving && !this.#closed) {
      slot.retiredOnce = true;
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
    this.#table.wake();
  }

  #onExit(e: SlotProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (e.gone) return;
    e.gone = true;
    const wasReady = e.ready;
    e.ready = false;
    this.#procs.delete(e);
    this.#status.gone(e);
    // SECURITY: what it left running in its slot's group goes before its directory is removed (and before a
    // replacement of the same user starts): a process of its user could otherwise write on into it, or wait there.
    this.#groups?.sweep(e.slot.index, this.#rootsOf(e.slot.index));
    cleanUpSlot(e, this.#opts.logger);
    // Its last stderr lines (V8's heap exhausted) may arrive after its exit: they choose its job's answer.
    e.afterLastOutput(() => this.#afterExit(e, wasReady, code, signal));
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
      answer(job, error);
      job.closed();
    }
    e.jobs.clear();
    // It may have been the last to hold a context of a stopped egress process.
    this.#channels.give();
    if (slot.proc !== e) return;
    slot.proc = undefined;
    slot.busy = false;
    this.#table.wake();
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
    for (const slot of this.#table.slots) {
      clearTimeout(slot.restartTimer);
      clearTimeout(slot.idleTimer);
    }
    this.#table.wake();
    await Promise.all(
      [...this.#procs].map(async (e) => {
        if (e.gone) return;
        await stopChild(e.child, () => e.send({ type: 'shutdown' }), EXECUTOR_CLOSE_TIMEOUT_MS);
      }),
    );
    await this.#groups?.close();
  }

  /** The pids of slot `index`'s processes that have not exited. */
  #rootsOf(index: number): number[] {
    const roots: number[] = [];
    for (const e of this.#procs)
      if (e.slot.index === index && !e.gone && e.child.pid !== undefined) roots.push(e.child.pid);
    return roots;
  }

  /** Slot i's CPU cgroup directory, when slots have them (tests). */
  cpuGroupDir(index: number): string | undefined {
    return this.#groups?.dir(index);
  }

  /** Slot i's cgroup holding its CPU count, when slots have one (tests). */
  cpuAcctGroupDir(index: number): string | undefined {
    return this.#groups?.acctDir(index);
  }

  /** Slot i's cgroup that caps its tasks, when slots have one (tests). */
  tasksGroupDir(index: number): string | undefined {
    return this.#groups?.tasksDir(index);
  }
}
