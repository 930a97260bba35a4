// The option schemas of the methods a script calls: for each options object,
// the keys Puppeteer is given and how each value is checked (options.ts checks
// them). Bounds that keep the host and the page honest are set here.
import { VIEWPORT_BOUNDS } from '../../protocol/request-options.js';
import { editingCommands, mouseButton } from './clipboard-guard.js';
import { MembraneError, clampNum, isPlainObject, num, str, type Check, type Schema } from './options.js';

export const WAIT_UNTIL = ['load', 'domcontentloaded', 'networkidle0', 'networkidle2'] as const;
export const NAV: Schema = { timeout: 'timeout', waitUntil: WAIT_UNTIL };
/** goto's options: NAV, and the Referer header and policy of the navigation request (headers to the page's own site). */
export const GOTO: Schema = { ...NAV, referer: 'string', referrerPolicy: 'string' };
export const WAIT: Schema = { timeout: 'timeout' };
export const SELECTOR_WAIT: Schema = { timeout: 'timeout', visible: 'boolean', hidden: 'boolean' };

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

export const KEY: Schema = { delay: clampNum(0, 10_000), text: 'string', commands: editingCommands };

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
