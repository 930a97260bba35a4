// The page API a script sees: one table per handle kind, the only list of the
// membrane's methods. Both sides read it:
//   - the isolate's proxies (sandbox/proxies.ts, bundled into the isolate) build
//     each class from it, so a script sees exactly these names;
//   - the host (src/slot/membrane/methods/) runs a call only when this table says the
//     name goes to the host that way, and has one implementation per such name
//     (test/unit/slot/membrane-methods.test.ts checks both directions).
// This file is data only: no state, no host value; minified, the comments are gone.
//
// Each entry says how a call is made:
//   'async'     a promise: the host runs the method, after rebuilding its arguments
//   'sync'      answered at once by the host (its result is a value or a handle)
//   'getter'    a property (frame.detached): reading it asks the host at once, as 'sync'
//   'snapshot'  read from the copy the host took when the handle crossed; no call
//   'local'     implemented inside the isolate (sandbox/proxies.ts)
//   {refused}   throws an error naming the method and the reason; nothing reaches the host
// and, beside it, the security review: why offering it keeps the three promises
// (no reach into the host, none into internal networks, none into another tenant).
// Everything a method touches is the request's own page, in its own incognito
// context, closed after the request; every timeout is clamped to the request's
// remaining time (src/slot/membrane/deadline.ts).
import type { HandleKind } from './wire.js';

export interface Refused {
  readonly refused: string;
  /** A property (page.tracing), refused when read rather than when called. */
  readonly getter?: true;
}
export type Entry = 'async' | 'sync' | 'getter' | 'snapshot' | 'local' | Refused;
export type KindTable = Readonly<Record<string, Entry>>;

const OWN_PAGE_ONLY: Refused = { refused: 'pagescript scripts may use only their own page' };
const READS_FILES: Refused = { refused: 'it would read files from the server' };
const CDP_OBJECT: Refused = { refused: 'it would expose a DevTools protocol object' };
// Input.DragData can name files on the server (its `files`), and drag() waits for
// an event that only the deprecated page.setDragInterception() makes Chromium send.
const DRAG: Refused = { refused: 'drag data can name files on the server' };

/** $, $$, $eval, $$eval, evaluate…, waitForSelector: on Page, Frame and ElementHandle. */
const QUERIES = {
  $: 'async', // selector: a string of at most 10,000 characters; answers a handle in this request's table
  $$: 'async', // as $
  $eval: 'async', // the function crosses as source text for the page, never run on the host; arguments are JSON or this request's handles
  $$eval: 'async', // as $eval
  evaluate: 'async', // as $eval: the page's JavaScript, in the request's own context
  evaluateHandle: 'async', // as evaluate; the handle joins the request's bounded table
  waitForSelector: 'async', // timeout clamped to the request's remaining time
} as const satisfies KindTable;

/** click, type, …: input events into the request's own page. */
const ACTIONS = {
  click: 'async', // CLICK options: button from a list, counts and delay bounded
  type: 'async', // text is a string; delay bounded (0–10 s)
  focus: 'async', // selector only
  hover: 'async', // selector only
  select: 'async', // values are strings
  tap: 'async', // selector only
} as const satisfies KindTable;

/** Listening to the page's events: the listeners live in the isolate. */
const EVENTS = {
  on: 'local', // sends `subscribe` once per event name (host: only the names in PAGE_EVENTS)
  once: 'local',
  addListener: 'local',
  off: 'local',
  removeListener: 'local',
  removeAllListeners: 'local',
  listenerCount: 'local',
} as const satisfies KindTable;

const FRAME_COMMON = {
  ...QUERIES,
  ...ACTIONS,
  waitForFunction: 'async', // function as source text; polling 10 ms–60 s, 'raf' or 'mutation'; timeout clamped
  goto: 'async', // SECURITY: http:, https:, data: and about:blank only, checked against the egress policy; the guard checks again
  title: 'async', // a string
  content: 'async', // a string, counted against the result limit when returned
  setContent: 'async', // HTML into the page; its requests go through the egress guard like any other
  waitForNavigation: 'async', // timeout clamped; waitUntil from a list
  addScriptTag: 'async', // url checked like goto; content runs in the page, not on the host; no `path` (a server file)
  addStyleTag: 'async', // as addScriptTag
  locator: 'sync', // a selector or a page function; the locator joins the request's table
} as const satisfies KindTable;

