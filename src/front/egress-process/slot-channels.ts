// Each slot process's channel to the egress process (the socket its
// Chromium's traffic goes through): connected by the front to the egress
// process before the slot process is spawned and given to it at its spawn
// (stdio, EGRESS_CHANNEL_FD); no descriptor crosses later. SECURITY: a slot
// process holds one channel for its whole life. When the egress process dies,
// the requests in flight fail and every slot process is replaced (its
// contexts' ports were the dead process's, which a new one could give to
// another request's context); a replacement is spawned once a new egress
// process is ready, with a channel to it. One whose channel the egress
// process closed is replaced too.
import { ApiError, internalFailure, notPrepared } from '../../common/errors.js';
import type { Logger } from '../../common/log.js';
import { EGRESS_STOPPED } from '../../protocol/jobs.js';
import type { EgressSupervisor } from './egress-supervisor.js';
import { answer, type SlotProcess } from '../slots/slot-process.js';

export interface SlotChannelsOptions {
  readonly egress: EgressSupervisor;
  readonly logger: Logger;
  /** The supervisor's slot processes (those that exited are taken out). */
  readonly procs: ReadonlySet<SlotProcess>;
  /** Ends a slot process now; with `replace`, its slot gets a new process at its exit. */
  readonly kill: (e: SlotProcess, replace: boolean) => void;
}

export class SlotChannels {
  readonly #opts: SlotChannelsOptions;

  constructor(opts: SlotChannelsOptions) {
    this.#opts = opts;
  }

  /** Whether slot process `e` holds an open channel of the current egress process: only then is it given a job. */
  current(e: SlotProcess): boolean {
    const { egress } = this.#opts;
    return egress.ready && e.channelOf === egress.generation && !e.channelClosed;
  }

  /**
   * The egress process died: the requests in flight fail with 500 now (their
   * traffic went through it), and every slot process is replaced, each once
   * a new egress process is ready.
   */
  egressStopped(shuttingDown = false): void {
    for (const e of this.#opts.procs) {
      e.channelClosed = true;
      for (const [id, job] of e.jobs) {
        // As the service shuts down (its whole group signalled), the job ends as the shutdown ends it; one whose
        // page was not reached yet waits for another slot (housekeeping), as when its preparation fails.
        const error = shuttingDown
          ? new ApiError('SERVICE_UNAVAILABLE', 'Service unavailable: shutting down')
          : job.phase === 'lease'
            ? notPrepared('egress-check', new Error('the egress process exited'))
            : internalFailure('egress-stopped', EGRESS_STOPPED, 'the egress process exited');
        answer(job, error);
        e.send({ type: 'abort', id, error: { code: error.code, message: error.message } });
      }
      // One already being ended (killed, closed while idle, retired) is replaced as its end says.
      if (!shuttingDown && !e.gone && !e.retiring) this.#opts.kill(e, true);
    }
  }

  /**
   * The egress process closed slot process `index`'s channel `channel`: the process cannot serve, and is
   * killed (its exit is a restart, as any). One that exited on its own closed its channel first: the egress
   * process may say so before the front sees the exit, which stays the process's own (its restart counted).
   */
  egressChannelClosed(index: number, channel: number): void {
    for (const e of this.#opts.procs)
      if (e.index === index && e.channelId === channel && !e.gone && !e.retiring && !e.channelClosed) {
        e.channelClosed = true;
        this.#opts.kill(e, false);
      }
  }
}
