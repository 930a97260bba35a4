// The script's deadline as every wait on the host sees it: a wait that would
// outlast the script (or wait for ever) ends just after the deadline, so the
// deadline ends the script first with its own error, and nothing waits unbounded.

export interface Clock {
  /** Milliseconds left before the script's deadline (at least 1). */
  remainingMs(): number;
  /** The script's default timeout (page.setDefaultTimeout / setDefaultNavigationTimeout); Puppeteer's 30 s when absent. */
  defaultTimeoutMs?(navigation: boolean): number;
  /**
   * The signal of the call being started, when the script gave one: aborted when
   * the script's AbortSignal aborts, so Puppeteer ends the wait on the host too.
   */
  signal?(): AbortSignal | undefined;
}

/**
 * How far past the script's deadline a wait that would outlast the script is
 * allowed to run: the deadline ends the script first, with the timeout error,
 * and the wait never times out early with a TimeoutError the script could catch.
 */
export const PAST_DEADLINE_MS = 2_000;

/**
 * A wait's timeout kept honest: one that ends before the deadline stays as it
 * is; one that would outlast the script (or 0, "wait forever") ends just after
 * the deadline. SECURITY: every wait stays bounded.
 */
export function capToDeadline(ms: number, clock: Clock): number {
  const left = clock.remainingMs();
  return ms === 0 || ms >= left ? left + PAST_DEADLINE_MS : ms;
}

/** Puppeteer's own default timeout (its TimeoutSettings). */
export const PUPPETEER_DEFAULT_TIMEOUT_MS = 30_000;
