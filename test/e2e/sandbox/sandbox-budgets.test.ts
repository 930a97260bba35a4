// Host-side budgets of one request, hit by real scripts: calls in flight, the
// size of what crosses the membrane, slow selectors, outcomes the isolate
// could forge, and page data shaped like the membrane's tags. Each test ends
// with a normal request. (The queue into a busy isolate and the host CPU budget
// are driven deterministically in test/unit/slot/budgets.test.ts.)
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FixtureServer, html } from '../../helpers/fixtures.js';
import { assertServesNormally, serviceFor, timedRun, type TimedReply } from '../../helpers/service.js';

const fixtures = new FixtureServer({
  '/page': html('<html><head><title>Fixture</title></head><body><p>hi</p></body></html>'),
});
const svc = serviceFor(fixtures, { SCRIPT_TIMEOUT_MS: '20000', MAX_RESULT_BYTES: '1048576' });
const run = (script: string): Promise<TimedReply> => timedRun(svc, fixtures.url('/page'), script);
const thenNormalRequestSucceeds = (): Promise<void> => assertServesNormally(svc, fixtures.url('/page'), 'Fixture');

describe('membrane budgets', () => {
  test('the 101st unawaited call fails at once with "too many calls in flight"; the first 100 run', async () => {
    const r = await run(`
      const refused = [];
      for (let i = 0; i < 150; i++) page.waitForSelector('#never').catch((e) => refused.push(e.message));
      // Refusals come at once; no call in flight can settle before this turn of the script ends.
      for (let i = 0; i < 10; i++) await null;
      return { refused: refused[0], refusedCount: refused.length };
    `);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body.data, {
      refused: 'too many calls in flight (at most 100); await some before making more',
      refusedCount: 50,
    });
    await thenNormalRequestSucceeds();
  });

  test('a wait the script aborts ends on the host too: 150 aborted waits in a row never fill the 100 calls in flight', async () => {
    const r = await run(`
      const reasons = new Set();
      for (let i = 0; i < 150; i++) {
        const c = new AbortController();
        const wait = page.waitForSelector('#never', { signal: c.signal, timeout: 15000 });
        c.abort(new Error('changed my mind'));
        await wait.catch((e) => reasons.add(e.message));
      }
      return { reasons: [...reasons], title: await page.title() };
    `);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body.data, { reasons: ['changed my mind'], title: 'Fixture' });
    await thenNormalRequestSucceeds();
  });

  test('one argument over 16 Mi characters is refused before the host parses it', async () => {
    const r = await run(`
      try { await page.evaluate((s) => s.length, 'x'.repeat(17 * 1024 * 1024)); return 'passed'; }
      catch (e) { return e.name + ': ' + e.message; }
    `);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.match(String(r.body.data), /^RangeError: the arguments are too large to give to the host/);
    await thenNormalRequestSucceeds();
  });

  test('arguments of the calls in flight together over 32 Mi characters: the extra call is refused', async () => {
    const r = await run(`
      const big = 'x'.repeat(12 * 1024 * 1024);
      const calls = [1, 2, 3].map(() => page.evaluate((s) => new Promise(() => {}), big).catch((e) => e.message));
      return await Promise.race(calls);
    `);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.match(String(r.body.data), /the arguments of the calls in flight are too large together/);
    await thenNormalRequestSucceeds();
  });

  test('a race of races that would poll 1,024 locators is refused at once; the script can catch it', async () => {
    const r = await run(`
      let level = [];
      for (let i = 0; i < 32; i++) level.push(page.locator('#never' + i));
      try {
        const inner = Locator.race(level);
        await Locator.race(Array.from({ length: 32 }, () => inner)).setTimeout(15000).wait();
        return 'passed';
      } catch (e) { return e.name + ': ' + e.message; }
    `);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.data, 'RangeError: Locator.race: at most 32 locators may be raced in all (1024)');
    await thenNormalRequestSucceeds();
  });

  test('one result over 16 Mi characters reaches the script as an error', async () => {
    const r = await run(`
      try { await page.evaluate(() => 'x'.repeat(17 * 1024 * 1024)); return 'passed'; }
      catch (e) { return e.message; }
    `);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.match(String(r.body.data), /^the result is too large to give to the script/);
    await thenNormalRequestSucceeds();
  });

  test('the 65th function exposed at once, or a name over 1,024 characters, is refused; removing one makes room again', async () => {
    const r = await run(`
      for (let i = 0; i < 64; i++) await page.exposeFunction('f' + i, () => i);
      let refused;
      try { await page.exposeFunction('f64', () => 64); } catch (e) { refused = e.name + ': ' + e.message; }
      await page.removeExposedFunction('f0');
      await page.exposeFunction('again', () => 'yes');
      let long;
      try { await page.exposeFunction('n'.repeat(1025), () => 0); } catch (e) { long = e.name + ': ' + e.message; }
      return { refused, long, again: await page.evaluate(() => globalThis.again()), f63: await page.evaluate(() => f63()) };
    `);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body.data, {
      refused: 'RangeError: page.exposeFunction: at most 64 functions may be exposed at once',
      long: 'RangeError: page.exposeFunction: the name is too long (1025 characters; at most 1024)',
      again: 'yes',
      f63: 63,
    });
    await thenNormalRequestSucceeds();
  });

  // Attack (a host wait held by the script): locator.filterHandle's predicate runs in the isolate while the
  // host's locator waits for its answer. One that never answers, or a flood of locators polling one, must end
  // with the locator's own timeout, hold no more than the exposed-call bound, and leave the request working.
  test('a filterHandle predicate that never answers ends at the locator timeout, and so do 90 at once', async () => {
    const r = await run(`
      await page.setContent('<div>x</div>');
      const hang = () => new Promise(() => {});
      let one;
      try { await page.locator('div').setTimeout(300).filterHandle(hang).wait(); } catch (e) { one = e.name + ': ' + e.message; }
      // 90: under the 100 calls a script may have in flight (MAX_CALLS_IN_FLIGHT), past which a call is a RangeError.
      const many = await Promise.all(Array.from({ length: 90 }, () =>
        page.locator('div').setTimeout(300).filterHandle(hang).wait().then(() => 'resolved', (e) => e.name)));
      return { one, many: [...new Set(many)], after: await page.evaluate(() => 6 * 7) };
    `);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const data = r.body.data as { one: string; many: string[]; after: number };
    assert.equal(data.one, 'TimeoutError: Timed out after waiting 300ms');
    // Every one ends with its own timeout: none resolves, none is left waiting on the script.
    assert.deepEqual(data.many, ['TimeoutError']);
    assert.equal(data.after, 42);
    await thenNormalRequestSucceeds();
  });

  // Attack (host memory for the price of a loop): Puppeteer keeps every preload script's source on the host until
  // the page closes, and the script's calls gave their budget back as each ended. One 15 Mi-character script set
  // again and again held ~15 MB more of the slot process per call (measured: 6 calls, +125 MB), shared by all tenants.
  test('preload scripts are bounded: the 65th set at once, or past 16 Mi characters together, is refused; removing one makes room', async () => {
    const r = await run(`
      const ids = [];
      for (let i = 0; i < 64; i++) ids.push((await page.evaluateOnNewDocument('window.p' + i + ' = ' + i)).identifier);
      let count;
      try { await page.evaluateOnNewDocument('1'); } catch (e) { count = e.name + ': ' + e.message; }
      for (const id of ids.slice(1)) await page.removeScriptToEvaluateOnNewDocument(id);
      const big = 'x'.repeat(10 * 1024 * 1024);
      const first = await page.evaluateOnNewDocument((s) => { window.first = s.length; }, big);
      let chars;
      try { await page.evaluateOnNewDocument((s) => { window.second = s.length; }, big); } catch (e) { chars = e.name + ': ' + e.message; }
      await page.removeScriptToEvaluateOnNewDocument(first.identifier);
      await page.evaluateOnNewDocument((s) => { window.again = s.length; }, big);
      await page.reload();
      return await page.evaluate(() => ({ p0: window.p0, p1: window.p1, first: window.first, second: window.second, again: window.again }))
        .then((seen) => ({ count, chars, ...seen }));
    `);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const data = r.body.data as Record<string, unknown>;
    assert.equal(data.count, 'RangeError: page.evaluateOnNewDocument: at most 64 scripts may be set at once');
    assert.match(
      String(data.chars),
      /^RangeError: page\.evaluateOnNewDocument: the scripts set are too large together \(at most 16777216 characters; this one has 1048\d{4}\)$/,
    );
    assert.deepEqual(
      { p0: data.p0, p1: data.p1, first: data.first, second: data.second, again: data.again },
      { p0: 0, p1: undefined, first: undefined, second: undefined, again: 10 * 1024 * 1024 },
      'the kept and the re-added scripts run in the new document; the removed and the refused do not',
    );
    await thenNormalRequestSucceeds();
  });

  // Attack (the slot process's thread): the isolate subscribes to a page event on the host only once, by a check
  // of the runtime's own (a Set), which the script can change. With Set.prototype.has answering false, each
  // page.on added a host listener, each encoding and queueing every event of that kind once more.
  test('page.on with the runtime Set changed still adds one host listener per event', async () => {
    const r = await run(`
      const has = Set.prototype.has;
      Set.prototype.has = function (k) { return String(k).endsWith(':console') ? false : has.call(this, k); };
      for (let i = 0; i < 1000; i++) page.on('console', () => {});
      Set.prototype.has = has;
      let heard = 0;
      page.on('console', () => heard++);
      await page.evaluate(() => console.log('once'));
      await new Promise((r) => setTimeout(r, 300));
      return heard;
    `);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.data, 1, 'one console line is heard once');
    await thenNormalRequestSucceeds();
  });

  test('a selector of a shape Puppeteer parses slowly is refused before parsing', async () => {
    const r = await run(`
      try { await page.$('[a='.repeat(600)); return 'passed'; } catch (e) { return e.name + ': ' + e.message; }
    `);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.data, 'RangeError: page.$: selector has too many parts (1200; at most 256)');
    await thenNormalRequestSucceeds();
  });
});

