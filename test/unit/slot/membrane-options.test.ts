// The option schemas (src/slot/membrane/option-schemas.ts, checked by options.ts): every
// options object a script passes is rebuilt from allowed keys and checked values, or refused.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PAST_DEADLINE_MS } from '../../../src/slot/membrane/deadline.js';
import {
  CLICK,
  COOKIE,
  NAV,
  PDF,
  SCREENSHOT,
  VIEWPORT,
  WAIT,
  WAIT_FUNCTION,
} from '../../../src/slot/membrane/option-schemas.js';
import { MembraneError, clampTimeout, num, options, stringRecord } from '../../../src/slot/membrane/options.js';

const clock = (ms: number) => ({ remainingMs: () => ms });
const refused = (fn: () => unknown, message: RegExp): void =>
  assert.throws(fn, (e: unknown) => e instanceof MembraneError && message.test(e.message));

test('unknown keys are dropped: the object Puppeteer gets is a new one with allowed keys only', () => {
  const given = { waitUntil: 'load', referer: 'x', headers: { a: 'b' }, __proto__: { polluted: true } };
  const out = options(given, NAV, clock(1000), 'page.goto');
  assert.notEqual(out, given);
  assert.deepEqual(out, { timeout: 1000 + PAST_DEADLINE_MS, waitUntil: 'load' });
  assert.equal(Object.getPrototypeOf(out), Object.prototype);
});

for (const key of ['path', 'userDataDir', 'downloadPath', 'ffmpegPath', 'executablePath']) {
  test(`the "${key}" option is refused by name wherever it is given`, () => {
    refused(
      () => options({ [key]: '/tmp/x' }, SCREENSHOT, clock(1000), 'page.screenshot'),
      new RegExp(`"${key}" option is not available`),
    );
    refused(() => options({ [key]: '/tmp/x' }, PDF, clock(1000), 'page.pdf'), new RegExp(`"${key}"`));
  });
}

test("a cookie's path is a URL path, not a file: allowed where the schema names it", () => {
  assert.deepEqual(options({ name: 'a', value: 'b', path: '/app' }, COOKIE, clock(1000), 'page.setCookie'), {
    name: 'a',
    value: 'b',
    path: '/app',
  });
});

test('timeouts are honest: one that ends in time stays; one that would outlast the script (or 0) ends just after the deadline; none is the page default, capped', () => {
  const past = 700 + PAST_DEADLINE_MS;
  assert.equal(clampTimeout(60_000, clock(700), 'x'), past);
  assert.equal(clampTimeout(200, clock(700), 'x'), 200);
  assert.equal(clampTimeout(0, clock(700), 'x'), past);
  assert.equal(clampTimeout(undefined, clock(700), 'x'), undefined);
  // Puppeteer's default is 30 s: past the deadline here.
  assert.deepEqual(options(undefined, NAV, clock(700), 'page.goto'), { timeout: past });
  const withDefaults = { remainingMs: () => 700, defaultTimeoutMs: (nav: boolean) => (nav ? 300 : 100) };
  assert.deepEqual(options(undefined, NAV, withDefaults, 'page.goto'), { timeout: 300 });
  assert.deepEqual(options({}, WAIT, withDefaults, 'page.waitForSelector'), { timeout: 100 });
  assert.deepEqual(options(undefined, CLICK, clock(700), 'page.click'), {});
  for (const bad of [-1, Number.POSITIVE_INFINITY, Number.NaN, '100']) {
    refused(() => clampTimeout(bad, clock(700), 'page.goto'), /timeout must be a number of milliseconds/);
  }
});

test('values are checked: enums, booleans, bounded numbers, string records', () => {
  refused(() => options({ waitUntil: 'never' }, NAV, clock(1), 'page.goto'), /must be one of load, domcontentloaded/);
  assert.deepEqual(options({ waitUntil: ['load', 'networkidle0'] }, NAV, clock(1), 'x').waitUntil, [
    'load',
    'networkidle0',
  ]);
  refused(() => options({ fullPage: 'yes' }, SCREENSHOT, clock(1), 'x'), /must be true or false/);
  refused(() => options({ width: 100_000, height: 10 }, VIEWPORT, clock(1), 'x'), /from 1 to 4096/);
  refused(() => options({ clickCount: 1000 }, CLICK, clock(1), 'x'), /from 1 to 10/);
  refused(() => options({ polling: 1 }, WAIT_FUNCTION, clock(1), 'x'), /from 10 to 60000/);
  assert.equal(options({ polling: 'raf' }, WAIT_FUNCTION, clock(1), 'x').polling, 'raf');
  refused(() => stringRecord({ a: 1 }, 'headers'), /"a" must be a string/);
  refused(() => options('load', NAV, clock(1), 'page.goto'), /options must be an object/);
  refused(() => num(Number.NaN, 'x'), /must be a number/);
});

test('a screenshot clip is bounded and rebuilt from its four numbers (and scale)', () => {
  const o = options({ clip: { x: 1, y: 2, width: 3, height: 4, extra: 'dropped' } }, SCREENSHOT, clock(1), 'x');
  assert.deepEqual(o.clip, { x: 1, y: 2, width: 3, height: 4 });
  refused(() => options({ clip: { x: 0, y: 0, width: 1e6, height: 1 } }, SCREENSHOT, clock(1), 'x'), /width/);
});
