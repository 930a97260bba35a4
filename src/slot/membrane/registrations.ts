// What the script registers on its page that Puppeteer keeps on the host until it
// is removed or the request ends: listeners on page and locator events (one host
// listener each, the script's own listeners stay in the isolate), exposed
// functions, a locator's filterHandle predicate, and preload scripts
// (evaluateOnNewDocument). Each is bounded per request.
import type { Dialog, Locator, Page } from 'puppeteer';
import {
  MAX_EXPOSED_FUNCTIONS,
  MAX_EXPOSED_NAME_CHARS,
  MAX_PRELOAD_CHARS,
  MAX_PRELOAD_SCRIPTS,
  budgetError,
} from './budgets.js';
import type { Delivery } from './delivery.js';
import type { HandleTable } from './handles.js';
import { MembraneError, num, str } from './options.js';
import { pageFunctionCarrier, pageFunctionSource } from './page-function.js';

/** Events a script may listen to on its page. */
const PAGE_EVENTS = new Set([
  'request',
  'response',
  'requestfailed',
  'requestfinished',
  'console',
  'dialog',
  'load',
  'domcontentloaded',
  'framenavigated',
  'frameattached',
  'framedetached',
  'pageerror',
  'metrics', // { title, metrics }: console.timeStamp's label and the page's own Performance.getMetrics numbers
  'requestservedfromcache', // an HTTPRequest handle, as 'request'
]);

/**
 * A page function's argument in the text Puppeteer makes of a preload script
 * (evaluationString: JSON, or undefined); undefined for one it cannot write
 * (Puppeteer then throws for it, and nothing is kept).
 */
function argumentText(v: unknown): string | undefined {
  if (v === undefined) return 'undefined';
  try {
    return (JSON.stringify(v) as string | undefined) ?? '';
  } catch {
    return undefined;
  }
}

/**
 * Characters of a text as a DevTools message carries it (JSON: a control
 * character is 6, a quote or backslash 2), which is how Puppeteer writes a
 * preload script to each frame of another site the page attaches.
 */
function messageChars(text: string): number {
  return JSON.stringify(text).length - 2;
}

export class Registrations {
  readonly #page: Page;
  readonly #handles: HandleTable;
  readonly #delivery: Delivery;
  readonly #subscriptions: { event: string; fn: (...a: unknown[]) => void }[] = [];
  /** The page events the script listens to: one host listener each (the isolate keeps the script's listeners). */
  readonly #subscribed = new Set<string>();
  /** The host's listener on each locator the script listens to: one each, so at most the handle table's bound. */
  readonly #locatorListeners = new Map<Locator<unknown>, () => void>();
  #dialogHandled = false;
  /** Names given to page.exposeFunction and not removed: at most MAX_EXPOSED_FUNCTIONS. */
  readonly #exposedNames = new Set<string>();
  /** Scripts set with page.evaluateOnNewDocument and not removed, by identifier: the characters of each. */
  readonly #preloads = new Map<string, number>();
  /** Their count and characters, with those of the calls still being made. */
  #preloadCount = 0;
  #preloadChars = 0;

