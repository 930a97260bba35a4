// A wait with a deadline: the one shape of "this, or that after ms" the
// processes use, so that each caller says only what lateness means to it.

/**
 * Settles as `work` does, or, if it has not by `ms`, as `late()` does (its
 * value, or what it throws). The timer is cleared either way; `work` goes on
 * unawaited (its later rejection is handled here, not left unhandled).
 */
export async function within<T, L = T>(work: Promise<T>, ms: number, late: () => L): Promise<T | L> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<L>((resolve, reject) => {
    timer = setTimeout(() => {
      try {
        resolve(late());
      } catch (e) {
        reject(e instanceof Error ? e : new Error(String(e)));
      }
    }, ms);
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
