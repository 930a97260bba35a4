// The host's allow-list (src/slot/membrane/dispatch.ts + methods/) driven through the
// isolate's one callback, with a fake Page that records what Puppeteer would have
// been asked: what is refused never reaches it, and what reaches it is rebuilt.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Page } from 'puppeteer';
import type { ToIsolate } from '../../../sandbox/wire.js';
import { Membrane } from '../../../src/slot/membrane/membrane.js';
import { MAX_TOUCHES } from '../../../src/slot/membrane/methods/index.js';
import { PAST_DEADLINE_MS } from '../../../src/slot/membrane/deadline.js';

type Call = [method: string, ...args: unknown[]];

/** A Page whose every method records its call; `on`/`off` keep listeners as Puppeteer's would. */
/** hang: methods whose promise never settles (a wait that is still running). */
function fakePage(hang: readonly string[] = []): { page: Page; calls: Call[] } {
  const calls: Call[] = [];
  const recorder = (prefix: string): object =>
    new Proxy(
      {},
      {
        get:
          (_t, name) =>
          (...args: unknown[]) => {
            calls.push([`${prefix}${String(name)}`, ...args]);
            return Promise.resolve(undefined);
          },
      },
    );
  // As Puppeteer's Touchscreen: a list of the touches held, each a TouchHandle that leaves it when ended.
  class FakeTouchHandle {
    constructor(readonly held: FakeTouchHandle[]) {}
    move(x: unknown, y: unknown): Promise<void> {
      calls.push(['touchHandle.move', x, y]);
      return Promise.resolve();
    }
    end(): Promise<void> {
      calls.push(['touchHandle.end']);
      this.held.splice(this.held.indexOf(this), 1);
      return Promise.resolve();
    }
  }
  const touches: FakeTouchHandle[] = [];
  const touchscreen = new Proxy(
    { touches },
    {
      get: (t, name) => {
        if (name === 'touches') return t.touches;
        return (...args: unknown[]) => {
          calls.push([`touchscreen.${String(name)}`, ...args]);
          if (name === 'touchStart') {
            const h = new FakeTouchHandle(touches);
            touches.push(h);
            return Promise.resolve(h);
          }
          if (name === 'touchEnd') touches.shift();
          return Promise.resolve(undefined);
        };
      },
    },
  );
  const page = {
    on: () => page,
    off: () => page,
    keyboard: recorder('keyboard.'),
    mouse: recorder('mouse.'),
    touchscreen,
  };
  return {
    page: new Proxy(page, {
      get: (t, name) =>
        name in t
          ? t[name as keyof typeof t]
          : (...args: unknown[]) => {
              calls.push([String(name), ...args]);
              if (hang.includes(String(name))) return new Promise(() => undefined);
              return Promise.resolve(`${String(name)} done`);
            },
    }) as unknown as Page,
    calls,
  };
}

interface Settled {
  ok: boolean;
  v?: unknown;
  e?: { name: string; message: string };
}

function membrane(
  opts: { remainingMs?: number; refuse?: (url: URL) => string | undefined; hang?: readonly string[] } = {},
) {
  const { page, calls } = fakePage(opts.hang);
  const pending = new Map<number, (s: Settled) => void>();
  const m = new Membrane({
    page,
    clock: { remainingMs: () => opts.remainingMs ?? 5000 },
    limits: { maxHandles: 100, maxTimers: 10, maxLogLines: 10, maxLogBytes: 1000 },
    checkUrl: async (url) => {
      const why = opts.refuse?.(url);
      if (why) throw new Error(`address not allowed: ${url.hostname} (${why})`);
    },
    toIsolate: async (json: string) => {
      const msg = JSON.parse(json) as ToIsolate;
      if (msg.op === 'settle') pending.get(msg.id)?.(msg);
      return undefined;
    },
  });
  let nextId = 1;
  /** An async call as the isolate's proxies send it; resolves with the host's settle message. */
  const call = (method: string, args: unknown[], h = 1): Promise<Settled> => {
    const id = nextId++;
    const settled = new Promise<Settled>((resolve) => pending.set(id, resolve));
    assert.equal(m.onHost(JSON.stringify({ op: 'call', id, h, m: method, a: args })), '');
    return settled;
  };
  const sync = (method: string, args: unknown[]): Settled =>
    JSON.parse(m.onHost(JSON.stringify({ op: 'sync', h: 1, m: method, a: args }))) as Settled;
  return { m, calls, call, sync };
}

