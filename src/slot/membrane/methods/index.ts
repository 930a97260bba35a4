// The host's side of the membrane's allow-list: for each method that
// sandbox/page-api.ts sends to the host, how its arguments are rebuilt before
// Puppeteer sees them. That table decides which names exist and how they are
// called (its security review is beside each name); a name it does not send to
// the host is refused here even if an implementation exists, and every name it
// sends has exactly one implementation here (test/unit/slot/membrane-methods.test.ts).
// The tables are one file per handle kind; this one assembles them.
import { hostCall } from '../../../../sandbox/page-api.js';
import type { HandleKind } from '../../../../sandbox/wire.js';
import type { Impl, Table } from './context.js';
import { ELEMENT, ELEMENT_SYNC, JSHANDLE } from './element.js';
import { CONSOLE_SYNC, DIALOG, REQUEST, REQUEST_SYNC, RESPONSE, RESPONSE_SYNC } from './events.js';
import { FRAME, FRAME_SYNC } from './frame.js';
import { TOUCH } from './keyboard.js';
import { LOCATOR, LOCATOR_SYNC } from './locator.js';
import { PAGE, PAGE_SYNC } from './page.js';

export type { MethodContext } from './context.js';
export { guardKeyboard, MAX_TOUCHES } from './keyboard.js';
export { MAX_RACED_LOCATORS } from './locator.js';

export const ASYNC_METHODS: Readonly<Partial<Record<HandleKind, Table<never>>>> = {
  Page: PAGE as Table<never>,
  Frame: FRAME as Table<never>,
  ElementHandle: ELEMENT as Table<never>,
  JSHandle: JSHANDLE as Table<never>,
  Locator: LOCATOR as Table<never>,
  HTTPRequest: REQUEST as Table<never>,
  HTTPResponse: RESPONSE as Table<never>,
  Dialog: DIALOG as Table<never>,
  TouchHandle: TOUCH as Table<never>,
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
