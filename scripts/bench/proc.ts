// The bench's view of /proc: the service's process tree, each process's memory
// and CPU time. Its own, not the tests' helpers: a script imports no test code.
import { readdirSync, readFileSync } from 'node:fs';

/** A file's text, or '' when it cannot be read (the process is gone). */
export function readOr(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

/** Clock ticks of /proc/<pid>/stat's CPU fields: 10 ms on Linux. */
const MS_PER_TICK = 10;

/**
 * The fields of /proc/<pid>/stat after the command name, or undefined when the
 * process is gone: [0] state, [1] parent pid, [11..14] utime, stime, cutime,
 * cstime in clock ticks.
 */
function statFields(pid: number): string[] | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return text.slice(text.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** Every process descended from pid (Chromium and its helpers, the service's slot processes). */
export function descendants(pid: number): number[] {
  const parent = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const fields = statFields(Number(name));
    if (fields) parent.set(Number(name), Number(fields[1]));
  }
  const out: number[] = [];
  const walk = (p: number): void => {
    for (const [child, pp] of parent) {
      if (pp === p) {
        out.push(child);
        walk(child);
      }
    }
  };
  walk(pid);
  return out;
}

/** Alive and not a zombie waiting to be reaped. */
export function alive(pid: number): boolean {
  const fields = statFields(pid);
  return fields !== undefined && fields[0] !== 'Z';
}

/** A process's resident set in KiB (0 when it is gone). */
export function rssKib(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/** A process's proportional set in KiB: shared pages split between their sharers (0 when it is gone). */
export function pssKib(pid: number): number {
  try {
    const m = /Pss:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/** Descendant processes of pid whose executable is Chromium. */
export function chromiumPids(root: number): number[] {
  return descendants(root).filter((p) => {
    try {
      return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('chromium');
    } catch {
      return false; // gone
    }
  });
}

/** The service's slot processes: its Node children that run dist/slot.js (see docs/architecture.md). */
export function slotPids(root: number): number[] {
  return descendantsRunning(root, /slot\.js|slot\/main\.ts/);
}

/** The service's egress process, by its entry file. */
export function egressPids(root: number): number[] {
  return descendantsRunning(root, /egress-process\.js|egress\/main\.ts/);
}

function descendantsRunning(root: number, entry: RegExp): number[] {
  return descendants(root).filter((p) => {
    try {
      return entry.test(readFileSync(`/proc/${p}/cmdline`, 'utf8'));
    } catch {
      return false; // gone
    }
  });
}

/** CPU time of processes in ms, reaped children included (renderers are reaped by Chromium's zygote). */
export function cpuMs(pids: number[]): number {
  let ticks = 0;
  for (const p of pids) {
    const f = statFields(p) ?? [];
    // utime, stime, cutime, cstime; clock ticks of 10 ms on Linux.
    ticks += Number(f[11] ?? 0) + Number(f[12] ?? 0) + Number(f[13] ?? 0) + Number(f[14] ?? 0);
  }
  return ticks * MS_PER_TICK;
}

/** A process's own CPU in ms (not its children: the service's Chromium is counted apart). */
export function cpuOwn(pid: number): number {
  const f = statFields(pid) ?? [];
  return (Number(f[11] ?? 0) + Number(f[12] ?? 0)) * MS_PER_TICK;
}

/** The machine's CPU time from /proc/stat's first line, in clock ticks: all of it and the idle part. */
export interface MachineCpu {
  readonly total: number;
  readonly idle: number;
}

/**
 * Parses /proc/stat's `cpu` line: user nice system idle iowait irq softirq steal
 * guest guest_nice. Idle is idle + iowait (a core waiting on a disk runs
 * nothing); guest time is already in user and nice, so it is not added again.
 */
export function parseMachineCpu(stat: string): MachineCpu {
  const line = /^cpu\s+([\d\s]+)$/m.exec(stat)?.[1];
  if (line === undefined) throw new Error('/proc/stat has no cpu line');
  const f = line.trim().split(/\s+/).map(Number);
  const at = (i: number): number => f[i] ?? 0;
  const total = at(0) + at(1) + at(2) + at(3) + at(4) + at(5) + at(6) + at(7);
  return { total, idle: at(3) + at(4) };
}

export function machineCpu(): MachineCpu {
  return parseMachineCpu(readFileSync('/proc/stat', 'utf8'));
}

/** The share of the machine's CPU left idle between two readings, in percent (NaN when no time passed). */
export function idlePercent(before: MachineCpu, after: MachineCpu): number {
  const total = after.total - before.total;
  return total > 0 ? (100 * (after.idle - before.idle)) / total : NaN;
}
