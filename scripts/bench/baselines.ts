// Raw Puppeteer, the bench's baselines: the same work as a request done without
// the service, on the same binary and page.
import puppeteer, { type Browser, type BrowserContext, type Page } from 'puppeteer';
import { CHROMIUM_PATHS, type ChromiumMode } from '../../src/common/config.js';

export async function rawFresh(browser: Browser, url: string): Promise<string> {
  const ctx = await browser.createBrowserContext();
  try {
    const page = await ctx.newPage();
    await page.goto(url, { waitUntil: 'load' });
    return await page.title();
  } finally {
    await ctx.close();
  }
}

/**
 * Raw Puppeteer doing a request's work as the service does it: contexts and
 * pages made ahead (PREWARM_CONTEXTS' default of spares; the newest ready one
 * taken, one made inline when none is left), goto+title, and the context closed
 * after without waiting, its replacement made once it is closed (between
 * requests, as src/slot/browser/spares.ts does). What a fresh context costs even when it
 * is made ahead: the baseline for the service's own overhead, beside the
 * floor's reused page.
 */
export function rawPrepared(
  browser: Browser,
  url: string,
  spares = 2,
): { call: () => Promise<string>; close: () => Promise<void> } {
  type Spare = { made: Promise<{ ctx: BrowserContext; page: Page }>; ready: boolean };
  const pool: Spare[] = [];
  const closing = new Set<Promise<void>>();
  let closed = false;
  const make = (): Spare => {
    const made = (async () => {
      const ctx = await browser.createBrowserContext();
      return { ctx, page: await ctx.newPage() };
    })();
    const spare: Spare = { made, ready: false };
    // Its failure is the call's that takes it (awaited there), not an unhandled rejection meanwhile.
    made.then(
      () => void (spare.ready = true),
      () => undefined,
    );
    return spare;
  };
  for (let i = 0; i < spares; i++) pool.push(make());
  return {
    call: async () => {
      const at = pool.findLastIndex((s) => s.ready);
      const spare = pool.splice(at >= 0 ? at : 0, 1)[0] ?? make();
      const { ctx, page } = await spare.made;
      try {
        await page.goto(url, { waitUntil: 'load' });
        return await page.title();
      } finally {
        const c: Promise<void> = ctx
          .close()
          .catch(() => undefined)
          .then(() => {
            closing.delete(c);
            if (!closed) pool.push(make());
          });
        closing.add(c);
      }
    },
    close: async () => {
      closed = true;
      await Promise.all(closing);
      await Promise.all(pool.splice(0).map(async (s) => (await s.made).ctx.close()));
    },
  };
}

/** The flags this machine needs (root, a closed network), given to every raw-Puppeteer baseline. */
export const MACHINE_ARGS = [
  '--no-sandbox',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];

/** Raw Puppeteer on a Debian Chromium, in the headless mode the service gives that binary. */
export async function launchRaw(mode: ChromiumMode, args: string[]): Promise<Browser> {
  return await puppeteer.launch({
    executablePath: CHROMIUM_PATHS[mode],
    pipe: true,
    headless: mode === 'shell' ? 'shell' : true,
    args,
  });
}
