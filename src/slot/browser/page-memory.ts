// The memory one request's Chromium uses, read from /proc, and the watchdog
// that ends the request when it goes over PAGE_MEMORY_MB.
//
// Why /proc and not something else (measured, see docs/budgets.md): DevTools
// targets carry no process id, and SystemInfo.getProcessInfo lists renderers
// with no hint of their context, so a renderer cannot be tied to a request
// inside one shared Chromium. Each request therefore runs in a lane
// (src/slot/browser/lanes.ts) whose Chromium serves one request at a time: every
// process under that lane's browser process is that request's or the lane's
// own. A V8 flag bounds only the JavaScript heap (canvases, typed arrays,
// images and Wasm memory are outside it), and with --renderer-cmd-prefix the
// browser launches renderers itself, outside the zygote in which Chromium's
// Linux sandbox is set up (observed: their parent becomes the browser); a
// cgroup per lane would need a delegated hierarchy (see docs/budgets.md) and is not
// required. This watchdog needs only what the executor's user always has over
// its own Chromium: reading /proc/<pid>/{stat,status,cmdline,task/*/children}
// (mode 0444; measured readable for the sandboxed renderers too, which sit in
// PID namespaces of their own under the zygote and are not dumpable, with both
// the headless shell and the full browser) and kill().
import { readdirSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parseStat, readOr } from '../../common/proc.js';

/** One process of a Chromium tree, with the memory it holds of its own. */
export interface ProcessMemory {
  readonly pid: number;
  /** Chromium's --type= (renderer, gpu-process, utility, zygote), or "browser" for the root. */
  readonly type: string;
  /** Anonymous and shared-memory resident pages (RssAnon + RssShmem), in bytes. */
  readonly bytes: number;
  /**
   * When it started (clock ticks since boot, /proc/<pid>/stat field 22): with
   * the pid, who it is. A pid the kernel gives again is another process.
   */
  readonly start: number;
  /**
   * 0 for the root (the browser), 1 for what the browser launched itself (the
   * zygotes, network and storage processes), 2 and more for what a zygote forked
   * (renderers, the GPU process, sandboxed utilities). A process can rewrite its
   * command line (and so its --type=), never its place in the tree.
   */
  readonly depth: number;
  /** CPU time it has used, user and system, in ms (/proc/<pid>/stat fields 14 and 15). */
  readonly cpuMs: number;
}

/** Where the watchdog reads processes and how it ends them; injected so tests can substitute it. */
export interface ProcessSource {
  /** The root and all its descendants that still exist. */
  tree(rootPid: number): ProcessMemory[];
  kill(pid: number): void;
  /** Every thread of the process to the lowest CPU priority (nice BACKGROUND_NICE). */
  deprioritize(pid: number): void;
  /** Stops (SIGSTOP) or continues (SIGCONT) the process; one that is gone is ignored. */
  pause(pid: number, paused: boolean): void;
}

/**
 * The nice value of a request's renderer that has used more than
 * PAGE_CPU_BUDGET_MS: the lowest. It still gets every cycle nobody else wants;
 * beside other requests it gets a small share (CFS weight 15 against 1024). A
 * process can raise its own nice value, never lower it again without
 * CAP_SYS_NICE, which is why only the request's own renderers are moved (they
 * end with the request), never the browser, GPU or network processes the
 * lane's next request uses.
 */
export const BACKGROUND_NICE = 19;

/**
 * SECURITY: CPU one request may use before it yields to others, in ms, summed
 * over its lane's processes since the lease (renderers, frames, workers, the
 * GPU and network processes, the browser). A page that loads and answers a few
 * calls uses tens of ms; a busy loop, a memory bomb or a heavy page passes this
 * within a fraction of a second. Then the request's own processes run at nice
 * BACKGROUND_NICE and, while another request runs, the whole lane is paused
 * PAGE_CPU_PAUSE_MS of every poll, so that on a machine of two cores it no
 * longer doubles every other tenant's latency (npm run bench -- --neighbour).
 */
export const PAGE_CPU_BUDGET_MS = 250;

