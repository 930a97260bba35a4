// One job run in the slot process the supervisor picked for it: runScrape's
// shape across the process hop. It holds the egress grant for the request, the
// front's deadline (job-deadline.ts), the caller's abort, and the CPU the
// request used. SECURITY: that CPU is what the kernel counted while the job
// ran for the slot's CPU group where it has one (every process in it, whoever
// reaped it), else for the slot process's tree (the slot and its Chromium),
// never the slot's word; the CPU pause between slots (cpu-share.ts) is told it runs.
import { randomUUID } from 'node:crypto';
import type { Config } from '../../common/config.js';
import { ApiError } from '../../common/errors.js';
import type { Logger } from '../../common/log.js';
import { treeCpuMs } from '../../common/proc.js';
import type { JobOutcome, JobRequest } from '../../protocol/jobs.js';
import type { CpuShare } from './cpu-share.js';
import type { EgressSupervisor } from './egress-supervisor.js';
import { armDeadline, jobDeadlineMs } from './job-deadline.js';
import type { SlotProcess } from './slot-process.js';

export interface SlotJobOptions {
  readonly config: Config;
  readonly logger: Logger;
  readonly egress: EgressSupervisor;
  readonly share: CpuShare;
  /** Ends a slot process now (its exit frees its slot for a replacement). */
  readonly kill: (e: SlotProcess) => void;
  /** The kernel's count of slot `index`'s CPU group, ms; undefined where slots have no count (CpuGroups.usageMs). */
  readonly groupCpuMs: (index: number) => number | undefined;
}

/**
 * Runs job `id` in slot process `proc` (its slot already taken for it). The
 * context is closed after the job; `deferClose` receives that closing (it ends
 * when the process says the context is closed, or when the process is gone),
 * else it is awaited before the outcome is returned.
 */
export async function runInSlot(
  opts: SlotJobOptions,
  proc: SlotProcess,
  id: number,
  request: JobRequest,
  signal?: AbortSignal,
  deferClose?: (closing: Promise<void>) => void,
  client?: string,
): Promise<JobOutcome> {
  const { config, logger, egress, share } = opts;
  const slot = proc.slot;
  // SECURITY: the egress process lets this slot process bind one session to this
  // request, through this proxy (checked against the key by the front) and no other.
  const requestId = request.requestId ?? randomUUID();
  const grant = egress.grant(proc.index, requestId, request.proxy, request.hosts);
  const disarm = armDeadline({
    proc,
    id,
    requestId,
    deadlineMs: jobDeadlineMs(config, request),
    logger,
    kill: opts.kill,
  });
  let closed!: () => void;
  const closing = new Promise<void>(
    (resolve) =>
      (closed = () => {
        if (pid !== undefined) share.jobEnded(slot.index, pid);
        disarm();
        egress.revoke(grant);
        resolve();
      }),
  );
  const result = new Promise<JobOutcome>((resolve, reject) => {
    proc.jobs.set(id, { resolve, reject, closed, answered: false });
  });
  const onAbort = (): void => {
    const reason: unknown = signal?.reason;
    proc.send({
      type: 'abort',
      id,
      ...(reason instanceof ApiError ? { error: { code: reason.code, message: reason.message } } : {}),
    });
  };
  signal?.addEventListener('abort', onAbort, { once: true });
  // SECURITY: the request's CPU is the kernel's count for the slot's group, or its process's tree, never the slot's word.
  const pid = proc.child.pid;
  const cpuBefore = pid === undefined ? undefined : treeCpuMs(pid);
  let groupBefore: number | undefined;
  const cpuMs = (): number | undefined => {
    const group = groupBefore === undefined ? undefined : opts.groupCpuMs(slot.index);
    if (group !== undefined && groupBefore !== undefined) return Math.max(0, group - groupBefore);
    const now = pid === undefined || cpuBefore === undefined ? undefined : treeCpuMs(pid);
    return now === undefined || cpuBefore === undefined ? undefined : Math.max(0, now - cpuBefore);
  };
  const withCpu = <U extends { readonly cpuMs?: number }>(
    usage: U | undefined,
  ): Omit<U, 'cpuMs'> & { cpuMs?: number } => {
    const { cpuMs: _claimed, ...rest } = usage ?? ({} as U);
    const measured = cpuMs();
    return measured === undefined ? rest : { ...rest, cpuMs: measured };
  };
  // Read after jobStarted's sweep: what an earlier job left in the group is not this one's.
  if (pid !== undefined && cpuBefore !== undefined) groupBefore = share.jobStarted(slot.index, pid, cpuBefore, client);
  logger.debug({ requestId, slot: slot.index, pid, client }, 'job given to a slot process');
  proc.send({ type: 'run', id, request: { ...request, requestId } });
  try {
    const outcome = await result;
    return { ...outcome, usage: withCpu(outcome.usage) };
  } catch (e) {
    if (e instanceof ApiError) e.usage = withCpu(e.usage);
    throw e;
  } finally {
    signal?.removeEventListener('abort', onAbort);
    if (deferClose) deferClose(closing);
    else await closing;
  }
}
