// The clipboard janitor of one Chromium: every context of a Chromium shares its
// clipboard, so after each request it is emptied from a blank page of the
// service's own, and the next lease waits for that.
import type { Browser, Page } from 'puppeteer';
import { background } from '../../common/background.js';
import type { Logger } from '../../common/log.js';

/** How long the clipboard janitor's page is kept after the last request ended (see #closeWhenIdle). */
export const JANITOR_IDLE_MS = 5_000;
/** How long a lease waits for the clipboard emptying after the previous request (see emptied). */
export const CLIPBOARD_WAIT_MS = 5_000;

/**
 * Run in a blank page: a copy whose only data is an empty text replaces every
 * format on the clipboard. Puppeteer's evaluate carries a user gesture, which
 * execCommand('copy') needs.
 */
const CLEAR_CLIPBOARD = `(() => {
  const empty = (e) => { e.clipboardData.setData('text/plain', ''); e.preventDefault(); };
  document.addEventListener('copy', empty, true);
  try { return document.execCommand('copy'); } finally { document.removeEventListener('copy', empty, true); }
})()`;

/** An emptying is running; `again` asks for one more after it; `done` settles when it ends. */
interface Clearing {
  again: boolean;
  done: Promise<void> | undefined;
}

export class ClipboardJanitor {
  readonly #browser: Browser;
  readonly #logger: Logger;
  readonly #idleMs: number;
  /** A blank page of the service's own (no request's), from which the clipboard is emptied. */
  #page: Promise<Page> | undefined;
  /** Closes the janitor's context once no request has ended for idleMs. */
  #idle: NodeJS.Timeout | undefined;
  #clearing: Clearing | undefined;

  /** idleMs: how long the janitor's page outlives the last emptying (JANITOR_IDLE_MS unless told: tests). */
  constructor(browser: Browser, logger: Logger, idleMs = JANITOR_IDLE_MS) {
    this.#browser = browser;
    this.#logger = logger;
    this.#idleMs = idleMs;
  }

  /**
   * Empties Chromium's clipboard, which every context shares, after a request:
   * what a page copied does not outlive its request. Done from a blank page of
   * the service's own, where no tenant's page can interfere; requests that end
   * together share one emptying.
   */
  clear(): void {
    if (!this.#browser.connected) return;
    if (this.#clearing) {
      this.#clearing.again = true;
      return;
    }
    const state: Clearing = { again: false, done: undefined };
    this.#clearing = state;
    clearTimeout(this.#idle);
    const run = async (): Promise<void> => {
      do {
        state.again = false;
        this.#page ??= this.#browser
          .createBrowserContext({ downloadBehavior: { policy: 'deny' } })
          .then((c) => c.newPage());
        const page = await this.#page;
        await page.evaluate(CLEAR_CLIPBOARD);
      } while (state.again && this.#browser.connected);
    };
    state.done = run()
      .catch((e: unknown) => {
        this.#page = undefined;
        if (this.#browser.connected) this.#logger.warn({ err: String(e) }, 'emptying the clipboard failed');
      })
      .finally(() => {
        this.#clearing = undefined;
        this.#closeWhenIdle();
      });
    background(state.done, 'emptying the clipboard', this.#logger);
  }

  /**
   * The emptying running now has ended, or CLIPBOARD_WAIT_MS has passed: each
   * step of one is a DevTools call, bounded by the protocol timeout, but a
   * lease does not wait that long.
   */
  async emptied(): Promise<void> {
    const running = this.#clearing?.done;
    if (running === undefined) return;
    let timer: NodeJS.Timeout | undefined;
    const late = await Promise.race([
      running.then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), CLIPBOARD_WAIT_MS).unref();
      }),
    ]);
    clearTimeout(timer);
    if (late)
      this.#logger.warn({ ms: CLIPBOARD_WAIT_MS }, 'a lease did not wait longer for the clipboard to be emptied');
  }

  /** The page is not closed for idleness now (its Chromium is retired and closes with its pages). */
  cancelIdleClose(): void {
    clearTimeout(this.#idle);
  }

  /**
   * The janitor's page is a renderer of its own (~20 MB of PSS, measured): kept
   * while requests come (making it for each would cost a renderer's launch per
   * request), closed once none has ended for idleMs, and made again by the next
   * emptying.
   */
  #closeWhenIdle(): void {
    clearTimeout(this.#idle);
    this.#idle = setTimeout(() => {
      this.#idle = undefined;
      const janitor = this.#page;
      if (this.#clearing || janitor === undefined) return;
      this.#page = undefined;
      background(
        janitor.then((page) => page.browserContext().close()).catch(() => undefined),
        'closing the clipboard janitor',
        this.#logger,
      );
    }, this.#idleMs).unref();
  }
}