/**
 * SECURITY: of every PAGE_MEMORY_POLL_MS, how long the lane of a request past
 * PAGE_CPU_BUDGET_MS (every process of it: the lane serves that request alone)
 * is stopped (SIGSTOP, then SIGCONT) while another request runs in the executor: stopped as soon as the other request starts, then let
 * run for the rest of each poll (30 ms), and continued as soon as it ends; all
 * of the time is theirs when they are alone. A nice value alone does not do it
 * here: on two cores a busy renderer at nice 19 slowed another request as much
 * as at nice 0 (measured: docs/budgets.md "CPU between requests"), and what a flooding
 * renderer makes its browser process and the executor do is not lowered by its
 * own nice value. Whatever ends the watch (the request, the memory kill)
 * continues them first; the front continues the stopped processes of an
 * executor that was killed (src/front/children/stopped-chromium.ts).
 */
export const PAGE_CPU_PAUSE_MS = 70;

/**
 * Polls without any CPU used by a lane after which its request counts as idle
 * (a script that sleeps, a page that waits on the network): nobody is paused
 * for it. One: a request is yielded to only while it uses at least a clock tick
 * (10 ms) of CPU per poll (100 ms), a tenth of a core, so a cheap neighbour
 * holds a heavy request back for at most its own budget's worth (2.5 s), and a
 * neighbour that keeps its lane busier passes its own budget and is no longer
 * yielded to.
 */
export const IDLE_POLLS = 1;

/** Clock ticks per second of /proc/<pid>/stat's CPU times (USER_HZ: 100 on every Linux ABI Node runs on). */
const TICKS_PER_S = 100;

/** Children of every thread of pid: Chromium launches processes from more than one thread. */
function childrenOf(pid: number): number[] {
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  const out: number[] = [];
  for (const tid of tasks) {
    const text = readOr(`/proc/${pid}/task/${tid}/children`);
    if (text) for (const c of text.split(' ')) if (c.trim() !== '') out.push(Number(c));
  }
  return out;
}

function kbField(status: string, name: string): number {
  const m = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status);
  return m ? Number(m[1]) : 0;
}

/**
 * The real /proc. A process's type is read from its command line when it is
 * first seen, and kept by its identity (pid and start time: a pid the kernel
 * gives again is another process, read again). SECURITY: keeping it also means
 * a process that rewrites its command line later does not change what it was.
 */
export function procfsSource(): ProcessSource {
  const types = new Map<string, string>();
  return {
    tree(rootPid) {
      const out: ProcessMemory[] = [];
      const seen = new Set<number>();
      const todo: [number, number][] = [[rootPid, 0]];
      while (todo.length > 0 && seen.size < MAX_TREE) {
        const [pid, depth] = todo.pop() as [number, number];
        if (seen.has(pid)) continue;
        seen.add(pid);
        const stat = readOr(`/proc/${pid}/stat`);
        if (stat === undefined) continue;
        const { startTicks: start, cpuTicks } = parseStat(stat);
        const cpuMs = (cpuTicks * 1000) / TICKS_PER_S;
        const status = readOr(`/proc/${pid}/status`);
        if (status === undefined) continue;
        const id = `${pid}:${start}`;
        let type = types.get(id);
        if (type === undefined) {
          // Chromium rewrites its children's command lines: arguments are separated by spaces there.
          const cmd = readOr(`/proc/${pid}/cmdline`) ?? '';
          type = pid === rootPid ? 'browser' : (/[\0 ]--type=([\w-]+)/.exec(cmd)?.[1] ?? 'other');
          // Bounded: processes that are gone stay until there are MAX_TREE, then all are read again.
          if (types.size >= MAX_TREE) types.clear();
          types.set(id, type);
        }
        out.push({
          pid,
          type,
          start,
          depth,
          cpuMs,
          bytes: (kbField(status, 'RssAnon') + kbField(status, 'RssShmem')) * 1024,
        });
        for (const child of childrenOf(pid)) todo.push([child, depth + 1]);
      }
      return out;
    },
    kill(pid) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    },
    pause(pid, paused) {
      try {
        process.kill(pid, paused ? 'SIGSTOP' : 'SIGCONT');
      } catch {
        // already gone
      }
    },
    deprioritize(pid) {
      // Linux keeps a nice value per thread: each one is moved (threads started later inherit it).
      let tasks: string[];
      try {
        tasks = readdirSync(`/proc/${pid}/task`);
      } catch {
        return; // gone
      }
      for (const tid of tasks) {
        try {
          setPriority(Number(tid), BACKGROUND_NICE);
        } catch {
          // the thread ended
        }
      }
    },
  };
}

