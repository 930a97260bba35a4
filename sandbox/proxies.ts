// Proxies of Puppeteer 24's Page, Frame, ElementHandle, JSHandle, Locator,
// HTTPRequest, HTTPResponse, Dialog and ConsoleMessage, inside the isolate.
// Each class is built from its table in ./page-api.ts: a method is a stub that
// sends (handle id, method name, arguments) to the host, which decides what is
// allowed (src/slot/membrane/methods/); a refused one throws a clear error; the
// 'local' ones are written here.
import { ByteStream } from './byte-stream.js';
import { PAGE_API, type Entry, type KindTable } from './page-api.js';
import type { HandleKind, ToHost } from './wire.js';

type AnyFn = (...args: unknown[]) => unknown;

export interface BridgeDeps {
  callAsync(h: number, m: string, args: readonly unknown[]): Promise<unknown>;
  callSync(h: number, m: string, args: readonly unknown[]): unknown;
  send(msg: ToHost): string;
  defaultTimeoutMs: number;
  setTimer(fn: unknown, ms: unknown, args: unknown[], repeat: boolean): number;
  clearTimer(id: unknown): void;
  reportUncaught(e: unknown, where: string): void;
}

export interface Bridge {
  page: object;
  /** The Locator class, for the script's global `Locator` (its static `race`). */
  Locator: object;
  idOf(v: object): number | undefined;
  kindOf(v: object): HandleKind | undefined;
  proxyFor(id: number, kind: HandleKind, snapshot?: Record<string, unknown>): object;
  emit(h: number, event: string, value: unknown): void;
  invokeExposed(fid: number, args: unknown[]): Promise<unknown>;
}

/** The page's handle id; the host always registers the request's page first. */
export const PAGE_ID = 1;

/** How refused methods are named in their errors: `page.browser()`, `elementHandle.uploadFile()`. */
const LABELS: Record<HandleKind, string> = {
  Page: 'page',
  Frame: 'frame',
  ElementHandle: 'elementHandle',
  JSHandle: 'jsHandle',
  Locator: 'locator',
  HTTPRequest: 'request',
  HTTPResponse: 'response',
  Dialog: 'dialog',
  ConsoleMessage: 'consoleMessage',
  TouchHandle: 'touchHandle',
};

