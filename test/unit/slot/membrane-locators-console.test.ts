// What the conformance work newly lets through the membrane, attacked on the host
// side with the isolate's one callback: a locator's listeners (Locator.on), a new
// locator's timeout, and a console message's arguments (ConsoleMessage.args()).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Page } from 'puppeteer';
import { JSHandle, Locator } from 'puppeteer';
import type { ToIsolate, WireHandle } from '../../../sandbox/wire.js';
import { Membrane } from '../../../src/slot/membrane/membrane.js';
import { PAST_DEADLINE_MS, PUPPETEER_DEFAULT_TIMEOUT_MS } from '../../../src/slot/membrane/deadline.js';

interface Settled {
  ok: boolean;
  v?: unknown;
  e?: { name: string; message: string };
}

/** A real Puppeteer Locator (a race of none needs no page), so the host treats it as one. */
const aLocator = (): Locator<unknown> => Locator.race([]);

function membrane(maxHandles = 100, locator: () => Locator<unknown> = aLocator) {
  const page = { on: () => page, off: () => page, locator } as unknown as Page;
  const events: ToIsolate[] = [];
  const m = new Membrane({
    page,
    clock: { remainingMs: () => 5000 },
    limits: { maxHandles, maxTimers: 10, maxLogLines: 10, maxLogBytes: 1000 },
    checkUrl: () => Promise.resolve(),
    toIsolate: (json: string) => {
      const msg = JSON.parse(json) as ToIsolate;
      if (msg.op === 'event') events.push(msg);
      return Promise.resolve(undefined);
    },
  });
  /** A handle as the script holds it: its id in the request's table. */
  const idOf = (obj: object): number => (m.encode(obj) as WireHandle).id;
  const sync = (h: number, method: string, args: unknown[]): Settled =>
    JSON.parse(m.onHost(JSON.stringify({ op: 'sync', h, m: method, a: args }))) as Settled;
  return { m, events, idOf, sync };
}

test("a locator's listeners hear its 'action' only: any other event name is refused on the host", () => {
  const { idOf, sync } = membrane();
  const locator = aLocator();
  const h = idOf(locator);
  for (const name of ['click', '__proto__', 'constructor', 'newListener', 'error']) {
    const r = sync(h, 'subscribe', [name]);
    assert.equal(r.ok, false, name);
    assert.match(r.e?.message ?? '', /is not available in pagescript/);
  }
  assert.equal(locator.listenerCount('action'), 0);
  assert.equal(sync(h, 'subscribe', ['action']).ok, true);
  assert.equal(locator.listenerCount('action'), 1);
});

test('subscribing to the same locator again and again adds no listener on the host', () => {
  const { idOf, sync } = membrane();
  const locator = aLocator();
  const h = idOf(locator);
  for (let i = 0; i < 1000; i++) assert.equal(sync(h, 'subscribe', ['action']).ok, true);
  assert.equal(locator.listenerCount('action'), 1);
});

test("a locator's action reaches the script as an event of that locator's handle, carrying nothing", () => {
  const { events, idOf, sync } = membrane();
  const locator = aLocator();
  const h = idOf(locator);
  sync(h, 'subscribe', ['action']);
  locator.emit('action', undefined);
  assert.deepEqual(events, [{ op: 'event', h, event: 'action', v: { $ps: 'u' } }]);
});

test('after the request, its locators keep no listener of the finished script', () => {
  const { m, idOf, sync } = membrane();
  const locator = aLocator();
  sync(idOf(locator), 'subscribe', ['action']);
  m.dispose();
  assert.equal(locator.listenerCount('action'), 0);
});

