// Work that nobody awaits goes through here. Node 24 ends the process on an
// unhandled rejection, so every promise left to run on its own must have its
// rejection handled: this logs it (with its stack) and lets the process go on.
import type { Logger } from './log.js';

/**
 * Runs `work` without waiting for it; a rejection is logged as `what failed`.
 * Without a logger (code that has none, such as the scheduler), the error goes
 * to stderr with its stack.
 */
export function background(work: PromiseLike<unknown>, what: string, logger?: Pick<Logger, 'error'>): void {
  Promise.resolve(work).then(undefined, (err: unknown) => {
    if (logger) logger.error({ err, what }, 'background work failed');
    else
      process.stderr.write(
        `pagescript: background work failed: ${what}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
      );
  });
}
