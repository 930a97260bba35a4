// What a script sees, for the editor's completion: the globals of the isolate
// (sandbox/runtime.ts) and the methods of `page` the membrane allows
// (src/slot/membrane/methods.ts). A unit test checks this list against the
// membrane's tables in both directions, so it cannot drift from them.

export interface GlobalInfo {
  readonly label: string;
  readonly type: 'variable' | 'function' | 'method' | 'property';
  /** A short signature or description shown beside the label. */
  readonly detail?: string;
}

export const SCRIPT_GLOBALS: readonly GlobalInfo[] = [
  { label: 'page', type: 'variable', detail: 'Puppeteer 24 Page, already at url' },
  { label: 'cheerio', type: 'variable', detail: 'cheerio.load(html)' },
  { label: 'targetUrl', type: 'variable', detail: 'the url of the request' },
  { label: 'console', type: 'variable', detail: 'console.log → logs' },
  { label: 'setTimeout', type: 'function', detail: '(fn, ms)' },
  { label: 'clearTimeout', type: 'function', detail: '(id)' },
  { label: 'setInterval', type: 'function', detail: '(fn, ms)' },
  { label: 'clearInterval', type: 'function', detail: '(id)' },
  { label: 'URL', type: 'function', detail: 'new URL(href, base)' },
  { label: 'URLSearchParams', type: 'function' },
  { label: 'TextEncoder', type: 'function' },
  { label: 'TextDecoder', type: 'function' },
  { label: 'atob', type: 'function', detail: '(base64)' },
  { label: 'btoa', type: 'function', detail: '(text)' },
  { label: 'structuredClone', type: 'function', detail: '(value)' },
  { label: 'queueMicrotask', type: 'function', detail: '(fn)' },
  { label: 'AbortController', type: 'function', detail: 'new AbortController()' },
  { label: 'AbortSignal', type: 'variable' },
  { label: 'KnownDevices', type: 'variable', detail: "KnownDevices['iPhone 15']" },
  { label: 'PredefinedNetworkConditions', type: 'variable', detail: "PredefinedNetworkConditions['Slow 3G']" },
  { label: 'Locator', type: 'variable', detail: 'Locator.race([page.locator(a), page.locator(b)])' },
];

/** Signatures of the page methods scripts use most; the rest are offered by name. */
const PAGE_DETAILS: Readonly<Record<string, string>> = {
  $: '(selector) → ElementHandle | null',
  $$: '(selector) → ElementHandle[]',
  $eval: '(selector, el => …, ...args)',
  $$eval: '(selector, els => …, ...args)',
  evaluate: '(() => …, ...args) runs in the page',
  waitForSelector: '(selector, { visible, hidden, timeout })',
  waitForFunction: '(() => condition, { timeout, polling })',
  waitForNavigation: "({ waitUntil: 'load' | 'networkidle0', timeout })",
  waitForNetworkIdle: '({ idleTime, timeout })',
  waitForRequest: '(url | request => boolean, { timeout })',
  waitForResponse: '(url | response => boolean, { timeout })',
  click: '(selector, { button, clickCount, delay })',
  type: '(selector, text, { delay })',
  select: '(selector, ...values)',
  goto: '(url, { waitUntil, timeout })',
  title: '() → string',
  content: '() → HTML string',
  url: '() → string',
  locator: '(selector).click() / .fill(text) / .wait()',
  screenshot: "({ encoding: 'base64', fullPage, type })",
  setViewport: '({ width, height, deviceScaleFactor })',
  setUserAgent: '(userAgent)',
  cookies: '(...urls) → cookies of this page',
  setCookie: '(...cookies) for this page',
  on: "('request' | 'response' | 'console' | 'dialog', fn)",
};

const PAGE_METHOD_NAMES = [
  // queries and evaluation
  '$',
  '$$',
  '$eval',
  '$$eval',
  'evaluate',
  'evaluateHandle',
  'waitForSelector',
  'waitForFunction',
  // actions
  'click',
  'type',
  'focus',
  'hover',
  'select',
  'tap',
  'locator',
  // navigation and content
  'goto',
  'reload',
  'goBack',
  'goForward',
  'title',
  'content',
  'setContent',
  'url',
  'waitForNavigation',
  'waitForNetworkIdle',
  'waitForFrame',
  'waitForRequest',
  'waitForResponse',
  'mainFrame',
  'frames',
  // emulation and settings
  'setViewport',
  'viewport',
  'setUserAgent',
  'setExtraHTTPHeaders',
  'setCookie',
  'cookies',
  'deleteCookie',
  'setJavaScriptEnabled',
  'isJavaScriptEnabled',
  'emulate',
  'emulateMediaType',
  'emulateTimezone',
  'emulateMediaFeatures',
  'emulateVisionDeficiency',
  'emulateCPUThrottling',
  'emulateIdleState',
  'emulateNetworkConditions',
  'metrics',
  'setGeolocation',
  'setOfflineMode',
  'setCacheEnabled',
  'setBypassCSP',
  'setBypassServiceWorker',
  'isServiceWorkerBypassed',
  'authenticate',
  'setRequestInterception',
  'setDefaultTimeout',
  'setDefaultNavigationTimeout',
  // output
  'screenshot',
  'pdf',
  'createPDFStream',
  // scripts in the page
  'evaluateOnNewDocument',
  'removeScriptToEvaluateOnNewDocument',
  'addScriptTag',
  'addStyleTag',
  'exposeFunction',
  'removeExposedFunction',
  // misc
  'bringToFront',
  'isClosed',
  // events
  'on',
  'once',
  'off',
] as const;

export const PAGE_MEMBERS: readonly GlobalInfo[] = [
  ...PAGE_METHOD_NAMES.map((label): GlobalInfo => {
    const detail = PAGE_DETAILS[label];
    return detail === undefined ? { label, type: 'method' } : { label, type: 'method', detail };
  }),
  { label: 'keyboard', type: 'property', detail: 'press, type, down, up' },
  { label: 'mouse', type: 'property', detail: 'click, move, wheel, …' },
  { label: 'touchscreen', type: 'property', detail: 'tap, touchStart, touchMove, touchEnd' },
];

/** Members of the objects a script reaches by name: `page.`, `page.keyboard.`, `cheerio.`, `console.`. */
export const MEMBERS: Readonly<Record<string, readonly GlobalInfo[]>> = {
  page: PAGE_MEMBERS,
  'page.keyboard': ['down', 'up', 'press', 'type', 'sendCharacter'].map((label) => ({ label, type: 'method' })),
  // Not drag or dragAndDrop: the membrane refuses them.
  'page.mouse': ['move', 'click', 'down', 'up', 'wheel', 'reset'].map((label) => ({
    label,
    type: 'method',
  })),
  'page.touchscreen': [
    { label: 'tap', type: 'method', detail: '(x, y)' },
    { label: 'touchStart', type: 'method', detail: '(x, y) → TouchHandle' },
    { label: 'touchMove', type: 'method', detail: '(x, y)' },
    { label: 'touchEnd', type: 'method', detail: '()' },
  ],
  cheerio: [
    { label: 'load', type: 'function', detail: '(html) → $' },
    { label: 'text', type: 'function', detail: '(nodes) → string' },
    { label: 'contains', type: 'function', detail: '(container, contained)' },
  ],
  console: ['log', 'info', 'warn', 'error', 'debug', 'trace'].map((label) => ({
    label,
    type: 'method',
    detail: '(...values) → logs',
  })),
};
