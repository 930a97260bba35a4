// The front's side of the process boundary: each request slot (MAX_CONCURRENCY
// of them) runs its host-side work in a slot process of its own (src/slot/main.ts,
// built to dist/slot.js) with one Chromium, and is given at most one job at
// a time. The front holds each job's deadline and each slot process's memory
// ceiling, whatever the process says or does: past either it answers the caller
// itself, kills that process (SIGKILL) and starts another; the other slots go on
// serving. A slot process gets an environment from an allow-list (no key, key
// file, Redis URL or metrics token), no file descriptor of the front but its
// stdio and its wire, and, when the front runs as root, a user of its own
// slot's (users.ts slotUsers), so that slots cannot reach each other.
//
// This file ties the parts together: a slot process's life (started at start,
// on demand or as a replacement; ready; closed while idle or retired after
// SLOT_RECYCLE_REQUESTS; its exit and restart with backoff) and the service's
// view of the slots. Each part is a file of its own: slot-process.ts (a slot
// and its process), slot-start.ts, slot-table.ts and slot-choice.ts (which slot
// a job takes), slot-job.ts (one job over the wire) and job-deadline.ts,
// slot-messages.ts and wire-error.ts, slot-channels.ts (the egress channels),
// slot-groups.ts (the kernel's budgets), slot-memory.ts and slot-status.ts.
import type { Socket } from 'node:net';
import { join } from 'node:path';
import type { Config } from '../../common/config.js';
import { ApiError, internalFailure, notPrepared, type JobPhase } from '../../common/errors.js';
import { retryAfter } from '../tenancy/rate-limit.js';
import type { Logger } from '../../common/log.js';
import { dying } from '../../common/proc.js';
import {
  checkFromSlot,
  slotConfig,
  MAX_SLOT_MESSAGE_TOKENS,
  maxSlotMessageBytes,
  maxToSlotBytes,
  type BrowserStatus,
  type SlotMemory,
  type ToSlot,
} from '../../protocol/slot-wire.js';
import {
  RUNNER_STOPPED,
  failedJob,
  withTelemetry,
  type FailedJob,
  type JobOutcome,
  type JobRequest,
} from '../../protocol/jobs.js';
import { type SlotTestSeam, type FaultKind } from '../../protocol/test-seams.js';
import {
  SLOT_CLOSE_TIMEOUT_MS,
  SLOT_START_TIMEOUT_MS,
  awaitReady,
  onWireClosed,
  restartBackoffMs,
  stopChild,
} from '../child-guard/child-start.js';
import type { SecurityRecord } from '../../protocol/security.js';
import type { EgressSupervisor } from '../egress-process/egress-supervisor.js';
import { killOrphansOf, killStrays } from '../jobs/escape-signs.js';
import type { KernelLock } from '../host/kernel-lock.js';
import { SlotChannels } from '../egress-process/slot-channels.js';
import type { RestLimits } from '../cgroups/memory-limits.js';
import { SlotGroups } from '../cgroups/slot-groups.js';
import { prepareSlotPrivacy, type ExecOnly, type SlotPrivacy } from '../host/slot-privacy.js';
import { runInSlot, type SlotJobOptions } from '../jobs/slot-job.js';
import { SLOT_MEMORY_POLL_MS, hostMemoryError, overRest, watchMemory } from './slot-memory.js';
import { onSlotMessage, type SlotEvents, type SlotMessageHooks } from './slot-messages.js';
import { answer, retireAfter, type Slot, type SlotProcess } from './slot-process.js';
import { cleanUpSlot, spawnSlot } from './slot-start.js';
import { SlotStatus } from './slot-status.js';
import { SlotTable } from './slot-table.js';
import { slotUsers, type RunAs } from '../host/users.js';

/**
 * The first message a slot process gets. SECURITY: its configuration has every
 * secret taken out (slotConfig), the upstream proxies included: their
 * credentials go to the egress process alone (egressInitMessage), and the
 * slot names a request's proxy to it by name.
 */
/**
 * The Retry-After of a 503 for a request no slot could prepare for in its queue
 * time: about what a slot takes to replace its Chromium and prepare again.
 */
const NOT_PREPARED_RETRY_MS = 2_000;

/**
 * How long a slot process asked to close (retired, or idle) has to exit before it is killed. An honest one
 * closes its Chromium well within it; its replacement starts at once, and takes jobs once it has exited.
 */
