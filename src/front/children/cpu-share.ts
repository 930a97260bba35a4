// The CPU pause between slots. A request past its CPU budget has its Chromium
// paused for most of each watchdog poll while another request runs
// (src/slot/browser/page-memory.ts PAGE_CPU_PAUSE_MS); each slot is a process
// of its own and sees only its own request, so the front tells each slot
// whether a request of another slot runs that it should yield to.
//
// SECURITY: a slot's claim that its request is worth yielding to is honoured
// only while the front runs a job in it, the kernel shows its tree using the
// CPU, and that job has used less than MAX_YIELDED_TO_CPU_MS: a slot process
// that lies can hold a heavy neighbour back for about a second of its own CPU
// per request, no more.
//
// The kernel's count weighs the slots' CPU cgroups too (cpu-groups.ts): a job
// whose slot group has used LOW_WEIGHT_AFTER_CPU_MS (cpu-accounting.ts: every
// process in it counted; its tree's count where the group's cannot be read)
// runs at a low weight until it ends, so under contention the cores go first to requests that have not yet
// had theirs, and the slot's host side (its isolate, its floods) yields as
// well as its Chromium. Alone, or beside other heavy jobs, it loses nothing:
// weights divide only what is contended. A key's next jobs within
// LOW_WEIGHT_CARRY_MS of such a job, and its jobs beside one, start at the low
// weight: back-to-back short floods are one flood.

/** What a slot said of its request (src/protocol/executor-messages.ts SlotActivity). */
export interface Activity {
  readonly worthy: boolean;
  readonly heavy: boolean;
}

/**
 * A request is yielded to only while its slot's tree has used less than this
 * (ms): the lane's own budget (PAGE_CPU_BUDGET_MS, 250 ms of its Chromium),
 * with room for the slot's host side.
 */
export const MAX_YIELDED_TO_CPU_MS = 1000;

/**
 * A job whose slot's group (or tree) has used this much CPU (ms) runs at the low weight
 * until it ends: two to three times what a request that loads a page and
 * answers a few calls uses (40–140 ms measured), a fraction of what a flood
 * or a loop uses within its first second.
 */
export const LOW_WEIGHT_AFTER_CPU_MS = 300;
/**
 * A key whose job used LOW_WEIGHT_AFTER_CPU_MS starts its jobs within this
 * long of that job's end at the low weight (as it does beside its own job at
 * the low weight): otherwise a flood of short heavy requests (a log flood,
 * slow selectors, sent back to back) had its first 300 ms of CPU at the full
 * weight, every time. Other keys keep their weight.
 */
export const LOW_WEIGHT_CARRY_MS = 2000;

/** How often the claims of worthy slots are checked against the kernel while a heavy request waits on them. */
export const SHARE_CHECK_MS = 200;
/**
 * The claims (activity messages) a slot's request may make in a second: a slot process reports a change,
 * polled every 100 ms, and its job's start and end.
 */
export const MAX_CLAIMS_PER_S = 40;

interface Job {
  readonly pid: number;
  readonly cpuAtStart: number;
  /** Its slot group's CPU (the kernel's count, every process in it) at its start, when read. */
  readonly groupAtStart: number | undefined;
  /** The last check: the tree's CPU then (ms). */
  last: { cpuMs: number } | undefined;
  /** At the last check: used the CPU since the one before, and under MAX_YIELDED_TO_CPU_MS. */
  honoured: boolean;
  /** Its slot's CPU cgroup has the low weight: it has used LOW_WEIGHT_AFTER_CPU_MS, or its key's last job had. */
  low: boolean;
  /** The key it runs for, when known. */
  readonly client: string | undefined;
  /** Its process's claims (said) in the second that began at `claimsSince` (now()). */
  claims: number;
  claimsSince: number;
}

interface SlotState {
  said: Activity;
  job: Job | undefined;
  /** What it was last told (undefined: nothing yet, since its job started). */
  told: boolean | undefined;
}

export interface CpuShareOptions {
  /** Tells a slot whether another slot's request runs that it yields to. */
  tell(slot: number, running: boolean): void;
  /** The kernel's count of a process tree's CPU time, ms (src/common/proc.ts treeCpuMs); undefined when gone. */
  cpuMs(pid: number): number | undefined;
  /** Gives slot `slot`'s CPU cgroup the low weight, or its own back (when slots have groups; or weighWith()). */
  weigh?(slot: number, low: boolean): void;
  /** Kills what is in slot `slot`'s CPU cgroup outside its process's tree; how many (CpuGroups.sweep; or weighWith()). */
  sweep?(slot: number): number;
  /** The kernel's count of slot `slot`'s group's CPU, ms (CpuGroups.usageMs; or weighWith()): weighs jobs instead of the tree's. */
  usageMs?(slot: number): number | undefined;
  /** 0: no timer (tests call check()). */
  checkEveryMs?: number;
  /** The clock (ms) LOW_WEIGHT_CARRY_MS is measured on; performance.now() unless a test gives its own. */
  now?: () => number;
}

