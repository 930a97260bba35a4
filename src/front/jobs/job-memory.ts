// What the kernel holds for one job in its slot's memory groups (memory-limits.ts):
// the limits set as the job starts, and the caller's answer when the kernel
// killed a process of the slot for memory while it ran.
import type { Config } from '../../common/config.js';
import { ApiError } from '../../common/errors.js';
import type { JobRequest } from '../../protocol/jobs.js';
import type { MemoryLimits } from '../cgroups/memory-limits.js';

/** What the kernel holds for one job in its slot's memory groups: their levels and OOM kills at the start. */
export interface JobMemory {
  readonly startBytes: number;
  readonly oomKills: number;
  /** The slot's Chromium group's, where it has one (v1). */
  readonly chromium: { readonly startBytes: number; readonly oomKills: number } | undefined;
  /** The job's page memory limit and its whole share above startBytes (page, isolate, host side), in MiB. */
  readonly pageMb: number;
  readonly shareMb: number;
  readonly byKey: boolean;
}

/**
 * Sets slot `index`'s memory limits for a job of `request`: the slot's limit at
 * rest plus the request's share of the memory plan (its page memory, its
 * isolate's, the host side's queues; per-key limits lower the first two), and
 * what its Chromium holds now plus the page memory alone. SECURITY: the slot's
 * is absolute: set from what the slot holds now, what earlier jobs left (in
 * its tmpfs, say) would raise it job after job.
 */
export function limitJobMemory(config: Config, mem: MemoryLimits, index: number, request: JobRequest): JobMemory {
  const hostMb = config.memory.perRequestMb - config.pageMemoryMb - config.scriptMemoryMb;
  const pageMb = request.limits?.pageMemoryMb ?? config.pageMemoryMb;
  const shareMb = pageMb + (request.limits?.scriptMemoryMb ?? config.scriptMemoryMb) + hostMb;
  const startBytes = mem.usageBytes(index) ?? 0;
  const oomKills = mem.oomKills(index);
  mem.resetPeak(index);
  // The slot's limit first: the Chromium group's, within it, may not pass it.
  mem.limit(index, mem.rest.slotBytes + shareMb * 2 ** 20);
  let chromium: JobMemory['chromium'];
  if (mem.chromiumGroups) {
    chromium = { startBytes: mem.usageBytes(index, 'chromium') ?? 0, oomKills: mem.oomKills(index, 'chromium') };
    mem.resetPeak(index, 'chromium');
    mem.limit(index, chromium.startBytes + pageMb * 2 ** 20, 'chromium');
  }
  return { startBytes, oomKills, chromium, pageMb, shareMb, byKey: request.limits?.pageMemoryMb !== undefined };
}

/**
 * The caller's answer when the kernel killed a process of the job's slot for
 * memory: the page's side when the slot process lived on (`host` false), else
 * the host side's.
 */
export function kernelMemoryError(job: JobMemory, host: boolean): ApiError {
  return new ApiError(
    'MEMORY_LIMIT_EXCEEDED',
    host
      ? `Memory limit exceeded: the request's processes used more than its ${job.shareMb} MiB share; its host side was stopped`
      : `Memory limit exceeded: the page used more than ${job.pageMb} MiB (${job.byKey ? "this key's page memory limit" : 'PAGE_MEMORY_MB'})`,
  );
}