  constructor(page: Page, handles: HandleTable, delivery: Delivery) {
    this.#page = page;
    this.#handles = handles;
    this.#delivery = delivery;
    // Dialogs block the page until answered; without a script listener they are dismissed.
    const onDialog = (d: Dialog): void => {
      if (!this.#dialogHandled) d.dismiss().catch(() => undefined);
    };
    this.#page.on('dialog', onDialog);
    this.#subscriptions.push({ event: 'dialog', fn: onDialog as (...a: unknown[]) => void });
  }

  subscribe(event: unknown): void {
    const name = str(event, 'page.on: event');
    if (!PAGE_EVENTS.has(name)) throw new MembraneError(`page.on("${name}") is not available in pagescript`);
    if (name === 'dialog') this.#dialogHandled = true;
    // SECURITY: one host listener per event, whatever the isolate asks. The isolate's own check (a
    // Set in the runtime) is the script's to change: with Set.prototype.has replaced, every page.on
    // would add a listener here, each encoding and queueing every event again, without bound.
    if (this.#subscribed.has(name)) return;
    this.#subscribed.add(name);
    const fn = (payload?: unknown): void => this.#delivery.deliverEvent(1, name, payload);
    this.#page.on(name as 'request', fn as never);
    this.#subscriptions.push({ event: name, fn: fn as (...a: unknown[]) => void });
  }

  subscribeLocator(locator: Locator<unknown>, event: unknown): void {
    const name = str(event, 'locator.on: event');
    // SECURITY: a locator's one event, 'action' (LocatorEvent.Action): it is about to act on the
    // request's own page. It carries nothing; the listener runs in the isolate.
    if (name !== 'action')
      throw new MembraneError(`locator.on("${name.slice(0, 100)}") is not available in pagescript`);
    const h = this.#handles.idOf(locator);
    if (h === undefined) throw new MembraneError('locator.on: not a locator of this script');
    if (this.#locatorListeners.has(locator)) return; // the isolate keeps the script's listeners
    // Puppeteer emits it synchronously just before the action, so the event reaches the
    // isolate before the action's own result does, as a listener in Node sees it.
    const fn = (): void => this.#delivery.deliverEvent(h, name, undefined);
    locator.on('action', fn);
    this.#locatorListeners.set(locator, fn);
  }

  async exposeFunction(name: unknown, fid: unknown): Promise<void> {
    const n = str(name, 'page.exposeFunction: name');
    const id = num(fid, 'page.exposeFunction: id', 1);
    // SECURITY: each binding is kept by Puppeteer on the host and installed in every frame the page loads.
    if (n.length > MAX_EXPOSED_NAME_CHARS)
      throw budgetError(
        `page.exposeFunction: the name is too long (${n.length} characters; at most ${MAX_EXPOSED_NAME_CHARS})`,
      );
    const had = this.#exposedNames.has(n);
    if (!had && this.#exposedNames.size >= MAX_EXPOSED_FUNCTIONS)
      throw budgetError(`page.exposeFunction: at most ${MAX_EXPOSED_FUNCTIONS} functions may be exposed at once`);
    // SECURITY: counted before the call, and still if it fails. Puppeteer keeps the binding (and its preload
    // script) before it installs it in each frame; a frame of another site detached meanwhile fails the call
    // with the binding kept, and one Puppeteer will neither remove (removeExposedFunction: "does not exist")
    // nor set again. Given back, each failed call left a binding on the host beyond MAX_EXPOSED_FUNCTIONS.
    this.#exposedNames.add(n);
    await this.#page.exposeFunction(n, async (...args: unknown[]) => {
      const parsed = await this.#delivery.callScript(id, args);
      // A value thrown that is no Error (null, a string) reaches the page as itself, as in Puppeteer.
      if (!parsed.ok && 'thrown' in parsed) throw this.#handles.pageArg(parsed.thrown, `page.exposeFunction(${n})`, 1);
      if (!parsed.ok) throw new Error(parsed.e?.message ?? 'exposed function failed');
      return this.#handles.pageArg(parsed.v, `page.exposeFunction(${n})`, 1);
    });
  }

  /**
   * locator.filterHandle(predicate): the predicate stays in the isolate (fid); each
   * element the locator finds reaches it as a handle of this request, and its answer
   * counts as true or false, as Puppeteer's FilteredLocator takes it.
   */
  filterHandle(locator: Locator<unknown>, fid: unknown): Locator<unknown> {
    const id = num(fid, 'locator.filterHandle: id', 1);
    const predicate = async (handle: unknown): Promise<boolean> => {
      const parsed = await this.#delivery.callScript(id, [handle]);
      if (!parsed.ok) throw new Error(parsed.e?.message ?? 'the filterHandle predicate failed');
      return Boolean(parsed.v);
    };
    // filterHandle is marked internal in Puppeteer's types, but is a method of every Locator.
    return (
      locator as unknown as { filterHandle(p: (handle: unknown) => Promise<boolean>): Locator<unknown> }
    ).filterHandle(predicate);
  }

  async removeExposedFunction(name: unknown): Promise<void> {
    const n = str(name, 'page.removeExposedFunction: name');
    await this.#page.removeExposedFunction(n);
    this.#exposedNames.delete(n);
  }

  async evaluateOnNewDocument(fn: unknown, args: readonly unknown[]): Promise<unknown> {
    const where = 'page.evaluateOnNewDocument';
    // Puppeteer writes a preload function with String(fn) (evaluationString), not stringifyFunction: the text as it
    // is, bounded by the preload budget below.
    const given = pageFunctionSource(fn, where, Infinity);
    const source = typeof given === 'string' ? given : pageFunctionCarrier(given.src);
    const values = this.#handles.pageArgs(args, where);
    // What Puppeteer keeps (evaluationString: the source, or `(source)(arguments as JSON)`), counted as it is
    // written to each frame. SECURITY: counted as written, not as kept: 16 Mi control characters are kept
    // as 16 Mi, but each frame of another site the page attaches costs the slot process 96 Mi characters of
    // JSON (\uXXXX each), made on its one thread.
    let chars = messageChars(String(source));
    // Puppeteer refuses a string with arguments, or an argument it cannot write, before it sends or keeps anything.
    let writable = typeof source !== 'string' || values.length === 0;
    if (typeof source !== 'string') chars += '()()'.length + Math.max(0, values.length - 1);
    for (const v of values) {
      const text = argumentText(v);
      if (text === undefined) writable = false;
      else chars += messageChars(text);
    }
    if (!writable) return await this.#page.evaluateOnNewDocument(source as never, ...(values as never[]));
    // SECURITY: Puppeteer keeps every preload script's source on the host until the page closes (and sends
    // them all to each frame of another site), so their number and size are the request's, not unbounded.
    if (this.#preloadCount >= MAX_PRELOAD_SCRIPTS)
      throw budgetError(`${where}: at most ${MAX_PRELOAD_SCRIPTS} scripts may be set at once`);
    if (this.#preloadChars + chars > MAX_PRELOAD_CHARS)
      throw budgetError(
        `${where}: the scripts set are too large together (at most ${MAX_PRELOAD_CHARS} characters; this one has ${chars})`,
      );
    this.#preloadCount++;
    this.#preloadChars += chars;
    // SECURITY: a call that fails keeps its budget for the rest of the request. Puppeteer keeps the
    // script as soon as the main frame has it, then sends it to each frame of another site: one of those
    // detached meanwhile (a page can remove its frames at will) rejects the call with the script kept, and
    // it gives no identifier to remove it by. Given back on failure, the budget bounded nothing: each
    // failed call left its text on the host (test/unit/slot/budgets.test.ts, preload scripts).
    const added = await this.#page.evaluateOnNewDocument(source as never, ...(values as never[]));
    // The same identifier again: Puppeteer's entry holds the new text in place of the old one.
    const replaced = this.#preloads.get(added.identifier);
    this.#preloads.set(added.identifier, chars);
    if (replaced !== undefined) {
      this.#preloadCount--;
      this.#preloadChars -= replaced;
    }
    return added;
  }

  async removeScriptToEvaluateOnNewDocument(id: unknown): Promise<void> {
    const identifier = str(id, 'identifier');
    await this.#page.removeScriptToEvaluateOnNewDocument(identifier);
    const chars = this.#preloads.get(identifier);
    if (chars === undefined) return;
    this.#preloads.delete(identifier);
    this.#preloadCount--;
    this.#preloadChars -= chars;
  }

  /** Takes the host's listeners off the page and the locators. */
  dispose(): void {
    for (const { event, fn } of this.#subscriptions) this.#page.off(event as 'request', fn as never);
    for (const [locator, fn] of this.#locatorListeners) locator.off('action', fn);
    this.#locatorListeners.clear();
  }
}
