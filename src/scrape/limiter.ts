// At most N scripts run at once; the rest wait in a bounded queue, each for a
// bounded time, in arrival order.
import { ApiError } from '../errors.js';

export interface LimiterOptions {
  readonly maxConcurrency: number;
  readonly queueLimit: number;
  readonly queueTimeoutMs: number;
}

interface Waiter {
  grant(): void;
}

export class ConcurrencyLimiter {
  readonly #opts: LimiterOptions;
  #running = 0;
  readonly #queue: Waiter[] = [];

  constructor(opts: LimiterOptions) {
    this.#opts = opts;
  }

  get running(): number {
    return this.#running;
  }

  get queued(): number {
    return this.#queue.length;
  }

  #busy(reason: string): ApiError {
    const retryAfterS = Math.max(1, Math.ceil(this.#opts.queueTimeoutMs / 1000));
    return new ApiError('RATE_LIMIT_EXCEEDED', `Rate limit exceeded: ${reason}`, { headers: { 'Retry-After': String(retryAfterS) } });
  }

  /** Waits for a slot; resolves with its release function (call it exactly once). */
  async acquire(signal?: AbortSignal): Promise<() => void> {
    const release = (): void => {
      this.#running--;
      this.#queue.shift()?.grant();
    };
    let released = false;
    const once = (): void => {
      if (!released) {
        released = true;
        release();
      }
    };
    if (this.#running < this.#opts.maxConcurrency && this.#queue.length === 0) {
      this.#running++;
      return once;
    }
    if (this.#queue.length >= this.#opts.queueLimit) throw this.#busy('the queue is full');
    return await new Promise<() => void>((resolve, reject) => {
      const waiter: Waiter = {
        grant: () => {
          cleanup();
          this.#running++;
          resolve(once);
        },
      };
      const leave = (e: ApiError): void => {
        cleanup();
        const i = this.#queue.indexOf(waiter);
        if (i >= 0) this.#queue.splice(i, 1);
        reject(e);
      };
      const timer = setTimeout(() => leave(this.#busy(`no free slot within ${this.#opts.queueTimeoutMs} ms`)), this.#opts.queueTimeoutMs);
      const onAbort = (): void => leave(new ApiError('SERVICE_UNAVAILABLE', 'Client went away'));
      signal?.addEventListener('abort', onAbort, { once: true });
      const cleanup = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      this.#queue.push(waiter);
    });
  }
}
