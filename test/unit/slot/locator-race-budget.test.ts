// Locator.race polls every locator it holds, on the host and in the page, until
// it settles. A race may hold races: each counts for the locators it polls, so
// nesting cannot multiply the 32 a race may poll (measured before the bound:
// three levels of 32 made 32,768 locators, 13.7 s of slot process CPU, 700 MB more
// slot process memory, and the request ended 35 s after its deadline).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Page } from 'puppeteer';
import { Locator } from 'puppeteer';
import type { WireHandle } from '../../../sandbox/wire.js';
import { Membrane } from '../../../src/slot/membrane/membrane.js';
import { MAX_RACED_LOCATORS } from '../../../src/slot/membrane/methods/index.js';

interface Settled {
  ok: boolean;
  v?: unknown;
  e?: { name: string; message: string };
}

function membrane() {
  const page = { on: () => page, off: () => page, locator: () => Locator.race([]) } as unknown as Page;
  const m = new Membrane({
    page,
    clock: { remainingMs: () => 5000 },
    limits: { maxHandles: 10_000, maxTimers: 10, maxLogLines: 10, maxLogBytes: 1000 },
    checkUrl: () => Promise.resolve(),
    toIsolate: () => Promise.resolve(undefined),
  });
  const sync = (h: number, method: string, args: unknown[]): Settled =>
    JSON.parse(m.onHost(JSON.stringify({ op: 'sync', h, m: method, a: args }))) as Settled;
  /** A new page.locator(), as the script holds it. */
  const leaf = (): WireHandle => sync(1, 'locator', ['#never']).v as WireHandle;
  const race = (list: WireHandle[]): Settled => sync(1, 'locatorRace', [list]);
  return { sync, leaf, race };
}

test('a race of races is refused once it would poll more than 32 locators in all', () => {
  const { leaf, race } = membrane();
  const inner = race(Array.from({ length: MAX_RACED_LOCATORS }, leaf));
  assert.equal(inner.ok, true, JSON.stringify(inner));
  const nested = race([inner.v as WireHandle, leaf()]);
  assert.equal(nested.ok, false);
  assert.equal(nested.e?.name, 'RangeError');
  assert.match(nested.e?.message ?? '', /Locator\.race: at most 32 locators may be raced in all \(33\)/);
});

test('the same race given 32 times counts 32 times over', () => {
  const { leaf, race } = membrane();
  const two = race([leaf(), leaf()]).v as WireHandle;
  const r = race(Array.from({ length: 17 }, () => two));
  assert.equal(r.ok, false);
  assert.match(r.e?.message ?? '', /at most 32 locators may be raced in all \(34\)/);
});

test("a locator derived from a race (setTimeout, filter, map, clone, set…) keeps the race's count", () => {
  const { sync, leaf, race } = membrane();
  const full = race(Array.from({ length: MAX_RACED_LOCATORS }, leaf)).v as WireHandle;
  const derived: [string, unknown[]][] = [
    ['setTimeout', [1000]],
    ['clone', []],
    ['filter', [{ $ps: 'f', src: '() => true' }]],
    ['map', [{ $ps: 'f', src: '(x) => x' }]],
    ['setVisibility', ['visible']],
    ['setWaitForEnabled', [false]],
    ['setEnsureElementIsInTheViewport', [false]],
    ['setWaitForStableBoundingBox', [false]],
  ];
  for (const [method, args] of derived) {
    const d = sync(full.id, method, args);
    assert.equal(d.ok, true, `${method}: ${JSON.stringify(d)}`);
    const r = race([d.v as WireHandle, leaf()]);
    assert.equal(r.ok, false, method);
    assert.match(r.e?.message ?? '', /at most 32 locators may be raced in all \(33\)/, method);
  }
});

test('32 plain locators, or races of them adding up to 32, still race', () => {
  const { leaf, race } = membrane();
  const a = race(Array.from({ length: 16 }, leaf)).v as WireHandle;
  const b = race(Array.from({ length: 16 }, leaf)).v as WireHandle;
  assert.equal(race([a, b]).ok, true);
});
