// The host's side of the membrane's allow-list: for each method that
// sandbox/page-api.ts sends to the host, how its arguments are rebuilt before
// Puppeteer sees them. That table decides which names exist and how they are
// called (its security review is beside each name); a name it does not send to
// the host is refused here even if an implementation exists, and every name it
// sends has exactly one implementation here (test/unit/membrane-methods.test.ts).
import type {
  ConsoleMessage,
  Dialog,
  ElementHandle,
  Frame,
  HTTPRequest,
  HTTPResponse,
  JSHandle,
  Page,
  Touchscreen,
} from 'puppeteer';
import type { Protocol } from 'devtools-protocol';
import { Locator, ProtocolError } from 'puppeteer';
import { hostCall } from '../../../sandbox/page-api.js';
import type { HandleKind } from '../../../sandbox/wire.js';
import { isTagged } from '../../../sandbox/wire.js';
import { budgetError, checkSelectorCost } from './budgets.js';
import {
  MAX_HEADERS,
  MAX_HEADER_CHARS,
  MAX_USER_AGENT_CHARS,
  VIEWPORT_BOUNDS,
  refusedHeader,
} from '../../protocol/request-options.js';
import {
  CLICK,
  COOKIE,
  DELETE_COOKIE,
  KEY,
  MOUSE_CLICK,
  MembraneError,
  NAV,
  NETWORK_IDLE,
  PDF,
  PUPPETEER_DEFAULT_TIMEOUT_MS,
  SCREENSHOT,
  SELECTOR_WAIT,
  TYPE,
  VIEWPORT,
  GOTO,
  WAIT,
  WAIT_FUNCTION,
  capToDeadline,
  clampNum,
  editingCommands,
  isPlainObject,
  num,
  options,
  refuseClipboardChord,
  str,
  stringRecord,
  type Clock,
  type Schema,
} from './options.js';

/** What a method implementation may use from the membrane. */
export interface MethodContext {
  readonly clock: Clock;
  readonly page: Page;
  /** A function (as a poisoned host function carrying its source) or a string expression, for the page. */
  pageFunction(v: unknown, where: string): string | ((...a: never[]) => unknown);
  /** Arguments for a page function: JSON values and this request's JS/element handles. */
  pageArgs(list: readonly unknown[], where: string): unknown[];
  handle<T>(v: unknown, kinds: readonly HandleKind[], where: string): T;
  /** Checks a URL a script navigates to: scheme allow-list and the egress policy. */
  navigationUrl(v: unknown, where: string): Promise<string>;
  subscribe(event: unknown): void;
  /** A script's listener for a locator's event: the host listens and tells the isolate. */
  subscribeLocator(locator: Locator<unknown>, event: unknown): void;
  exposeFunction(name: unknown, fid: unknown): Promise<void>;
  /** locator.filterHandle with the script's predicate, kept in the isolate under the id fid. */
  filterHandle(locator: Locator<unknown>, fid: unknown): Locator<unknown>;
  removeExposedFunction(name: unknown): Promise<void>;
  /** page.evaluateOnNewDocument within the request's preload budget (MAX_PRELOAD_SCRIPTS, MAX_PRELOAD_CHARS). */
  evaluateOnNewDocument(fn: unknown, args: readonly unknown[]): Promise<unknown>;
  removeScriptToEvaluateOnNewDocument(id: unknown): Promise<void>;
  setDefaultTimeout(v: unknown, navigation: boolean): void;
}

