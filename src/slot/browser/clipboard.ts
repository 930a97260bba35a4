// Chromium's clipboard, which every context of one Chromium shares: a lease's
// page empties it before the request is given that page, so nothing the
// request before copied is there to read.
import type { Page } from 'puppeteer';
import { within } from '../../common/within.js';

/**
 * How long emptying the clipboard in a leased page may take before its
 * Chromium is taken for stuck and replaced (a new Chromium's clipboard is
 * empty). A blank page of a context made ahead answers in a few ms; this
 * is for a stuck Chromium, not a loaded machine.
 */
export const CLIPBOARD_EMPTY_TIMEOUT_MS = 5_000;

/** The textarea's id while the selection clipboard is replaced (emptyBoth). */
const SELECTION_ID = '__pagescript_selection';

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

/** Then, for the selection clipboard: a textarea holding one zero-width space, focused. */
const FOCUS_SELECTION = `(() => {
  const t = document.createElement('textarea');
  t.id = ${JSON.stringify(SELECTION_ID)};
  t.value = '\\u200b';
  document.documentElement.appendChild(t);
  t.focus();
  return document.activeElement === t;
})()`;

/** Removes the textarea; true once it is gone. */
const REMOVE_SELECTION = `(() => {
  const t = document.getElementById(${JSON.stringify(SELECTION_ID)});
  if (t === null) return false;
  t.blur();
  t.remove();
  getSelection()?.removeAllRanges();
  return true;
})()`;

/**
 * Empties a Chromium's clipboard from one of its blank pages, and its
 * selection clipboard too when `selection` is true (the request before sent
 * input); false if that did not happen in time.
 */
export type EmptyClipboard = (page: Page, selection: boolean) => Promise<boolean>;

/**
 * SECURITY: Linux's selection clipboard (what a page last selected with the
 * mouse or keys, pasted by the middle button) is one per Chromium as well, and
 * a copy does not touch it; a selection made by script does not write it
 * either (measured). A selection made with a key does: SelectAll in the
 * focused textarea replaces it with one zero-width space. The page is still
 * blank and is navigated before the request's script runs; Puppeteer's
 * keyboard holds no key afterwards.
 */
async function emptyBoth(page: Page, selection: boolean): Promise<boolean> {
  if ((await page.evaluate(CLEAR_CLIPBOARD)) !== true) return false;
  if (!selection) return true;
  if ((await page.evaluate(FOCUS_SELECTION)) !== true) return false;
  await page.keyboard.press('KeyA', { commands: ['SelectAll'] });
  return (await page.evaluate(REMOVE_SELECTION)) === true;
}

export const emptyClipboard: EmptyClipboard = async (page, selection) => {
  try {
    return await within(emptyBoth(page, selection), CLIPBOARD_EMPTY_TIMEOUT_MS, () => false);
  } catch {
    return false;
  }
};
