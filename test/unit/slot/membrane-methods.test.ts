// The membrane's one method table (sandbox/page-api.ts) against both of its
// readers: the proxies a script sees (sandbox/proxies.ts, run here in Node with
// recording stand-ins for the host) and the host's implementations
// (src/slot/membrane/methods/). No Chromium.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HOST_ONLY, PAGE_API, hostCall, type KindTable } from '../../../sandbox/page-api.js';
import { createPageApi, PAGE_ID } from '../../../sandbox/proxies.js';
import type { HandleKind } from '../../../sandbox/wire.js';
import { ASYNC_METHODS, SYNC_METHODS, lookupMethod } from '../../../src/slot/membrane/methods/index.js';

const KINDS = Object.keys(PAGE_API) as HandleKind[];

interface Sent {
  kind: HandleKind;
  name: string;
  how: 'async' | 'sync';
}

/** Every name a script's proxies send to the host, found by calling every function a script can reach. */
function namesTheIsolateSends(): { sent: Sent[]; offered: Map<HandleKind, Set<string>> } {
  const sent: Sent[] = [];
  const kindOfId = new Map<number, HandleKind>();
  const api = createPageApi({
    callAsync: (h, m) => {
      sent.push({ kind: kindOfId.get(h) as HandleKind, name: m, how: 'async' });
      return new Promise(() => undefined);
    },
    callSync: (h, m) => {
      sent.push({ kind: kindOfId.get(h) as HandleKind, name: m, how: 'sync' });
      return undefined;
    },
    send: () => '',
    defaultTimeoutMs: 1000,
    setTimer: () => 1,
    clearTimer: () => undefined,
    reportUncaught: () => undefined,
  });
  const offered = new Map<HandleKind, Set<string>>();
  KINDS.forEach((kind, i) => {
    const id = kind === 'Page' ? PAGE_ID : 100 + i;
    kindOfId.set(id, kind);
    const proxy = kind === 'Page' ? api.page : api.proxyFor(id, kind, {});
    const names = new Set<string>();
    const targets: [string, object][] = [['', Object.getPrototypeOf(proxy) as object]];
    for (const [prop, device] of Object.entries(proxy)) targets.push([`${prop}.`, device as object]);
    for (const [prefix, target] of targets) {
      for (const name of Object.getOwnPropertyNames(target)) {
        if (name === 'constructor' || name === '__psInspect') continue;
        const d = Object.getOwnPropertyDescriptor(target, name) as PropertyDescriptor;
        names.add(prefix + name);
        if (d.get) {
          try {
            d.get.call(proxy); // a 'getter' entry asks the host; a refused property throws
          } catch {
            // refused properties throw; their names are checked below
          }
          continue;
        }
        if (typeof d.value !== 'function') continue;
        try {
          // A listener and a string: enough for on(), waitForRequest() and exposeFunction() to send what they send.
          const r: unknown = (d.value as (...a: unknown[]) => unknown).call(proxy, 'request', () => undefined);
          if (r instanceof Promise) r.catch(() => undefined);
        } catch {
          // refused methods throw; their names are checked below
        }
      }
    }
    offered.set(kind, names);
  });
  // The script's global Locator: its static race() goes to the host through the page.
  (api.Locator as { race(l: unknown[]): unknown }).race([]);
  // filterHandle takes a function first (the calls above pass a string): its id goes to the host.
  const locator = api.proxyFor(100 + KINDS.indexOf('Locator'), 'Locator', {}) as { filterHandle(f: unknown): unknown };
  locator.filterHandle(() => true);
  return { sent, offered };
}

test('every name the isolate sends to the host has a host implementation, called the same way', () => {
  const { sent } = namesTheIsolateSends();
  assert.ok(sent.length > 100, `only ${sent.length} calls recorded`);
  for (const { kind, name, how } of sent) {
    assert.ok(lookupMethod(how === 'sync', kind, name), `${kind}.${name} (${how}) has no host implementation`);
  }
});

test('every host implementation is sent by some proxy method, the same way (nothing implemented but unreachable)', () => {
  const { sent } = namesTheIsolateSends();
  const reached = new Set(sent.map((s) => `${s.kind}.${s.name}:${s.how}`));
  for (const [how, tables] of [
    ['async', ASYNC_METHODS],
    ['sync', SYNC_METHODS],
  ] as const) {
    for (const [kind, table] of Object.entries(tables)) {
      for (const name of Object.keys(table ?? {})) {
        assert.ok(reached.has(`${kind}.${name}:${how}`), `${kind}.${name} (${how}) is implemented but never offered`);
      }
    }
  }
});

test('the proxies offer exactly the names of the table, no more and no fewer', () => {
  const { offered } = namesTheIsolateSends();
  for (const kind of KINDS) {
    const table: KindTable = PAGE_API[kind];
    const got = [...(offered.get(kind) ?? [])].sort();
    assert.deepEqual(got, Object.keys(table).sort(), kind);
  }
});

test('the host runs a name only the way the table says, even where an implementation exists', () => {
  for (const kind of KINDS) {
    const table: KindTable = PAGE_API[kind];
    for (const [name, entry] of Object.entries(table)) {
      const viaSync = lookupMethod(true, kind, name);
      const viaAsync = lookupMethod(false, kind, name);
      if (entry === 'async') assert.ok(viaAsync && !viaSync, `${kind}.${name}`);
      else if (entry === 'sync' || entry === 'getter') assert.ok(viaSync && !viaAsync, `${kind}.${name}`);
      else {
        // A local name reaches the host only under HOST_ONLY's entry (exposeFunction async, filterHandle sync).
        const hostOnly = HOST_ONLY[kind]?.[name];
        const other = hostOnly === 'sync' ? viaAsync : viaSync;
        assert.ok(!other && hostCall(kind, name) === hostOnly, `${kind}.${name} is ${String(entry)}`);
      }
    }
  }
  for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf']) {
    assert.equal(lookupMethod(false, 'Page', name), undefined, name);
    assert.equal(lookupMethod(true, 'Page', name), undefined, name);
  }
});

test('mouse.drag and mouse.dragAndDrop are refused in the isolate, naming the reason, and the host has neither', () => {
  const api = createPageApi({
    callAsync: () => assert.fail('a refused method reached the host'),
    callSync: () => undefined,
    send: () => '',
    defaultTimeoutMs: 1000,
    setTimer: () => 1,
    clearTimer: () => undefined,
    reportUncaught: () => undefined,
  });
  const mouse = (api.page as { mouse: Record<string, (...a: unknown[]) => unknown> }).mouse;
  for (const name of ['drag', 'dragAndDrop', 'drop']) {
    assert.throws(
      () => mouse[name]?.({ x: 1, y: 1 }, { x: 2, y: 2 }),
      new RegExp(`^Error: mouse\\.${name}\\(\\) is not available in pagescript: drag data can name files`),
    );
    assert.equal(lookupMethod(false, 'Page', `mouse.${name}`), undefined);
  }
  assert.throws(() => (api.page as { tracing: unknown }).tracing, /page\.tracing is not available in pagescript/);
});
