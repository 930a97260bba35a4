// Reading /proc, as both sides of the process boundary do: the slot's page
// memory watchdog (src/slot/browser/page-memory.ts) and the front's counts of a
// slot's CPU and memory. Imports nothing of either side.
import { readdirSync, readFileSync } from 'node:fs';

/** A file's text, or undefined when it cannot be read (the process is gone, or never was). */
export function readOr(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** The fields of /proc/<pid>/stat this service reads (proc(5) numbers them from 1). */
export interface ProcStat {
  /** Field 3: R, S, D, T (stopped), Z…; '' when missing. */
  readonly state: string;
  /** Field 4: the parent's pid. */
  readonly ppid: number;
  /** Field 5: the process group. */
  readonly pgrp: number;
  /** Field 9: the kernel's flags (PF_*). */
  readonly flags: number;
  /** Fields 14 and 15: CPU time used, user and system, in clock ticks. */
  readonly cpuTicks: number;
  /** Field 22: when it started, in clock ticks since boot. */
  readonly startTicks: number;
}

/**
 * The fields of a /proc/<pid>/stat text. SECURITY: the command name (field 2)
 * is the process's own to choose, up to 15 bytes, and may hold spaces and ')':
 * every field is read after the LAST ')', so a name cannot shift them.
 */
export function parseStat(stat: string): ProcStat {
  // fields[0] is field 3.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return {
    state: fields[0] ?? '',
    ppid: Number(fields[1] ?? 0),
    pgrp: Number(fields[2] ?? 0),
    flags: Number(fields[6] ?? 0),
    cpuTicks: Number(fields[11] ?? 0) + Number(fields[12] ?? 0),
    startTicks: Number(fields[19] ?? 0),
  };
}

/** SIGKILL's bit in /proc/<pid>/status's pending-signal masks (signal n is bit n − 1). */
const SIGKILL_BIT = 1n << 8n;
/** The kernel's PF_EXITING in /proc/<pid>/stat's flags (field 9): set as the process begins to exit. */
const PF_EXITING = 0x4;

/**
 * Whether process `pid` is on its way out: gone, exiting, a zombie, or with
 * SIGKILL pending (it runs no instruction of its own again). SECURITY: such a
 * process can do nothing more, so it is no sign of an escape (a dead Chromium's
 * helpers that its slot has just killed).
 */
export function dying(pid: number): boolean {
  const stat = readOr(`/proc/${pid}/stat`);
  const status = readOr(`/proc/${pid}/status`);
  if (stat === undefined || status === undefined) return true;
  const { state, flags } = parseStat(stat);
  if (state === 'Z' || state === 'X' || (flags & PF_EXITING) !== 0) return true;
  for (const field of ['SigPnd', 'ShdPnd']) {
    const hex = new RegExp(`^${field}:\\s+([0-9a-f]+)`, 'm').exec(status)?.[1];
    if (hex !== undefined && (BigInt(`0x${hex}`) & SIGKILL_BIT) !== 0n) return true;
  }
  return false;
}

/** Clock ticks per second of /proc/<pid>/stat's CPU fields (USER_HZ: 100 on Linux for every architecture we run on). */
const TICKS_PER_S = 100;
/** At most this many processes are walked under one root (a slot process, its Chromium and renderers). */
const MAX_TREE_PROCESSES = 4096;

/**
 * The CPU time, in ms, the process `root` and every process under it have
 * used, their reaped children included (utime + stime + cutime + cstime of
 * each): what the kernel has counted, never what a process says of itself.
 * undefined when `root` is gone. Children are found through
 * /proc/<pid>/task/<tid>/children, so no other process is read.
 */
export function treeCpuMs(root: number): number | undefined {
  let ticks = 0;
  const found = walkTree(root, (stat) => {
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 14–17: utime, stime, cutime, cstime (fields[0] is field 3).
    for (let i = 11; i <= 14; i++) ticks += Number(f[i] ?? 0) || 0;
  });
  return found ? (ticks * 1000) / TICKS_PER_S : undefined;
}

/** The resident anonymous and shared memory of `root` and its descendants now, in bytes (0 when gone). */
export function treeResidentBytes(root: number): number {
  let kb = 0;
  walkTree(root, (_stat, pid) => {
    const status = readOr(`/proc/${pid}/status`) ?? '';
    for (const field of ['RssAnon', 'RssShmem'])
      kb += Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
  });
  return kb * 1024;
}

/** Calls `visit` with each process of `root`'s tree (its stat text); false when `root` is gone. */
function walkTree(root: number, visit: (stat: string, pid: number) => void): boolean {
  const first = readOr(`/proc/${root}/stat`);
  if (first === undefined) return false;
  const todo = [root];
  const seen = new Set<number>();
  for (let pid = todo.pop(); pid !== undefined && seen.size < MAX_TREE_PROCESSES; pid = todo.pop()) {
    if (seen.has(pid)) continue;
    seen.add(pid);
    const stat = pid === root ? first : readOr(`/proc/${pid}/stat`);
    if (stat === undefined) continue;
    visit(stat, pid);
    let tasks: string[] = [];
    try {
      tasks = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const tid of tasks)
      for (const child of (readOr(`/proc/${pid}/task/${tid}/children`) ?? '').split(' '))
        if (child !== '') todo.push(Number(child));
  }
  return true;
}
