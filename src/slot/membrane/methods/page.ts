// The page: what it shares with frames, its navigation history, cookies,
// interception, screenshots and PDFs, the registrations the membrane keeps
// (exposed functions, preload scripts, listeners), with its emulation and input
// methods (emulation.ts, keyboard.ts) in the same table.
import type { Page } from 'puppeteer';
import { COOKIE, DELETE_COOKIE, GOTO, NAV, NETWORK_IDLE, PDF, SCREENSHOT, WAIT } from '../option-schemas.js';
import { options, str } from '../options.js';
import type { Table } from './context.js';
import { EMULATION } from './emulation.js';
import { frameMethods, gotoUrl } from './frame.js';
import { INPUT } from './keyboard.js';
import { locatorTarget, newLocator, race } from './locator.js';

export const PAGE: Table<Page> = {
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
  ...EMULATION,
  setCookie: (p, cookies, c) =>
    p.setCookie(
      ...cookies.map((x) => options(x, COOKIE, c.clock, 'page.setCookie') as { name: string; value: string }),
    ),
  cookies: (p, urls) => p.cookies(...urls.map((u) => str(u, 'page.cookies: url'))),
  deleteCookie: (p, cookies, c) =>
    p.deleteCookie(...cookies.map((x) => options(x, DELETE_COOKIE, c.clock, 'page.deleteCookie') as { name: string })),
  metrics: (p) => p.metrics(),
  setRequestInterception: (p, [on]) => p.setRequestInterception(on === true),
  screenshot: (p, [opts], c) => p.screenshot(options(opts, SCREENSHOT, c.clock, 'page.screenshot')),
  pdf: (p, [opts], c) => p.pdf(options(opts, PDF, c.clock, 'page.pdf')),
  evaluateOnNewDocument: (_p, [fn, ...rest], c) => c.evaluateOnNewDocument(fn, rest),
  removeScriptToEvaluateOnNewDocument: (_p, [id], c) => c.removeScriptToEvaluateOnNewDocument(id),
  bringToFront: (p) => p.bringToFront(),
  exposeFunction: (_p, [name, fid], c) => c.exposeFunction(name, fid),
  removeExposedFunction: (_p, [name], c) => c.removeExposedFunction(name),
  ...INPUT,
};

export const PAGE_SYNC: Table<Page> = {
  url: (p) => p.url(),
  viewport: (p) => p.viewport(),
  isClosed: (p) => p.isClosed(),
  isJavaScriptEnabled: (p) => p.isJavaScriptEnabled(),
  isServiceWorkerBypassed: (p) => p.isServiceWorkerBypassed(),
  mainFrame: (p) => p.mainFrame(),
  frames: (p) => p.frames(),
  locator: (p, [sel], c) => newLocator(p.locator(locatorTarget(sel, 'page.locator', c) as never), c),
  subscribe: (_p, [event], c) => c.subscribe(event),
  locatorRace: (_p, [list], c) => race(list, c),
  setDefaultTimeout: (_p, [ms], c) => c.setDefaultTimeout(ms, false),
  setDefaultNavigationTimeout: (_p, [ms], c) => c.setDefaultTimeout(ms, true),
};
