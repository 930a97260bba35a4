// What a method implementation is given: its target (the Puppeteer object a
// handle id stands for), the script's arguments as the isolate sent them (JSON,
// each method decodes what it accepts), and what it may use of the membrane.
import type { Locator, Page } from 'puppeteer';
import type { HandleKind } from '../../../../sandbox/wire.js';
import type { Clock } from '../deadline.js';

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

export type Impl<T> = (target: T, args: unknown[], ctx: MethodContext) => unknown;
export type Table<T> = Readonly<Record<string, Impl<T>>>;
