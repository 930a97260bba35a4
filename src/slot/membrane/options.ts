// Option schemas for the membrane: every options object a script passes to a
// Puppeteer method is rebuilt here from allowed keys and checked values. The
// script's own object never reaches Puppeteer.
import { VIEWPORT_BOUNDS } from '../../protocol/request-options.js';

export class MembraneError extends Error {
  override name = 'Error';
}

/** Options that would touch the server's disk or run programs: refused by name. */
const DISK_OPTIONS: Readonly<Record<string, string>> = {
  path: 'it would read or write files on the server',
  userDataDir: 'it would use a directory on the server',
  downloadPath: 'it would write files on the server',
  ffmpegPath: 'it would run a program on the server',
  executablePath: 'it would run a program on the server',
};

export type Check =
  | 'string'
  | 'number'
  | 'boolean'
  | 'timeout'
  | 'stringArray'
  | 'record'
  | readonly string[]
  | ((v: unknown, where: string) => unknown);

export type Schema = Readonly<Record<string, Check>>;

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export interface Clock {
  /** Milliseconds left before the script's deadline (at least 1). */
  remainingMs(): number;
  /** The script's default timeout (page.setDefaultTimeout / setDefaultNavigationTimeout); Puppeteer's 30 s when absent. */
  defaultTimeoutMs?(navigation: boolean): number;
  /**
   * The signal of the call being started, when the script gave one: aborted when
   * the script's AbortSignal aborts, so Puppeteer ends the wait on the host too.
   */
  signal?(): AbortSignal | undefined;
}

/**
 * How far past the script's deadline a wait that would outlast the script is
 * allowed to run: the deadline ends the script first, with the timeout error,
 * and the wait never times out early with a TimeoutError the script could catch.
 */
export const PAST_DEADLINE_MS = 2_000;

/**
 * A wait's timeout kept honest: one that ends before the deadline stays as it
 * is; one that would outlast the script (or 0, "wait forever") ends just after
 * the deadline. SECURITY: every wait stays bounded.
 */
export function capToDeadline(ms: number, clock: Clock): number {
  const left = clock.remainingMs();
  return ms === 0 || ms >= left ? left + PAST_DEADLINE_MS : ms;
}

/** A timeout option, capped by the script's remaining time (capToDeadline); undefined when the script gave none. */
export function clampTimeout(v: unknown, clock: Clock, where: string): number | undefined {
  if (v === undefined || v === null) return undefined;
  return capToDeadline(timeoutMs(v, where), clock);
}

/** The page's default for a wait with no timeout of its own (navigations: the navigation default), capped. */
function defaultTimeout(schema: Schema, clock: Clock): number {
  const navigation = 'waitUntil' in schema;
  return capToDeadline(clock.defaultTimeoutMs?.(navigation) ?? PUPPETEER_DEFAULT_TIMEOUT_MS, clock);
}

/** Puppeteer's own default timeout (its TimeoutSettings). */
export const PUPPETEER_DEFAULT_TIMEOUT_MS = 30_000;

/** A timeout a script gives: a number of milliseconds, 0 meaning no timeout (as in Puppeteer). */
export function timeoutMs(v: unknown, where: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0)
    throw new MembraneError(`${where}: timeout must be a number of milliseconds`);
  return v;
}

export function options(v: unknown, schema: Schema, clock: Clock, where: string): Record<string, unknown> {
  if (v === undefined || v === null) {
    return 'timeout' in schema ? withSignal({ timeout: defaultTimeout(schema, clock) }, clock) : {};
  }
  if (!isPlainObject(v)) throw new MembraneError(`${where}: options must be an object`);
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(v)) {
    const why = DISK_OPTIONS[key];
    // A schema that names the key means something else by it (a cookie's URL path).
    if (why !== undefined && !(key in schema) && v[key] !== undefined) {
      throw new MembraneError(`${where}: the "${key}" option is not available in pagescript (${why})`);
    }
  }
  for (const [key, check] of Object.entries(schema)) {
    const value = v[key];
    if (key === 'timeout') {
      out.timeout = clampTimeout(value, clock, where) ?? defaultTimeout(schema, clock);
      withSignal(out, clock);
      continue;
    }
    if (value === undefined) continue;
    out[key] = checkValue(value, check, clock, `${where}: option "${key}"`);
  }
  return out;
}

