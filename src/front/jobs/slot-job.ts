// One job run in the slot process the supervisor picked for it: runScrape's
// shape across the process hop. It holds the egress grant for the request, the
// front's deadline (job-deadline.ts), the caller's abort, and the CPU the
// request used. SECURITY: that CPU is what the kernel counted while the job
// ran for the slot's CPU group where it has one (every process in it, whoever
// reaped it), else for the slot process's tree (the slot and its Chromium),
// never the slot's word. Where slots have cgroups, the job's memory limit is set
// as it starts (the slot's level then, plus the request's share) and a kernel
// OOM kill in its slot's group while it ran is its answer, 400 MEMORY_LIMIT_EXCEEDED.
import { randomUUID } from 'node:crypto';
import type { Config } from '../../common/config.js';
import { ApiError } from '../../common/errors.js';
import type { Logger } from '../../common/log.js';
import { treeCpuMs } from '../../common/proc.js';
import { background } from '../../common/background.js';
import type { EgressStats } from '../../protocol/egress.js';
import { failedJob, withTelemetry, type JobOutcome, type JobRequest, type JobUsage } from '../../protocol/jobs.js';
import { SecurityRecord } from '../../protocol/security.js';
import type { EgressSupervisor } from '../egress-process/egress-supervisor.js';
import { lookForEscape } from './escape-signs.js';
import type { KernelLock } from '../host/kernel-lock.js';
import { armDeadline, jobDeadlineMs } from './job-deadline.js';
import { kernelMemoryError, limitJobMemory, type JobMemory } from './job-memory.js';
import type { SlotGroups } from '../cgroups/slot-groups.js';
import type { SlotProcess } from '../slots/slot-process.js';

