// What a slot process's messages change, once checkFromExecutor has read them.
// SECURITY: a process's word reaches only what is its own: `done`, `failed`
// and `closed` name its own jobs (another process's ids mean nothing here). What it
// reports of its memory is shown, never used to judge it (the kernel's limit,
// or slot-memory.ts's reading of /proc, is).
import type { Logger } from '../../common/log.js';
import type { FromExecutor } from '../../protocol/executor-messages.js';
import { writeChildLine } from './child-start.js';
import { answer, type SlotProcess } from './slot-process.js';
import { fromWire } from './wire-error.js';
import { fromWireResult } from '../../protocol/jobs.js';

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
export function onSlotMessage(e: SlotProcess, msg: FromExecutor, hooks: SlotMessageHooks): void {
  switch (msg.type) {
    case 'log':
      // Written by the front's logger with the process's pid.
      writeChildLine(
        e.child,
        hooks.logger,
        msg.line,
        { executor: e.child.pid, slot: e.slot.index },
        'executor',
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
    case 'observe':
      hooks.events?.observe?.(msg.metric, msg.seconds);
      return;
    case 'egress-refused':
      hooks.events?.egressRefused?.();
      return;
    case 'done': {
      const job = e.jobs.get(msg.id);
      if (job) answer(job, fromWireResult(msg.outcome));
      return;
    }
    case 'failed': {
      const job = e.jobs.get(msg.id);
      if (job) answer(job, fromWire(msg.error));
      return;
    }
    case 'phase': {
      const job = e.jobs.get(msg.id);
      if (job) job.phase = msg.phase;
      return;
    }
    case 'closed': {
      const job = e.jobs.get(msg.id);
      if (!job) return;
      e.jobs.delete(msg.id);
      job.closed();
      hooks.jobEnded(e);
      return;
    }
  }
}
