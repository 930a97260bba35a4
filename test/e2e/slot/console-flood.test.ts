// A page's console flood after its request: Chromium keeps what the slot's
// transport does not take (cdp-transport.ts QUEUE_PAUSE_BYTES) and would send
// all of it before the answer to closing the request's context. A Chromium
// still backed up when a request's context closes, and that sends more than
// BACKLOG_DRAIN_BYTES of its events before answering, is killed and replaced
// instead (browser-host.ts #discard, lease.ts). Whether a flood through the
// service leaves its Chromium backed up depends on the machine: the discard
// itself is tested where the backlog is made for certain,
// backlog-discard.test.ts. Here: everyone is served, and a burst or one large
// answer that was all read never costs a relaunch.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../../helpers/fixtures.js';
import { WORKING_BESIDE } from '../../helpers/scripts.js';
import { capturingLogger, serviceFor } from '../../helpers/service.js';
import { until } from '../../helpers/wait.js';

const fixtures = new FixtureServer({ '/example': html(EXAMPLE_DOMAIN_HTML) });
const log = capturingLogger();
const svc = serviceFor(fixtures, { MAX_CONCURRENCY: '2', SCRIPT_TIMEOUT_MS: '8000' }, {}, log.logger);

const discarded = (): number => log.lines.filter((l) => String(l.msg).startsWith('chromium discarded')).length;

test('a request whose large answers were all read (one 8 MB message) leaves its Chromium in place', async () => {
  await until(() => svc.service.browser.ready, 'the browser to be ready', { timeoutMs: 60_000 });
  const recycles = svc.service.browser.recycles;
  const seen = discarded();
  const r = await svc.post({
    url: fixtures.url('/example'),
    script: `page.on('console', () => {});
      await page.evaluate(() => { for (let i = 0; i < 100; i++) console.log('z'.repeat(1000)) });
      await page.evaluate(() => { const end = Date.now() + 600; while (Date.now() < end); });
      return (await page.evaluate(() => 'x'.repeat(8e6))).length`,
  });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.data, 8e6);
  const next = await svc.post({ url: fixtures.url('/example'), script: 'return await page.title()' });
  assert.equal(next.status, 200, next.text);
  assert.equal(discarded(), seen);
  assert.equal(svc.service.browser.recycles, recycles);
});

// Attack (relaunch for the price of a burst): a launch and its contexts cost ~500 ms of CPU (measured: a headless
// shell and two contexts, 470-540 ms), paid beside every other slot's requests. A request only just past its CPU
// budget whose page logged a burst of console lines had its Chromium relaunched whenever the burst had paused the
// pipe (more than BACKLOG_MESSAGES queued) within the last second, though all of it had been read before the
// request ended (the evaluate's answer comes after its events) and Chromium had nothing left to send. On the old
// code this test failed in 1 of 3 runs here (whether the slot process fell behind the burst depends on the machine);
// with the fix it cannot fail that way: nothing of the request's is left to drop after it ends.
test('a request whose console burst was all read before it ended does not get its Chromium relaunched', async () => {
  const recycles = svc.service.browser.recycles;
  const seen = discarded();
  const r = await svc.post({
    url: fixtures.url('/example'),
    script: `await page.evaluate(() => { const end = Date.now() + 400; while (Date.now() < end); });
      await page.evaluate(() => { for (let i = 0; i < 8000; i++) console.log('b'.repeat(1000)) });
      return 'burst'`,
  });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.data, 'burst');
  const next = await svc.post({ url: fixtures.url('/example'), script: 'return await page.title()' });
  assert.equal(next.status, 200, next.text);
  assert.equal(discarded(), seen, 'no Chromium discarded');
  assert.equal(svc.service.browser.recycles, recycles);
});

// Last: a Chromium it may leave backed up is replaced in the background, after the other tests' counts.
test("a page's console flood beside another tenant's working request: both are answered, and the next request is served", async () => {
  const beside = svc.post({ url: fixtures.url('/example'), script: WORKING_BESIDE });
  // The page logs 5e4 lines of 4 kB; the script listens, lets it run, and returns while it still runs.
  const r = await svc.post({
    url: fixtures.url('/example'),
    script: `page.on('console', () => {});
      page.evaluate(() => { for (let i = 0; i < 5e4; i++) console.log('y'.repeat(4000)) }).catch(() => 0);
      await new Promise((r) => setTimeout(r, 1500));
      return 'returned'`,
  });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.data, 'returned');
  const b = await beside;
  assert.equal(b.status, 200, b.text);
  assert.equal(b.body.data, 'Example Domain');
  // Whether the flooded Chromium was left backed up (and so replaced) depends on the machine: see the header.
  const next = await svc.post({ url: fixtures.url('/example'), script: 'return await page.title()' });
  assert.equal(next.status, 200, next.text);
  assert.equal(next.body.data, 'Example Domain');
});
