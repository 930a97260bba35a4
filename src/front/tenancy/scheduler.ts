// Who runs next. At most MAX_CONCURRENCY scripts run on this instance; the rest
// wait, each for at most QUEUE_TIMEOUT_MS, in one queue per key; keys are
// served in turn (the one served longest ago first), so a burst from one key
// delays another key's request by at most one script. While several keys are
// active (running, waiting, or with a script ended within ACTIVE_GRACE_MS), a
// key takes no more than its share of the slots (MAX_CONCURRENCY / active keys,
// at least one): a slot still closing one key's heavy request is that key's,
// and its next request waits for it rather than take the slot another key is
// about to ask for again. A key with its own cap (maxConcurrency in the key file)
// holds a lease per running script in the limit store, which is shared by
// every instance when Redis is used.
import { randomUUID } from 'node:crypto';
import { ApiError } from '../../common/errors.js';
import { retryAfter } from './rate-limit.js';
import type { LimitStore } from './store.js';
import { background } from '../../common/background.js';

export interface SchedulerOptions {
  readonly maxConcurrency: number;
  /** Requests waiting, all keys together. */
  readonly queueLimit: number;
  readonly queueTimeoutMs: number;
  readonly store: LimitStore;
  /** A lease outlives its job by no more than this if release never comes (a crashed instance). */
  readonly leaseTtlMs: number;
}

export interface Ticket {
  /** The key's name. */
  readonly client: string;
  readonly maxConcurrency: number | undefined;
}

interface Waiter {
  readonly ticket: Ticket;
  done: boolean;
  grant(release: () => void): void;
  fail(e: ApiError): void;
}

const NO_LEASE = (): Promise<void> => Promise.resolve();

/** How soon a key whose cap is taken on another instance is asked for again. */
const SHARED_CAP_RETRY_MS = 100;
/**
 * A key whose last script ended this recently still counts as active: a client
 * sending one request after another is between two of them, not gone, and the
 * slot it will ask for again is not another key's to take meanwhile.
 */
export const ACTIVE_GRACE_MS = 1000;

export class FairScheduler {
  readonly #opts: SchedulerOptions;
  #running = 0;
  #queued = 0;
  /** Waiters per key, in arrival order. */
  readonly #queues = new Map<string, Waiter[]>();
  readonly #runningByKey = new Map<string, number>();
  /** When each key busy now (running or waiting) last started a script, as a sequence number. */
  readonly #lastServed = new Map<string, number>();
  #served = 0;
  /** Keys whose cap was taken elsewhere, and when to ask again. */
  readonly #retryAt = new Map<string, number>();
  #retryTimer: NodeJS.Timeout | undefined;
  /** Keys with nothing running or waiting, and when their last script ended (within ACTIVE_GRACE_MS). */
  readonly #recent = new Map<string, number>();
  #shareTimer: NodeJS.Timeout | undefined;
  #pumping = false;
  #again = false;
  /** Set by rejectWaiting: every later acquire fails with it. */
  #refusal: ApiError | undefined;

  constructor(opts: SchedulerOptions) {
    this.#opts = opts;
  }

  get running(): number {
    return this.#running;
  }

  get queued(): number {
    return this.#queued;
  }