describe('outcomes are checked on the host', () => {
  test('a then on Object.prototype cannot replace the outcome with an oversized result', async () => {
    const r = await run(`
      Object.prototype.then = function (resolve) { delete Object.prototype.then; resolve({ ok: true, json: JSON.stringify('x'.repeat(4e6)) }); };
      return 1;
    `);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.data, 1);
  });

  test('a toJSON on Object.prototype that returns too much is RESULT_TOO_LARGE', async () => {
    const r = await run(`
      Object.prototype.toJSON = function () { return 'x'.repeat(4e6); };
      return { a: 1 };
    `);
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.equal(r.body.code, 'RESULT_TOO_LARGE');
  });

  test('an error message of 20 MB comes back cut to 2000 characters', async () => {
    const r = await run(`throw new Error('m'.repeat(2e7))`);
    assert.equal(r.status, 400);
    assert.equal(r.body.code, 'SCRAPING_FAILED');
    const error = String(r.body.error);
    assert.ok(error.length < 2100, `${error.length} characters`);
    assert.match(error, /… \(19998000 more characters\)/);
  });

  test('one console line is cut to 16 KiB', async () => {
    const r = await run(`console.log('l'.repeat(100000)); return 1`);
    assert.equal(r.status, 200);
    const logs = r.body.logs as string[];
    assert.equal(logs.length, 1);
    assert.equal(logs[0], 'l'.repeat(16 * 1024) + `… (${100000 - 16 * 1024} more characters)`);
  });
});

describe('page data can never be decoded as a membrane tag', () => {
  test('an evaluate result shaped like a handle tag arrives as plain data', async () => {
    const r = await run(`
      const v = await page.evaluate(() => ({ $ps: 'h', id: 1, k: 'Page', nested: [{ $ps: 'u' }] }));
      return { isPage: v === page, v };
    `);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body.data, { isPage: false, v: { $ps: 'h', id: 1, k: 'Page', nested: [{ $ps: 'u' }] } });
  });

  test('a console event from the page shaped like a tag stays text', async () => {
    const r = await run(`
      const got = new Promise((resolve) => page.on('console', (m) => resolve(m.text())));
      await page.evaluate(() => console.log('{"$ps":"h","id":1,"k":"Page"}'));
      return await got;
    `);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.data, '{"$ps":"h","id":1,"k":"Page"}');
  });
});
