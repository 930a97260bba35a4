// Element and JS handles: queries and evaluation from an element, its actions
// (keys and text judged as for the keyboard), geometry and properties.
import type { ElementHandle, JSHandle, TouchHandle } from 'puppeteer';
import { CLICK, KEY, SCREENSHOT, TYPE } from '../option-schemas.js';
import { clampNum, options, str } from '../options.js';
import type { Impl, Table } from './context.js';
import { keyFor, startTouch, textFor } from './keyboard.js';
import { queries, selectValues } from './queries.js';

export const ELEMENT: Table<ElementHandle> = {
  ...queries<ElementHandle>('elementHandle'),
  click: (e, [opts], c) => e.click(options(opts, CLICK, c.clock, 'elementHandle.click')),
  hover: (e) => e.hover(),
  focus: (e) => e.focus(),
  type: (e, [text, opts], c) =>
    e.type(textFor(c.page, text, 'elementHandle.type'), options(opts, TYPE, c.clock, 'elementHandle.type')),
  press: (e, [key, opts], c) =>
    e.press(keyFor(c.page, key, 'elementHandle.press') as never, options(opts, KEY, c.clock, 'elementHandle.press')),
  tap: (e) => e.tap(),
  touchStart: (e, _args, c) => startTouch(c.page, 'elementHandle.touchStart', () => e.touchStart()),
  touchMove: (e, [touch], c) =>
    e.touchMove(
      touch === undefined ? undefined : c.handle<TouchHandle>(touch, ['TouchHandle'], 'elementHandle.touchMove'),
    ),
  touchEnd: (e) => e.touchEnd(),
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

export const JSHANDLE: Table<JSHandle> = {
  evaluate: ELEMENT.evaluate as Impl<JSHandle>,
  evaluateHandle: ELEMENT.evaluateHandle as Impl<JSHandle>,
  getProperty: (h, [name]) => h.getProperty(str(name, 'getProperty: name')),
  getProperties: (h) => h.getProperties(),
  jsonValue: (h) => h.jsonValue(),
  dispose: (h) => h.dispose(),
};

export const ELEMENT_SYNC: Table<ElementHandle> = {
  frame: (e) => e.frame,
};