/** Puppeteer's waits take `signal` (and its other methods ignore it): the call's own, never a script's object. */
function withSignal(out: Record<string, unknown>, clock: Clock): Record<string, unknown> {
  const signal = clock.signal?.();
  if (signal !== undefined) out.signal = signal;
  return out;
}

function checkValue(value: unknown, check: Check, clock: Clock, where: string): unknown {
  if (typeof check === 'function') return check(value, where);
  if (Array.isArray(check)) {
    if (typeof value === 'string' && check.includes(value)) return value;
    if (Array.isArray(value) && value.every((x) => typeof x === 'string' && check.includes(x))) return [...value];
    throw new MembraneError(`${where} must be one of ${check.join(', ')}`);
  }
  switch (check) {
    case 'string':
      if (typeof value !== 'string') throw new MembraneError(`${where} must be a string`);
      return value;
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value)) throw new MembraneError(`${where} must be a number`);
      return value;
    case 'boolean':
      if (typeof value !== 'boolean') throw new MembraneError(`${where} must be true or false`);
      return value;
    case 'timeout':
      return clampTimeout(value, clock, where);
    case 'stringArray':
      if (!Array.isArray(value) || !value.every((x) => typeof x === 'string'))
        throw new MembraneError(`${where} must be an array of strings`);
      return [...value];
    case 'record':
      return stringRecord(value, where);
  }
  throw new MembraneError(`${where} is not supported`);
}

export function stringRecord(value: unknown, where: string): Record<string, string> {
  if (!isPlainObject(value)) throw new MembraneError(`${where} must be an object of strings`);
  for (const [k, x] of Object.entries(value)) {
    if (typeof x !== 'string') throw new MembraneError(`${where}: "${k}" must be a string`);
  }
  return Object.fromEntries(Object.entries(value)) as Record<string, string>;
}

export function str(v: unknown, where: string): string {
  if (typeof v !== 'string') throw new MembraneError(`${where} must be a string`);
  return v;
}

export function num(v: unknown, where: string, min = -1e9, max = 1e9): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) {
    throw new MembraneError(`${where} must be a number from ${min} to ${max}`);
  }
  return v;
}

export function clampNum(min: number, max: number) {
  return (v: unknown, where: string): number => num(v, where, min, max);
}

export const WAIT_UNTIL = ['load', 'domcontentloaded', 'networkidle0', 'networkidle2'] as const;
export const NAV: Schema = { timeout: 'timeout', waitUntil: WAIT_UNTIL };
/** goto's options: NAV, and the Referer header and policy of the navigation request (headers to the page's own site). */
export const GOTO: Schema = { ...NAV, referer: 'string', referrerPolicy: 'string' };
export const WAIT: Schema = { timeout: 'timeout' };
export const SELECTOR_WAIT: Schema = { timeout: 'timeout', visible: 'boolean', hidden: 'boolean' };
/** A mouse button: Puppeteer's names but the middle one; an unknown name is refused in Puppeteer's words. */
function mouseButton(v: unknown, where: string): string {
  // SECURITY: no middle button: on Linux it pastes the selection clipboard, which every request shares.
  if (v === 'middle')
    throw new MembraneError(
      `${where}: the middle button is not available in pagescript (it pastes the selection clipboard, which every request shares)`,
    );
  if (typeof v !== 'string' || !['left', 'right', 'back', 'forward'].includes(v))
    throw new MembraneError(`Unsupported mouse button: ${String(v).slice(0, 100)}`);
  return v;
}

/** How many clicks: below 1 refused in Puppeteer's words; at most 10 (each is events into the page). */
function clickCount(v: unknown, where: string): number {
  if (typeof v === 'number' && v < 1) throw new MembraneError('Click must occur a positive number of times.');
  return num(v, where, 1, 10);
}

export const CLICK: Schema = {
  button: mouseButton,
  count: clickCount,
  clickCount: clampNum(1, 10),
  delay: clampNum(0, 10_000),
  offset: (v, where) => {
    if (!isPlainObject(v)) throw new MembraneError(`${where} must be {x, y}`);
    return { x: num(v.x, `${where}.x`), y: num(v.y, `${where}.y`) };
  },
};
export const TYPE: Schema = { delay: clampNum(0, 10_000) };

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

