// The keys and buttons a script may press, kept away from the clipboard: every
// request's page shares one clipboard (and Linux's selection clipboard), so a
// paste would read another request's copy. The middle button, the clipboard's
// editing commands and the clipboard shortcuts are refused by name.
import { MembraneError } from './options.js';

/** A mouse button: Puppeteer's names but the middle one; an unknown name is refused in Puppeteer's words. */
export function mouseButton(v: unknown, where: string): string {
  // SECURITY: no middle button: on Linux it pastes the selection clipboard, which every request shares.
  if (v === 'middle')
    throw new MembraneError(
      `${where}: the middle button is not available in pagescript (it pastes the selection clipboard, which every request shares)`,
    );
  if (typeof v !== 'string' || !['left', 'right', 'back', 'forward'].includes(v))
    throw new MembraneError(`Unsupported mouse button: ${String(v).slice(0, 100)}`);
  return v;
}

/**
 * The Chromium editing commands a script may name in a key press's `commands`
 * (matched case-insensitively, as Chromium does). None of them reads or writes
 * the clipboard, which all tenants share: Copy, Cut, Paste and their variants,
 * Yank and the kill ring are left out, and so is every name not listed here.
 * Puppeteer users pass `commands` mostly for SelectAll (Meta+A does nothing in
 * headless Chromium on macOS) and for Copy/Paste in clipboard tests.
 */
export const EDITING_COMMANDS = [
  'SelectAll',
  'Undo',
  'Redo',
  'DeleteBackward',
  'DeleteForward',
  'DeleteWordBackward',
  'DeleteWordForward',
  'InsertNewline',
  'InsertTab',
  'MoveToBeginningOfLine',
  'MoveToEndOfLine',
  'MoveToBeginningOfDocument',
  'MoveToEndOfDocument',
] as const;
const EDITING_COMMAND_BY_NAME = new Map<string, string>(EDITING_COMMANDS.map((c) => [c.toLowerCase(), c]));

export function editingCommands(v: unknown, where: string): string[] {
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) {
    throw new MembraneError(`${where} must be an array of editing command names`);
  }
  return v.map((name: string) => {
    const known = EDITING_COMMAND_BY_NAME.get(name.toLowerCase());
    // SECURITY: Copy, Cut, Paste (…AndMatchStyle, …AsPlainText) and the rest would reach the shared clipboard.
    if (known === undefined) {
      throw new MembraneError(
        `${where}: "${name.slice(0, 100)}" is not available in pagescript (allowed: ${EDITING_COMMANDS.join(', ')})`,
      );
    }
    return known;
  });
}

/** Puppeteer's modifier bits (Input.dispatchKeyEvent): Alt 1, Control 2, Meta 4, Shift 8. */
const CTRL_OR_META = 2 | 4;
const SHIFT = 8;
/** Key names (Puppeteer's US layout) of the keys that make clipboard shortcuts. */
const CLIPBOARD_LETTERS = new Set(['keyv', 'v', 'keyc', 'c', 'keyx', 'x']);
/** Key names whose key code is Insert's or Delete's ("\u0000" is Puppeteer's NumpadDecimal too). */
const INSERT_OR_DELETE = new Set(['insert', 'numpad0', 'delete', 'numpaddecimal', '\u0000']);

/**
 * Refuses a key press that Chromium turns into a clipboard command: Ctrl+V,
 * Ctrl+Shift+V, Ctrl+C, Ctrl+X, Ctrl+Insert, Shift+Insert, Shift+Delete (and the
 * Meta forms). `modifiers` is Puppeteer's state of the keys held down. The
 * clipboard is one for all tenants: a paste would read another request's copy.
 */
export function refuseClipboardChord(keys: Iterable<string>, modifiers: number, where: string): void {
  for (const key of keys) {
    const k = key.toLowerCase();
    const chord =
      ((modifiers & CTRL_OR_META) !== 0 && (CLIPBOARD_LETTERS.has(k) || INSERT_OR_DELETE.has(k))) ||
      ((modifiers & SHIFT) !== 0 && INSERT_OR_DELETE.has(k));
    // SECURITY: the editing shortcuts would paste another request's clipboard (or copy into it).
    if (chord) {
      throw new MembraneError(
        `${where}: clipboard shortcuts are not available in pagescript (the clipboard is shared by every request)`,
      );
    }
  }
}