export const PAGE_API = {
  Page: {
    ...FRAME_COMMON,
    ...EVENTS,
    reload: 'async', // NAV options
    goBack: 'async', // NAV options; history is the request's own context's
    goForward: 'async', // as goBack
    waitForNetworkIdle: 'async', // idleTime and concurrency bounded; timeout clamped
    waitForFrame: 'async', // a URL string (a predicate would need a host function)
    setViewport: 'async', // width and height 1–4096, at most 16,384 device pixels a side: bounded renderer memory
    setUserAgent: 'async', // a string, or { userAgent, userAgentMetadata, platform }; metadata's strings and lists bounded (Puppeteer keeps them)
    emulate: 'async', // a device preset: setUserAgent and setViewport together, with their checks; the request's own page only
    setExtraHTTPHeaders: 'async', // strings only; they reach only what the egress guard lets through
    setCookie: 'async', // COOKIE schema; the cookie jar is the request's incognito context, gone after it
    cookies: 'async', // the request's own context's cookies only
    deleteCookie: 'async', // as cookies
    setJavaScriptEnabled: 'async', // a boolean
    emulateMediaType: 'async', // a string or nothing
    emulateTimezone: 'async', // a string or nothing
    emulateMediaFeatures: 'async', // at most 32 { name, value } strings, or nothing: how the request's page matches media queries
    emulateVisionDeficiency: 'async', // a type string or nothing: a filter over the request's page
    emulateCPUThrottling: 'async', // a factor 1–100 or null: slows only the request's own renderer, never speeds it
    emulateIdleState: 'async', // { isUserActive, isScreenUnlocked } booleans or nothing: what the page's IdleDetector sees
    metrics: 'async', // numbers about the request's own page (DevTools Performance.getMetrics): counts and durations
    setGeolocation: 'async', // finite latitude, longitude, accuracy (Puppeteer checks their ranges); no permission is granted beyond the context
    setOfflineMode: 'async', // a boolean
    // SECURITY: Network.emulateNetworkConditions is sent to the page's own DevTools sessions (its frames'
    // and workers' targets), never the browser's: it throttles the request's page alone, whose time is bounded.
    emulateNetworkConditions: 'async', // finite download, upload, latency and an offline boolean, or null
    setCacheEnabled: 'async', // a boolean; the cache is the incognito context's
    setBypassCSP: 'async', // the page's own CSP; the page cannot reach more than the guard allows
    // SECURITY: Puppeteer sends Network.setBypassServiceWorker to the page's own primary session only, never the
    // browser's: service workers of the request's incognito context are skipped for its page's requests, which
    // still go through the egress guard.
    setBypassServiceWorker: 'async', // a boolean
    authenticate: 'async', // username and password strings, sent only to sites the guard allows
    setRequestInterception: 'async', // requests then arrive as HTTPRequest handles; see HTTPRequest.continue
    screenshot: 'async', // SECURITY: no `path`; clip bounded; bytes come back as a copy
    pdf: 'async', // SECURITY: no `path`; timeout clamped
    createPDFStream: 'local', // page.pdf's bytes (its options and bounds), read through a stream made in the isolate
    evaluateOnNewDocument: 'async', // source text for the page, never run on the host
    removeScriptToEvaluateOnNewDocument: 'async', // an identifier string
    bringToFront: 'async', // the request's own page
    url: 'sync',
    viewport: 'sync',
    isClosed: 'sync',
    isJavaScriptEnabled: 'sync',
    isServiceWorkerBypassed: 'sync', // the boolean Puppeteer keeps for setBypassServiceWorker
    mainFrame: 'sync', // a Frame handle of the request's page
    frames: 'sync', // as mainFrame
    setDefaultTimeout: 'sync', // clamped to the remaining time
    setDefaultNavigationTimeout: 'sync', // as setDefaultTimeout
    waitForRequest: 'local', // a predicate runs in the isolate over `request` events
    waitForResponse: 'local', // as waitForRequest
    exposeFunction: 'local', // the function stays in the isolate; the page's calls reach it as JSON through the host
    removeExposedFunction: 'async', // a name this request exposed; the binding leaves the request's page
    'keyboard.down': 'async', // a key name string
    'keyboard.up': 'async',
    'keyboard.press': 'async', // KEY options: delay bounded, editing commands are strings
    'keyboard.type': 'async', // a string; delay bounded
    'keyboard.sendCharacter': 'async', // a string
    'mouse.move': 'async', // finite coordinates; steps 1–1000
    'mouse.click': 'async', // finite coordinates; MOUSE_CLICK options
    'mouse.down': 'async', // MOUSE_CLICK options
    'mouse.up': 'async',
    'mouse.wheel': 'async', // finite deltas
    'mouse.reset': 'async',
    'mouse.drag': DRAG,
    'mouse.dragAndDrop': DRAG,
    'mouse.dragEnter': DRAG,
    'mouse.dragOver': DRAG,
    'mouse.drop': DRAG,
    'touchscreen.tap': 'async', // finite coordinates
    // SECURITY: touches held at once are bounded (MAX_TOUCHES, host) on every route that starts one:
    // here, elementHandle.touchStart and tap; the TouchHandle answered joins the request's bounded table.
    'touchscreen.touchStart': 'async', // finite coordinates; a TouchHandle (move and end only)
    'touchscreen.touchMove': 'async', // moves the first touch; finite coordinates
    'touchscreen.touchEnd': 'async', // ends the first touch
    // The whole browser, other contexts, the DevTools protocol, the disk.
    browser: OWN_PAGE_ONLY,
    browserContext: OWN_PAGE_ONLY,
    target: OWN_PAGE_ONLY,
    createCDPSession: OWN_PAGE_ONLY,
    close: OWN_PAGE_ONLY,
    screencast: OWN_PAGE_ONLY,
    waitForFileChooser: { refused: 'a file chooser exists to hand files of the server to the page' },
    waitForDevicePrompt: OWN_PAGE_ONLY,
    workers: OWN_PAGE_ONLY,
    openDevTools: OWN_PAGE_ONLY,
    setDownloadBehavior: OWN_PAGE_ONLY,
    setDragInterception: DRAG,
    tracing: { ...OWN_PAGE_ONLY, getter: true },
    coverage: { ...OWN_PAGE_ONLY, getter: true },
  },
  Frame: {
    ...FRAME_COMMON,
    frameElement: 'async', // an ElementHandle of the request's page
    url: 'sync',
    name: 'sync',
    parentFrame: 'sync',
    childFrames: 'sync',
    isDetached: 'sync',
    detached: 'getter', // whether the frame left the request's page
    page: 'sync', // the request's page: the handle it already has
  },
  ElementHandle: {
    ...QUERIES,
    click: 'async', // CLICK options
    hover: 'async',
    focus: 'async',
    type: 'async', // a string; delay bounded
    press: 'async', // a key name; KEY options
    tap: 'async',
    // Touches at the element's clickable point, in the request's own page, as page.touchscreen's: touchStart
    // counts against the same MAX_TOUCHES bound and answers a TouchHandle; touchMove takes only a TouchHandle
    // of this request's table (the kind is the host's, never the isolate's claim).
    touchStart: 'async',
    touchMove: 'async', // a TouchHandle of this request, or nothing (the first touch)
    touchEnd: 'async', // ends the first touch
    select: 'async', // strings
    boundingBox: 'async',
    boxModel: 'async',
    screenshot: 'async', // SECURITY: no `path`, as page.screenshot
    isVisible: 'async',
    isHidden: 'async',
    isIntersectingViewport: 'async', // threshold 0–1
    scrollIntoView: 'async',
    contentFrame: 'async', // a Frame of the request's page
    clickablePoint: 'async', // offset: finite x, y
    getProperty: 'async', // a name string; the value stays in the page as a handle
    getProperties: 'async', // a Map of handles, each counted in the table's bound
    jsonValue: 'async', // JSON copied out
    dispose: 'async', // frees a slot in the table
    toElement: 'async', // a tag name string
    toString: 'snapshot', // Puppeteer's text ("JSHandle@node"), from the remote object Puppeteer holds; no call to the page
    asElement: 'local', // the element itself
    frame: 'getter', // the Frame of the request's page the element is in
    disposed: 'local', // whether dispose() was called on this handle, as Puppeteer keeps it
    uploadFile: READS_FILES,
    remoteObject: CDP_OBJECT,
  },
  JSHandle: {
    evaluate: 'async', // as Page.evaluate
    evaluateHandle: 'async',
    getProperty: 'async',
    getProperties: 'async',
    jsonValue: 'async',
    dispose: 'async',
    toString: 'snapshot', // Puppeteer's text ("JSHandle:2", "JSHandle@object"), from the remote object it holds
    asElement: 'local', // null: a JSHandle is no element
    disposed: 'local', // as ElementHandle.disposed
    remoteObject: CDP_OBJECT,
  },
  Locator: {
    ...EVENTS, // 'action' only (LocatorEvent.Action): the host listens on the locator and tells the isolate
    click: 'async', // CLICK and WAIT options
    fill: 'async', // a string
    hover: 'async',
    scroll: 'async', // finite offsets
    wait: 'async', // timeout clamped
    waitHandle: 'async',
    setTimeout: 'sync', // SECURITY: clamped to the remaining time like every other timeout
    // SECURITY: a number the script set itself, as the host clamped it; it tells nothing of the host or another tenant.
    timeout: 'getter',
    setVisibility: 'sync', // 'visible', 'hidden' or null
    setWaitForEnabled: 'sync',
    setEnsureElementIsInTheViewport: 'sync',
    setWaitForStableBoundingBox: 'sync',
    filter: 'sync', // a page function as source text
    // The predicate stays in the isolate, as exposeFunction's function: the host calls it by id with each
    // element the locator finds (a handle of this request, counted in its bound) and takes its answer as a
    // boolean; a call waits within the exposed-call bound (MAX_WAITING_EXPOSED_CALLS), never past the script.
    filterHandle: 'local',
    map: 'sync', // as filter
    clone: 'sync',
  },
  HTTPRequest: {
    url: 'snapshot',
    method: 'snapshot',
    headers: 'snapshot',
    postData: 'snapshot',
    hasPostData: 'snapshot',
    resourceType: 'snapshot',
    isNavigationRequest: 'snapshot',
    failure: 'snapshot',
    initiator: 'snapshot', // what started the request: its type, and the page's URL, line and stack when a script did
    abort: 'async', // an error code string
    continue: 'async', // SECURITY: a rewritten url is checked like a navigation, and the egress guard checks it again
    respond: 'async', // status 100–599, string headers, a string or bytes body: the page gets it, nothing leaves
    response: 'sync',
    frame: 'sync',
    redirectChain: 'sync',
    isInterceptResolutionHandled: 'sync',
    interceptResolutionState: 'sync', // { action, priority }: Puppeteer's own state for this request
    fetchPostData: 'async', // the request's body as the page sent it (a string), read from the request's own page
  },
  HTTPResponse: {
    url: 'snapshot',
    status: 'snapshot',
    statusText: 'snapshot',
    ok: 'snapshot',
    headers: 'snapshot',
    fromCache: 'snapshot',
    fromServiceWorker: 'snapshot',
    timing: 'snapshot', // Chromium's timings of the load, relative to its start (the connection is the guard's)
    text: 'async', // the body of a response the guard allowed
    json: 'async',
    buffer: 'async', // bytes as a copy
    content: 'async',
    request: 'sync',
    frame: 'sync',
    // SECURITY: the peer is always the egress guard on loopback; its address says nothing true about the site.
    remoteAddress: { refused: "the address is the egress guard's" },
    securityDetails: { refused: "the address is the egress guard's" },
  },
  Dialog: {
    type: 'snapshot',
    message: 'snapshot',
    defaultValue: 'snapshot',
    accept: 'async', // a prompt text string
    dismiss: 'async',
  },
  // A touch held on the request's page (touchscreen.touchStart, elementHandle.touchStart): Puppeteer's
  // TouchHandle stays on the host; the isolate holds its id and may only move and end it.
  TouchHandle: {
    move: 'async', // finite coordinates, on the request's own page
    end: 'async', // lifts the touch; it no longer counts against MAX_TOUCHES
  },
  ConsoleMessage: {
    type: 'snapshot',
    text: 'snapshot',
    location: 'snapshot',
    stackTrace: 'snapshot', // the page's call frames: URLs, lines and function names of the page's scripts
    // The message's arguments as JSHandles of the page's own values (what console.log was given), in the
    // request's own page: as evaluateHandle's results, each joins the request's bounded handle table.
    args: 'sync',
  },
} as const satisfies Record<HandleKind, KindTable>;