export const KEY: Schema = { delay: clampNum(0, 10_000), text: 'string', commands: editingCommands };

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
export const MOUSE_CLICK: Schema = {
  button: CLICK.button as Check,
  clickCount: CLICK.clickCount as Check,
  count: CLICK.count as Check,
  delay: CLICK.delay as Check,
};
export const WAIT_FUNCTION: Schema = {
  timeout: 'timeout',
  polling: (v, where) => {
    if (v === 'raf' || v === 'mutation') return v;
    // Puppeteer's own words for a negative interval; below 10 ms the page's renderer would only spin.
    if (typeof v === 'number' && v < 0) throw new MembraneError('Cannot poll with non-positive interval');
    return num(v, where, 10, 60_000);
  },
};
export const NETWORK_IDLE: Schema = {
  timeout: 'timeout',
  idleTime: clampNum(0, 60_000),
  concurrency: clampNum(0, 100),
};
/** The request's options.viewport has the same bounds (src/protocol/request-options.ts). */
export const VIEWPORT: Schema = {
  width: clampNum(VIEWPORT_BOUNDS.minSide, VIEWPORT_BOUNDS.maxSide),
  height: clampNum(VIEWPORT_BOUNDS.minSide, VIEWPORT_BOUNDS.maxSide),
  // Bounded with the size in device pixels (page.setViewport, src/slot/membrane/methods/emulation.ts).
  deviceScaleFactor: clampNum(VIEWPORT_BOUNDS.minScale, VIEWPORT_BOUNDS.maxScale),
  isMobile: 'boolean',
  hasTouch: 'boolean',
  isLandscape: 'boolean',
};
const CLIP = (v: unknown, where: string): Record<string, number> => {
  if (!isPlainObject(v)) throw new MembraneError(`${where} must be {x, y, width, height}`);
  return {
    x: num(v.x, `${where}.x`, 0, 16384),
    y: num(v.y, `${where}.y`, 0, 16384),
    width: num(v.width, `${where}.width`, 1, 16384),
    height: num(v.height, `${where}.height`, 1, 16384),
    ...(v.scale === undefined ? {} : { scale: num(v.scale, `${where}.scale`, 0.1, 3) }),
  };
};
export const SCREENSHOT: Schema = {
  type: ['png', 'jpeg', 'webp'],
  quality: 'number', // Puppeteer checks 0–100 and the type, in its own words
  fullPage: 'boolean',
  clip: CLIP,
  omitBackground: 'boolean',
  encoding: ['base64', 'binary'],
  captureBeyondViewport: 'boolean',
  optimizeForSpeed: 'boolean',
  fromSurface: 'boolean',
};
const MARGIN = (v: unknown, where: string): Record<string, string | number> => {
  if (!isPlainObject(v)) throw new MembraneError(`${where} must be {top, right, bottom, left}`);
  const out: Record<string, string | number> = {};
  for (const side of ['top', 'right', 'bottom', 'left']) {
    const x = v[side];
    if (x === undefined) continue;
    if (typeof x !== 'string' && typeof x !== 'number')
      throw new MembraneError(`${where}.${side} must be a string or number`);
    out[side] = x;
  }
  return out;
};
const SIZE = (v: unknown, where: string): string | number => {
  if (typeof v !== 'string' && typeof v !== 'number') throw new MembraneError(`${where} must be a string or number`);
  return v;
};
export const PDF: Schema = {
  scale: clampNum(0.1, 2),
  displayHeaderFooter: 'boolean',
  headerTemplate: 'string',
  footerTemplate: 'string',
  printBackground: 'boolean',
  landscape: 'boolean',
  pageRanges: 'string',
  format: 'string', // a name Puppeteer looks up in its table, refused in its own words
  width: SIZE,
  height: SIZE,
  preferCSSPageSize: 'boolean',
  margin: MARGIN,
  omitBackground: 'boolean',
  tagged: 'boolean',
  outline: 'boolean',
  timeout: 'timeout',
};
export const COOKIE: Schema = {
  name: 'string',
  value: 'string',
  url: 'string',
  domain: 'string',
  path: (v, where) => str(v, where), // a cookie's URL path, not a file: allowed
  secure: 'boolean',
  httpOnly: 'boolean',
  sameSite: ['Strict', 'Lax', 'None'],
  expires: 'number',
  partitionKey: 'string',
};
export const DELETE_COOKIE: Schema = {
  name: 'string',
  url: 'string',
  domain: 'string',
  path: (v, where) => str(v, where),
};
