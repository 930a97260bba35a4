// The page's keyboard, mouse and touchscreen (page.keyboard.*, page.mouse.*,
// page.touchscreen.*), and the guard every key event sent to the page passes:
// no key may make a clipboard shortcut with the keys held down, whichever method
// sends it. Touches started and not ended are bounded per touchscreen.
import type { Page, TouchHandle, Touchscreen } from 'puppeteer';
import { editingCommands, refuseClipboardChord } from '../clipboard-guard.js';
import { KEY, MOUSE_CLICK, TYPE } from '../option-schemas.js';
import { MembraneError, clampNum, num, options, str } from '../options.js';
import type { Table } from './context.js';

/** Keys held down now, as Puppeteer sends them with each key event (its own state). */
function modifiersOf(p: Page): number {
  const m = (p.keyboard as unknown as { _modifiers?: unknown })._modifiers;
  // SECURITY: if Puppeteer ever stops keeping this, count every modifier as held (refuse, never guess).
  return typeof m === 'number' ? m : 0xf;
}

/** Per guarded keyboard: who is told when a key is refused (a locator, which would retry the refused key until its timeout). */
const keyRefusalListeners = new WeakMap<object, Set<(e: Error) => void>>();

/**
 * Judges every key event sent to the page when it is sent. Puppeteer sends each
 * one through its keyboard's down() (press and type call it, and so do
 * ElementHandle.press/type, Page.type and Locator.fill, which the membrane does
 * not see key by key), so a key is refused here with the keys held down at that
 * moment. Done once per page, before the script gets it.
 */
export function guardKeyboard(page: Page): void {
  // A page without a keyboard (the unit tests' stand-ins) has no key to judge.
  const keyboard = (page as Partial<Page>).keyboard;
  if (keyboard === undefined || keyRefusalListeners.has(keyboard)) return;
  const listeners = new Set<(e: Error) => void>();
  keyRefusalListeners.set(keyboard, listeners);
  const down = keyboard.down.bind(keyboard);
  // SECURITY: the checks at each method's entry see the keys held when the call
  // starts; a modifier pressed by another call while this one waits (a focus, a
  // typing delay, a locator's wait) would turn its "v" into Ctrl+V, a paste of
  // another request's clipboard. This check runs as the key goes out.
  keyboard.down = async (key, opts) => {
    try {
      refuseClipboardChord([key], modifiersOf(page), 'keyboard');
      if (opts?.commands === undefined) return await down(key, opts);
      return await down(key, { ...opts, commands: editingCommands(opts.commands, 'keyboard: commands') });
    } catch (e) {
      if (e instanceof MembraneError) for (const tell of listeners) tell(e);
      throw e;
    }
  };
}

/**
 * Runs a locator action that types, and ends it with the keyboard's refusal if
 * one of its keys is refused: a locator retries a failed action until its
 * timeout, which would only send the refused key again and again.
 */
export async function typingLocator<T>(page: Page, run: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const listeners = keyRefusalListeners.get(page.keyboard);
  const stop = new AbortController();
  const tell = (e: Error): void => stop.abort(e);
  listeners?.add(tell);
  try {
    return await run(stop.signal);
  } finally {
    listeners?.delete(tell);
  }
}

/** A key to press: not one that makes a clipboard shortcut with the keys held down. */
export function keyFor(p: Page, v: unknown, where: string): string {
  const key = str(v, `${where}: key`);
  refuseClipboardChord([key], modifiersOf(p), where);
  return key;
}

/** Text to type key by key: none of its characters may make a clipboard shortcut with the keys held down. */
export function textFor(p: Page, v: unknown, where: string): string {
  const text = str(v, `${where}: text`);
  refuseClipboardChord(text, modifiersOf(p), where);
  return text;
}

/** Touches started and not yet ended, per touchscreen: each one is host memory the script could pile up. */
export const MAX_TOUCHES = 10;
/** Touch starts under way, per touchscreen: Puppeteer lists a touch only once its start was sent. */
const startingTouches = new WeakMap<Touchscreen, number>();