export const SLOT_RETIRE_GRACE_MS = 3_000;

export function slotInit(
  config: Config,
  logLevel: string,
  guardPort: number,
  seam: SlotTestSeam | undefined,
  chromiumCgroup?: string,
  execOnly?: ExecOnly,
): Extract<ToSlot, { type: 'init' }> {
  return {
    type: 'init',
    config: slotConfig(config),
    logLevel,
    guardPort,
    ...(chromiumCgroup === undefined ? {} : { chromiumCgroup }),
    ...(execOnly === undefined ? {} : { execOnly }),
    ...(seam
      ? {
          seam: {
            loopbackOnly: seam.loopbackOnly,
            reportDials: seam.reportDials,
            faults: seam.faults,
            ...(seam.trustedSpki ? { trustedSpki: seam.trustedSpki } : {}),
            ...(seam.clipboardFailures ? { clipboardFailures: seam.clipboardFailures } : {}),
            ...(seam.clipboardHangs ? { clipboardHangs: seam.clipboardHangs } : {}),
          },
        }
      : {}),
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
  readonly seam?: SlotTestSeam;
  /** The kernel lock, read once per job for signs of an escape (escape-signs.ts). */
  readonly kernelLock?: Pick<KernelLock, 'drops'>;
}

export class Supervisor {
  readonly #opts: SupervisorOptions;
  readonly #users: RunAs[] | undefined;
  readonly #table: SlotTable;
  readonly #procs = new Set<SlotProcess>();
  /** Slots whose process the front retired or replaced on purpose, until the replacement is ready or fails. */
  readonly #renewing = new Set<Slot>();
  #nextId = 1;
  #nextProc = 1;
  #memoryTimer: NodeJS.Timeout | undefined;
  #restarts = 0;
  #recycles = 0;
  #failedStarts = 0;
  #closed = false;
  #stopping = false;
  /** The slot processes' V8 heap limit: the plan's (a test may set a smaller one). */
  readonly #heapMb: number;
  /** The cgroups of each slot, when the front may make them (slot-groups.ts). */
  #groups: SlotGroups | undefined;
  /** Why slots have no cgroups (/health's slotCgroups), undefined while they do or before start. */
  #groupsOff: string | undefined;
  /** What keeps a slot's processes and files from its user's other processes (slot-privacy.ts), once started. */
  #privacy: SlotPrivacy | undefined;
  /** Each slot's memory limits at rest: its share of the memory plan, and its Chromium's part of it. */
  readonly #rest: RestLimits;
  /** The slots' Chromium and memory as one, for /health and /metrics. */
  readonly #status = new SlotStatus(this.#procs, () => this.#groups);
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
    const plan = config.memory;
    this.#rest = {
      slotBytes: (plan.slotBaseMb + plan.chromiumBaseMb + plan.perRequestMb) * 2 ** 20,
      chromiumBytes: (plan.chromiumBaseMb + config.pageMemoryMb) * 2 ** 20,
    };
    this.#users = slotUsers(config);
    // Once the service stops and its egress process is gone (a whole group's SIGTERM), no slot can serve
    // again: a waiting job is answered 503 at once.
    const cannotServe = (): boolean => this.#closed || (this.#stopping && !egress.ready);
    const kill = (e: SlotProcess): void => this.#kill(e);
    const replace = (e: SlotProcess, again: boolean): void => {
      e.replaceAtExit = again;
      this.#kill(e);
    };
    this.#table = new SlotTable({
      count: config.maxConcurrency,
      users: this.#users,
      logger,
      closed: cannotServe,
      start: (slot) => this.#spawn(slot, true),
      mayStart: () => !this.#stopping,
      usable: (slot) => slot.proc !== undefined && this.#channels.current(slot.proc) && this.#aloneIn(slot),
    });
    this.#channels = new SlotChannels({ egress, logger, procs: this.#procs, kill: replace });
    this.#jobOptions = {
      config,
      logger,
      egress,
      kill,
      groups: () => this.#groups,
      rootsOf: (index) => this.#rootsOf(index),
      preparationCpu: (seconds) => opts.events?.preparationCpu?.(seconds),
      ...(opts.kernelLock ? { kernelLock: opts.kernelLock } : {}),
    };
    this.#hooks = {
      logger,
      events: opts.events,
      ready: (e) => this.#ready(e),
      jobEnded: (e) => this.#jobEnded(e),
      stopping: () => this.#stopping,
    };
  }

  /** Starts a process for every slot and waits until each is ready (its Chromium launched). */
  async start(): Promise<void> {
    const { config, logger } = this.#opts;
    const opened = config.slotCgroups
      ? SlotGroups.open(this.#table.slots.length, config.slotMaxTasks, this.#rest, this.#users, logger)
      : { off: 'SLOT_CGROUPS=off' };
    if ('groups' in opened) this.#groups = opened.groups;
    else this.#groupsOff = opened.off;
    this.#privacy = prepareSlotPrivacy(
      {
        executablePath: config.executablePath,
        pageMemoryMb: config.pageMemoryMb,
        asRoot: this.#users !== undefined,
        nonDumpable: config.slotNonDumpable,
      },
      logger,
    );
    await Promise.all(this.#table.slots.map((slot) => this.#spawn(slot)));
  }

  /** Whether each slot's budgets are the kernel's (/health): `on`, or `off: <why>`. */
  get slotCgroups(): string {
    return this.#groups ? 'on' : `off: ${this.#groupsOff ?? 'not started'}`;
  }

  /** Whether no process of a slot's user can read its processes (/health): `on`, or `off: <why>`. */
  get slotNonDumpable(): string {
    return this.#privacy?.nonDumpable ?? 'off: not started';
  }

  /** Whether each slot has its own bounded /tmp, /var/tmp and /dev/shm (/health): `on`, or `off: <why>`. */
  get slotPrivateTmp(): string {
    return this.#privacy?.privateTmp ?? 'off: not started';
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

  /** What each slot's unanswered job is doing, as its process last said (tests: `script` once its script runs). */
  get jobPhases(): (JobPhase | undefined)[] {
    return this.#table.slots.map((s) => [...(s.proc?.jobs.values() ?? [])].find((j) => !j.answered)?.phase);
  }

  /** The id of each slot's unanswered job, by slot (tests: a forged message names it). */
  get jobIds(): (number | undefined)[] {
    return this.#table.slots.map((s) => [...(s.proc?.jobs.entries() ?? [])].find(([, j]) => !j.answered)?.[0]);
  }

  /** The users slot processes run as, slot i's at i (undefined: the front's own). */
  get users(): readonly RunAs[] | undefined {
    return this.#users;
  }

  /** Chromium runs in its own sandbox in every slot (undefined until one is ready). */
  get chromiumSandbox(): boolean | undefined {
    return this.#status.chromiumSandbox;
  }

  /**
   * Whether the service serves (/ready, /health), in the front's own view: a slot process serves (SlotProcess
   * serving), or a slot's process is being renewed on purpose (a recycle: its replacement starting). SECURITY:
   * never a slot's word of its Chromium (`browser`), which one slot could use to take the instance out of its
   * balancer for every tenant.
   */
  get serving(): boolean {
    if (this.#renewing.size > 0) return true;
    for (const e of this.#procs) if (e.serving) return true;
    return false;
  }

  /**
   * The slots' Chromium, as one, as their processes say (display, and tests' sign of a relaunch): ready when
   * one is; counts summed, those of replaced processes included.
   */
  get browser(): BrowserStatus {
    return this.#status.browser;
  }

  /** What the slots hold now, summed (slot-status.ts): their own memory as the front reads it from /proc. */
  get memory(): SlotMemory {
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

  /** The egress process died: its requests fail now, and each slot process is replaced (slot-channels.ts). */
  egressStopped(): void {
    this.#channels.egressStopped(this.#stopping);
    // Shutting down, it is not replaced: the jobs waiting for a slot are answered now.
    if (this.#stopping) this.#table.wake();
  }

  /**
   * The service began to shut down (the front got SIGTERM, maybe with every
   * process of its group): a slot process's exit from now on is not replaced or
   * logged as an error, and the jobs it ends are answered 503 shutting down.
   */
  stopping(): void {
    this.#stopping = true;
    this.#table.wake();
  }

  /** The egress process closed slot process `index`'s channel `channel` (slot-channels.ts). */
  egressChannelClosed(index: number, channel: number): void {
    this.#channels.egressChannelClosed(index, channel);
  }

  /** A (new) egress process is ready: the slot processes waiting for it start, and the waiting jobs look again. */
  egressReady(): void {
    this.#table.wake();
  }

  /** The egress process says slot process `index` sent it what it cannot read: it is killed, as for a bad message. */
  slotMisbehaved(index: number): void {
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
   * process is gone). Signs of an escape into the slot go in `record`, the
   * request's security record (escape-signs.ts).
   */
  async run(
    request: JobRequest,
    signal?: AbortSignal,
    deferClose?: (closing: Promise<void>) => void,
    client?: string,
    record?: SecurityRecord,
  ): Promise<JobOutcome> {
    // The service's own work before the request (its context, clipboard, egress port, Chromium, isolate) may
    // fail in one slot: nothing of the request ran, so it waits for another prepared slot within its queue
    // time (the same one, once it prepared again, may be the next), else it is answered 503 with Retry-After.
    const until = performance.now() + this.#opts.config.queueTimeoutMs;
    let last: FailedJob | undefined;
    for (let tries = 1; ; tries++) {
      const slot = await this.#pickBy(until, last !== undefined, signal, client);
      if (slot === undefined) return unprepared(last);
      const proc = slot.proc as SlotProcess;
      // SECURITY: a process of the slot outside its tree that appeared since its last job ended (forked later by
      // something left in its Chromium) is no key's: killed, and the slot replaced before this request meets
      // it; the request waits for another slot, as for a failed preparation.
      const strays = killStrays({ groups: this.#groups, rootsOf: (i) => this.#rootsOf(i) }, proc);
      if (strays > 0) {
        this.#opts.logger.warn(
          { requestId: request.requestId, slot: slot.index, pid: proc.child.pid, strays },
          'signs of an escape into a slot between its jobs; its process and Chromium are replaced before the next',
        );
        proc.escaped = true;
        this.#jobEnded(proc);
        last = failedJob(
          notPrepared('escape-signs', new Error(`${strays} process(es) of the slot outside its tree, killed`)),
        );
        continue;
      }
      this.#watchHostMemory();
      let closing: Promise<void> = Promise.resolve();
      const hold = (p: Promise<void>): void => {
        closing = p;
      };
      let out: JobOutcome;
      try {
        const id = this.#nextId++;
        out = await runInSlot(this.#jobOptions, slot.proc as SlotProcess, id, request, signal, hold, client, record);
      } catch (e) {
        await this.#handOver(closing, deferClose);
        throw e;
      }
      out = withTelemetry(out, { slot: slot.index });
      if (out.ok || out.error.housekeeping === undefined || signal?.aborted) {
        await this.#handOver(closing, deferClose);
        return out;
      }
      last = out;
      this.#opts.logger.warn(
        {
          requestId: request.requestId,
          slot: slot.index,
          cause: out.error.housekeeping,
          detail: String(out.error.cause),
          tries,
        },
        'a slot could not prepare for the request; it waits for another',
      );
      // The slot is free again once its context is closed and its next one prepared.
      await closing;
    }
  }

  /**
   * A slot by `until` (performance.now()) once a slot `failed` to prepare; undefined when none came in
   * time. Before any failure, the scheduler's queue time holds (it answers first in practice).
   */
  async #pickBy(
    until: number,
    failed: boolean,
    signal: AbortSignal | undefined,
    client: string | undefined,
  ): Promise<Slot | undefined> {
    if (!failed) return await this.#table.pick(signal, client);
    const left = until - performance.now();
    if (left <= 0) return undefined;
    const timeout = AbortSignal.timeout(Math.ceil(left));
    try {
      return await this.#table.pick(signal ? AbortSignal.any([signal, timeout]) : timeout, client);
    } catch (e) {
      if (!timeout.aborted || signal?.aborted) throw e;
      return undefined;
    }
  }

  /** Gives the job's context closing to the caller's deferClose, or waits for it when there is none. */
  async #handOver(closing: Promise<void>, deferClose?: (closing: Promise<void>) => void): Promise<void> {
    if (deferClose) deferClose(closing);
    else await closing;
  }

  /** Ends a slot process now: it gets no new work, and its exit frees its slot for a replacement. */
  #kill(e: SlotProcess): void {
    e.retiring = true;
    e.child.kill('SIGKILL');
  }

  /**
   * After IDLE_SLOT_CLOSE_MS with no job, the process of a slot past the first is
   * closed, its Chromium with it (together most of the service's memory at rest,
   * docs/performance.md); the next request that needs the slot waits for its start.
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

  /**
   * Asks a slot process to close and exit (idle, or retired); one still there after SLOT_RETIRE_GRACE_MS is
   * killed. Its exit leaves the slot without one (started on demand), or frees its replacement for jobs.
   */
  #retire(e: SlotProcess): void {
    e.retiring = true;
    e.closedOnPurpose = true;
    const timer = setTimeout(() => {
      if (e.gone) return;
      this.#opts.logger.warn(
        { pid: e.child.pid, slot: e.slot.index },
        'a slot process asked to close did not exit in time; killing it',
      );
      e.child.kill('SIGKILL');
    }, SLOT_RETIRE_GRACE_MS);
    e.child.once('exit', () => clearTimeout(timer));
    e.send({ type: 'shutdown' });
  }

  /**
   * SECURITY: whether slot `slot`'s process is the only one of the slot that lives. A job is billed its slot
   * groups' CPU count, and a predecessor still in them (a retiree that ignores `shutdown`, a killed one not
   * yet reaped) would be billed to the job's key: its replacement may start, but takes no job until then.
   */
  #aloneIn(slot: Slot): boolean {
    for (const e of this.#procs) if (e.slot === slot && e !== slot.proc && !e.gone) return false;
    return true;
  }

  /**
   * Starts slot `slot`'s process, once the egress process is ready and its channel to it is made (given at
   * its spawn); resolves once it is ready (rejects if it exits before).
   */
  async #spawn(slot: Slot, onDemand = false): Promise<void> {
    const { config, logger, egress } = this.#opts;
    clearTimeout(slot.restartTimer);
    slot.restartTimer = undefined;
    const index = this.#nextProc++;
    slot.starting = true;
    let made: Awaited<ReturnType<EgressSupervisor['channel']>>;
    try {
      made = await this.#channelFor(index, slot);
    } finally {
      slot.starting = false;
    }
    let proc: SlotProcess;
    try {
      proc = spawnSlot(
        slot,
        index,
        this.#heapMb,
        this.#groups,
        logger,
        config.cpuProfileDir,
        this.#privacy,
        made.socket,
      );
    } finally {
      // The slot process holds its own copy now: the front's is closed.
      made.socket.destroy();
    }
    const child = proc.child;
    proc.onDemand = onDemand;
    proc.channelOf = made.generation;
    proc.channelId = made.channel;
    slot.proc = proc;
    this.#procs.add(proc);
    const ready = awaitReady(child, {
      logger,
      timeoutMs: SLOT_START_TIMEOUT_MS,
      maxMessageBytes: maxSlotMessageBytes(config.maxResultBytes, config.maxLogBytes),
      maxMessageTokens: MAX_SLOT_MESSAGE_TOKENS,
      maxUnsentBytes: maxToSlotBytes(config.maxBodyBytes),
      begin: () => {
        proc.send(
          slotInit(
            config,
            logger.level,
            egress.guardPort,
            this.#opts.seam,
            this.#chromiumGroup(slot),
            slot.runAs ? this.#privacy?.execOnly : undefined,
          ),
        );
        // The egress process died while it was spawned: its channel is gone; it is replaced at once.
        if (!this.#channels.current(proc) && !this.#stopping) {
          proc.channelClosed = true;
          proc.replaceAtExit = true;
          this.#kill(proc);
        }
      },
      check: checkFromSlot,
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
    // SECURITY: a process that closed its wire and lives on could take the next job and never answer it
    // (its caller waiting its whole deadline): it is replaced now, its own job alone failing.
    onWireClosed(child, () => {
      if (proc.gone || proc.closedOnPurpose || this.#stopping || this.#closed) return;
      if (child.pid !== undefined && dying(child.pid)) return;
      logger.warn({ pid: child.pid, slot: slot.index }, "a slot process's wire closed while it runs; killing it");
      this.#kill(proc);
    });
    return ready;
  }

  /**
   * A channel to the egress process for slot process `index` of `slot`, once that process is ready; tried
   * again (after a backoff) while it cannot be made, until the supervisor closes.
   */
  async #channelFor(index: number, slot: Slot): Promise<{ socket: Socket; channel: number; generation: number }> {
    for (let failed = 0; ; failed++) {
      if (this.#closed || this.#stopping) throw new Error('the slots are closed');
      try {
        return await this.#opts.egress.channel(index, slot.runAs?.uid);
      } catch (err) {
        if (this.#closed || this.#stopping) throw err;
        this.#opts.logger.warn({ err, slot: slot.index }, 'no channel to the egress process for a slot process yet');
        await new Promise((resolve) => setTimeout(resolve, restartBackoffMs(failed)).unref());
      }
    }
  }

  /**
   * Starts another process for `slot`, unless the service is closing or shutting down: then the slot is left
   * empty (its waiting jobs are answered as the shutdown answers them), and nothing is logged as a failure.
   */
  #replace(slot: Slot): void {
    if (this.#closed || this.#stopping) return;
    this.#spawn(slot).catch((err: unknown) => {
      this.#renewing.delete(slot);
      if (this.#closed || this.#stopping)
        this.#opts.logger.info({ slot: slot.index }, 'slot left empty: shutting down');
      else this.#opts.logger.error({ err }, 'slot process replacement failed');
    });
  }

  /** Starts another process for `slot`, whose process the front ended on purpose (the slot still serves). */
  #renew(slot: Slot): void {
    this.#renewing.add(slot);
    this.#replace(slot);
  }

  /** Slot process `e` is ready: the waiting jobs look again. */
  #ready(e: SlotProcess): void {
    this.#renewing.delete(e.slot);
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

  /**
   * Without slot cgroups, the front reads each slot process's resident memory
   * while jobs run (slot-memory.ts); at rest a slot's host side is bounded by
   * its V8 heap and does nothing, and nothing is read.
   */
  #watchHostMemory(): void {
    if (this.#groups || this.#memoryTimer) return;
    const { config, logger } = this.#opts;
    this.#memoryTimer = setInterval(() => {
      if (!this.#table.slots.some((s) => s.busy)) {
        clearInterval(this.#memoryTimer);
        this.#memoryTimer = undefined;
        return;
      }
      watchMemory(this.#procs, config.memory.slotHostLimitMb, logger, (e) => this.#kill(e));
    }, SLOT_MEMORY_POLL_MS);
    this.#memoryTimer.unref();
  }

  /** A job's context is closed: its slot serves the next, or its process is retired after SLOT_RECYCLE_REQUESTS. */
  #jobEnded(e: SlotProcess): void {
    const slot = e.slot;
    if (slot.proc !== e || e.jobs.size > 0) return;
    // Whether it serves again waits for its job's look for signs of an escape (escape-signs.ts).
    const look = e.escapeLook;
    if (look) {
      e.escapeLook = undefined;
      look.then(
        () => this.#jobEnded(e),
        () => this.#jobEnded(e),
      );
      return;
    }
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
    // SECURITY: back to the slot's limit at rest; a slot that holds more than that now (what its last job left in
    // shared memory, a process that would not give memory back) is replaced before another key's job meets it.
    // Without groups the front reads the slot process's own resident memory against its share at rest.
    const over = this.#groups
      ? this.#groups.memory.setRest(slot.index, this.#rest)
        ? undefined
        : (this.#groups.memory.usageBytes(slot.index) ?? 0)
      : overRest(e, this.#opts.config.memory.slotBaseMb);
    if (over !== undefined && e.serving && !this.#closed) {
      this.#opts.logger.info(
        { pid: e.child.pid, slot: slot.index, bytes: over },
        'a slot holds more than its memory limit at rest after its job; replacing its process',
      );
      e.closedOnPurpose = true;
      this.#kill(e);
      slot.proc = undefined;
      this.#renew(slot);
      return;
    }
    // SECURITY: a slot whose job showed signs of an escape (escape-signs.ts) gets a new process and Chromium first.
    if (e.escaped && e.serving && !this.#closed) {
      e.closedOnPurpose = true;
      this.#kill(e);
      slot.proc = undefined;
      this.#renew(slot);
      return;
    }
    if (recycleAfter > 0 && e.served >= recycleAfter && e.serving && !this.#closed) {
      slot.retiredOnce = true;
      this.#opts.logger.info(
        { pid: e.child.pid, slot: slot.index, served: e.served },
        'slot process retired after SLOT_RECYCLE_REQUESTS requests',
      );
      this.#recycles++;
      this.#retire(e);
      // Its replacement starts at once (a retired process is no failure), and takes jobs once it has exited.
      slot.proc = undefined;
      this.#renew(slot);
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
    // A renewal that exited before it was ready renews nothing.
    if (!wasReady) this.#renewing.delete(e.slot);
    this.#procs.delete(e);
    this.#status.gone(e);
    // SECURITY: what it left running in its slot's group goes before its directory is removed (and before a
    // replacement of the same user starts): a process of its user could otherwise write on into it, or wait there.
    if (this.#groups) this.#groups.sweep(e.slot.index, this.#rootsOf(e.slot.index));
    // Without groups, what it left of its user's that is no one's child now (its Chromium, orphaned by a kill).
    else if (e.slot.runAs) killOrphansOf(e.slot.runAs.uid, this.#rootsOf(e.slot.index));
    cleanUpSlot(e, this.#opts.logger);
    // Its slot's replacement, if it has one, may take jobs now (#aloneIn).
    this.#table.wake();
    // Its last stderr lines (V8's heap exhausted) may arrive after its exit: they choose its job's answer.
    e.afterLastOutput(() => this.#afterExit(e, wasReady, code, signal));
  }

  /** A slot process is gone: its job fails (unless answered), and its slot gets another process or none. */
  #afterExit(e: SlotProcess, wasReady: boolean, code: number | null, signal: NodeJS.Signals | null): void {
    const slot = e.slot;
    if (slot.proc !== e && e.jobs.size === 0) return;
    // Exited with the rest of the service's group as it shuts down: its job ends as the shutdown ends it.
    const exited = `slot process ${e.child.pid} exited (${code ?? signal})`;
    const error = this.#stopping
      ? new ApiError('SERVICE_UNAVAILABLE', 'Service unavailable: shutting down')
      : e.heapExhausted
        ? hostMemoryError(this.#heapMb, 'heap')
        : internalFailure('runner-stopped', RUNNER_STOPPED, exited);
    let failed = 0;
    for (const job of e.jobs.values()) {
      if (!job.answered) failed++;
      // Nothing of the request ran before its page (whatever ended the process, it was not this request's
      // doing): it waits for another slot, and is no sign against its key.
      const lease = !this.#stopping && job.phase === 'lease';
      answer(job, lease ? notPrepared('slot-stopped', new Error(exited)) : error);
      job.closed();
    }
    e.jobs.clear();
    if (slot.proc !== e) return;
    slot.proc = undefined;
    slot.busy = false;
    this.#table.wake();
    // Its egress process died or closed its channel: its replacement starts at once (it waits for the egress process).
    if (e.replaceAtExit && !this.#closed && !this.#stopping) {
      this.#replace(slot);
      return;
    }
    // Closed while idle: the slot starts again on demand.
    if (this.#closed || e.closedOnPurpose) return;
    if (this.#stopping) {
      this.#opts.logger.info(
        { pid: e.child.pid, slot: slot.index, code, signal },
        'slot process exited while the service shuts down',
      );
      return;
    }
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
      if (this.#closed || slot.proc !== undefined || slot.starting) return;
      this.#replace(slot);
    }, backoff);
    slot.restartTimer.unref();
  }

  /** Asks every slot process to close Chromium and exit; kills those that do not in time. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#memoryTimer);
    for (const slot of this.#table.slots) {
      clearTimeout(slot.restartTimer);
      clearTimeout(slot.idleTimer);
    }
    this.#table.wake();
    await Promise.all(
      [...this.#procs].map(async (e) => {
        if (e.gone) return;
        await stopChild(e.child, () => e.send({ type: 'shutdown' }), SLOT_CLOSE_TIMEOUT_MS);
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

  /** Where slot `slot`'s process puts its Chromium: its Chromium memory group's cgroup.procs (v1 slot cgroups). */
  #chromiumGroup(slot: Slot): string | undefined {
    const memory = this.#groups?.memory;
    return memory?.chromiumGroups ? join(memory.dir(slot.index, 'chromium'), 'cgroup.procs') : undefined;
  }

  /** Slot i's memory cgroup directory, when slots have them (tests). */
  memoryGroupDir(index: number): string | undefined {
    return this.#groups?.memory.dir(index);
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

/**
 * 503 with Retry-After: no slot could prepare for the request in its queue time. It carries the last
 * slot's housekeeping cause and what that attempt measured.
 */
function unprepared(last: FailedJob | undefined): JobOutcome {
  const error = notPrepared(last?.error.housekeeping ?? 'lease', last?.error.cause, {
    'Retry-After': retryAfter(NOT_PREPARED_RETRY_MS),
  });
  const t = last?.telemetry;
  return failedJob(error, {
    phase: 'lease',
    ...(t === undefined ? {} : { slot: t.slot, timings: t.timings, usage: t.usage, egress: t.egress }),
  });
}