test('page.goto to file:///etc/passwd is refused before Puppeteer sees it', async () => {
  const { calls, call } = membrane();
  const r = await call('goto', ['file:///etc/passwd']);
  assert.equal(r.ok, false);
  assert.match(r.e?.message ?? '', /the file: scheme is not allowed/);
  assert.deepEqual(calls, []);
});

test('page.goto to an address the egress policy refuses is refused before Puppeteer sees it', async () => {
  const { calls, call } = membrane({ refuse: (u) => (u.hostname === '169.254.169.254' ? 'link-local' : undefined) });
  const r = await call('goto', ['http://169.254.169.254/latest/meta-data/']);
  assert.equal(r.ok, false);
  assert.match(r.e?.message ?? '', /address not allowed: 169\.254\.169\.254 \(link-local\)/);
  assert.deepEqual(calls, []);
});

test('page.screenshot with a path option is refused (it would write a file on the server)', async () => {
  const { calls, call } = membrane();
  const r = await call('screenshot', [{ path: '/tmp/x.png' }]);
  assert.match(r.e?.message ?? '', /the "path" option is not available in pagescript/);
  assert.deepEqual(calls, []);
});

test('an options object reaches Puppeteer rebuilt: unknown keys dropped, a timeout past the deadline ends just after it', async () => {
  const { calls, call } = membrane({ remainingMs: 700 });
  const r = await call('goto', ['https://example.com/', { timeout: 60_000, waitUntil: 'load', headers: { a: 'b' } }]);
  assert.equal(r.ok, true);
  assert.deepEqual(calls, [['goto', 'https://example.com/', { timeout: 700 + PAST_DEADLINE_MS, waitUntil: 'load' }]]);
});

test('a method the table refuses is not run even though the fake page has it', async () => {
  const { calls, call, sync } = membrane();
  for (const name of ['browser', 'createCDPSession', 'close', 'target', 'mouse.drag', 'frameElement']) {
    const r = await call(name, []);
    assert.equal(r.ok, false, name);
    assert.match(r.e?.message ?? '', /is not available in pagescript/, name);
  }
  assert.equal(sync('browserContext', []).ok, false);
  assert.deepEqual(calls, []);
});

test('prototype names are never methods: constructor, __proto__, toString', async () => {
  const { calls, call, sync } = membrane();
  for (const name of ['constructor', '__proto__', 'toString']) {
    assert.equal((await call(name, [])).ok, false, name);
    assert.equal(sync(name, []).ok, false, name);
  }
  assert.deepEqual(calls, []);
});

test('an async method called as sync is refused, and a sync one as async', async () => {
  const { calls, call, sync } = membrane();
  assert.match(sync('goto', ['https://example.com/']).e?.message ?? '', /Page\.goto\(\) is not available/);
  assert.match((await call('url', [])).e?.message ?? '', /Page\.url\(\) is not available/);
  assert.deepEqual(calls, []);
});

test('page.on for an event outside the list (targetcreated) is refused', () => {
  const { sync } = membrane();
  assert.match(sync('subscribe', ['targetcreated']).e?.message ?? '', /page\.on\("targetcreated"\) is not available/);
  assert.equal(sync('subscribe', ['request']).ok, true);
});

test(`touchscreen.touchStart: at most ${MAX_TOUCHES} touches at once; touchEnd frees one`, async () => {
  const { calls, call } = membrane();
  for (let i = 0; i < MAX_TOUCHES; i++) assert.equal((await call('touchscreen.touchStart', [i, i])).ok, true);
  const over = await call('touchscreen.touchStart', [1, 1]);
  assert.match(over.e?.message ?? '', new RegExp(`at most ${MAX_TOUCHES} touches at once`));
  assert.equal((await call('touchscreen.touchEnd', [])).ok, true);
  assert.equal((await call('touchscreen.touchStart', [2, 2])).ok, true);
  assert.equal(calls.filter(([m]) => m === 'touchscreen.touchStart').length, MAX_TOUCHES + 1);
  assert.deepEqual(calls.at(-1), ['touchscreen.touchStart', 2, 2]);
});

