// A request slot and its process as the front sees them: the slot (its number,
// its user, whether a job holds it, its timers) and the slot process it has
// (whether it serves, the jobs it runs, what it last reported, its channel to
// the egress process). The supervisor (supervisor.ts) makes and owns both; the
// other files of the slot supervision read and change them.
import type { ChildProcess } from 'node:child_process';
import { ApiError, type JobPhase } from '../../common/errors.js';
import type { BrowserStatus, SlotMemoryReport, ToSlot } from '../../protocol/slot-wire.js';
import { failedJob, withTelemetry, type JobOutcome } from '../../protocol/jobs.js';
import { onWireClosed, sendToChild, wireOpen } from '../child-guard/child-start.js';
import type { JobMemory } from '../jobs/job-memory.js';
import type { RunAs } from '../host/users.js';

/** How long an exiting slot process's last stderr lines are waited for before its job's failure is chosen. */
const EXIT_OUTPUT_WAIT_MS = 1_000;

/** A job in a slot process, as the front holds it until its context is closed. */
export interface Pending {
  /** Gives the caller the job's outcome, a success or a failure. */
  readonly resolve: (o: JobOutcome) => void;
  /** The job's context is closed (or its slot process is gone). */
  readonly closed: () => void;
  /** The caller has its answer (from the slot process, or the front's own). */
  answered: boolean;
  /** The slot process sent its answer (`done` or `failed`): the one it may send, and what must come before `closed`. */
  reported: boolean;
  /** The front's deadline for the job (ms): no phase of it lasts longer. */
  readonly deadlineMs: number;
  /** The phases whose duration the slot process has given the service's histograms (once each). */
  readonly observed: Set<'navigation' | 'script'>;
  /** What the job was doing, as its slot process last said: the phase of a 500 the front answers itself. */
  phase?: JobPhase;
}

/** A request slot: its number, its user, and its process while it has one. */
export interface Slot {
  readonly index: number;
  readonly runAs: RunAs | undefined;
  /** Its process (starting or ready); undefined while it has none (closed while idle, or between two). */
  proc: SlotProcess | undefined;
  /** A job holds it, from the moment it is picked until its context is closed. */
  busy: boolean;
  /** Its replacement is due (after a backoff). */
  restartTimer: NodeJS.Timeout | undefined;
  /** Its next process waits for its channel to the egress process (it is spawned with it). */
  starting: boolean;
  /** Closes its process once it has been idle for IDLE_SLOT_CLOSE_MS. */
  idleTimer: NodeJS.Timeout | undefined;
  /** The key of the last job it ran, and when that job was picked or, once it ended, ended (Date.now()). */
  last?: { readonly client: string; readonly at: number };
  /** One of its processes has been retired after SLOT_RECYCLE_REQUESTS (retireAfter). */
  retiredOnce: boolean;
}

/**
 * How many requests a process of slot `index` (of `slots`) serves before it is
 * retired, for SLOT_RECYCLE_REQUESTS = `every` (0: never). Until its slot has had
 * one retired, slot i's retires early, by i/slots of `every`: the slots start
 * together and serve at like rates, so without this every slot's replacement
 * would fall at once, the whole tree's memory would drop together and every slot
 * would be starting at the same moment. After that the slots stay that far apart.
 */
export function retireAfter(every: number, index: number, slots: number, retiredOnce: boolean): number {
  if (every <= 0) return 0;
  if (retiredOnce) return every;
  return Math.max(1, every - Math.floor((every * index) / slots));
}

/** One slot process. */
export class SlotProcess {
  readonly child: ChildProcess;
  /** Its home and temporary directory, where it has one outside its mount namespace. */
  readonly dir: string | undefined;
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
  /** Its last job showed signs of an escape into its slot (escape-signs.ts): it is replaced before the next. */
  escaped = false;
  /** Settles when its running job's look for those signs is done: the slot serves again only after. */
  escapeLook: Promise<void> | undefined;
  /** Requests it has served (SLOT_RECYCLE_REQUESTS). */
  served = 0;
  /** When it was spawned (performance.now()), and whether a request asked for it (its slot had none). */
  readonly startedAt = performance.now();
  onDemand = false;
  /** Its resident memory as the front last read it from /proc. */
  residentBytes = 0;
  /** Its last job's memory group at the job's start, where slots have cgroups. */
  jobMemory: JobMemory | undefined;
  /** Its jobs answered 400 MEMORY_LIMIT_EXCEEDED for a kernel OOM kill in its group. */
  memoryKills = 0;
  /** The egress process whose channel it was given at its spawn (its generation). */
  channelOf = 0;
  /** The front's number for that channel. */
  channelId = 0;
  /** Its channel is closed on the egress side: its egress process said so, or died. */
  channelClosed = false;
  /** Its slot gets a new process at its exit (its egress process died or closed its channel). */
  replaceAtExit = false;
  chromiumSandbox: boolean | undefined;
  browser: BrowserStatus = { ready: false, pid: undefined, pids: [], restarts: 0, recycles: 0, contextsReady: 0 };
  memory: SlotMemoryReport = { pageBytes: 0, pageLimitKills: 0 };
  /** Its name at the egress process (a process's channel is its own; never reused). */
  readonly index: number;

  constructor(child: ChildProcess, dir: string | undefined, index: number, slot: Slot) {
    this.child = child;
    this.dir = dir;
    this.index = index;
    this.slot = slot;
  }

  /** Ready and given work: never once the wire its work would go over is closed. */
  get serving(): boolean {
    return this.ready && !this.gone && !this.retiring && wireOpen(this.child);
  }

  send(msg: ToSlot): void {
    // A message to a process that is going away is lost; its exit fails its job.
    sendToChild(this.child, msg);
  }

  /**
   * Once it has exited: calls `then` (once) when its last words are read, or
   * after EXIT_OUTPUT_WAIT_MS; at once when it has no job. Both choose its
   * job's answer: its stderr (V8's heap exhausted may arrive after its exit),
   * and its wire. SECURITY: the wire's last messages say how far its job got
   * (a job still in `lease` is given to another slot and charged to no key):
   * read before the answer, a process cannot die ahead of its own phase.
   */
  afterLastOutput(then: () => void): void {
    if (this.jobs.size === 0 || this.heapExhausted) {
      then();
      return;
    }
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      then();
    };
    const timer = setTimeout(finish, EXIT_OUTPUT_WAIT_MS);
    timer.unref();
    let waiting = 0;
    const ended = (): void => {
      if (--waiting === 0) finish();
    };
    const stderr = this.child.stderr;
    if (stderr !== null && !stderr.readableEnded) {
      waiting++;
      stderr.once('end', ended);
    }
    if (wireOpen(this.child)) {
      waiting++;
      onWireClosed(this.child, ended);
    }
    if (waiting === 0) finish();
  }
}

/**
 * Answers a job's caller (once): the slot process's outcome, or the front's own error. A failure the slot
 * did not place is placed in the job's phase as the slot last said it.
 */
export function answer(job: Pending, outcome: JobOutcome | ApiError): void {
  if (job.answered) return;
  job.answered = true;
  const o = outcome instanceof ApiError ? failedJob(outcome) : outcome;
  job.resolve(o.ok || o.telemetry.phase !== undefined ? o : withTelemetry(o, { phase: job.phase }));
}
