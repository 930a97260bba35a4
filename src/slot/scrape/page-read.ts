// What a request without a script reads of its page: its title or its HTML.
// The page is the caller's chosen site, and it may navigate itself after it
// loaded (a meta refresh, location.replace in onload), open a dialog, spin, or
// grow past the DevTools message limit. Each is the page's doing, answered as a
// script's failure is (400), never as the service's (500); see
// test/e2e/slot/page-read.test.ts.
import type { Dialog, Page } from 'puppeteer';
import { ApiError, scrapingFailed } from '../../common/errors.js';
import { MAX_CDP_MESSAGE_BYTES } from '../limits.js';
import { cleanMessage, oversizedAnswerError } from '../membrane/wire-errors.js';
import { within } from '../../common/within.js';

/** How many times a read is made again after the page navigated under it. */
export const PAGE_READ_ATTEMPTS = 5;
/** How long the page is given to settle after it navigated under a read, times the attempt. */
const SETTLE_MS = 100;

/** Puppeteer's words for a read whose document went away under it (the page navigated). */
const NAVIGATED =
  /Execution context was destroyed|Cannot find context with specified id|Inspected target navigated or closed/;

/**
 * Dismisses every dialog of a page no script answers: a dialog blocks the
 * page, and the read with it. Returns the function that stops doing so.
 */
export function dismissDialogs(page: Page): () => void {
  const dismiss = (d: Dialog): void => void d.dismiss().catch(() => undefined);
  page.on('dialog', dismiss);
  return () => void page.off('dialog', dismiss);
}

/**
 * `read` (page.title(), page.content()) within `timeoutMs`, made again (up to
 * PAGE_READ_ATTEMPTS times) when the page navigated under it. `what` names it
 * in the caller's error. Fails with SCRAPING_FAILED, or RESULT_TOO_LARGE for an
 * answer past the DevTools message limit; an ApiError of `read` passes as it is.
 */
export async function readPage<T>(read: () => Promise<T>, what: string, timeoutMs: number): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (let attempt = 1; ; attempt++) {
    const left = deadline - performance.now();
    if (left <= 0) throw notInTime(what, timeoutMs);
    try {
      return await within(read(), left, () => {
        throw notInTime(what, timeoutMs);
      });
    } catch (e) {
      if (e instanceof ApiError) throw e;
      if (oversizedAnswerError(e, what) !== undefined)
        throw new ApiError(
          'RESULT_TOO_LARGE',
          `Result too large: the page's ${what} is larger than the DevTools message limit (${MAX_CDP_MESSAGE_BYTES / 2 ** 20} MiB)`,
        );
      const message = e instanceof Error ? e.message : String(e);
      if (!NAVIGATED.test(message)) throw scrapingFailed(`reading the page's ${what} failed: ${cleanMessage(e)}`, e);
      if (attempt >= PAGE_READ_ATTEMPTS)
        throw scrapingFailed(
          `the page kept navigating: its ${what} could not be read (${PAGE_READ_ATTEMPTS} tries)`,
          e,
        );
      await new Promise((resolve) => setTimeout(resolve, Math.min(SETTLE_MS * attempt, Math.max(0, left))));
    }
  }
}

function notInTime(what: string, timeoutMs: number): ApiError {
  return scrapingFailed(`the page did not give its ${what} within ${timeoutMs} ms`, undefined, { timeout: 'script' });
}
