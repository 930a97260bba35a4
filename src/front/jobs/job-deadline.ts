// The front's deadline for a job in a slot process. SECURITY: it is the
// front's own, whatever the slot process does (frozen, stopped, looping in
// native code): at it the caller is answered, and the process, which may still
// hold the request's work, is killed and replaced; a process that answered but
// does not close the job's context soon after is taken for hung and replaced
// too. The slot's own limits (navigation, script) answer first when it works.
import type { Config } from '../../common/config.js';
import { ApiError, notPrepared } from '../../common/errors.js';
import type { Logger } from '../../common/log.js';
import type { JobRequest } from '../../protocol/jobs.js';
import { clampNavigationTimeoutMs } from '../../protocol/request-options.js';
import { answer, type SlotProcess } from '../slots/slot-process.js';

/**
 * What a job gets past its navigation and script limits before the front ends
 * it: leasing its context and isolate, collecting its result, and the answer.
 */
export const JOB_GRACE_MS = 5_000;

/**
 * How long a slot process may take to prepare a job (its context, clipboard,
 * egress port, Chromium relaunch, isolate) before the front takes it for hung:
 * the request then waits for another slot within its queue time (503 where none
 * comes), instead of until the job's deadline. Past the slot's own waits in
 * preparation (EGRESS_WAIT_TIMEOUT_MS while the egress process is replaced,
 * LOOKUP_DEADLINE_MS for the page's name), which answer first when it works;
 * the job's deadline when that is lower.
 */
export const LEASE_DEADLINE_MS = 20_000;

/**
 * How long a slot process that has answered may take to close the job's context
 * before it is taken for hung (and replaced): counted from the deadline, or
 * from the answer when that came later.
 */
export const JOB_CLOSE_GRACE_MS = 5_000;

/**
 * The front's deadline for a job, from the moment it is handed to a slot
 * process: its navigation limit (the request's own, when lower) and, when it
 * has a script, the script limit, plus JOB_GRACE_MS.
 */
export function jobDeadlineMs(
  config: Pick<Config, 'navigationTimeoutMs' | 'scriptTimeoutMs'>,
  request?: Pick<JobRequest, 'options' | 'script' | 'limits'>,
): number {
  const navigationLimit = request?.limits?.navigationTimeoutMs ?? config.navigationTimeoutMs;
  const navigation = clampNavigationTimeoutMs(request?.options?.navigationTimeoutMs, navigationLimit);
  const scriptLimit = request?.limits?.scriptTimeoutMs ?? config.scriptTimeoutMs;
  const script = request !== undefined && request.script === undefined ? 0 : scriptLimit;
  return navigation + script + JOB_GRACE_MS;
}

/** The caller's answer when the front's deadline ends a job: the timeout as a script's own would be. */
export function deadlineError(deadlineMs: number): ApiError {
  // Counted in pagescript_timeouts_total{phase="deadline"}: the slot process did not answer by it.
  return new ApiError(
    'SCRAPING_FAILED',
    `Script execution failed: the request did not finish within ${deadlineMs} ms (its navigation and script limits and ${JOB_GRACE_MS} ms to set up and answer)`,
    { timeout: 'deadline' },
  );
}

/** What a job's deadline needs to know of the job, and how it ends a process. */
export interface DeadlineJob {
  readonly proc: SlotProcess;
  readonly id: number;
  readonly requestId: string;
  readonly deadlineMs: number;
  readonly logger: Logger;
  /** Ends the slot process now (its exit frees the slot for a replacement). */
  readonly kill: (e: SlotProcess) => void;
}

/**
 * Sets job `id`'s deadlines in its slot process: still preparing at
 * LEASE_DEADLINE_MS, or unanswered at the job's deadline, the caller is
 * answered (503 notPrepared, or deadlineError) and the process killed; answered but still closing
 * the job's context, the process is killed JOB_CLOSE_GRACE_MS later. Returns
 * what clears both timers (once the context is closed).
 */
export function armDeadline(job: DeadlineJob): () => void {
  const { proc, id, requestId, deadlineMs, logger, kill } = job;
  let closeTimer: NodeJS.Timeout | undefined;
  const leaseMs = Math.min(LEASE_DEADLINE_MS, deadlineMs);
  const lease = setTimeout(() => {
    const pending = proc.jobs.get(id);
    if (pending === undefined || pending.answered || pending.phase !== 'lease') return;
    logger.warn(
      { pid: proc.child.pid, slot: proc.slot.index, job: id, requestId, leaseMs },
      'a slot process did not prepare for a request in time; it waits for another slot, and the process is replaced',
    );
    // SECURITY: a slot stopped or looping before the page is no one's request yet: the caller is not held to
    // the job's deadline by it, and the process, which may be what an earlier tenant left, goes.
    answer(pending, notPrepared('lease', new Error(`the slot did not prepare within ${leaseMs} ms`)));
    kill(proc);
  }, leaseMs);
  lease.unref();
  const deadline = setTimeout(() => {
    const pending = proc.jobs.get(id);
    if (pending === undefined) return;
    if (!pending.answered) {
      logger.warn(
        { pid: proc.child.pid, slot: proc.slot.index, job: id, requestId, deadlineMs },
        'a request reached its deadline in its slot process; answering it and replacing the process',
      );
      // Never still leasing here: the lease deadline (at most this one, and set first) has answered that.
      answer(pending, deadlineError(deadlineMs));
      kill(proc);
      return;
    }
    // Answered, still closing its context: a little longer, then it is taken for hung.
    closeTimer = setTimeout(() => {
      if (!proc.jobs.has(id)) return;
      logger.error(
        { pid: proc.child.pid, slot: proc.slot.index, job: id, ms: JOB_CLOSE_GRACE_MS },
        'a slot process did not close its context after the deadline; replacing it',
      );
      kill(proc);
    }, JOB_CLOSE_GRACE_MS);
    closeTimer.unref();
  }, deadlineMs);
  deadline.unref();
  return () => {
    clearTimeout(lease);
    clearTimeout(deadline);
    clearTimeout(closeTimer);
  };
}
