// What a slot process's messages change, once checkFromSlot has read them.
// SECURITY: a process's word reaches only what is its own: `done`, `failed`,
// `phase` and `closed` name its own running jobs, in the one order an honest
// process sends them (phases forward, one answer, then `closed`); any other
// is a message it had no business sending, and kills it (the caller's
// onMessage throw), which fails only its own request. What it reports of its
// memory is shown, never used to judge it (the kernel's limit, or
// slot-memory.ts's reading of /proc, is).
import { JOB_PHASES } from '../../common/errors.js';
import { slotPidFields, type Logger } from '../../common/log.js';
import type { FromSlot } from '../../protocol/slot-wire.js';
import { writeChildLine } from '../child-guard/child-start.js';
import { answer, type Pending, type SlotProcess } from './slot-process.js';
import { fromWire } from '../child-guard/wire-error.js';
import { fromWireResult, withTelemetry } from '../../protocol/jobs.js';

export interface SlotEvents {
  observe?(metric: 'navigation' | 'script', seconds: number): void;
  egressRefused?(): void;
  /** CPU a slot spent after a job's answer closing its context and preparing its next (slot-job.ts): the service's. */
  preparationCpu?(seconds: number): void;
}

export interface SlotMessageHooks {
  readonly logger: Logger;
  readonly events: SlotEvents | undefined;
  /** Slot process `e` said it is ready (its Chromium launched). */
  readonly ready: (e: SlotProcess) => void;
  /** A job's context in slot process `e` is closed. */
  readonly jobEnded: (e: SlotProcess) => void;
  /** The service shuts down: its processes end in any order, and what they say of it is no error. */
  readonly stopping: () => boolean;
}

/** Takes message `msg` of slot process `e`. */
export function onSlotMessage(e: SlotProcess, msg: FromSlot, hooks: SlotMessageHooks): void {
  switch (msg.type) {
    case 'log':
      // Written by the front's logger with the process's pid.
      writeChildLine(
        e.child,
        hooks.logger,
        msg.line,
        { ...slotPidFields(e.child.pid), slot: e.slot.index },
        'slot process',
        hooks.stopping(),
      );
      return;
    case 'status':
      e.browser = msg.browser;
      return;
    case 'memory':
      e.memory = msg.memory;
      return;
    case 'ready':
      e.ready = true;
      e.chromiumSandbox = msg.chromiumSandbox;
      hooks.ready(e);
      return;
    case 'observe': {
      // SECURITY: the service's histograms take one figure a phase of the job it runs, within its deadline:
      // a process cannot fill them with figures of no request, or with sums no request could make.
      const job = [...e.jobs.values()].find((j) => !j.reported);
      if (job === undefined) throw new Error(`a slot process observed ${msg.metric} with no job running`);
      if (job.observed.has(msg.metric)) throw new Error(`a slot process observed ${msg.metric} twice for one job`);
      if (msg.seconds * 1000 > job.deadlineMs)
        throw new Error(`a slot process observed ${msg.seconds} s of ${msg.metric}, past its job's deadline`);
      job.observed.add(msg.metric);
      hooks.events?.observe?.(msg.metric, msg.seconds);
      return;
    }
    case 'egress-refused':
      hooks.events?.egressRefused?.();
      return;
    case 'done':
    case 'failed': {
      const job = running(e, msg.id, msg.type);
      // SECURITY: a failure of the service's own preparation is retried in another slot and charged to no
      // key: only a job still in `lease` may say so, or a script could have itself run again for free.
      if (msg.type === 'failed' && msg.error.housekeeping !== undefined && job.phase !== 'lease')
        throw new Error(`a slot process failed job ${msg.id} as its own preparation, in ${job.phase ?? 'lease'}`);
      job.reported = true;
      const outcome = msg.type === 'done' ? fromWireResult(msg.outcome) : fromWire(msg.error);
      // Where the job was is what the process said as it went (its phases), not what its answer claims.
      answer(job, outcome.ok ? outcome : withTelemetry(outcome, { phase: job.phase }));
      return;
    }
    case 'phase': {
      const job = running(e, msg.id, msg.type);
      // SECURITY: a job in `lease` fails as the service's own (another slot serves it, no key is charged):
      // a process that could step back could pass off its own death during the page or script as that.
      if (JOB_PHASES.indexOf(msg.phase) <= JOB_PHASES.indexOf(job.phase ?? 'lease'))
        throw new Error(`a slot process moved job ${msg.id} from ${job.phase ?? 'lease'} back to ${msg.phase}`);
      job.phase = msg.phase;
      return;
    }
    case 'closed': {
      const job = own(e, msg.id, msg.type);
      // SECURITY: closing a job it never answered would leave its caller unanswered and its deadline disarmed.
      if (!job.reported) throw new Error(`a slot process closed job ${msg.id} before it answered it`);
      e.jobs.delete(msg.id);
      job.closed();
      hooks.jobEnded(e);
      return;
    }
  }
}

/** Job `id` of process `e`; a message about a job it was never given, or whose context it closed, is bad. */
function own(e: SlotProcess, id: number, type: string): Pending {
  const job = e.jobs.get(id);
  if (job === undefined) throw new Error(`a slot process sent ${type} for job ${id}, which it does not run`);
  return job;
}

/** Job `id` of process `e`, not yet answered by it: only such a job has a phase or an answer to come. */
function running(e: SlotProcess, id: number, type: string): Pending {
  const job = own(e, id, type);
  if (job.reported) throw new Error(`a slot process sent ${type} for job ${id}, which it had answered`);
  return job;
}