export interface SlotJobOptions {
  readonly config: Config;
  readonly logger: Logger;
  readonly egress: EgressSupervisor;
  /** Ends a slot process now (its exit frees its slot for a replacement). */
  readonly kill: (e: SlotProcess) => void;
  /** The slots' cgroups, when the front could make them. */
  readonly groups: () => SlotGroups | undefined;
  /** The pids of slot `index`'s live processes (their trees are kept by a sweep of its groups). */
  readonly rootsOf: (index: number) => number[];
  /** CPU (s) a slot spent from a job's answer to its `closed` (the context closed, the next prepared): no key's. */
  readonly preparationCpu?: (seconds: number) => void;
  /** The kernel lock's count of each slot user's refused packets, when it is on. */
  readonly kernelLock?: Pick<KernelLock, 'drops'>;
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
  record: SecurityRecord = new SecurityRecord(),
): Promise<JobOutcome> {
  const { config, logger, egress } = opts;
  const slot = proc.slot;
  const groups = opts.groups();
  // SECURITY: the egress process lets this slot process bind one session to this
  // request, through this proxy (checked against the key by the front) and no other.
  const requestId = request.requestId ?? randomUUID();
  const grant = egress.grant(proc.index, requestId, request.proxy, request.hosts);
  const deadlineMs = jobDeadlineMs(config, request);
  // SECURITY: the request's egress counts, as the egress process read them when its session ended (its open
  // connections cut and counted in), never the slot's report. Read once, at the answer or the context's close,
  // whichever comes first; the grant is revoked only after.
  let bill: Promise<EgressStats | undefined> | undefined;
  const billed = (): Promise<EgressStats | undefined> => (bill ??= egress.finish(grant));
  const disarm = armDeadline({
    proc,
    id,
    requestId,
    deadlineMs,
    logger,
    kill: opts.kill,
  });
  let closed!: () => void;
  const closing = new Promise<void>(
    (resolve) =>
      (closed = () => {
        // The slot closed the job's context and prepared its next (slot/main.ts prepared) since the answer.
        const after = answeredAt && !proc.gone ? cpuNow() : undefined;
        if (answeredAt !== undefined && after !== undefined)
          opts.preparationCpu?.(Math.max(0, after - answeredAt) / 1000);
        // SECURITY: what the job left in its slot's groups outside the slot's tree (a double fork) ends with it,
        // and its slot process is replaced before the next job (escape-signs.ts).
        if ((groups?.sweep(slot.index, opts.rootsOf(slot.index)) ?? 0) > 0 && !proc.gone) proc.escaped = true;
        disarm();
        background(
          billed().then(() => egress.revoke(grant)),
          "revoking a request's egress grant",
          logger,
        );
        resolve();
      }),
  );
  const result = new Promise<JobOutcome>((resolve) => {
    proc.jobs.set(id, {
      resolve,
      closed,
      answered: false,
      reported: false,
      phase: 'lease',
      deadlineMs,
      observed: new Set(),
    });
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
  // What an earlier job left in the slot outside its process's tree was killed before the slot was given this
  // job (supervisor.ts run, killStrays): neither its CPU nor its memory is this job's.
  const memory = groups ? limitJobMemory(config, groups.memory, slot.index, request) : undefined;
  proc.jobMemory = memory;
  // SECURITY: the request's CPU is the kernel's count for the slot's group, or its process's tree, never the slot's word.
  const pid = proc.child.pid;
  const groupBefore = groups?.usageMs(slot.index);
  /** The slot's CPU count now (ms): its group's where it was read at the start, else its process tree's. */
  const cpuNow = (): number | undefined =>
    groupBefore !== undefined ? groups?.usageMs(slot.index) : pid === undefined ? undefined : treeCpuMs(pid);
  const cpuBefore = groupBefore ?? cpuNow();
  /** The count when the job was answered: what follows until `closed` is the slot's preparation. */
  let answeredAt: number | undefined;
  const measured = (usage: JobUsage | undefined): JobUsage => {
    const { cpuMs: _claimed, ...rest } = usage ?? {};
    const now = cpuNow();
    answeredAt = now;
    const cpuMs = now !== undefined && cpuBefore !== undefined ? now - cpuBefore : undefined;
    // The Chromium group's peak above its level at the start: what the page took, as the kernel counted it.
    const peak = memory?.chromium && groups?.memory.peakBytes(slot.index, 'chromium');
    return {
      ...rest,
      ...(cpuMs === undefined ? {} : { cpuMs: Math.max(0, cpuMs) }),
      ...(memory?.chromium && peak !== undefined
        ? { pageMemoryPeakMb: Math.round((Math.max(0, peak - memory.chromium.startBytes) / 2 ** 20) * 10) / 10 }
        : {}),
    };
  };
  /** SECURITY: a kernel OOM kill in the slot's group while the job ran is its answer, whatever the slot said. */
  const killedForMemory = (): boolean =>
    memory !== undefined &&
    groups !== undefined &&
    (groups.memory.oomKills(slot.index) > memory.oomKills ||
      (memory.chromium !== undefined && groups.memory.oomKills(slot.index, 'chromium') > memory.chromium.oomKills));
  let looked!: () => void;
  proc.escapeLook = new Promise<void>((resolve) => (looked = resolve));
  logger.debug({ requestId, slot: slot.index, pid, client }, 'job given to a slot process');
  proc.send({ type: 'run', id, request: { ...request, requestId } });
  try {
    const outcome = await answered(result, memory, measured, killedForMemory, proc);
    const { egress: _reported, ...telemetry } = outcome.telemetry;
    const counted = await billed();
    return { ...outcome, telemetry: { ...telemetry, ...(counted === undefined ? {} : { egress: counted }) } };
  } finally {
    // SECURITY: signs of an escape into the slot go in the request's record (its key's score) and replace the slot.
    await lookForEscape(
      { logger, groups, kernelLock: opts.kernelLock, rootsOf: opts.rootsOf },
      proc,
      record,
      requestId,
    ).finally(looked);
    signal?.removeEventListener('abort', onAbort);
    if (deferClose) deferClose(closing);
    else await closing;
  }
}

/**
 * The job's answer as the caller gets it: the slot's, with the CPU and memory
 * the front measured; or, where the kernel killed a process of the slot for
 * memory while it ran, 400 MEMORY_LIMIT_EXCEEDED with the slot's logs and forensics.
 */
async function answered(
  result: Promise<JobOutcome>,
  memory: JobMemory | undefined,
  measured: (usage: JobUsage | undefined) => JobUsage,
  killedForMemory: () => boolean,
  proc: SlotProcess,
): Promise<JobOutcome> {
  const outcome = await result;
  const usage = measured(outcome.telemetry.usage);
  if (memory && !(!outcome.ok && outcome.error.code === 'MEMORY_LIMIT_EXCEEDED') && killedForMemory()) {
    const kernel = kernelMemoryError(memory, !outcome.ok && proc.gone);
    proc.memoryKills++;
    const error = outcome.ok
      ? kernel.with({ logs: outcome.result.logs })
      : kernel.with({ logs: outcome.error.logs, failure: outcome.error.failure });
    return failedJob(error, { ...outcome.telemetry, usage });
  }
  return withTelemetry(outcome, { usage });
}
