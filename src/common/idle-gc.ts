// Memory taken under load goes back to the system once the process is idle.

/**
 * After this long with no script running or waiting, a process's V8 heap is
 * collected once (the front's, and each slot process's, where the jobs' garbage
 * is), so memory taken under load goes back to the system instead of staying
 * at its high-water mark. Needs node --expose-gc, which npm start, the
 * container and the bench pass; without it nothing is done.
 *
 * The collection is V8's last-resort kind (what V8 does before giving up on
 * memory): it compacts and hands pooled and emptied pages back, where a plain
 * full collection frees objects but keeps the pages. It is a short pause, once,
 * while nothing runs (docs/performance.md, "Why the constants are what they are").
 */
const IDLE_GC_MS = 5_000;

type GcOptions = { type: 'major'; execution: 'sync'; flavor: 'last-resort' };

/** Starts watching `busy()`; returns the function that stops it. */
export function collectWhenIdle(busy: () => boolean): () => void {
  const gc = (globalThis as { gc?: (options?: GcOptions) => void }).gc;
  if (typeof gc !== 'function') return () => undefined;
  let lastBusy = Date.now();
  let collected = true;
  const timer = setInterval(() => {
    if (busy()) {
      lastBusy = Date.now();
      collected = false;
    } else if (!collected && Date.now() - lastBusy >= IDLE_GC_MS) {
      collected = true;
      gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
    }
  }, 1000);
  timer.unref();
  return () => clearInterval(timer);
}