type Impl<T> = (target: T, args: unknown[], ctx: MethodContext) => unknown;
type Table<T> = Readonly<Record<string, Impl<T>>>;

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
async function typingLocator<T>(page: Page, run: (signal: AbortSignal) => Promise<T>): Promise<T> {
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
function keyFor(p: Page, v: unknown, where: string): string {
  const key = str(v, `${where}: key`);
  refuseClipboardChord([key], modifiersOf(p), where);
  return key;
}

/** Text to type key by key: none of its characters may make a clipboard shortcut with the keys held down. */
function textFor(p: Page, v: unknown, where: string): string {
  const text = str(v, `${where}: text`);
  refuseClipboardChord(text, modifiersOf(p), where);
  return text;
}

function selector(v: unknown, where: string): string {
  const s = str(v, `${where}: selector`);
  // SECURITY: Puppeteer parses selectors on the host's main thread; slow shapes are refused first.
  checkSelectorCost(s, where);
  return s;
}

/** The query and evaluation methods shared by Page, Frame and ElementHandle. */
// Puppeteer's generic signatures differ per class; the membrane has already checked every argument.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Loose = (...args: any[]) => Promise<unknown>;
type Queryable = Record<'$' | '$$' | '$eval' | '$$eval' | 'evaluate' | 'evaluateHandle' | 'waitForSelector', Loose>;
function queries<T extends Queryable>(label: string): Table<T> {
  return {
    $: (t, [sel]) => t.$(selector(sel, `${label}.$`)),
    $$: (t, [sel]) => t.$$(selector(sel, `${label}.$$`)),
    $eval: (t, [sel, fn, ...rest], c) =>
      t.$eval(
        selector(sel, `${label}.$eval`),
        c.pageFunction(fn, `${label}.$eval`) as never,
        ...(c.pageArgs(rest, `${label}.$eval`) as never[]),
      ),
    $$eval: (t, [sel, fn, ...rest], c) =>
      t.$$eval(
        selector(sel, `${label}.$$eval`),
        c.pageFunction(fn, `${label}.$$eval`) as never,
        ...(c.pageArgs(rest, `${label}.$$eval`) as never[]),
      ),
    evaluate: (t, [fn, ...rest], c) =>
      t.evaluate(
        c.pageFunction(fn, `${label}.evaluate`) as never,
        ...(c.pageArgs(rest, `${label}.evaluate`) as never[]),
      ),
    evaluateHandle: (t, [fn, ...rest], c) =>
      t.evaluateHandle(
        c.pageFunction(fn, `${label}.evaluateHandle`) as never,
        ...(c.pageArgs(rest, `${label}.evaluateHandle`) as never[]),
      ),
    waitForSelector: (t, [sel, opts], c) =>
      t.waitForSelector(
        selector(sel, `${label}.waitForSelector`),
        options(opts, SELECTOR_WAIT, c.clock, `${label}.waitForSelector`),
      ),
  };
}

type Actionable = Record<'click' | 'type' | 'focus' | 'hover' | 'select' | 'tap', Loose>;
function actions<T extends Actionable>(label: string): Table<T> {
  return {
    click: (t, [sel, opts], c) =>
      t.click(selector(sel, `${label}.click`), options(opts, CLICK, c.clock, `${label}.click`)),
    type: (t, [sel, text, opts], c) =>
      t.type(
        selector(sel, `${label}.type`),
        textFor(c.page, text, `${label}.type`),
        options(opts, TYPE, c.clock, `${label}.type`),
      ),
    focus: (t, [sel]) => t.focus(selector(sel, `${label}.focus`)),
    hover: (t, [sel]) => t.hover(selector(sel, `${label}.hover`)),
    select: (t, [sel, ...values]) => t.select(selector(sel, `${label}.select`), ...selectValues(values)),
    tap: (t, [sel]) => t.tap(selector(sel, `${label}.tap`)),
  };
}

/** select()'s values: strings, refused otherwise in Puppeteer's own words. */
function selectValues(values: unknown[]): string[] {
  return values.map((v) => {
    if (typeof v !== 'string')
      throw new MembraneError(`Values must be strings. Found value "${String(v)}" of type "${typeof v}"`);
    return v;
  });
}

/**
 * SECURITY: a string Puppeteer keeps on the host for the rest of the request and
 * sends again to each frame of another site the page attaches (extra headers,
 * the user agent, the time zone, media features; credentials, to each request
 * that asks for them): as long as a request's options allow, not as long as one
 * membrane message (16 Mi characters, each of them JSON-written again per frame).
 */
function kept(v: unknown, where: string, maxChars: number): string {
  const s = str(v, where);
  if (s.length > maxChars) throw budgetError(`${where} is too long (${s.length} characters; at most ${maxChars})`);
  return s;
}

/** A time zone's name (IANA names are under 40 characters) and a media feature's value, at most. */
export const MAX_EMULATION_CHARS = 256;

/** Brands, full versions and form factors one userAgentMetadata may list (a browser sends three or four). */
export const MAX_USER_AGENT_LIST = 32;

/** A bounded list of userAgentMetadata: each entry rebuilt by `item`. */
function uaList<T>(v: unknown, where: string, item: (x: unknown, where: string) => T): T[] {
  if (!Array.isArray(v) || v.length > MAX_USER_AGENT_LIST)
    throw new MembraneError(`${where} must be an array of at most ${MAX_USER_AGENT_LIST}`);
  return v.map((x, i) => item(x, `${where} ${i}`));
}

function brandVersion(v: unknown, where: string): { brand: string; version: string } {
  if (!isPlainObject(v)) throw new MembraneError(`${where} must be { brand, version }`);
  return {
    brand: kept(v.brand, `${where}: brand`, MAX_EMULATION_CHARS),
    version: kept(v.version, `${where}: version`, MAX_EMULATION_CHARS),
  };
}

/**
 * setUserAgent()'s userAgentMetadata (what navigator.userAgentData and the
 * Sec-CH-UA headers say), rebuilt from its known fields. SECURITY: Puppeteer keeps
 * it for the rest of the request and sends it to each frame of another site, as
 * the user agent itself: every string and list is bounded.
 */
type UserAgentMetadata = Protocol.Emulation.UserAgentMetadata;

function userAgentMetadata(v: unknown, where: string): UserAgentMetadata {
  if (!isPlainObject(v)) throw new MembraneError(`${where} must be an object`);
  const text = (x: unknown, w: string): string => kept(x, w, MAX_EMULATION_CHARS);
  const out: Record<string, unknown> = {};
  for (const key of ['fullVersion', 'platform', 'platformVersion', 'architecture', 'model', 'bitness'])
    if (v[key] !== undefined) out[key] = text(v[key], `${where}: ${key}`);
  for (const key of ['mobile', 'wow64'])
    if (v[key] !== undefined) {
      if (typeof v[key] !== 'boolean') throw new MembraneError(`${where}: ${key} must be true or false`);
      out[key] = v[key];
    }
  if (v.brands !== undefined) out.brands = uaList(v.brands, `${where}: brands`, brandVersion);
  if (v.fullVersionList !== undefined)
    out.fullVersionList = uaList(v.fullVersionList, `${where}: fullVersionList`, brandVersion);
  if (v.formFactors !== undefined) out.formFactors = uaList(v.formFactors, `${where}: formFactors`, text);
  // Missing required fields are Chromium's to refuse, in its own words.
  return out as unknown as UserAgentMetadata;
}

/** emulateNetworkConditions()'s conditions: Chromium's throttling of the request's own page (bytes/s, ms). */
const NETWORK_CONDITIONS: Schema = {
  download: 'number',
  upload: 'number',
  latency: 'number',
  offline: 'boolean',
};

/** setExtraHTTPHeaders()'s object: string values, refused otherwise in Puppeteer's own words. */
function extraHeaders(v: unknown): Record<string, string> {
  if (!isPlainObject(v)) throw new MembraneError('page.setExtraHTTPHeaders: headers must be an object of strings');
  // As a request's options.extraHTTPHeaders are bounded (request-options.ts).
  if (Object.keys(v).length > MAX_HEADERS)
    throw budgetError(`page.setExtraHTTPHeaders: at most ${MAX_HEADERS} headers`);
  for (const [k, x] of Object.entries(v))
    if (typeof x !== 'string')
      throw new MembraneError(`Expected value of header "${k}" to be String, but "${typeof x}" is found.`);
  for (const k of Object.keys(v)) {
    // SECURITY: the same headers are refused as in the request's options.extraHTTPHeaders (the guard relies on them).
    const why = refusedHeader(k);
    if (why !== undefined) throw new MembraneError(`page.setExtraHTTPHeaders: header "${k.slice(0, 64)}" ${why}`);
    kept(k, 'page.setExtraHTTPHeaders: a header name', MAX_HEADER_CHARS);
    kept(v[k], `page.setExtraHTTPHeaders: header "${k.slice(0, 64)}"`, MAX_HEADER_CHARS);
  }
  return stringRecord(v, 'page.setExtraHTTPHeaders');
}

function tagOptions(v: unknown, label: string, c: MethodContext, withType: boolean): Record<string, string> {
  // Not an options object (a URL string, say): as to Puppeteer, one without url or content,
  // which Puppeteer refuses in its own words.
  if (!isPlainObject(v)) return {};
  const schema = withType
    ? { url: 'string', content: 'string', type: 'string', id: 'string' }
    : { url: 'string', content: 'string' };
  // Neither url nor content: Puppeteer itself refuses, with its own message.
  return options(v, schema as never, c.clock, label) as Record<string, string>;
}

/** A tag's url, relative to the frame's document as in the page, checked like a navigation. */
async function tagUrl(
  o: Record<string, string>,
  base: string,
  label: string,
  c: MethodContext,
): Promise<Record<string, string>> {
  if (o.url === undefined) return o;
  let absolute = o.url;
  try {
    absolute = new URL(o.url, base).href;
  } catch {
    // Not resolvable: navigationUrl refuses it with its own message.
  }
  o.url = await c.navigationUrl(absolute, label);
  return o;
}

/**
 * A URL to navigate to that is no URL at all ("asdfasdf") is refused with the
 * protocol error Puppeteer passes on from Chromium, which cannot navigate to it
 * either. SECURITY: it is never handed to Chromium, whose URL parser is not the
 * one the scheme check (navigationUrl) reads it with.
 */
function gotoUrl(v: unknown): unknown {
  if (typeof v === 'string' && v !== 'about:blank' && !URL.canParse(v))
    throw new ProtocolError('Protocol error (Page.navigate): Cannot navigate to invalid URL');
  return v;
}

/** The methods Page and Frame share; frameElement is Frame's alone. */
function frameMethods(label: string): Table<Frame> {
  return {
    ...queries<Frame>(label),
    ...actions<Frame>(label),
    goto: async (f, [url, opts], c) =>
      f.goto(await c.navigationUrl(gotoUrl(url), `${label}.goto`), options(opts, GOTO, c.clock, `${label}.goto`)),
    title: (f) => f.title(),
    content: (f) => f.content(),
    setContent: (f, [html, opts], c) =>
      f.setContent(str(html, `${label}.setContent: html`), options(opts, NAV, c.clock, `${label}.setContent`)),
    waitForFunction: (f, [fn, opts, ...rest], c) =>
      f.waitForFunction(
        c.pageFunction(fn, `${label}.waitForFunction`) as never,
        options(opts, WAIT_FUNCTION, c.clock, `${label}.waitForFunction`),
        ...(c.pageArgs(rest, `${label}.waitForFunction`) as never[]),
      ),
    waitForNavigation: (f, [opts], c) => f.waitForNavigation(options(opts, NAV, c.clock, `${label}.waitForNavigation`)),
    // No options at all: Puppeteer refuses before doing anything, in its own words.
    addScriptTag: async (f, [opts], c) =>
      f.addScriptTag(
        opts === undefined || opts === null
          ? (opts as never)
          : await tagUrl(tagOptions(opts, `${label}.addScriptTag`, c, true), f.url(), `${label}.addScriptTag`, c),
      ),
    addStyleTag: async (f, [opts], c) =>
      f.addStyleTag(
        opts === undefined || opts === null
          ? (opts as never)
          : await tagUrl(tagOptions(opts, `${label}.addStyleTag`, c, false), f.url(), `${label}.addStyleTag`, c),
      ),
  };
}

const FRAME: Table<Frame> = {
  ...frameMethods('frame'),
  frameElement: (f) => f.frameElement(),
};

/** Touches started and not yet ended, per touchscreen: each one is host memory the script could pile up. */
export const MAX_TOUCHES = 10;
const activeTouches = new WeakMap<Touchscreen, number>();

async function touchStart(p: Page, x: number, y: number): Promise<undefined> {
  const n = activeTouches.get(p.touchscreen) ?? 0;
  if (n >= MAX_TOUCHES) throw new MembraneError(`touchscreen.touchStart: at most ${MAX_TOUCHES} touches at once`);
  activeTouches.set(p.touchscreen, n + 1);
  try {
    // Puppeteer answers a TouchHandle; scripts move and end touches through touchMove/touchEnd instead.
    await p.touchscreen.touchStart(x, y);
  } catch (e) {
    activeTouches.set(p.touchscreen, (activeTouches.get(p.touchscreen) ?? 1) - 1);
    throw e;
  }
  return undefined;
}

async function touchEnd(p: Page): Promise<void> {
  await p.touchscreen.touchEnd();
  activeTouches.set(p.touchscreen, Math.max(0, (activeTouches.get(p.touchscreen) ?? 1) - 1));
}

const FRAME_SYNC: Table<Frame> = {
  url: (f) => f.url(),
  name: (f) => f.name(),
  parentFrame: (f) => f.parentFrame(),
  childFrames: (f) => f.childFrames(),
  isDetached: (f) => f.detached,
  detached: (f) => f.detached,
  page: (f) => f.page(),
  locator: (f, [sel], c) => newLocator(f.locator(locatorTarget(sel, 'frame.locator', c) as never), c),
};

/**
 * A new locator waits as long as the page's default timeout says when it is made, as in
 * Puppeteer (which reads page.getDefaultTimeout() then): here the script's own default
 * (page.setDefaultTimeout), capped by its remaining time. SECURITY: every locator's waits
 * are bounded, whatever the real page's default is.
 */
function newLocator(l: Locator<unknown>, c: MethodContext): Locator<unknown> {
  return l.setTimeout(capToDeadline(c.clock.defaultTimeoutMs?.(false) ?? PUPPETEER_DEFAULT_TIMEOUT_MS, c.clock));
}

function locatorTarget(v: unknown, where: string, c: MethodContext): unknown {
  return typeof v === 'function' || (isPlainObject(v) && v.$ps === 'f') ? c.pageFunction(v, where) : selector(v, where);
}

/** A renderer slowed more than this only waits: the request's time runs out either way. */
export const MAX_CPU_THROTTLING = 100;
/** Media features one call may set; CSS knows about a dozen. */
export const MAX_MEDIA_FEATURES = 32;
const IDLE_STATE: Schema = { isUserActive: 'boolean', isScreenUnlocked: 'boolean' };

function mediaFeatures(v: unknown): { name: string; value: string }[] {
  if (!Array.isArray(v) || v.length > MAX_MEDIA_FEATURES)
    throw new MembraneError(`page.emulateMediaFeatures: features must be an array of at most ${MAX_MEDIA_FEATURES}`);
  return v.map((f, i) => {
    if (!isPlainObject(f)) throw new MembraneError(`page.emulateMediaFeatures: feature ${i} must be { name, value }`);
    return {
      name: kept(f.name, `page.emulateMediaFeatures: feature ${i} name`, MAX_EMULATION_CHARS),
      value: kept(f.value, `page.emulateMediaFeatures: feature ${i} value`, MAX_EMULATION_CHARS),
    };
  });
}

const PAGE: Table<Page> = {
  ...frameMethods('page'),
  goto: async (p, [url, opts], c) =>
    p.goto(await c.navigationUrl(gotoUrl(url), 'page.goto'), options(opts, GOTO, c.clock, 'page.goto')),
  reload: (p, [opts], c) => p.reload(options(opts, NAV, c.clock, 'page.reload')),
  goBack: (p, [opts], c) => p.goBack(options(opts, NAV, c.clock, 'page.goBack')),
  goForward: (p, [opts], c) => p.goForward(options(opts, NAV, c.clock, 'page.goForward')),
  waitForNetworkIdle: (p, [opts], c) =>
    p.waitForNetworkIdle(options(opts, NETWORK_IDLE, c.clock, 'page.waitForNetworkIdle')),
  waitForFrame: (p, [url, opts], c) =>
    p.waitForFrame(str(url, 'page.waitForFrame: url'), options(opts, WAIT, c.clock, 'page.waitForFrame')),
  setViewport: (p, [vp], c) => (vp === null ? p.setViewport(null) : p.setViewport(viewport(vp, c, 'page.setViewport'))),
  // A device preset (KnownDevices): its user agent and viewport, checked as setUserAgent and setViewport.
  emulate: (p, [device], c) => {
    if (!isPlainObject(device)) throw new MembraneError('page.emulate: device must be { userAgent, viewport }');
    return p.emulate({
      userAgent: kept(device.userAgent, 'page.emulate: userAgent', MAX_USER_AGENT_CHARS),
      viewport: viewport(device.viewport, c, 'page.emulate: viewport'),
    });
  },
  setUserAgent: (p, [ua, metadata]) => {
    if (!isPlainObject(ua))
      return p.setUserAgent(
        kept(ua, 'page.setUserAgent', MAX_USER_AGENT_CHARS),
        metadata === undefined ? undefined : userAgentMetadata(metadata, 'page.setUserAgent: userAgentMetadata'),
      );
    // The options form; a missing userAgent is the browser's own, as Puppeteer reads it.
    return p.setUserAgent({
      ...(ua.userAgent === undefined
        ? {}
        : { userAgent: kept(ua.userAgent, 'page.setUserAgent: userAgent', MAX_USER_AGENT_CHARS) }),
      ...(ua.userAgentMetadata === undefined
        ? {}
        : { userAgentMetadata: userAgentMetadata(ua.userAgentMetadata, 'page.setUserAgent: userAgentMetadata') }),
      ...(ua.platform === undefined
        ? {}
        : { platform: kept(ua.platform, 'page.setUserAgent: platform', MAX_EMULATION_CHARS) }),
    });
  },
  setExtraHTTPHeaders: (p, [h]) => p.setExtraHTTPHeaders(extraHeaders(h)),
  setCookie: (p, cookies, c) =>
    p.setCookie(
      ...cookies.map((x) => options(x, COOKIE, c.clock, 'page.setCookie') as { name: string; value: string }),
    ),
  cookies: (p, urls) => p.cookies(...urls.map((u) => str(u, 'page.cookies: url'))),
  deleteCookie: (p, cookies, c) =>
    p.deleteCookie(...cookies.map((x) => options(x, DELETE_COOKIE, c.clock, 'page.deleteCookie') as { name: string })),
  setJavaScriptEnabled: (p, [on]) => p.setJavaScriptEnabled(on === true),
  emulateMediaType: (p, [type]) =>
    p.emulateMediaType(type === undefined || type === null ? undefined : str(type, 'page.emulateMediaType')),
  emulateTimezone: (p, [tz]) =>
    p.emulateTimezone(tz === undefined ? undefined : kept(tz, 'page.emulateTimezone', MAX_EMULATION_CHARS)),
  emulateMediaFeatures: (p, [features]) =>
    p.emulateMediaFeatures(features === undefined || features === null ? undefined : mediaFeatures(features)),
  // Puppeteer checks the names (its message comes through); the host checks only the kind.
  emulateVisionDeficiency: (p, [type]) =>
    p.emulateVisionDeficiency(
      type === undefined || type === null ? undefined : (str(type, 'page.emulateVisionDeficiency') as never),
    ),
  // Below 1 Puppeteer refuses with its own message; above MAX_CPU_THROTTLING the renderer would only wait.
  emulateCPUThrottling: (p, [factor]) =>
    p.emulateCPUThrottling(
      factor === undefined || factor === null
        ? null
        : num(factor, 'page.emulateCPUThrottling: factor', -1e9, MAX_CPU_THROTTLING),
    ),
  emulateIdleState: (p, [state], c) =>
    p.emulateIdleState(
      state === undefined || state === null
        ? undefined
        : (options(state, IDLE_STATE, c.clock, 'page.emulateIdleState') as {
            isUserActive: boolean;
            isScreenUnlocked: boolean;
          }),
    ),
  metrics: (p) => p.metrics(),
  // Numbers only: Puppeteer checks the ranges itself, in its own words ("Invalid longitude").
  setGeolocation: (p, [g], c) =>
    p.setGeolocation(
      options(g, { latitude: 'number', longitude: 'number', accuracy: 'number' }, c.clock, 'page.setGeolocation') as {
        latitude: number;
        longitude: number;
      },
    ),
  emulateNetworkConditions: (p, [conditions], c) =>
    p.emulateNetworkConditions(
      conditions === undefined || conditions === null
        ? null
        : (options(conditions, NETWORK_CONDITIONS, c.clock, 'page.emulateNetworkConditions') as never),
    ),
  setOfflineMode: (p, [on]) => p.setOfflineMode(on === true),
  setCacheEnabled: (p, [on]) => p.setCacheEnabled(on !== false),
  setBypassCSP: (p, [on]) => p.setBypassCSP(on === true),
  authenticate: (p, [creds], c) => {
    if (creds === null) return p.authenticate(null);
    const o = options(creds, { username: 'string', password: 'string' }, c.clock, 'page.authenticate') as {
      username?: unknown;
      password?: unknown;
    };
    if (o.username !== undefined) kept(o.username, 'page.authenticate: username', MAX_HEADER_CHARS);
    if (o.password !== undefined) kept(o.password, 'page.authenticate: password', MAX_HEADER_CHARS);
    return p.authenticate(o as never);
  },
  setRequestInterception: (p, [on]) => p.setRequestInterception(on === true),
  screenshot: (p, [opts], c) => p.screenshot(options(opts, SCREENSHOT, c.clock, 'page.screenshot')),
  pdf: (p, [opts], c) => p.pdf(options(opts, PDF, c.clock, 'page.pdf')),
  evaluateOnNewDocument: (_p, [fn, ...rest], c) => c.evaluateOnNewDocument(fn, rest),
  removeScriptToEvaluateOnNewDocument: (_p, [id], c) => c.removeScriptToEvaluateOnNewDocument(id),
  bringToFront: (p) => p.bringToFront(),
  exposeFunction: (_p, [name, fid], c) => c.exposeFunction(name, fid),
  removeExposedFunction: (_p, [name], c) => c.removeExposedFunction(name),
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
  'touchscreen.touchStart': (p, [x, y]) =>
    touchStart(p, num(x, 'touchscreen.touchStart: x'), num(y, 'touchscreen.touchStart: y')),
  'touchscreen.touchMove': (p, [x, y]) =>
    p.touchscreen.touchMove(num(x, 'touchscreen.touchMove: x'), num(y, 'touchscreen.touchMove: y')),
  'touchscreen.touchEnd': (p) => touchEnd(p),
};

/** Locators one Locator.race may poll in all, counting those of the races it holds. */
export const MAX_RACED_LOCATORS = 32;

/**
 * How many locators each race polls (absent: 1). SECURITY: a race may hold races,
 * so without the count three levels of 32 poll 32,768 locators (measured: 13.7 s of
 * the executor's CPU and 700 MB, past the request's deadline). Weak: it keeps no
 * locator alive.
 */
const racedCount = new WeakMap<Locator<unknown>, number>();
const countOf = (l: Locator<unknown>): number => racedCount.get(l) ?? 1;

/** A locator made from another (setTimeout, filter, …) polls what that one polls. */
function derived(from: Locator<unknown>, l: Locator<unknown>): Locator<unknown> {
  if (racedCount.has(from)) racedCount.set(l, countOf(from));
  return l;
}

function race(list: unknown, c: MethodContext): Locator<unknown> {
  if (!Array.isArray(list) || list.length > MAX_RACED_LOCATORS)
    throw new MembraneError(`Locator.race: locators must be an array of at most ${MAX_RACED_LOCATORS}`);
  const locators = list.map((l) => c.handle<Locator<unknown>>(l, ['Locator'], 'Locator.race'));
  const count = locators.reduce((n, l) => n + countOf(l), 0);
  if (count > MAX_RACED_LOCATORS)
    throw budgetError(`Locator.race: at most ${MAX_RACED_LOCATORS} locators may be raced in all (${count})`);
  const r = Locator.race(locators);
  racedCount.set(r, count);
  return r;
}

const PAGE_SYNC: Table<Page> = {
  url: (p) => p.url(),
  viewport: (p) => p.viewport(),
  isClosed: (p) => p.isClosed(),
  isJavaScriptEnabled: (p) => p.isJavaScriptEnabled(),
  mainFrame: (p) => p.mainFrame(),
  frames: (p) => p.frames(),
  locator: (p, [sel], c) => newLocator(p.locator(locatorTarget(sel, 'page.locator', c) as never), c),
  subscribe: (_p, [event], c) => c.subscribe(event),
  locatorRace: (_p, [list], c) => race(list, c),
  setDefaultTimeout: (_p, [ms], c) => c.setDefaultTimeout(ms, false),
  setDefaultNavigationTimeout: (_p, [ms], c) => c.setDefaultTimeout(ms, true),
};

const ELEMENT: Table<ElementHandle> = {
  ...queries<ElementHandle>('elementHandle'),
  click: (e, [opts], c) => e.click(options(opts, CLICK, c.clock, 'elementHandle.click')),
  hover: (e) => e.hover(),
  focus: (e) => e.focus(),
  type: (e, [text, opts], c) =>
    e.type(textFor(c.page, text, 'elementHandle.type'), options(opts, TYPE, c.clock, 'elementHandle.type')),
  press: (e, [key, opts], c) =>
    e.press(keyFor(c.page, key, 'elementHandle.press') as never, options(opts, KEY, c.clock, 'elementHandle.press')),
  tap: (e) => e.tap(),
  select: (e, values) => e.select(...selectValues(values)),
  boundingBox: (e) => e.boundingBox(),
  boxModel: (e) => e.boxModel(),
  screenshot: (e, [opts], c) => e.screenshot(options(opts, SCREENSHOT, c.clock, 'elementHandle.screenshot')),
  isVisible: (e) => e.isVisible(),
  isHidden: (e) => e.isHidden(),
  isIntersectingViewport: (e, [opts], c) =>
    e.isIntersectingViewport(
      options(opts, { threshold: clampNum(0, 1) }, c.clock, 'elementHandle.isIntersectingViewport'),
    ),
  scrollIntoView: (e) => e.scrollIntoView(),
  contentFrame: (e) => e.contentFrame(),
  clickablePoint: (e, [offset], c) =>
    e.clickablePoint(
      offset === undefined
        ? undefined
        : (options(offset, { x: 'number', y: 'number' }, c.clock, 'clickablePoint') as never),
    ),
  getProperty: (e, [name]) => e.getProperty(str(name, 'getProperty: name')),
  getProperties: (e) => e.getProperties(),
  jsonValue: (e) => e.jsonValue(),
  dispose: (e) => e.dispose(),
  toElement: (e, [tag]) => e.toElement(str(tag, 'toElement: tagName') as never),
};

const JSHANDLE: Table<JSHandle> = {
  evaluate: ELEMENT.evaluate as Impl<JSHandle>,
  evaluateHandle: ELEMENT.evaluateHandle as Impl<JSHandle>,
  getProperty: (h, [name]) => h.getProperty(str(name, 'getProperty: name')),
  getProperties: (h) => h.getProperties(),
  jsonValue: (h) => h.jsonValue(),
  dispose: (h) => h.dispose(),
};

const LOCATOR: Table<Locator<unknown>> = {
  click: (l, [opts], c) => l.click(options(opts, { ...CLICK, ...WAIT }, c.clock, 'locator.click')),
  fill: (l, [value, opts], c) => {
    const text = textFor(c.page, value, 'locator.fill');
    const o = options(opts, WAIT, c.clock, 'locator.fill');
    // The call's own signal (the script's AbortSignal) still ends it, and so does a refused key.
    const own = o.signal instanceof AbortSignal ? o.signal : undefined;
    return typingLocator(c.page, (refused) =>
      l.fill(text, { ...o, signal: own ? AbortSignal.any([own, refused]) : refused }),
    );
  },
  hover: (l, [opts], c) => l.hover(options(opts, WAIT, c.clock, 'locator.hover')),
  scroll: (l, [opts], c) =>
    l.scroll(options(opts, { ...WAIT, scrollTop: 'number', scrollLeft: 'number' }, c.clock, 'locator.scroll')),
  wait: (l, [opts], c) => l.wait(options(opts, WAIT, c.clock, 'locator.wait')),
  waitHandle: (l, [opts], c) => l.waitHandle(options(opts, WAIT, c.clock, 'locator.waitHandle')),
};

const LOCATOR_SYNC: Table<Locator<unknown>> = {
  subscribe: (l, [event], c) => c.subscribeLocator(l, event),
  // SECURITY: the locator's own timeout is clamped like every other one.
  setTimeout: (l, [ms], c) => derived(l, l.setTimeout(capToDeadline(num(ms, 'locator.setTimeout', 0), c.clock))),
  setVisibility: (l, [v]) =>
    derived(l, l.setVisibility(v === null ? null : (str(v, 'locator.setVisibility') as 'visible' | 'hidden'))),
  setWaitForEnabled: (l, [v]) => derived(l, l.setWaitForEnabled(v === true)),
  setEnsureElementIsInTheViewport: (l, [v]) => derived(l, l.setEnsureElementIsInTheViewport(v === true)),
  setWaitForStableBoundingBox: (l, [v]) => derived(l, l.setWaitForStableBoundingBox(v === true)),
  filter: (l, [fn], c) => derived(l, l.filter(c.pageFunction(fn, 'locator.filter') as never)),
  filterHandle: (l, [fid], c) => derived(l, c.filterHandle(l, fid)),
  map: (l, [fn], c) => derived(l, l.map(c.pageFunction(fn, 'locator.map') as never)),
  clone: (l) => derived(l, l.clone()),
};

/** A viewport side in device pixels (CSS pixels × deviceScaleFactor), as Chromium's largest texture. */
const MAX_DEVICE_PIXELS_PER_SIDE = VIEWPORT_BOUNDS.maxDevicePixelsPerSide;

/** A viewport, bounded: CSS pixels 1–4096 a side, and at most MAX_DEVICE_PIXELS_PER_SIDE device pixels. */
function viewport(vp: unknown, c: MethodContext, where: string): { width: number; height: number } {
  const o = options(vp, VIEWPORT, c.clock, where);
  if (o.width === undefined || o.height === undefined)
    throw new MembraneError(`${where}: width and height are required`);

  // SECURITY: the page's memory grows with its device pixels; at most Chromium's
  // own texture limit a side, whatever the scale factor.
  const scale = typeof o.deviceScaleFactor === 'number' ? o.deviceScaleFactor : 1;
  if (Math.max(Number(o.width), Number(o.height)) * scale > MAX_DEVICE_PIXELS_PER_SIDE)
    throw new MembraneError(
      `${where}: width and height times deviceScaleFactor must be at most ${MAX_DEVICE_PIXELS_PER_SIDE}`,
    );
  return o as { width: number; height: number };
}

const RESPONSE_BODY = ['text', 'json', 'buffer', 'content'] as const;

/** respond()'s headers as Puppeteer takes them: a value is a string, a number, a boolean or an array of strings (one header each). */
function responseHeaders(value: unknown, where: string): Record<string, unknown> {
  if (!isPlainObject(value)) throw new MembraneError(`${where} must be an object`);
  const ok = (x: unknown): boolean => ['string', 'number', 'boolean'].includes(typeof x);
  for (const [k, x] of Object.entries(value)) {
    if (!(ok(x) || (Array.isArray(x) && x.every(ok))))
      throw new MembraneError(`${where}: "${k}" must be a string, a number or an array of strings`);
  }
  return Object.fromEntries(Object.entries(value).map(([k, x]) => [k, Array.isArray(x) ? x.map(String) : x]));
}

const REQUEST: Table<HTTPRequest> = {
  fetchPostData: (r) => r.fetchPostData(),
  abort: (r, [code]) => r.abort(code === undefined ? undefined : (str(code, 'request.abort: errorCode') as never)),
  continue: async (r, [overrides], c) => {
    if (overrides === undefined) return r.continue();
    const o = options(
      overrides,
      { url: 'string', method: 'string', postData: 'string', headers: 'record' },
      c.clock,
      'request.continue',
    );
    // SECURITY: a rewritten URL is checked like a navigation; the egress guard checks it again.
    if (typeof o.url === 'string') o.url = await c.navigationUrl(o.url, 'request.continue');
    return r.continue(o);
  },
  respond: (r, [resp], c) => {
    if (!isPlainObject(resp)) throw new MembraneError('request.respond: response must be an object');
    const o = options(
      resp,
      { status: clampNum(100, 599), headers: responseHeaders, contentType: 'string' },
      c.clock,
      'request.respond',
    );
    const body = resp.body;
    if (body !== undefined) {
      // A Uint8Array crosses as a bytes tag.
      if (typeof body === 'string') o.body = body;
      else if (isTagged(body) && body.$ps === 'b' && typeof body.d === 'string') o.body = Buffer.from(body.d, 'base64');
      else throw new MembraneError('request.respond: body must be a string or Uint8Array');
    }
    return r.respond(o);
  },
};
const REQUEST_SYNC: Table<HTTPRequest> = {
  response: (r) => r.response(),
  frame: (r) => r.frame(),
  redirectChain: (r) => r.redirectChain(),
  isInterceptResolutionHandled: (r) => r.isInterceptResolutionHandled(),
  interceptResolutionState: (r) => r.interceptResolutionState(),
};

const RESPONSE: Table<HTTPResponse> = Object.fromEntries(
  RESPONSE_BODY.map((m) => [m, (r: HTTPResponse) => (m === 'buffer' ? r.content() : r[m]())]),
);
const RESPONSE_SYNC: Table<HTTPResponse> = {
  request: (r) => r.request(),
  frame: (r) => r.frame(),
};

const DIALOG: Table<Dialog> = {
  accept: (d, [text]) => d.accept(text === undefined ? undefined : str(text, 'dialog.accept: promptText')),
  dismiss: (d) => d.dismiss(),
};

export const ASYNC_METHODS: Readonly<Partial<Record<HandleKind, Table<never>>>> = {
  Page: PAGE as Table<never>,
  Frame: FRAME as Table<never>,
  ElementHandle: ELEMENT as Table<never>,
  JSHandle: JSHANDLE as Table<never>,
  Locator: LOCATOR as Table<never>,
  HTTPRequest: REQUEST as Table<never>,
  HTTPResponse: RESPONSE as Table<never>,
  Dialog: DIALOG as Table<never>,
};

const ELEMENT_SYNC: Table<ElementHandle> = {
  frame: (e) => e.frame,
};

const CONSOLE_SYNC: Table<ConsoleMessage> = {
  args: (m) => m.args(),
};

export const SYNC_METHODS: Readonly<Partial<Record<HandleKind, Table<never>>>> = {
  Page: PAGE_SYNC as Table<never>,
  ElementHandle: ELEMENT_SYNC as Table<never>,
  Frame: FRAME_SYNC as Table<never>,
  Locator: LOCATOR_SYNC as Table<never>,
  HTTPRequest: REQUEST_SYNC as Table<never>,
  HTTPResponse: RESPONSE_SYNC as Table<never>,
  ConsoleMessage: CONSOLE_SYNC as Table<never>,
};

export function lookupMethod(sync: boolean, kind: HandleKind, method: string): Impl<never> | undefined {
  // SECURITY: the shared table is the allow-list; an implementation it does not name is never run.
  if (hostCall(kind, method) !== (sync ? 'sync' : 'async')) return undefined;
  const table = (sync ? SYNC_METHODS : ASYNC_METHODS)[kind];
  // SECURITY: own properties only, so "constructor", "__proto__" and friends are never methods.
  return table && Object.hasOwn(table, method) ? table[method] : undefined;
}
