// The query, evaluation and action methods Page, Frame and ElementHandle share
// ($, $$eval, evaluate, click, type, …), and the checks of their selectors and
// values: a selector of a shape Puppeteer parses slowly is refused first.
import { checkSelectorCost } from '../budgets.js';
import { CLICK, SELECTOR_WAIT, TYPE } from '../option-schemas.js';
import { MembraneError, options, str } from '../options.js';
import type { Table } from './context.js';
import { textFor } from './keyboard.js';

export function selector(v: unknown, where: string): string {
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
export function queries<T extends Queryable>(label: string): Table<T> {
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
export function actions<T extends Actionable>(label: string): Table<T> {
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
export function selectValues(values: unknown[]): string[] {
  return values.map((v) => {
    if (typeof v !== 'string')
      throw new MembraneError(`Values must be strings. Found value "${String(v)}" of type "${typeof v}"`);
    return v;
  });
}