/** A Chromium has a few dozen processes; this bounds a walk of a tree gone wrong. */
const MAX_TREE = 2_000;

/** How often a watched lane's memory is read. A read of one lane costs ~1 ms of CPU (measured). */
export const PAGE_MEMORY_POLL_MS = 100;

export interface PageMemoryUse {
  /**
   * What the lane's processes grew by since the watch began (a process that
   * started since counts whole), in bytes: the request's pages, frames, popups
   * and workers, and what the browser side keeps for its context.
   */
  readonly bytes: number;
  /** Renderers of the lane now. */
  readonly renderers: number;
}

export interface Watch {
  /** The last reading. */
  readonly use: PageMemoryUse;
  /** The most the request's processes held at any reading (PageMemoryUse.bytes), in bytes. */
  readonly peakBytes: number;
  /** Reads the lane once more for the peak alone (no kill, no pause); returns the peak. */
  readPeak(): number;
  /** Set once the limit was passed; the renderers were killed then. */
  readonly exceeded: PageMemoryUse | undefined;
  /**
   * No more readings and no more kills; safe to call more than once. endOwn:
   * the request's own processes (chosen as for the memory kill) are killed
   * first, once.
   */
  stop(endOwn?: boolean): void;
  /**
   * Another request started or ended beside this one: a request past its CPU
   * budget is read now and paused or continued (the others wait for their next poll).
   */
  recheck(): void;
  /** The request is past its CPU budget (summed over its lane; at the last reading): it yields, it is not yielded to. */
  readonly overBudget: boolean;
  /** The lane used CPU within the last IDLE_POLLS polls, or the watch is that new: others yield to it. */
  readonly active: boolean;
}

export interface PageMemoryWatchdogOptions {
  readonly limitBytes: number;
  /** CPU per renderer of a request before it is moved to the background tier; PAGE_CPU_BUDGET_MS by default. */
  readonly cpuBudgetMs?: number;
  readonly source?: ProcessSource;
  readonly pollMs?: number;
  /** Of each poll, how long a request's processes past their CPU budget are stopped while others run. */
  readonly pauseMs?: number;
}

const identity = (p: ProcessMemory): string => `${p.pid}:${p.start}`;

/**
 * Measures a lane's Chromium for one request. Every process of the lane counts
 * by how much it grew since the watch began, and one that started since counts
 * whole: renderers (pages, frames of other sites, popups, dedicated and shared
 * workers) and the browser, GPU, network and storage processes, which is where
 * an incognito context keeps IndexedDB, Cache Storage and blobs. What the lane
 * held before the request (its browser, the blank page the request was given,
 * a page of the service's own) is not the request's. Over the limit, the
 * lane's renderers are killed at once (the memory goes back to the system)
 * and onExceeded is called.
 */
export class PageMemoryWatchdog {
  readonly limitBytes: number;
  readonly #cpuBudgetMs: number;
  readonly #source: ProcessSource;
  readonly #pollMs: number;
  readonly #pauseMs: number;

  constructor(opts: PageMemoryWatchdogOptions) {
    this.limitBytes = opts.limitBytes;
    this.#cpuBudgetMs = opts.cpuBudgetMs ?? PAGE_CPU_BUDGET_MS;
    this.#source = opts.source ?? procfsSource();
    this.#pollMs = opts.pollMs ?? PAGE_MEMORY_POLL_MS;
    this.#pauseMs = opts.pauseMs ?? PAGE_CPU_PAUSE_MS;
  }

  /** Every process of a Chromium now, read once. */
  measure(rootPid: number): ProcessMemory[] {
    return this.#source.tree(rootPid);
  }

  /** All of a Chromium's memory now (anonymous and shared), in bytes. */
  totalBytes(rootPid: number): number {
    return this.measure(rootPid).reduce((n, p) => n + p.bytes, 0);
  }

