// Each slot process's channel to the egress process (the socket its
// Chromium's traffic goes through): handed out when the egress process is
// ready, taken back when it closes the channel or dies. SECURITY: a slot
// process gets a new channel only when both sides agree its last one is gone,
// and none is handed out while any slot process still holds a context of a
// previous egress process (whose ports the new one could give to another
// request's context). One that does not drain in time, or whose channel
// cannot be made, is killed (and replaced by the supervisor).
import { ApiError } from '../../common/errors.js';
import type { Logger } from '../../common/log.js';
import { EGRESS_STOPPED } from '../../protocol/jobs.js';
import type { EgressSupervisor } from './egress-supervisor.js';
import { answer, type SlotProcess } from './slot-process.js';

/** How long a slot process may take, once the egress process died, to close every context that used it. */
export const EGRESS_DRAIN_TIMEOUT_MS = 10_000;

export interface SlotChannelsOptions {
  readonly egress: EgressSupervisor;
  readonly logger: Logger;
  /** The supervisor's slot processes (those that exited are taken out). */
  readonly procs: ReadonlySet<SlotProcess>;
  /** Ends a slot process now (its exit frees its slot for a replacement). */
  readonly kill: (e: SlotProcess) => void;
  /** The supervisor is closed: nothing more is handed out. */
  readonly closed: () => boolean;
}

export class SlotChannels {
  readonly #opts: SlotChannelsOptions;
  #drainTimer: NodeJS.Timeout | undefined;

  constructor(opts: SlotChannelsOptions) {
    this.#opts = opts;
  }

  /**
   * The egress process died: the requests in flight fail with 500 now (their
   * traffic went through it); each slot process ends them, closes every context
   * that used a port of it and says so (egress-drained). One that has not
   * within EGRESS_DRAIN_TIMEOUT_MS is killed (and replaced).
   */
  egressStopped(): void {
    const generation = this.#opts.egress.generation;
    for (const e of this.#opts.procs) {
      // Every channel of the dead process is closed with it.
      if (e.channelOf === generation) e.channelClosed = true;
      this.free(e);
      for (const [id, job] of e.jobs) {
        answer(job, new ApiError('INTERNAL_SERVER_ERROR', EGRESS_STOPPED, { cause: 'the egress process exited' }));
        e.send({ type: 'abort', id, error: { code: 'INTERNAL_SERVER_ERROR', message: EGRESS_STOPPED } });
      }
    }
    clearTimeout(this.#drainTimer);
    this.#drainTimer = setTimeout(() => {
      for (const e of this.#opts.procs)
        if (!e.gone && e.channelOf !== 0 && e.channelOf <= generation) {
          this.#opts.logger.error(
            { pid: e.child.pid, slot: e.slot.index, ms: EGRESS_DRAIN_TIMEOUT_MS },
            'a slot process did not close the contexts of the stopped egress process in time; killing it',
          );
          this.#opts.kill(e);
        }
    }, EGRESS_DRAIN_TIMEOUT_MS);
    this.#drainTimer.unref();
  }

  /**
   * The egress process closed slot process `index`'s channel `channel`: once the
   * process has closed the contexts that used it too (egress-drained), it gets
   * another.
   */
  egressChannelClosed(index: number, channel: number): void {
    for (const e of this.#opts.procs)
      if (e.index === index && e.channelId === channel && e.channelOf === this.#opts.egress.generation) {
        e.channelClosed = true;
        this.free(e);
      }
  }

  /**
   * SECURITY: a slot process is given a new channel only when both sides agree
   * its last one is gone: the egress process closed it (or died) AND the slot
   * process closed every context that used it. Its egress-drained alone, while
   * its channel is open, changes nothing (a forged one used to make the front
   * hand a new channel for each, without end, and let one process hold many).
   */
  free(e: SlotProcess): void {
    if (e.channelOf === 0 || !e.channelClosed || !e.drainedSaid || e.gone) return;
    e.channelOf = 0;
    e.channelId = 0;
    e.channelClosed = false;
    e.drainedSaid = false;
    this.give();
  }

  /**
   * Hands a channel to the current egress process to each live slot process
   * without one. SECURITY: only while no slot process holds a context of a
   * previous one: such a context's port could otherwise be given, by the new
   * process, to another request's context.
   */
  give(): void {
    const { egress, logger } = this.#opts;
    if (this.#opts.closed() || !egress.ready) return;
    const current = egress.generation;
    const live = [...this.#opts.procs].filter((e) => !e.gone);
    if (live.some((e) => e.channelOf !== 0 && e.channelOf !== current)) return;
    clearTimeout(this.#drainTimer);
    for (const e of live) {
      if (e.channelOf !== 0) continue;
      e.channelOf = current;
      e.channelId = 0;
      e.channelClosed = false;
      e.drainedSaid = false;
      // SECURITY: as root, the context ports opened over this channel take its slot's user's sockets alone.
      egress.channel(e.index, e.slot.runAs?.uid).then(
        ({ socket, channel }) => {
          if (!e.gone && !socket.destroyed && e.channelOf === current) {
            e.channelId = channel;
            e.send({ type: 'egress-channel' }, socket);
            return;
          }
          socket.destroy();
          // The egress process stopped while the channel was made (its end was closed):
          // sent now, it would carry no socket, and the slot process would wait for one
          // it never gets. It gets a channel to the next egress process instead.
          if (!e.gone && e.channelOf === current) {
            e.channelOf = 0;
            this.give();
          }
        },
        (err: unknown) => {
          // The egress process stopped meanwhile (its replacement hands another), or no socket could be made.
          if (e.channelOf === current) e.channelOf = 0;
          logger.error({ err, pid: e.child.pid }, 'no channel to the egress process for a slot process');
          if (egress.ready && egress.generation === current) this.#opts.kill(e);
        },
      );
    }
  }
}
