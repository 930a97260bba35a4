// What a slot process's messages change, once checkFromExecutor has read them.
// SECURITY: a process's word reaches only what is its own: `done`, `failed`
// and `closed` name its own jobs (another process's ids mean nothing here),
// `activity` counts only while the front runs a job in it (and is checked
// against the kernel's count, cpu-share.ts), and `egress-drained` alone frees
// no channel (slot-channels.ts). What it reports of its memory is shown, never
// used to judge it (slot-memory.ts reads /proc).
import type { Logger } from '../../common/log.js';
import type { FromExecutor } from '../../protocol/executor-messages.js';
import { writeChildLine } from './child-start.js';
import type { CpuShare } from './cpu-share.js';
import type { SlotChannels } from './slot-channels.js';
import { answer, type SlotProcess } from './slot-process.js';
import { fromWire } from './wire-error.js';

export interface SlotEvents {
  observe?(metric: 'navigation' | 'script', seconds: number): void;
  egressRefused?(): void;
}

export interface SlotMessageHooks {
  readonly logger: Logger;
  readonly events: SlotEvents | undefined;
  readonly share: CpuShare;
  readonly channels: SlotChannels;
  /** Slot process `e` said it is ready (its Chromium launched). */
  readonly ready: (e: SlotProcess) => void;
  /** A job's context in slot process `e` is closed. */
  readonly jobEnded: (e: SlotProcess) => void;
}

/** Takes message `msg` of slot process `e`. */
export function onSlotMessage(e: SlotProcess, msg: FromExecutor, hooks: SlotMessageHooks): void {
  switch (msg.type) {
    case 'log':
      // Written by the front's logger with the process's pid.
      writeChildLine(e.child, hooks.logger, msg.line, { executor: e.child.pid, slot: e.slot.index }, 'executor');
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
    case 'activity':
      // A claim, checked against the kernel's count before another slot yields to it (cpu-share.ts).
      if (e.slot.proc === e && e.jobs.size > 0) hooks.share.said(e.slot.index, msg.activity);
      return;
    case 'done': {
      const job = e.jobs.get(msg.id);
      if (job) answer(job, msg.outcome);
      return;
    }
    case 'failed': {
      const job = e.jobs.get(msg.id);
      if (job) answer(job, fromWire(msg.error));
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
    case 'egress-drained':
      e.drainedSaid = true;
      hooks.channels.free(e);
      return;
  }
}
