// The memory one request's Chromium uses, read from /proc, and the watchdog
// that ends the request when it goes over PAGE_MEMORY_MB where the kernel does
// not (no memory cgroup per slot: docs/budgets.md).
//
// DevTools targets carry no process id, so a renderer is tied to a request by
// where it sits: a slot's Chromium serves one request at a time, and every
// process under its browser is that request's or the slot's own. Reading
// /proc/<pid>/{stat,status,cmdline,task/*/children} and kill() need nothing
// the slot's user lacks over its own Chromium, sandboxed renderers included.
import { readdirSync } from 'node:fs';
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
}

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
 * A process's type (`browser` for the root, else Chromium's `--type=`), read
 * from its command line when it is first seen and kept by its identity (pid
 * and start time: a pid the kernel gives again is another process, read
 * again). SECURITY: keeping it also means a process that rewrites its command
 * line later does not change what it was.
 */
function processTypes(): (pid: number, start: number, rootPid: number) => string {
  const types = new Map<string, string>();
  return (pid, start, rootPid) => {
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
    return type;
  };
}

/** The real /proc: each process's memory from its status file, the tree from its threads' children files. */
export function procfsSource(): ProcessSource {
  const typeOf = processTypes();
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
        out.push({
          pid,
          type: typeOf(pid, start, rootPid),
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
  };
}

/**
 * Where the kernel holds the page's memory (its Chromium's own cgroup, v1):
 * the tree read from the group's member list (one read) and each member's
 * parent, instead of every thread's children file of every process (a
 * Chromium browser has dozens of threads: measured, most of a walk's CPU).
 * Memory is not read (bytes 0): there the kernel counts and bounds it, and the
 * front reads the group's peak. SECURITY: the tree is still the root's: a
 * member counts only when its chain of parents within the group reaches
 * `rootPid` (what left the tree, or a previous Chromium's last processes, is
 * not the request's), and no descendant can be outside the group: a process of
 * the slot's user may write only this group's member list, not another's.
 */
export function cgroupSource(procsPath: string): ProcessSource {
  const typeOf = processTypes();
  const kill = procfsSource().kill;
  return {
    tree(rootPid) {
      const members = new Map<number, { ppid: number; start: number; cpuMs: number }>();
      for (const line of (readOr(procsPath) ?? '').split('\n')) {
        if (line === '' || members.size >= MAX_TREE) continue;
        const pid = Number(line);
        const stat = readOr(`/proc/${pid}/stat`);
        if (stat === undefined) continue;
        const { ppid, startTicks, cpuTicks } = parseStat(stat);
        members.set(pid, { ppid, start: startTicks, cpuMs: (cpuTicks * 1000) / TICKS_PER_S });
      }
      const depths = new Map<number, number | undefined>([[rootPid, 0]]);
      const depthOf = (pid: number): number | undefined => {
        if (depths.has(pid)) return depths.get(pid);
        // Marked first: a cycle of parents (pids reused while read) ends here, outside the tree.
        depths.set(pid, undefined);
        const m = members.get(pid);
        const parent = m === undefined ? undefined : depthOf(m.ppid);
        const depth = parent === undefined ? undefined : parent + 1;
        depths.set(pid, depth);
        return depth;
      };
      const out: ProcessMemory[] = [];
      for (const [pid, m] of members) {
        const depth = depthOf(pid);
        if (depth === undefined) continue;
        out.push({ pid, type: typeOf(pid, m.start, rootPid), start: m.start, depth, cpuMs: m.cpuMs, bytes: 0 });
      }
      return out;
    },
    kill,
  };
}

/** A Chromium has a few dozen processes; this bounds a walk of a tree gone wrong. */
const MAX_TREE = 2_000;

/** How often a watched Chromium's memory is read. A read of one costs ~1 ms of CPU (measured). */
export const PAGE_MEMORY_POLL_MS = 100;

export interface PageMemoryUse {
  /**
   * What the Chromium's processes grew by since the watch began (a process that
   * started since counts whole), in bytes: the request's pages, frames, popups
   * and workers, and what the browser side keeps for its context.
   */
  readonly bytes: number;
  /** Renderers of the Chromium now. */
  readonly renderers: number;
}

export interface Watch {
  /** The last reading. */
  readonly use: PageMemoryUse;
  /**
   * Reads the Chromium once more for the peak alone (no kill; not where nothing is polled); returns the most
   * the request's processes held at any reading (PageMemoryUse.bytes), in bytes.
   */
  readPeak(): number;
  /**
   * No more readings and no more kills; safe to call more than once. endOwn:
   * the request's own processes (chosen as for the memory kill) are killed
   * first, once.
   */
  stop(endOwn?: boolean): void;
}

export interface PageMemoryWatchdogOptions {
  readonly limitBytes: number;
  readonly source?: ProcessSource;
  /** How often a watched Chromium is read; 0: only at the lease, readPeak() and stop() (the kernel holds the limit). */
  readonly pollMs?: number;
}

const identity = (p: ProcessMemory): string => `${p.pid}:${p.start}`;

/**
 * Measures a slot's Chromium for one request. Every process of it counts
 * by how much it grew since the watch began, and one that started since counts
 * whole: renderers (pages, frames of other sites, popups, dedicated and shared
 * workers) and the browser, GPU, network and storage processes, which is where
 * an incognito context keeps IndexedDB, Cache Storage and blobs. What the Chromium
 * held before the request (its browser, the blank page the request was given,
 * a page of the service's own) is not the request's. Over the limit, the
 * Chromium's renderers are killed at once (the memory goes back to the system)
 * and onExceeded is called.
 */
export class PageMemoryWatchdog {
  readonly limitBytes: number;
  readonly #source: ProcessSource;
  readonly #pollMs: number;

  constructor(opts: PageMemoryWatchdogOptions) {
    this.limitBytes = opts.limitBytes;
    this.#source = opts.source ?? procfsSource();
    this.#pollMs = opts.pollMs ?? PAGE_MEMORY_POLL_MS;
  }

  /** Every process of a Chromium now, read once. */
  measure(rootPid: number): ProcessMemory[] {
    return this.#source.tree(rootPid);
  }

  /**
   * Watches the Chromium of rootPid for one request. limitBytes is this request's
   * limit (its key's, when lower than PAGE_MEMORY_MB).
   */
  watch(rootPid: number, onExceeded: (use: PageMemoryUse) => void, limitBytes: number = this.limitBytes): Watch {
    // Read before anything of the request's runs in the Chromium: the types here are Chromium's own.
    const baseline = new Map<string, { bytes: number; type: string }>();
    const first = this.measure(rootPid);
    for (const p of first) baseline.set(identity(p), { bytes: p.bytes, type: p.type });
    // SECURITY: which processes to end is chosen by what they were before the
    // request (a renderer then: the blank page it was given) or by where they
    // started since (what a zygote forked: its renderers and workers), never by
    // what a process says of itself now: a compromised renderer can rewrite its
    // command line, not its history or its place in the tree. The browser, the
    // zygotes, the GPU process and what the browser launched are not ended:
    // they serve the slot's next request.
    const toEnd = (p: ProcessMemory): boolean => {
      if (p.depth === 0) return false;
      const before = baseline.get(identity(p));
      return before === undefined ? p.depth >= 2 : before.type === 'renderer';
    };
    let use: PageMemoryUse = { bytes: 0, renderers: 0 };
    let peakBytes = 0;
    let exceeded: PageMemoryUse | undefined;
    let stopped = false;
    /** What the Chromium's processes grew by since the lease (a process started since, whole). */
    const grown = (p: ProcessMemory): number => Math.max(0, p.bytes - (baseline.get(identity(p))?.bytes ?? 0));
    const check = (read?: readonly ProcessMemory[]): void => {
      if (stopped) return;
      const tree = read ?? this.measure(rootPid);
      let bytes = 0;
      for (const p of tree) bytes += grown(p);
      use = { bytes, renderers: tree.filter((p) => p.type === 'renderer').length };
      peakBytes = Math.max(peakBytes, bytes);
      if (exceeded === undefined && bytes <= limitBytes) return;
      // SECURITY: the memory goes back now, whatever the job is busy with; a
      // renderer started after that (a reload) is ended too, until the job stops the watch.
      for (const p of tree) if (toEnd(p)) this.#source.kill(p.pid);
      if (exceeded === undefined) {
        exceeded = use;
        onExceeded(use);
      }
    };
    // The first poll is the baseline's own reading (one walk of the Chromium at the lease, not two).
    check(first);
    const timer = this.#pollMs > 0 ? setInterval(check, this.#pollMs) : undefined;
    timer?.unref();
    return {
      get use() {
        return use;
      },
      readPeak: () => {
        // Where the kernel holds the page's memory, the front reads its peak from the page's cgroup.
        if (!stopped && this.#pollMs > 0)
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
        if (ending) for (const p of this.measure(rootPid)) if (toEnd(p)) this.#source.kill(p.pid);
      },
    };
  }
}