test(`a TouchHandle's end() frees a touch of the ${MAX_TOUCHES}; it offers move and end only`, async () => {
  const { calls, call } = membrane();
  const handles: number[] = [];
  for (let i = 0; i < MAX_TOUCHES; i++) {
    const r = await call('touchscreen.touchStart', [i, i]);
    const tag = r.v as { $ps: string; id: number; k: string };
    assert.equal(tag.k, 'TouchHandle');
    handles.push(tag.id);
  }
  assert.match((await call('touchscreen.touchStart', [1, 1])).e?.message ?? '', /at most \d+ touches at once/);
  assert.match((await call('move', ['1', 2], handles[0])).e?.message ?? '', /x must be a number/);
  assert.equal((await call('move', [5, 6], handles[0])).ok, true);
  assert.match((await call('start', [], handles[0])).e?.message ?? '', /not available/);
  assert.match((await call('updateClient', [], handles[0])).e?.message ?? '', /not available/);
  assert.equal((await call('end', [], handles[0])).ok, true);
  assert.equal((await call('touchscreen.touchStart', [7, 7])).ok, true);
  assert.deepEqual(
    calls.filter(([m]) => m.startsWith('touchHandle.')),
    [['touchHandle.move', 5, 6], ['touchHandle.end']],
  );
});

test('touchscreen.touchMove takes finite coordinates only', async () => {
  const { calls, call } = membrane();
  assert.match((await call('touchscreen.touchMove', ['1', 2])).e?.message ?? '', /x must be a number/);
  assert.equal((await call('touchscreen.touchMove', [3, 4])).ok, true);
  assert.deepEqual(calls, [['touchscreen.touchMove', 3, 4]]);
});

test('a handle id the table does not hold is refused; after dispose() every call is refused', async () => {
  const { m, calls, call } = membrane();
  assert.match((await call('title', [], 42)).e?.message ?? '', /no longer valid/);
  m.dispose();
  assert.equal(m.onHost(JSON.stringify({ op: 'sync', h: 1, m: 'url', a: [] })), '{"ok":false}');
  assert.deepEqual(calls, []);
});

test("Locator.race takes only this request's locators: the page itself, a made-up id or a non-array is refused", () => {
  const { sync } = membrane();
  for (const [args, message] of [
    [[[{ $ps: 'h', id: 1, k: 'Page' }]], /Locator\.race/],
    [[[{ $ps: 'h', id: 999, k: 'Locator' }]], /Locator\.race/],
    [['div'], /Locator\.race: locators must be an array of at most 32/],
    [[Array.from({ length: 33 }, () => ({ $ps: 'h', id: 999, k: 'Locator' }))], /at most 32/],
  ] as const) {
    const r = sync('locatorRace', args as unknown as unknown[]);
    assert.equal(r.ok, false, JSON.stringify(args));
    assert.match(r.e?.message ?? '', message);
  }
});

test("a wait gets the call's own signal, which the isolate's cancel aborts; other calls get none", async () => {
  const { m, calls } = membrane({ hang: ['waitForSelector'] });
  const start = (id: number, method: string, a: unknown[]): void =>
    assert.equal(m.onHost(JSON.stringify({ op: 'call', id, h: 1, m: method, a })), '');
  start(7, 'waitForSelector', ['#cancelled', { timeout: 1000 }]);
  start(8, 'waitForSelector', ['#kept', { timeout: 1000 }]);
  start(9, 'title', []);
  await new Promise((r) => setImmediate(r));
  // Both waits run on the host now; the script aborts one.
  assert.equal(m.onHost(JSON.stringify({ op: 'cancel', id: 7 })), '');
  const signalOf = (sel: string): AbortSignal | undefined =>
    (calls.find((c) => c[0] === 'waitForSelector' && c[1] === sel)?.[2] as { signal?: AbortSignal } | undefined)
      ?.signal;
  assert.equal(signalOf('#cancelled')?.aborted, true);
  assert.match(String((signalOf('#cancelled')?.reason as Error).message), /the script aborted the call/);
  assert.equal(signalOf('#kept')?.aborted, false);
  assert.deepEqual(
    calls.find((c) => c[0] === 'title'),
    ['title'],
  );
});

test('a call the script aborts before the host has started it is never started', async () => {
  const { m, calls } = membrane({ hang: ['waitForSelector'] });
  assert.equal(
    m.onHost(JSON.stringify({ op: 'call', id: 7, h: 1, m: 'waitForSelector', a: ['#never', { timeout: 1000 }] })),
    '',
  );
  assert.equal(m.onHost(JSON.stringify({ op: 'cancel', id: 7 })), '');
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(
    calls.filter((c) => c[0] === 'waitForSelector'),
    [],
  );
});