  /**
   * Watches the lane of rootPid for one request. contended says whether another
   * request runs beside it now: only then are its over-budget processes paused.
   * onPause is told when they are stopped (true) and continued (false), each
   * time, so that what else the lane costs can wait with them (its DevTools
   * messages: lanes.ts). limitBytes is this request's limit (its key's, when
   * lower than PAGE_MEMORY_MB).
   */
  watch(
    rootPid: number,
    onExceeded: (use: PageMemoryUse) => void,
    contended: () => boolean = () => false,
    onPause: (paused: boolean) => void = () => undefined,
    limitBytes: number = this.limitBytes,
  ): Watch {
    // Read before anything of the request's runs in the lane: the types here are Chromium's own.
    const baseline = new Map<string, { bytes: number; type: string; cpuMs: number }>();
    const first = this.measure(rootPid);
    for (const p of first) baseline.set(identity(p), { bytes: p.bytes, type: p.type, cpuMs: p.cpuMs });
    /** The request's own processes moved to nice 19 once it passed its CPU budget. */
    const lowered = new Set<string>();
    // SECURITY: which processes to end is chosen by what they were before the
    // request (a renderer then: the blank page it was given) or by where they
    // started since (what a zygote forked: its renderers and workers), never by
    // what a process says of itself now: a compromised renderer can rewrite its
    // command line, not its history or its place in the tree. The browser, the
    // zygotes, the GPU process and what the browser launched are not ended:
    // they serve the lane's next request.
    const toEnd = (p: ProcessMemory): boolean => {
      if (p.depth === 0) return false;
      const before = baseline.get(identity(p));
      return before === undefined ? p.depth >= 2 : before.type === 'renderer';
    };
    let use: PageMemoryUse = { bytes: 0, renderers: 0 };
    let peakBytes = 0;
    let exceeded: PageMemoryUse | undefined;
    let stopped = false;
    /** The request's over-budget processes stopped now. */
    const paused: number[] = [];
    /** Set during a run window: when it ends, the processes are stopped again if others still run. */
    let windowTimer: NodeJS.Timeout | undefined;
    const resume = (): void => {
      clearTimeout(windowTimer);
      windowTimer = undefined;
      if (paused.length === 0) return;
      for (const pid of paused.splice(0)) this.#source.pause(pid, false);
      onPause(false);
    };
    const pause = (pids: readonly number[]): void => {
      if (pids.length === 0) return;
      for (const pid of pids) {
        paused.push(pid);
        this.#source.pause(pid, true);
      }
      onPause(true);
    };
    /**
     * While another request runs, the over-budget processes are stopped, but
     * for a run window of (poll - pause) ms at each poll; at once when the
     * other request starts (tick false: a lease, not the timer), not a poll later.
     */
    const share = (tree: readonly ProcessMemory[], tick: boolean): void => {
      // SECURITY: the pids come from the walk just made (or, for the end of a run
      // window, one made that window earlier), never from an older one: a pid that
      // ended since could be another's now. A stopped process cannot end on its
      // own, so the stopped pids are still its own when continued.
      // The whole lane: one request at a time uses it, so all of its CPU is this
      // request's (its GPU process compositing an animation, renderers of frames).
      const over = overBudget ? tree.map((p) => p.pid) : [];
      if (stopped || exceeded !== undefined || over.length === 0 || this.#pauseMs <= 0 || !contended()) {
        resume();
        return;
      }
      if (windowTimer !== undefined) return;
      if (paused.length === 0) {
        pause(over);
        return;
      }
      if (!tick) return;
      resume();
      windowTimer = setTimeout(
        () => {
          windowTimer = undefined;
          if (!stopped && exceeded === undefined && contended()) pause(over);
        },
        Math.max(0, this.#pollMs - this.#pauseMs),
      );
    };
    /**
     * The CPU time last read of each process of the lane during the request, by
     * identity; one that is gone keeps its entry. SECURITY: a process that exits
     * takes its CPU time out of /proc, not out of the request's: a page that works
     * in popups it closes, or in pages it navigates away from, is held to one
     * budget, and a renderer exiting does not make a working lane look idle.
     * Bounded: past MAX_TREE entries those of processes gone are dropped (their
     * CPU is already counted; one read again later would count twice, never less).
     */
    const lastCpu = new Map<string, number>();
    /** CPU the lane's processes used since the lease (processes started since, whole); it only grows. */
    let requestCpuMs = 0;
    /** CPU the lane's processes used since the last timed poll. */
    let sinceTickMs = 0;
    /** A timed poll was read: the first one is the watch's start, active whatever it read. */
    let ticked = false;
    let idlePolls = 0;
    let overBudget = false;
    /** What the lane's processes grew by since the lease (a process started since, whole). */
    const grown = (p: ProcessMemory): number => Math.max(0, p.bytes - (baseline.get(identity(p))?.bytes ?? 0));
    const check = (tick = true, read?: readonly ProcessMemory[]): void => {
      if (stopped) return;
      const tree = read ?? this.measure(rootPid);
      // One pass over the readings: memory grown since the lease, CPU used since the last reading.
      let bytes = 0;
      for (const p of tree) {
        const id = identity(p);
        const before = baseline.get(id);
        bytes += grown(p);
        const last = lastCpu.get(id) ?? before?.cpuMs ?? 0;
        const used = Math.max(0, p.cpuMs - last);
        requestCpuMs += used;
        sinceTickMs += used;
        lastCpu.set(id, Math.max(last, p.cpuMs));
      }
      if (lastCpu.size > MAX_TREE) {
        const now = new Set(tree.map(identity));
        for (const id of lastCpu.keys()) if (!now.has(id)) lastCpu.delete(id);
      }
      if (tick) {
        idlePolls = ticked && sinceTickMs <= 0 ? idlePolls + 1 : 0;
        sinceTickMs = 0;
        ticked = true;
      }
      use = { bytes, renderers: tree.filter((p) => p.type === 'renderer').length };
      peakBytes = Math.max(peakBytes, bytes);
      // SECURITY: the budget is the request's, summed over every process of its
      // lane since the lease (processes started since count whole, processes
      // gone since keep what they had used): work spread
      // over fresh renderers (each cross-site navigation, frame or popup starts at
      // 0 ms) or pushed onto the GPU process counts as well. Past it the request
      // yields: its own processes (chosen as the kill is: by history and place)
      // go to nice 19, and the whole lane is paused while others run.
      overBudget ||= requestCpuMs > this.#cpuBudgetMs;
      if (overBudget)
        for (const p of tree) {
          const id = identity(p);
          if (lowered.has(id) || !toEnd(p)) continue;
          lowered.add(id);
          this.#source.deprioritize(p.pid);
        }
      if (exceeded === undefined && bytes <= limitBytes) {
        share(tree, tick);
        return;
      }
      resume();
      // SECURITY: the memory goes back now, whatever the job is busy with; a
      // renderer started after that (a reload) is ended too, until the job stops the watch.
      for (const p of tree) if (toEnd(p)) this.#source.kill(p.pid);
      if (exceeded === undefined) {
        exceeded = use;
        onExceeded(use);
      }
    };
    // The first poll is the baseline's own reading (one walk of the lane at the lease, not two).
    check(true, first);
    const timer = setInterval(check, this.#pollMs);
    timer.unref();
    return {
      get use() {
        return use;
      },
      get exceeded() {
        return exceeded;
      },
      get peakBytes() {
        return peakBytes;
      },
      readPeak: () => {
        if (!stopped)
          peakBytes = Math.max(
            peakBytes,
            this.measure(rootPid).reduce((n, p) => n + grown(p), 0),
          );
        return peakBytes;
      },
      stop: (endOwn = false) => {
        const ending = endOwn && !stopped;
        stopped = true;
        clearInterval(timer);
        // Continued first, then killed from a fresh walk: no pid is signalled after its process could be gone.
        resume();
        if (ending) for (const p of this.measure(rootPid)) if (toEnd(p)) this.#source.kill(p.pid);
      },
      // Only a request past its CPU budget is paused or continued when others start
      // or end: for one within it (nearly all), a recheck would only read the lane
      // (~1.4 ms of CPU, measured) a poll early, at every other request's lease and
      // release and at each context made ahead.
      recheck: () => {
        if (overBudget) check(false);
      },
      get overBudget() {
        return overBudget;
      },
      get active() {
        return idlePolls < IDLE_POLLS;
      },
    };
  }
}