/** The touches Puppeteer holds for the page (its own list, which every start, end and TouchHandle.end keeps). */
function heldTouches(t: Touchscreen): number {
  const list = (t as unknown as { touches?: unknown }).touches;
  // SECURITY: if Puppeteer ever stops keeping this list, refuse rather than count nothing.
  if (!Array.isArray(list)) throw new MembraneError('touchStart: the touch bound cannot be checked');
  return list.length;
}

/**
 * Starts a touch through `start` (page.touchscreen.touchStart or elementHandle.touchStart), within
 * MAX_TOUCHES touches held on the page whichever route started them; answers Puppeteer's TouchHandle,
 * which crosses as a handle of the request's table.
 */
export async function startTouch(p: Page, where: string, start: () => Promise<TouchHandle>): Promise<TouchHandle> {
  const t = p.touchscreen;
  const starting = startingTouches.get(t) ?? 0;
  // SECURITY: counted before the first await, so touches started together cannot pass the bound together.
  if (heldTouches(t) + starting >= MAX_TOUCHES)
    throw new MembraneError(`${where}: at most ${MAX_TOUCHES} touches at once`);
  startingTouches.set(t, starting + 1);
  try {
    return await start();
  } finally {
    startingTouches.set(t, (startingTouches.get(t) ?? 1) - 1);
  }
}

/** A TouchHandle of this request: moved and ended, nothing else (TOUCH). */
export const TOUCH: Table<TouchHandle> = {
  move: (h, [x, y]) => h.move(num(x, 'touchHandle.move: x'), num(y, 'touchHandle.move: y')),
  end: (h) => h.end(),
};

export const INPUT: Table<Page> = {
  'keyboard.down': (p, [key], c) =>
    p.keyboard.down(keyFor(p, key, 'keyboard.down') as never, options(undefined, KEY, c.clock, 'keyboard.down')),
  'keyboard.up': (p, [key]) => p.keyboard.up(str(key, 'keyboard.up: key') as never),
  'keyboard.press': (p, [key, opts], c) =>
    p.keyboard.press(keyFor(p, key, 'keyboard.press') as never, options(opts, KEY, c.clock, 'keyboard.press')),
  'keyboard.type': (p, [text, opts], c) =>
    p.keyboard.type(textFor(p, text, 'keyboard.type'), options(opts, TYPE, c.clock, 'keyboard.type')),
  'keyboard.sendCharacter': (p, [ch]) => p.keyboard.sendCharacter(str(ch, 'keyboard.sendCharacter')),
  'mouse.move': (p, [x, y, opts], c) =>
    p.mouse.move(
      num(x, 'mouse.move: x'),
      num(y, 'mouse.move: y'),
      options(opts, { steps: clampNum(1, 1000) }, c.clock, 'mouse.move'),
    ),
  'mouse.click': (p, [x, y, opts], c) =>
    p.mouse.click(
      num(x, 'mouse.click: x'),
      num(y, 'mouse.click: y'),
      options(opts, MOUSE_CLICK, c.clock, 'mouse.click'),
    ),
  'mouse.down': (p, [opts], c) => p.mouse.down(options(opts, MOUSE_CLICK, c.clock, 'mouse.down')),
  'mouse.up': (p, [opts], c) => p.mouse.up(options(opts, MOUSE_CLICK, c.clock, 'mouse.up')),
  'mouse.wheel': (p, [opts], c) =>
    p.mouse.wheel(options(opts, { deltaX: 'number', deltaY: 'number' }, c.clock, 'mouse.wheel')),
  'mouse.reset': (p) => p.mouse.reset(),
  'touchscreen.tap': (p, [x, y]) => p.touchscreen.tap(num(x, 'touchscreen.tap: x'), num(y, 'touchscreen.tap: y')),
  'touchscreen.touchStart': (p, [x, y]) => {
    const [nx, ny] = [num(x, 'touchscreen.touchStart: x'), num(y, 'touchscreen.touchStart: y')];
    return startTouch(p, 'touchscreen.touchStart', () => p.touchscreen.touchStart(nx, ny));
  },
  'touchscreen.touchMove': (p, [x, y]) =>
    p.touchscreen.touchMove(num(x, 'touchscreen.touchMove: x'), num(y, 'touchscreen.touchMove: y')),
  'touchscreen.touchEnd': (p) => p.touchscreen.touchEnd(),
};
