// Chromium's clipboard, which every context of one Chromium shares: a lease's
// page empties it before the request is given that page, so nothing the
// request before copied is there to read.
import type { Page } from 'puppeteer';

/**
 * How long emptying the clipboard in a leased page may take before its
 * Chromium is taken for stuck and replaced (a new Chromium's clipboard is
 * empty). A blank page of a context made ahead answers in a few ms; this
 * is for a stuck Chromium, not a loaded machine (the janitor before it waited
 * as long).
 */
export const CLIPBOARD_EMPTY_TIMEOUT_MS = 5_000;

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

/** Empties a Chromium's clipboard from one of its blank pages; false if that did not happen in time. */
export type EmptyClipboard = (page: Page) => Promise<boolean>;

export const emptyClipboard: EmptyClipboard = async (page) => {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      page.evaluate(CLEAR_CLIPBOARD).then((copied) => copied === true),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), CLIPBOARD_EMPTY_TIMEOUT_MS).unref();
      }),
    ]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
};