  /** Waits for a slot; resolves with its release function (idempotent). */
  acquire(ticket: Ticket, signal?: AbortSignal): Promise<() => void> {
    return new Promise<() => void>((resolve, reject) => {
      if (this.#refusal) {
        reject(this.#refusal);
        return;
      }
      if (signal?.aborted) {
        reject(new ApiError('SERVICE_UNAVAILABLE', 'Client went away'));
        return;
      }
      const idle = this.#running < this.#opts.maxConcurrency && this.#queued === 0;
      if (!idle && this.#queued >= this.#opts.queueLimit && !this.#displaceFor(ticket.client)) {
        reject(this.#busy('the queue is full'));
        return;
      }
      const timer = setTimeout(
        () => leave(this.#busy(`no free slot within ${this.#opts.queueTimeoutMs} ms`)),
        this.#opts.queueTimeoutMs,
      );
      const onAbort = (): void => leave(new ApiError('SERVICE_UNAVAILABLE', 'Client went away'));
      const cleanup = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const waiter: Waiter = {
        ticket,
        done: false,
        grant: (release) => {
          cleanup();
          resolve(release);
        },
        fail: (e) => {
          cleanup();
          reject(e);
        },
      };
      const leave = (e: ApiError): void => {
        if (this.#dequeue(waiter)) waiter.fail(e);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const queue = this.#queues.get(ticket.client);
      if (queue) queue.push(waiter);
      else this.#queues.set(ticket.client, [waiter]);
      this.#queued++;
      background(this.#pump(), 'scheduler pump');
    });
  }

  /** Shutdown: every waiting request, and every later one, fails with e; running ones keep their slots. */
  rejectWaiting(e: ApiError): void {
    this.#refusal = e;
    for (const q of [...this.#queues.values()]) for (const w of [...q]) if (this.#dequeue(w)) w.fail(e);
  }

  #busy(reason: string): ApiError {
    return new ApiError('RATE_LIMIT_EXCEEDED', `Rate limit exceeded: ${reason}`, {
      headers: { 'Retry-After': retryAfter(this.#opts.queueTimeoutMs) },
    });
  }

  /** The queue is full: the key holding most of it gives up its newest waiter, if it holds more than the arriving key would. */
  #displaceFor(client: string): boolean {
    const own = this.#queues.get(client)?.length ?? 0;
    let hog: Waiter[] | undefined;
    for (const [k, q] of this.#queues) if (k !== client && q.length > (hog?.length ?? 0)) hog = q;
    if (!hog || hog.length <= own + 1) return false;
    const victim = hog[hog.length - 1];
    if (!victim || !this.#dequeue(victim)) return false;
    victim.fail(this.#busy('the queue is full and other keys are waiting'));
    return true;
  }

  /** Takes a waiter out of its queue; false when it was already out. */
  #dequeue(w: Waiter): boolean {
    if (w.done) return false;
    w.done = true;
    const q = this.#queues.get(w.ticket.client);
    const i = q?.indexOf(w) ?? -1;
    if (q && i >= 0) q.splice(i, 1);
    if (q?.length === 0) {
      this.#queues.delete(w.ticket.client);
      if (!this.#runningByKey.has(w.ticket.client)) this.#lastServed.delete(w.ticket.client);
    }
    this.#queued--;
    return true;
  }

  /**
   * The next waiter to run: the first of the key served longest ago (a key not
   * served since it was last idle goes first), skipping keys at their cap.
   */
  #next(now: number): Waiter | undefined {
    let best: Waiter | undefined;
    let bestServed = Infinity;
    let retryAt = Infinity;
    const share = this.#share(now);
    let heldBack = false;
    for (const [client, q] of this.#queues) {
      const w = q[0];
      if (!w || this.#atCap(w)) continue;
      if ((this.#runningByKey.get(client) ?? 0) >= share) {
        heldBack = true;
        continue;
      }
      const at = this.#retryAt.get(client) ?? 0;
      if (at > now) {
        retryAt = Math.min(retryAt, at);
        continue;
      }
      const served = this.#lastServed.get(client) ?? -1;
      if (served < bestServed) {
        best = w;
        bestServed = served;
      }
    }
    // Held back only for a key between two requests: ask again when it no longer counts.
    if (best === undefined && heldBack) this.#pumpWhenRecentEnds(now);
    // Only keys whose cap is taken on another instance are waiting: ask again later.
    if (best === undefined && retryAt !== Infinity && this.#retryTimer === undefined) {
      this.#retryTimer = setTimeout(() => {
        this.#retryTimer = undefined;
        background(this.#pump(), 'scheduler pump');
      }, retryAt - now);
      this.#retryTimer.unref();
    }
    return best;
  }

  /** Whether the waiter's key runs as many scripts here as its own cap allows. */
  #atCap(w: Waiter): boolean {
    const cap = w.ticket.maxConcurrency;
    return cap !== undefined && (this.#runningByKey.get(w.ticket.client) ?? 0) >= cap;
  }

  /** How many slots one key may hold now: MAX_CONCURRENCY shared by the active keys, at least one. */
  #share(now: number): number {
    for (const [client, at] of this.#recent) if (now - at >= ACTIVE_GRACE_MS) this.#recent.delete(client);
    // A key waiting only for its own cap (here, or taken on another instance) cannot use a
    // slot now: it does not count, so it cannot hold one idle against another key.
    const waiting = [...this.#queues]
      .filter(([client, q]) => q[0] !== undefined && !this.#atCap(q[0]) && (this.#retryAt.get(client) ?? 0) <= now)
      .map(([client]) => client);
    const active = new Set([...waiting, ...this.#runningByKey.keys(), ...this.#recent.keys()]);
    return Math.max(1, Math.floor(this.#opts.maxConcurrency / Math.max(1, active.size)));
  }

  /** A pump when the first key between two requests stops counting as active. */
  #pumpWhenRecentEnds(now: number): void {
    if (this.#shareTimer !== undefined || this.#recent.size === 0) return;
    const first = Math.min(...this.#recent.values());
    this.#shareTimer = setTimeout(
      () => {
        this.#shareTimer = undefined;
        background(this.#pump(), 'scheduler pump');
      },
      Math.max(0, first + ACTIVE_GRACE_MS - now),
    );
    this.#shareTimer.unref();
  }

  async #pump(): Promise<void> {
    if (this.#pumping) {
      this.#again = true;
      return;
    }
    this.#pumping = true;
    try {
      do {
        this.#again = false;
        while (this.#running < this.#opts.maxConcurrency) {
          const w = this.#next(Date.now());
          if (!w) break;
          // The slot is reserved while the shared cap is asked for.
          this.#running++;
          const granted = await this.#lease(w);
          if (granted === undefined || !this.#dequeue(w)) {
            this.#running--;
            if (granted) await granted();
            continue;
          }
          this.#start(w, granted);
        }
      } while (this.#again);
    } finally {
      this.#pumping = false;
    }
  }

  /** The function that returns the waiter's lease (a key without a cap needs none); undefined when the cap is taken. */
  async #lease(w: Waiter): Promise<(() => Promise<void>) | undefined> {
    const { client, maxConcurrency: cap } = w.ticket;
    if (cap === undefined) return NO_LEASE;
    const token = randomUUID();
    const ok = await this.#opts.store.acquire(`key:${client}`, cap, token, this.#opts.leaseTtlMs).catch(() => false);
    if (ok) return () => this.#opts.store.release(`key:${client}`, token).catch(() => undefined);
    this.#retryAt.set(client, Date.now() + SHARED_CAP_RETRY_MS);
    return undefined;
  }

  #start(w: Waiter, returnLease: () => Promise<void>): void {
    const client = w.ticket.client;
    this.#recent.delete(client);
    this.#runningByKey.set(client, (this.#runningByKey.get(client) ?? 0) + 1);
    this.#retryAt.delete(client);
    this.#lastServed.set(client, this.#served++);
    let released = false;
    w.grant(() => {
      if (released) return;
      released = true;
      this.#running--;
      const n = (this.#runningByKey.get(client) ?? 1) - 1;
      if (n > 0) this.#runningByKey.set(client, n);
      else {
        this.#runningByKey.delete(client);
        if (!this.#queues.has(client)) this.#recent.set(client, Date.now());
      }
      if (n <= 0 && !this.#queues.has(client)) this.#lastServed.delete(client);
      background(returnLease(), 'returning a lease');
      background(this.#pump(), 'scheduler pump');
    });
  }
}