export class CpuShare {
  readonly #slots = new Map<number, SlotState>();
  readonly #opts: CpuShareOptions;
  #weighSlot: ((slot: number, low: boolean) => void) | undefined;
  #sweepSlot: ((slot: number) => number) | undefined;
  #usageSlot: ((slot: number) => number | undefined) | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** When each key's last job that used LOW_WEIGHT_AFTER_CPU_MS ended (now()), within LOW_WEIGHT_CARRY_MS: one entry a key. */
  readonly #lowEnded = new Map<string, number>();

  constructor(opts: CpuShareOptions) {
    this.#opts = opts;
    this.#weighSlot = opts.weigh;
    this.#sweepSlot = opts.sweep;
    this.#usageSlot = opts.usageMs;
  }

  /** From now on, weighs the slots' CPU cgroups (made once the service starts) and keeps them to their trees. */
  weighWith(groups: {
    weigh(slot: number, low: boolean): void;
    sweep(slot: number): number;
    usageMs(slot: number): number | undefined;
  }): void {
    this.#weighSlot = (slot, low) => groups.weigh(slot, low);
    this.#sweepSlot = (slot) => groups.sweep(slot);
    this.#usageSlot = (slot) => groups.usageMs(slot);
  }

  #slot(index: number): SlotState {
    let s = this.#slots.get(index);
    if (!s) {
      s = { said: { worthy: false, heavy: false }, job: undefined, told: undefined };
      this.#slots.set(index, s);
    }
    return s;
  }

  /**
   * A job for key `client` was handed to the slot's process `pid`, whose tree
   * had used cpuAtStart ms. Returns its slot group's count (ms) once what an
   * earlier job left there was swept, where slots have groups: the job's CPU is counted from it.
   */
  jobStarted(index: number, pid: number, cpuAtStart: number, client?: string): number | undefined {
    const s = this.#slot(index);
    // SECURITY: what an earlier job or process left in the slot's group does not run beside this job, charged to it.
    this.#sweepSlot?.(index);
    // SECURITY: a key that just had the low weight keeps it: back-to-back heavy requests are one flood.
    const carried = client !== undefined && this.#carriesLow(client);
    // A job whose end was never reported (its process killed) leaves no low weight to the next.
    if (s.job?.low && !carried) this.#weighSlot?.(index, false);
    if (!s.job?.low && carried) this.#weighSlot?.(index, true);
    const groupAtStart = this.#usageSlot?.(index);
    // A new request is yielded to from the start, as the watchdog does for a new watch.
    s.job = {
      pid,
      cpuAtStart,
      groupAtStart,
      last: undefined,
      honoured: true,
      low: carried && this.#weighSlot !== undefined,
      client,
      claims: 0,
      claimsSince: this.#now(),
    };
    s.said = { worthy: true, heavy: false };
    s.told = undefined;
    // The others' weights now, not at the next check: a short request would be over by then.
    if (this.#weighSlot)
      for (const [i, o] of this.#slots) {
        if (i === index || !o.job) continue;
        this.#escaped(i, o.job);
        if (o.job.low) continue;
        const job = o.job;
        // The tree's count only where the group has none (a /proc walk per process).
        this.#weigh(i, job, () => this.#opts.cpuMs(job.pid));
      }
    this.#update();
    return groupAtStart;
  }

  /** The job of process `pid` in the slot is over (its context closed, or its process gone). */
  jobEnded(index: number, pid: number): void {
    const s = this.#slot(index);
    // A killed process's job may end after its slot's next process took a job.
    if (s.job?.pid !== pid) return;
    if (s.job.low) this.#weighSlot?.(index, false);
    // Carried on only by a job that used the CPU itself (not one that was merely carried, nor an honest light one).
    const job = s.job;
    const used =
      this.#weighSlot && job.client !== undefined ? this.#used(index, job, () => this.#opts.cpuMs(job.pid)) : 0;
    if (job.client !== undefined && (used ?? 0) >= LOW_WEIGHT_AFTER_CPU_MS) this.#lowEnded.set(job.client, this.#now());
    s.job = undefined;
    // SECURITY: nothing the job left in the slot's group runs on between jobs.
    this.#sweepSlot?.(index);
    s.said = { worthy: false, heavy: false };
    this.#update();
  }

  /** What the slot's process said of its request; ignored while the front runs no job there. */
  said(index: number, activity: Activity): void {
    const s = this.#slot(index);
    const job = s.job;
    if (!job) return;
    const now = this.#now();
    if (now - job.claimsSince >= 1000) {
      job.claimsSince = now;
      job.claims = 0;
    }
    // SECURITY: each change of another slot's worthiness is told to every slot that yields. A process that
    // toggled its claim as fast as it could had the front send ~400,000 messages to three slots in 4.5 s (its
    // RSS at 1.25 GB), pausing and resuming their Chromium. Past MAX_CLAIMS_PER_S, the rest of the second's
    // claims are ignored, and it is not yielded to.
    if (++job.claims > MAX_CLAIMS_PER_S) {
      if (!s.said.worthy) return;
      s.said = { worthy: false, heavy: s.said.heavy };
    } else s.said = { worthy: activity.worthy, heavy: activity.heavy };
    this.#update();
  }

  /**
   * Reads the kernel's count for every job: a worthy claim is honoured while
   * its tree uses the CPU and has used less than MAX_YIELDED_TO_CPU_MS; past
   * LOW_WEIGHT_AFTER_CPU_MS, a job's slot gets the low weight (the timer does this while two jobs
   * run, or a heavy request waits).
   */
  check(): void {
    for (const [i, s] of this.#slots) {
      const job = s.job;
      if (!job) continue;
      this.#escaped(i, job);
      const cpu = this.#opts.cpuMs(job.pid);
      const within = cpu !== undefined && this.#weigh(i, job, () => cpu);
      if (!s.said.worthy) continue;
      // Gone, past its CPU, or idle (not one clock tick since the last check, as the watchdog's IDLE_POLLS): nobody yields to it.
      job.honoured = within && (job.last === undefined || cpu > job.last.cpuMs);
      job.last = cpu === undefined ? undefined : { cpuMs: cpu };
    }
    this.#update();
  }

  /**
   * Whether `job` is still under MAX_YIELDED_TO_CPU_MS; past LOW_WEIGHT_AFTER_CPU_MS, its slot gets the low
   * weight. `treeCpu`: its tree's count now, read only where its slot's group has no count.
   */
  #weigh(index: number, job: Job, treeCpu: () => number | undefined): boolean {
    const used = this.#used(index, job, treeCpu);
    if (used === undefined) return false;
    if (used >= LOW_WEIGHT_AFTER_CPU_MS && !job.low && this.#weighSlot) {
      job.low = true;
      this.#weighSlot(index, true);
    }
    return used < MAX_YIELDED_TO_CPU_MS;
  }

  /** The CPU `job` has used so far (ms); undefined when neither count can be read. */
  #used(index: number, job: Job, treeCpu: () => number | undefined): number | undefined {
    // SECURITY: the group's count where there is one: the tree's misses children no process in it reaped.
    const group = job.groupAtStart === undefined ? undefined : this.#usageSlot?.(index);
    if (group !== undefined && job.groupAtStart !== undefined) return group - job.groupAtStart;
    const cpu = treeCpu();
    return cpu === undefined ? undefined : cpu - job.cpuAtStart;
  }

  /**
   * Kills what left the tree of `job`'s process in its slot's group; a job
   * that had any runs at the low weight until it ends. SECURITY: such a
   * process's CPU is not in the tree's count (a double fork's orphan), so
   * the count cannot be what lowers its job; only a hostile slot makes one.
   */
  #escaped(index: number, job: Job): void {
    if ((this.#sweepSlot?.(index) ?? 0) === 0 || job.low || !this.#weighSlot) return;
    job.low = true;
    this.#weighSlot(index, true);
  }

  #now(): number {
    return this.#opts.now?.() ?? performance.now();
  }

  /**
   * Whether key `client` has a job running at the low weight, or its last heavy job ended
   * within LOW_WEIGHT_CARRY_MS (forgets older ones): a key's concurrent requests are one flood too.
   */
  #carriesLow(client: string): boolean {
    const now = this.#now();
    for (const [k, at] of this.#lowEnded) if (now - at > LOW_WEIGHT_CARRY_MS) this.#lowEnded.delete(k);
    if (this.#lowEnded.has(client)) return true;
    for (const s of this.#slots.values()) if (s.job?.client === client && s.job.low) return true;
    return false;
  }

  /** Whether slot `index` yields now: a request of another slot is worthy, and the front believes it. */
  othersRunning(index: number): boolean {
    for (const [i, s] of this.#slots) if (i !== index && s.job && s.said.worthy && s.job.honoured) return true;
    return false;
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #update(): void {
    for (const [i, s] of this.#slots) {
      if (!s.job) continue;
      const running = this.othersRunning(i);
      if (running === s.told) continue;
      s.told = running;
      this.#opts.tell(i, running);
    }
    // Checked only while it matters: a heavy request beside a worthy one, or two jobs whose weights may differ.
    const jobs = [...this.#slots.values()].filter((s) => s.job);
    const matters = jobs.some((s) => s.said.heavy) || (this.#weighSlot !== undefined && jobs.length > 1);
    const every = this.#opts.checkEveryMs ?? SHARE_CHECK_MS;
    if (matters && every > 0) {
      this.#timer ??= setInterval(() => this.check(), every);
      this.#timer.unref();
    } else this.stop();
  }
}
