// The request slots (MAX_CONCURRENCY of them) and how a job gets one: a free
// slot whose process serves, chosen by slot-choice.ts; else a slot closed
// while idle has its process started, and the job waits for it (or for any
// slot that frees first) within the request's time. A slot whose process is
// being replaced is given nothing. The supervisor wakes the waiting jobs
// whenever a slot may have freed.
import { ApiError } from '../../common/errors.js';
import type { Logger } from '../../common/log.js';
import { choose } from './slot-choice.js';
import type { Slot } from './slot-process.js';
import type { RunAs } from '../host/users.js';

export interface SlotTableOptions {
  readonly count: number;
  /** Slot i's user at i (undefined: the front's own). */
  readonly users: readonly RunAs[] | undefined;
  readonly logger: Logger;
  /** The supervisor is closed: no slot is given. */
  readonly closed: () => boolean;
  /** Starts the process of a slot closed while idle (on demand). */
  readonly start: (slot: Slot) => Promise<void>;
  /** Whether a slot without a process may get one now (not while the service shuts down). */
  readonly mayStart: () => boolean;
  /**
   * Whether a serving slot may take a job now: its channel is the current egress
   * process's (one still holding a stopped one's would fail the job when it learns).
   */
  readonly usable: (slot: Slot) => boolean;
}

export class SlotTable {
  readonly slots: readonly Slot[];
  readonly #opts: SlotTableOptions;
  readonly #waiting = new Set<() => void>();

  constructor(opts: SlotTableOptions) {
    this.#opts = opts;
    this.slots = Array.from({ length: opts.count }, (_, index) => ({
      index,
      runAs: opts.users?.[index],
      proc: undefined,
      busy: false,
      restartTimer: undefined,
      starting: false,
      idleTimer: undefined,
      retiredOnce: false,
    }));
  }

  /**
   * A free slot whose process is ready, the lowest first (a lone request takes
   * slot 0, whose process is never closed while idle); else a free slot without
   * a process gets one started, and the request waits for it (or for any slot
   * that frees first) within the request's time. A slot whose process is being
   * replaced, or that has no channel to the current egress process yet, is given
   * nothing. The slot returned is busy (the job's).
   */
  async pick(signal?: AbortSignal, client?: string): Promise<Slot> {
    const { closed: isClosed, logger } = this.#opts;
    for (;;) {
      if (isClosed()) throw new ApiError('SERVICE_UNAVAILABLE', 'Service unavailable: shutting down');
      if (signal?.aborted)
        throw signal.reason instanceof ApiError
          ? signal.reason
          : new ApiError('SERVICE_UNAVAILABLE', 'The request was cancelled');
      const ready = choose(
        this.slots.filter((s) => !s.busy && s.proc?.serving === true && this.#opts.usable(s)),
        client,
        Date.now(),
        this.slots.filter(
          (s) =>
            !s.busy && s.proc?.serving !== true && (s.proc !== undefined || s.restartTimer !== undefined || s.starting),
        ),
      );
      if (ready) {
        ready.busy = true;
        if (client !== undefined) ready.last = { client, at: Date.now() };
        clearTimeout(ready.idleTimer);
        ready.idleTimer = undefined;
        return ready;
      }
      // Shutting down, no process is started: a job no live slot process can take is answered now.
      if (!this.#opts.mayStart()) {
        if (!this.slots.some((s) => s.proc !== undefined && !s.proc.gone))
          throw new ApiError('SERVICE_UNAVAILABLE', 'Service unavailable: shutting down');
      } else {
        const closed = this.slots.find(
          (s) => !s.busy && s.proc === undefined && s.restartTimer === undefined && !s.starting,
        );
        if (closed) {
          logger.info({ slot: closed.index }, 'starting the process of a slot closed while idle');
          this.#opts.start(closed).catch((err: unknown) => {
            // Stopped with the service before it was ready: nothing to say.
            if (!isClosed()) logger.error({ err, slot: closed.index }, 'a slot process did not start');
          });
        }
      }
      await new Promise<void>((resolve) => {
        const wake = (): void => {
          this.#waiting.delete(wake);
          signal?.removeEventListener('abort', wake);
          resolve();
        };
        this.#waiting.add(wake);
        signal?.addEventListener('abort', wake, { once: true });
      });
    }
  }

  /** A slot may have freed (or the supervisor closed): every waiting job looks again. */
  wake(): void {
    for (const wake of [...this.#waiting]) wake();
  }
}