test("a page that logs more values than the request's handle table holds cannot grow it through args()", () => {
  const { idOf, sync } = membrane(10);
  // The page's values as Puppeteer hands them over: JSHandles of the page's own objects.
  const value = (): JSHandle =>
    Object.create(JSHandle.prototype, { toString: { value: () => 'JSHandle@object' } }) as JSHandle;
  class CdpConsoleMessage {
    readonly #args = Array.from({ length: 50 }, value);
    type(): string {
      return 'log';
    }
    text(): string {
      return 'flood';
    }
    location(): object {
      return {};
    }
    stackTrace(): object[] {
      return [];
    }
    args(): JSHandle[] {
      return this.#args;
    }
  }
  const h = idOf(new CdpConsoleMessage());
  const r = sync(h, 'args', []);
  assert.equal(r.ok, false);
  assert.match(r.e?.message ?? '', /too many handles \(at most 10\)/);
});

/** A locator that records the timeouts it is given. */
function recordingLocator(seen: number[]): () => Locator<unknown> {
  return () => {
    const l = aLocator();
    const setTimeout = l.setTimeout.bind(l);
    l.setTimeout = (ms: number) => {
      seen.push(ms);
      return setTimeout(ms);
    };
    return l;
  };
}

test("a new locator takes the script's default timeout (page.setDefaultTimeout), as Puppeteer's takes the page's", () => {
  const seen: number[] = [];
  const { sync } = membrane(100, recordingLocator(seen));
  assert.equal(sync(1, 'locator', ['div']).ok, true);
  assert.equal(sync(1, 'setDefaultTimeout', [300]).ok, true);
  assert.equal(sync(1, 'locator', ['div']).ok, true);
  // Puppeteer's 30 s outlasts the script's 5 s: capped; the script's 300 ms is kept as it is.
  assert.ok(PUPPETEER_DEFAULT_TIMEOUT_MS > 5000);
  assert.deepEqual(seen, [5000 + PAST_DEADLINE_MS, 300]);
});

test("a locator made with no timeout at all (setDefaultTimeout(0)) still ends just after the script's deadline", () => {
  const seen: number[] = [];
  const { sync } = membrane(100, recordingLocator(seen));
  sync(1, 'setDefaultTimeout', [0]);
  sync(1, 'locator', ['div']);
  assert.deepEqual(seen, [5000 + PAST_DEADLINE_MS]);
});

test("locator.timeout reads the timeout as the host clamped it, never the script's larger one", () => {
  const { idOf, sync } = membrane();
  const h = idOf(aLocator());
  const set = sync(h, 'setTimeout', [1e9]);
  assert.equal(set.ok, true);
  const r = sync((set.v as WireHandle).id, 'timeout', []);
  assert.deepEqual(r, { ok: true, v: 5000 + PAST_DEADLINE_MS });
  const short = sync(h, 'setTimeout', [300]);
  assert.deepEqual(sync((short.v as WireHandle).id, 'timeout', []), { ok: true, v: 300 });
});

// Attack (the slot process's thread, for every tenant): the isolate asks the host to subscribe to a page
// event only once per event, but that check is the runtime's Set, which the script may change
// (Set.prototype.has = () => false). Each page.on then added a host listener, each encoding and
// queueing every event again: 100,000 listeners made one event cost 261 ms of the slot process's thread.
test('subscribing to the same page event again and again adds no listener on the host', () => {
  const counts = new Map<string, number>();
  const page = {
    on: (event: string) => counts.set(event, (counts.get(event) ?? 0) + 1),
    off: () => page,
  } as unknown as Page;
  const m = new Membrane({
    page,
    clock: { remainingMs: () => 5000 },
    limits: { maxHandles: 100, maxTimers: 10, maxLogLines: 10, maxLogBytes: 1000 },
    checkUrl: () => Promise.resolve(),
    toIsolate: () => Promise.resolve(undefined),
  });
  const sync = (event: string): Settled =>
    JSON.parse(m.onHost(JSON.stringify({ op: 'sync', h: 1, m: 'subscribe', a: [event] }))) as Settled;
  for (let i = 0; i < 1000; i++) assert.equal(sync('console').ok, true);
  for (let i = 0; i < 1000; i++) assert.equal(sync('dialog').ok, true);
  assert.equal(counts.get('console'), 1);
  assert.equal(counts.get('dialog'), 2, "the host's own dialog listener, and one for the script");
});
