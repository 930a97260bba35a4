// SECURITY: how much a child may have the front log. Every line a child logs
// (its log messages, its stdout and stderr) is written by the front's logger,
// whose output buffer has no bound: a slot process that escaped our code could
// log faster than the front's stdout is read and grow the front's memory without
// limit (docs/performance.md, "Why the constants are what they are"). Each child
// gets a budget of lines and bytes a second; what is past it is dropped and
// counted, and the count is logged once a second while it grows.
import type { Logger } from '../../common/log.js';

/** Lines a second a child may have logged (a slot process logs a few a request; at debug, a few dozen). */
export const CHILD_LOG_LINES_PER_S = 500;
/** Bytes a second a child may have logged. */
export const CHILD_LOG_BYTES_PER_S = 512 * 1024;
/** What a child may log at once after a quiet spell: two seconds' worth. */
const BURST_S = 2;

export class LogBudget {
  readonly #logger: Logger;
  readonly #who: Record<string, unknown>;
  readonly #linesPerS: number;
  readonly #bytesPerS: number;
  readonly #now: () => number;
  #lines: number;
  #bytes: number;
  #at: number;
  #dropped = 0;
  #reported = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    logger: Logger,
    who: Record<string, unknown>,
    opts: { linesPerS?: number; bytesPerS?: number; now?: () => number } = {},
  ) {
    this.#logger = logger;
    this.#who = who;
    this.#linesPerS = opts.linesPerS ?? CHILD_LOG_LINES_PER_S;
    this.#bytesPerS = opts.bytesPerS ?? CHILD_LOG_BYTES_PER_S;
    this.#now = opts.now ?? (() => performance.now());
    this.#lines = this.#linesPerS * BURST_S;
    this.#bytes = this.#bytesPerS * BURST_S;
    this.#at = this.#now();
  }

  /** Lines dropped so far. */
  get dropped(): number {
    return this.#dropped;
  }

  /** Whether a line of `bytes` may be logged now (taken from the budget if so); a line refused is counted. */
  admit(bytes: number): boolean {
    const now = this.#now();
    const s = Math.max(0, now - this.#at) / 1000;
    this.#at = now;
    this.#lines = Math.min(this.#linesPerS * BURST_S, this.#lines + s * this.#linesPerS);
    this.#bytes = Math.min(this.#bytesPerS * BURST_S, this.#bytes + s * this.#bytesPerS);
    if (this.#lines >= 1 && this.#bytes >= bytes) {
      this.#lines -= 1;
      this.#bytes -= bytes;
      return true;
    }
    this.#dropped++;
    if (this.#timer === undefined) this.#timer = setTimeout(() => this.#report(), 1000).unref();
    return false;
  }

  #report(): void {
    this.#timer = undefined;
    const dropped = this.#dropped - this.#reported;
    this.#reported = this.#dropped;
    if (dropped === 0) return;
    this.#logger.warn(
      {
        ...this.#who,
        dropped,
        droppedTotal: this.#dropped,
        linesPerSecond: this.#linesPerS,
        bytesPerSecond: this.#bytesPerS,
      },
      'log lines of a child process dropped past its budget',
    );
  }
}
