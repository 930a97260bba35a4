// Locators (page.locator, Locator.race and what is made from them): every wait
// bounded by the script's time, a race bounded in the locators it polls in all,
// and a typing action ended by the keyboard's refusal of a key.
import { Locator } from 'puppeteer';
import { budgetError } from '../budgets.js';
import { PUPPETEER_DEFAULT_TIMEOUT_MS, capToDeadline } from '../deadline.js';
import { CLICK, WAIT } from '../option-schemas.js';
import { MembraneError, isPlainObject, num, options, str } from '../options.js';
import type { MethodContext, Table } from './context.js';
import { textFor, typingLocator } from './keyboard.js';
import { selector } from './queries.js';

/**
 * A new locator waits as long as the page's default timeout says when it is made, as in
 * Puppeteer (which reads page.getDefaultTimeout() then): here the script's own default
 * (page.setDefaultTimeout), capped by its remaining time. SECURITY: every locator's waits
 * are bounded, whatever the real page's default is.
 */
export function newLocator(l: Locator<unknown>, c: MethodContext): Locator<unknown> {
  return l.setTimeout(capToDeadline(c.clock.defaultTimeoutMs?.(false) ?? PUPPETEER_DEFAULT_TIMEOUT_MS, c.clock));
}

export function locatorTarget(v: unknown, where: string, c: MethodContext): unknown {
  return typeof v === 'function' || (isPlainObject(v) && v.$ps === 'f') ? c.pageFunction(v, where) : selector(v, where);
}

/** Locators one Locator.race may poll in all, counting those of the races it holds. */
export const MAX_RACED_LOCATORS = 32;

/**
 * How many locators each race polls (absent: 1). SECURITY: a race may hold races,
 * so without the count three levels of 32 poll 32,768 locators, on the slot process's
 * CPU and memory. Weak: it keeps no locator alive.
 */
const racedCount = new WeakMap<Locator<unknown>, number>();
const countOf = (l: Locator<unknown>): number => racedCount.get(l) ?? 1;

/** A locator made from another (setTimeout, filter, …) polls what that one polls. */
function derived(from: Locator<unknown>, l: Locator<unknown>): Locator<unknown> {
  if (racedCount.has(from)) racedCount.set(l, countOf(from));
  return l;
}

export function race(list: unknown, c: MethodContext): Locator<unknown> {
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

export const LOCATOR: Table<Locator<unknown>> = {
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

export const LOCATOR_SYNC: Table<Locator<unknown>> = {
  subscribe: (l, [event], c) => c.subscribeLocator(l, event),
  // SECURITY: the locator's own timeout is clamped like every other one.
  setTimeout: (l, [ms], c) => derived(l, l.setTimeout(capToDeadline(num(ms, 'locator.setTimeout', 0), c.clock))),
  timeout: (l) => l.timeout,
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
