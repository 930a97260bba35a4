// Contexts made ahead of demand: each a fresh context with a blank page in the
// current Chromium, used once, replaced once a request's context is gone.
import { background } from '../../common/background.js';
import type { Logger } from '../../common/log.js';
import { RELAUNCH_BACKOFF_MS, type Generation } from './launch.js';
import type { PageLease } from './lease.js';

/** A context made ahead of demand; ready once its page is open. */
interface Spare {
  readonly gen: Generation;
  readonly lease: Promise<PageLease>;
  ready: boolean;
}

export interface SparesOptions {
  /** How many are kept ready. */
  readonly count: number;
  /** A new lease, in the current Chromium (launching one if none is up). */
  readonly make: () => Promise<PageLease>;
  /** The Chromium spares are made in now, if one is up. */
  readonly current: () => Generation | undefined;
  /** The host is shut down: no more are made. */
  readonly closed: () => boolean;
  /** A spare began to be made, or is ready (or failed): `ready` may have changed. */
  readonly onChange?: () => void;
  readonly logger: Logger;
}

export class Spares {
  readonly #opts: SparesOptions;
  readonly #spares: Spare[] = [];

  constructor(opts: SparesOptions) {
    this.#opts = opts;
  }

  /** Open and not yet used. */
  get ready(): number {
    return this.#spares.filter((s) => s.ready).length;
  }

  /** Spares in gen (counted in its live contexts, but no request's). */
  countIn(gen: Generation): number {
    return this.#spares.filter((s) => s.gen === gen).length;
  }

  /**
   * A spare if one is usable, else a new lease. The newest ready spare is
   * taken, not the oldest: it was the faster choice (docs/performance.md says
   * under which Chromium flags).
   */
  async take(): Promise<PageLease> {
    while (this.#spares.length > 0) {
      const readyAt = this.#spares.findLastIndex((s) => s.ready);
      // None ready (under load): the oldest one being made is the nearest to ready.
      const spare = this.#spares.splice(readyAt >= 0 ? readyAt : 0, 1)[0] as Spare;
      const lease = await spare.lease.catch(() => undefined);
      // SECURITY: a spare whose egress session is gone (its egress process stopped) is never leased.
      if (
        lease &&
        !lease.page.isClosed() &&
        spare.gen.browser.connected &&
        !spare.gen.retiring &&
        lease.egress.state === 'spare'
      )
        return lease;
      if (lease) background(lease.close(), 'closing a context', this.#opts.logger);
    }
    return await this.#opts.make();
  }

  /** Once every spare being made now is ready or failed. */
  async settled(): Promise<void> {
    await Promise.allSettled(this.#spares.map((s) => s.lease));
  }

  /** Makes spares in the current Chromium until there are `count`. */
  fill(): void {
    const gen = this.#opts.current();
    if (this.#opts.closed() || !gen?.browser.connected) return;
    while (this.#spares.length < this.#opts.count) {
      const spare: Spare = { gen, lease: this.#opts.make(), ready: false };
      spare.lease.then(
        () => {
          spare.ready = true;
          this.#opts.onChange?.();
        },
        () => {
          // A spare that could not be made (its egress session was refused: the egress
          // process stopped meanwhile) would hold its place for ever: another is made.
          const i = this.#spares.indexOf(spare);
          if (i >= 0) this.#spares.splice(i, 1);
          this.#opts.onChange?.();
          this.refillSoon();
        },
      );
      this.#spares.push(spare);
      this.#opts.onChange?.();
    }
  }

  /** Spares again after a moment (a failure that repeats at once must not spin). */
  refillSoon(): void {
    if (this.#opts.closed()) return;
    setTimeout(() => this.fill(), RELAUNCH_BACKOFF_MS).unref();
  }

  /** Closes the spares `which` picks (all by default). */
  drop(which: (gen: Generation) => boolean = () => true): void {
    for (let i = this.#spares.length - 1; i >= 0; i--) {
      const spare = this.#spares[i] as Spare;
      if (!which(spare.gen)) continue;
      this.#spares.splice(i, 1);
      void spare.lease.then(
        (l) => l.close(),
        () => undefined,
      );
    }
    this.#opts.onChange?.();
  }
}
