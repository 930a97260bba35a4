// Waiting for a condition the test cannot be told about, with a deadline.

/** Polls cond every everyMs until it holds; throws naming what was awaited after timeoutMs. */
export async function until(
  cond: () => boolean | Promise<boolean>,
  what: string,
  opts: { timeoutMs?: number; everyMs?: number } = {},
): Promise<void> {
  const end = Date.now() + (opts.timeoutMs ?? 10_000);
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, opts.everyMs ?? 25));
  }
}

/** Awaits p, or throws naming what was awaited after timeoutMs: so a test of a missing close fails instead of hanging. */
export async function within<T>(p: Promise<T>, what: string, timeoutMs = 30_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), timeoutMs);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}
