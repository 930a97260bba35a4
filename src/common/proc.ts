// Reading /proc, as both sides of the process boundary do: the executor's page
// memory watchdog (src/slot/browser/page-memory.ts) and the front's continue of what
// a dead executor left stopped (src/front/children/stopped-chromium.ts). Imports nothing of
// either side.
import { readFileSync } from 'node:fs';

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
  /** Field 5: the process group. */
  readonly pgrp: number;
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
    pgrp: Number(fields[2] ?? 0),
    cpuTicks: Number(fields[11] ?? 0) + Number(fields[12] ?? 0),
    startTicks: Number(fields[19] ?? 0),
  };
}