export function createPageApi(deps: BridgeDeps): Bridge {
  const ids = new WeakMap<object, number>();
  const kinds = new WeakMap<object, HandleKind>();
  const snapshots = new WeakMap<object, Record<string, unknown>>();
  const byId = new Map<number, object>();
  const listeners = new Map<string, { fn: AnyFn; once: boolean }[]>(); // key: `${h}:${event}`
  const subscribed = new Set<string>();
  const exposed = new Map<number, AnyFn>();
  let nextExposed = 1;

  const idOf = (self: object): number => {
    const id = ids.get(self);
    if (id === undefined) throw new TypeError('Illegal invocation: not a pagescript handle');
    return id;
  };

  /**
   * Puts one table entry on a prototype (or a device object): a stub that sends
   * `wireName` to the host, a snapshot reader, or a refusal. 'local' entries are
   * written below, by hand.
   */
  function install(target: object, label: string, name: string, wireName: string, entry: Entry): void {
    let value: AnyFn;
    if (entry === 'local') return;
    if (entry === 'getter') {
      Object.defineProperty(target, name, {
        get(this: object) {
          return deps.callSync(idOf(this), wireName, []);
        },
        configurable: true,
      });
      return;
    }
    if (entry === 'async') {
      value = function (this: object, ...args: unknown[]) {
        return deps.callAsync(idOf(this), wireName, args);
      };
    } else if (entry === 'sync') {
      value = function (this: object, ...args: unknown[]) {
        return deps.callSync(idOf(this), wireName, args);
      };
    } else if (entry === 'snapshot') {
      value = function (this: object) {
        return snapshots.get(this)?.[name];
      };
    } else {
      const called = `${label}.${name}${entry.getter ? '' : '()'}`;
      const message = `${called} is not available in pagescript: ${entry.refused}`;
      const refuse = (): never => {
        // The host hears of every refusal (a security event of the request's own key).
        deps.send({ op: 'refused', m: called });
        throw new Error(message);
      };
      if (entry.getter) {
        Object.defineProperty(target, name, { get: refuse });
        return;
      }
      value = function () {
        return refuse();
      };
    }
    Object.defineProperty(target, name, { value, writable: true, configurable: true });
  }

  /** Builds a class's prototype from its table; `keyboard.press` and the like go on each page's devices. */
  function installTable(proto: object, kind: HandleKind): void {
    const table: KindTable = PAGE_API[kind];
    for (const [name, entry] of Object.entries(table)) {
      if (!name.includes('.')) install(proto, LABELS[kind], name, name, entry);
    }
  }

  /** The page's keyboard, mouse and touchscreen: frozen objects whose methods send `mouse.click` etc. */
  const DEVICES = new Map<string, [string, Entry][]>();
  for (const [name, entry] of Object.entries(PAGE_API.Page as KindTable)) {
    const dot = name.indexOf('.');
    if (dot < 0) continue;
    const device = name.slice(0, dot);
    const list = DEVICES.get(device) ?? [];
    list.push([name.slice(dot + 1), entry]);
    DEVICES.set(device, list);
  }

  function events(proto: object): void {
    const on = function (this: object, event: unknown, fn: unknown, once = false): object {
      if (typeof event !== 'string') throw new TypeError('event name must be a string');
      if (typeof fn !== 'function') throw new TypeError('listener must be a function');
      const h = idOf(this);
      const key = `${h}:${event}`;
      if (!subscribed.has(key)) {
        deps.callSync(h, 'subscribe', [event]);
        subscribed.add(key);
      }
      const list = listeners.get(key) ?? [];
      list.push({ fn: fn as AnyFn, once });
      listeners.set(key, list);
      return this;
    };
    const off = function (this: object, event: unknown, fn?: unknown): object {
      const key = `${idOf(this)}:${String(event)}`;
      const list = listeners.get(key);
      if (list) {
        const i = fn === undefined ? -1 : list.findIndex((l) => l.fn === fn);
        if (fn === undefined) list.length = 0;
        else if (i >= 0) list.splice(i, 1);
      }
      return this;
    };
    const define = (name: string, value: unknown): void => {
      Object.defineProperty(proto, name, { value, writable: true, configurable: true });
    };
    define('on', function (this: object, e: unknown, fn: unknown) {
      return on.call(this, e, fn, false);
    });
    define('addListener', function (this: object, e: unknown, fn: unknown) {
      return on.call(this, e, fn, false);
    });
    define('once', function (this: object, e: unknown, fn: unknown) {
      return on.call(this, e, fn, true);
    });
    define('off', off);
    define('removeListener', off);
    define('removeAllListeners', function (this: object, e?: unknown) {
      const h = idOf(this);
      for (const key of listeners.keys()) if (e === undefined || key === `${h}:${String(e)}`) listeners.delete(key);
      return this;
    });
    define('listenerCount', function (this: object, e: unknown) {
      return listeners.get(`${idOf(this)}:${String(e)}`)?.length ?? 0;
    });
  }

  /** The script's page.setDefaultTimeout, once it has set one: the waits run here read it as Puppeteer's do. */
  let scriptDefaultTimeoutMs: number | undefined;

  function waitForEvent(self: object, event: string, what: unknown, options: unknown): Promise<unknown> {
    const opts = (typeof options === 'object' && options !== null ? options : {}) as {
      timeout?: unknown;
      signal?: unknown;
    };
    const timeout =
      typeof opts.timeout === 'number' && opts.timeout >= 0
        ? opts.timeout
        : (scriptDefaultTimeoutMs ?? deps.defaultTimeoutMs);
    const signal = opts.signal as Partial<EventTarget & { reason: unknown }> | undefined;
    const match =
      typeof what === 'function' ? (what as AnyFn) : (r: unknown) => (r as { url(): string }).url() === String(what);
    return new Promise((resolve, reject) => {
      let timer: number | undefined;
      // As Puppeteer (fromAbortSignal): the signal's abort event ends the wait with its reason, an
      // Error as it is and anything else wrapped in one; a signal aborted before the call is not seen.
      const onAbort = (): void => {
        cleanup();
        const reason = signal?.reason;
        reject(reason instanceof Error ? reason : new Error(String(reason)));
      };
      const listener = async (r: unknown): Promise<void> => {
        try {
          if (await match(r)) {
            cleanup();
            resolve(r);
          }
        } catch (e) {
          cleanup();
          reject(e);
        }
      };
      const cleanup = (): void => {
        (self as { off(e: string, fn: unknown): void }).off(event, listener);
        if (timer !== undefined) deps.clearTimer(timer);
        if (typeof signal?.removeEventListener === 'function') signal.removeEventListener('abort', onAbort);
      };
      (self as { on(e: string, fn: unknown): void }).on(event, listener);
      if (typeof signal?.addEventListener === 'function') signal.addEventListener('abort', onAbort, { once: true });
      if (timeout > 0) {
        timer = deps.setTimer(
          () => {
            cleanup();
            const err = new Error(`Timed out after waiting ${timeout}ms`);
            Object.defineProperty(err, 'name', { value: 'TimeoutError' });
            reject(err);
          },
          timeout,
          [],
          false,
        );
      }
    });
  }

  function inspectable(proto: object, kind: HandleKind): void {
    Object.defineProperty(proto, '__psInspect', {
      value: function (this: object) {
        const s = snapshots.get(this);
        return s && typeof s.url === 'string' ? `${kind} { url: '${s.url}' }` : `${kind} {}`;
      },
    });
    Object.defineProperty(proto, Symbol.toStringTag, { value: kind });
  }

  // ------------------------------------------------------------ classes
  class Page {}
  class Frame {}
  class ElementHandle {}
  class JSHandle {}
  class Locator {}
  class HTTPRequest {}
  class HTTPResponse {}
  class Dialog {}
  class ConsoleMessage {}
  class TouchHandle {}

  const protos: Record<HandleKind, object> = {
    Page: Page.prototype,
    Frame: Frame.prototype,
    ElementHandle: ElementHandle.prototype,
    JSHandle: JSHandle.prototype,
    Locator: Locator.prototype,
    HTTPRequest: HTTPRequest.prototype,
    HTTPResponse: HTTPResponse.prototype,
    Dialog: Dialog.prototype,
    ConsoleMessage: ConsoleMessage.prototype,
    TouchHandle: TouchHandle.prototype,
  };
  for (const [kind, proto] of Object.entries(protos)) installTable(proto, kind as HandleKind);

  // ------------------------------------------------------------ the 'local' entries
  events(Page.prototype);
  events(Locator.prototype);

  // asElement(): an ElementHandle is its own element; a JSHandle is none.
  Object.defineProperty(ElementHandle.prototype, 'asElement', {
    value: function (this: object) {
      return this;
    },
  });
  Object.defineProperty(JSHandle.prototype, 'asElement', { value: () => null });

  // disposed: set when dispose() is called, as Puppeteer sets it (before the page has answered).
  const disposed = new WeakSet<object>();
  for (const proto of [JSHandle.prototype, ElementHandle.prototype]) {
    const hostDispose = (proto as { dispose: AnyFn }).dispose;
    Object.defineProperty(proto, 'dispose', {
      value: function (this: object) {
        const result = hostDispose.call(this);
        disposed.add(this);
        return result;
      },
      writable: true,
      configurable: true,
    });
    Object.defineProperty(proto, 'disposed', {
      get(this: object) {
        return disposed.has(this);
      },
      configurable: true,
    });
  }

  // Locator.race(locators): Puppeteer's static, made on the host from this request's locators.
  Object.defineProperty(Locator, 'race', {
    value: (locators: unknown) => {
      if (!Array.isArray(locators)) throw new TypeError('Locator.race needs an array of locators');
      return deps.callSync(PAGE_ID, 'locatorRace', [locators]);
    },
    writable: true,
    configurable: true,
  });

  // setDefaultTimeout: the host applies it to the waits it runs; the ones run here read it too.
  const hostSetDefaultTimeout = (Page.prototype as { setDefaultTimeout: AnyFn }).setDefaultTimeout;
  Object.defineProperty(Page.prototype, 'setDefaultTimeout', {
    value: function (this: object, ms: unknown): unknown {
      const r = hostSetDefaultTimeout.call(this, ms);
      scriptDefaultTimeoutMs = ms as number; // the host has checked it: a number of milliseconds
      return r;
    },
    writable: true,
    configurable: true,
  });

  // waitForRequest/waitForResponse: a URL goes to the host; a predicate runs here.
  for (const [name, event] of [
    ['waitForRequest', 'request'],
    ['waitForResponse', 'response'],
  ] as const) {
    Object.defineProperty(Page.prototype, name, {
      value: function (this: object, what: unknown, options?: unknown) {
        return waitForEvent(this, event, what, options);
      },
      writable: true,
      configurable: true,
    });
  }

  // waitForFrame: a URL goes to the host; a predicate runs here, on the frames
  // there are and on each frame attached or navigated, as in Puppeteer.
  const hostWaitForFrame = (Page.prototype as { waitForFrame: AnyFn }).waitForFrame;
  Object.defineProperty(Page.prototype, 'waitForFrame', {
    value: function (this: object, what: unknown, options?: unknown): Promise<unknown> {
      if (typeof what !== 'function') return hostWaitForFrame.call(this, what, options) as Promise<unknown>;
      const predicate = what as AnyFn;
      const page = this as { frames(): unknown[] };
      const attached = waitForEvent(this, 'frameattached', predicate, options);
      const navigated = waitForEvent(this, 'framenavigated', predicate, options);
      const existing = (async (): Promise<unknown> => {
        for (const f of page.frames()) if (await predicate(f)) return f;
        return new Promise(() => undefined);
      })();
      const found = Promise.race([existing, attached, navigated]);
      // The loser's rejection (its own timeout, the same as the winner's) is not an unhandled one.
      for (const p of [attached, navigated]) p.catch(() => undefined);
      return found;
    },
    writable: true,
    configurable: true,
  });

  // createPDFStream(options): page.pdf's bytes, with its options and bounds, read through a stream made here
  // (a host stream is a live object and never crosses).
  Object.defineProperty(Page.prototype, 'createPDFStream', {
    value: async function (this: { pdf: AnyFn }, options?: unknown): Promise<ByteStream> {
      return new ByteStream((await this.pdf(options)) as Uint8Array);
    },
    writable: true,
    configurable: true,
  });

  // exposeFunction: the function stays here; the page calls it through the host.
  Object.defineProperty(Page.prototype, 'exposeFunction', {
    value: function (this: object, name: unknown, fn: unknown) {
      if (typeof name !== 'string') return Promise.reject(new TypeError('name must be a string'));
      // As Puppeteer: a function, or a module-like { default: fn }.
      const f =
        typeof fn === 'function'
          ? fn
          : typeof fn === 'object' && fn !== null
            ? (fn as { default?: unknown }).default
            : undefined;
      if (typeof f !== 'function') return Promise.reject(new TypeError('exposeFunction needs a function'));
      const fid = nextExposed++;
      exposed.set(fid, f as AnyFn);
      return deps.callAsync(idOf(this), 'exposeFunction', [name, fid]);
    },
    writable: true,
    configurable: true,
  });

  // locator.filterHandle(predicate): the predicate stays here; the host calls it with each element found.
  Object.defineProperty(Locator.prototype, 'filterHandle', {
    value: function (this: object, predicate: unknown) {
      if (typeof predicate !== 'function') throw new TypeError('filterHandle needs a function');
      const fid = nextExposed++;
      exposed.set(fid, predicate as AnyFn);
      return deps.callSync(idOf(this), 'filterHandle', [fid]);
    },
    writable: true,
    configurable: true,
  });

  for (const [kind, proto] of Object.entries(protos)) {
    inspectable(proto, kind as HandleKind);
    // SECURITY: nothing depends on this, but a handle serialised by mistake must not
    // look like data; run() turns it into a clear error.
  }

  function proxyFor(id: number, kind: HandleKind, snapshot?: Record<string, unknown>): object {
    let p = byId.get(id);
    if (!p) {
      const proto = protos[kind] ?? protos.JSHandle;
      p = Object.create(proto) as object;
      ids.set(p, id);
      kinds.set(p, kind);
      byId.set(id, p);
      if (kind === 'Page') {
        for (const [prop, methods] of DEVICES) {
          const device: Record<string, unknown> = {};
          for (const [name, entry] of methods) install(device, prop, name, `${prop}.${name}`, entry);
          ids.set(device, id);
          Object.defineProperty(p, prop, { value: Object.freeze(device), enumerable: true });
        }
      }
    }
    if (snapshot) snapshots.set(p, snapshot);
    return p;
  }

  const page = proxyFor(PAGE_ID, 'Page');

  return {
    page,
    Locator,
    idOf: (v) => ids.get(v),
    kindOf: (v) => kinds.get(v),
    proxyFor,
    emit(h, event, value) {
      const key = `${h}:${event}`;
      const list = listeners.get(key);
      if (!list || list.length === 0) return;
      for (const l of [...list]) {
        if (l.once) list.splice(list.indexOf(l), 1);
        const failed = (e: unknown): void => {
          deps.reportUncaught(e, `in ${event} listener`);
          // A request listener that throws must not leave an intercepted request
          // waiting for an answer until the deadline: it is aborted (nothing
          // happens if it was answered already or interception is off).
          if (event === 'request' && typeof value === 'object' && value !== null) {
            const abort = (value as { abort?: unknown }).abort;
            if (typeof abort === 'function')
              Promise.resolve()
                .then(() => (abort as AnyFn).call(value, 'failed'))
                .catch(() => undefined);
          }
        };
        try {
          const r = l.fn.call(byId.get(h), value);
          if (r instanceof Promise) r.catch(failed);
        } catch (e) {
          failed(e);
        }
      }
    },
    async invokeExposed(fid, args) {
      const fn = exposed.get(fid);
      if (!fn) throw new Error('exposed function is gone');
      return await fn(...args);
    },
  };
}