/**
 * Names the isolate's own code sends to the host, which scripts do not call
 * under that name: `subscribe` (from page.on), and `exposeFunction` and
 * `filterHandle` (their local wrappers send the function's id, never the function).
 */
export const HOST_ONLY: Readonly<Partial<Record<HandleKind, Readonly<Record<string, 'async' | 'sync'>>>>> = {
  Page: {
    subscribe: 'sync', // SECURITY: the host accepts only the event names in its PAGE_EVENTS
    exposeFunction: 'async', // a name string and a function id; the function stays in the isolate
    locatorRace: 'sync', // Locator.race(locators): this request's Locator handles only; the new one joins its table
  },
  Locator: {
    subscribe: 'sync', // SECURITY: the host accepts only 'action', an event with no payload
    filterHandle: 'sync', // a function id: the predicate stays in the isolate; the new locator joins the table
  },
};

/** How the host may be called for `name` on a handle of `kind`, or undefined: it may not. */
export function hostCall(kind: HandleKind, name: string): 'async' | 'sync' | undefined {
  const table: KindTable | undefined = PAGE_API[kind];
  // SECURITY: own properties only, so "constructor", "__proto__" and friends are never methods.
  const entry = table && Object.hasOwn(table, name) ? table[name] : undefined;
  if (entry === 'async' || entry === 'sync') return entry;
  if (entry === 'getter') return 'sync';
  const extra = HOST_ONLY[kind];
  return extra && Object.hasOwn(extra, name) ? extra[name] : undefined;
}

/** The names whose values the host copies into a handle's snapshot when it crosses. */
export function snapshotNames(kind: HandleKind): string[] {
  const table: KindTable = PAGE_API[kind];
  return Object.keys(table).filter((name) => table[name] === 'snapshot');
}
