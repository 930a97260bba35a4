// The memory ceilings of a slot's host side, held by the front where slots have
// no memory cgroup (where they have, the kernel holds it: slot-groups.ts).
// SECURITY: its resident memory is read by the front from /proc every
// SLOT_MEMORY_POLL_MS while jobs run, never taken from the process's word;
// past the plan's ceiling its request is answered 400 MEMORY_LIMIT_EXCEEDED
// and the process killed and replaced. Its
// V8 heap has a hard limit (childEntry's flag): Node's own words on exhausting
// it choose the answer of that process's request alone.
import { ApiError } from '../../common/errors.js';
import type { Logger } from '../../common/log.js';
import { residentBytes } from '../../common/service-memory.js';
import { answer, type SlotProcess } from './slot-process.js';

/** How often the front reads each slot process's resident memory from /proc. */
export const SLOT_MEMORY_POLL_MS = 100;

/** Node's own words on stderr when a process's V8 heap is exhausted (it then aborts). */
export const HEAP_EXHAUSTED =
  /JavaScript heap out of memory|Reached heap limit|Ineffective mark-compacts near heap limit/;

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
 * Without slot cgroups, after a job: the slot process's resident memory when
 * it is over `restMb` (SLOT_BASE_MB, its share of the plan at rest), else
 * undefined. SECURITY: what a job left in the process (a heap or an allocator
 * that does not give memory back) would count against the next key's ceiling.
 */
export function overRest(e: SlotProcess, restMb: number): number | undefined {
  const pid = e.child.pid;
  if (e.gone || pid === undefined) return undefined;
  const bytes = residentBytes(pid);
  e.residentBytes = bytes;
  return bytes > restMb * 2 ** 20 ? bytes : undefined;
}

/**
 * Reads each live slot process's resident memory (anonymous + shared) into
 * `residentBytes`; one past `limitMb` that is not already going away has its
 * jobs answered hostMemoryError and is killed (`kill`).
 */
export function watchMemory(
  procs: Iterable<SlotProcess>,
  limitMb: number,
  logger: Logger,
  kill: (e: SlotProcess) => void,
): void {
  const limit = limitMb * 2 ** 20;
  for (const e of procs) {
    const pid = e.child.pid;
    if (e.gone || pid === undefined) continue;
    e.residentBytes = residentBytes(pid);
    if (e.residentBytes <= limit || e.retiring) continue;
    logger.warn(
      { pid, slot: e.slot.index, mb: Math.round(e.residentBytes / 2 ** 20), limitMb: limit / 2 ** 20 },
      'a slot process went over its memory ceiling; answering its request and replacing the process',
    );
    for (const job of e.jobs.values()) answer(job, hostMemoryError(limit / 2 ** 20, 'resident'));
    kill(e);
  }
}
