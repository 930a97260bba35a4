// One test per time limit, and what a page may do. Each ends with a normal request that must succeed: a
// script that hits a limit must not hurt the next one.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FixtureServer, html } from '../../helpers/fixtures.js';
import {
  assertServesNormally,
  serviceFor,
  startTestService,
  timedRun,
  type TimedReply,
} from '../../helpers/service.js';

const TIMEOUT_MS = 1500;
const fixtures = new FixtureServer({
  '/page': html('<html><head><title>Fixture</title></head><body><p>hi</p></body></html>'),
  '/never': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.write('<html><head><title>slow</title></head><body>');
    // never ends
  },
});
const svc = serviceFor(fixtures, {
  SCRIPT_TIMEOUT_MS: String(TIMEOUT_MS),
  NAVIGATION_TIMEOUT_MS: '1500',
  SCRIPT_MEMORY_MB: '64',
  MAX_LOG_LINES: '50',
});

const run = (script: string, url = fixtures.url('/page')): Promise<TimedReply> => timedRun(svc, url, script);
const thenNormalRequestSucceeds = (): Promise<void> => assertServesNormally(svc, fixtures.url('/page'), 'Fixture');

function assertTimedOut(r: TimedReply): void {
  assert.equal(r.status, 400, JSON.stringify(r.body));
  assert.equal(r.body.code, 'SCRAPING_FAILED');
  assert.match(String(r.body.error), new RegExp(`timed out after ${TIMEOUT_MS} ms`));
  assert.ok(r.ms < TIMEOUT_MS + 5000, `ended near the deadline (${r.ms} ms)`);
}

describe('time', () => {
  test('a synchronous while(true) ends at the deadline', async () => {
    assertTimedOut(await run('while (true) {}'));
    await thenNormalRequestSucceeds();
  });

  test('a microtask loop ends at the deadline', async () => {
    // Not a growing promise chain (that one ends at the memory cap): each turn queues the next.
    assertTimedOut(
      await run('const spin = () => { Promise.resolve().then(spin) }; spin(); await new Promise(() => {})'),
    );
    await thenNormalRequestSucceeds();
  });

  test('an await that never settles ends at the deadline', async () => {
    assertTimedOut(await run('await new Promise(() => {})'));
    await thenNormalRequestSucceeds();
  });

  test('an interval that never ends ends at the deadline', async () => {
    assertTimedOut(await run('let n = 0; setInterval(() => { n++ }, 1); await new Promise(() => {})'));
    await thenNormalRequestSucceeds();
  });

  test('a console.log flood ends at the deadline and keeps the first lines with a count of the rest', async () => {
    const r = await run('let i = 0; while (true) console.log("line", i++)');
    assertTimedOut(r);
    const logs = r.body.logs as string[];
    assert.equal(logs.length, 51);
    assert.equal(logs[0], 'line 0');
    assert.match(logs[50] as string, /^\.\.\. \d+ more log lines dropped/);
    await thenNormalRequestSucceeds();
  });

  test('a page call that waits forever ends at the deadline (timeouts are clamped)', async () => {
    const r = await run('await page.waitForSelector("#never", { timeout: 0 })');
    assert.equal(r.status, 400);
    assert.ok(r.ms < TIMEOUT_MS + 5000);
    await thenNormalRequestSucceeds();
  });

  test('a page that never finishes loading fails cleanly', async () => {
    const r = await run('return 1', fixtures.url('/never'));
    assert.equal(r.status, 400);
    assert.match(String(r.body.error), /navigation to .* failed: .*Navigation timeout/i);
    await thenNormalRequestSucceeds();
  });

  test('the logs stop at MAX_LOG_LINES with a last line saying how many were dropped', async () => {
    const r = await run('for (let i = 0; i < 120; i++) console.log(i); return 1');
    assert.equal(r.status, 200);
    const logs = r.body.logs as string[];
    assert.equal(logs.length, 51);
    assert.equal(logs[49], '49');
    assert.equal(logs[50], '... 70 more log lines dropped (160 characters)');
  });
});

describe('the page', () => {
  test('a renderer that runs out of memory fails the request fast as MEMORY_LIMIT_EXCEEDED, and the next one is served', async () => {
    // A long script deadline, so that what ends the request is the crash.
    const local = await startTestService({ EGRESS_ALLOWLIST: fixtures.allowEntry, SCRIPT_TIMEOUT_MS: '60000' });
    try {
      const t0 = Date.now();
      const r = await local.post({
        url: fixtures.url('/page'),
        script:
          'await page.evaluate(() => { const a = []; while (true) a.push(new Array(1e6).fill(Math.random())) }); return 1',
      });
      assert.equal(r.status, 400, r.text);
      // PAGE_MEMORY_MB's default (512) ends it; test/e2e/slot/page-memory.test.ts has every other kind of allocation.
      assert.equal(r.body.code, 'MEMORY_LIMIT_EXCEEDED', r.text);
      assert.equal(r.body.error, 'Memory limit exceeded: the page used more than 512 MiB (PAGE_MEMORY_MB)');
      assert.ok(Date.now() - t0 < 30_000, 'long before the script deadline');
      const next = await local.post({ url: fixtures.url('/page'), script: 'return await page.title()' });
      assert.equal(next.body.data, 'Fixture');
    } finally {
      await local.close();
    }
  });

  test('hundreds of popups are contained', async () => {
    const r = await run(
      'await page.evaluate(() => { for (let i = 0; i < 300; i++) window.open("about:blank") }); return await page.title()',
    );
    assert.equal(r.status, 200, JSON.stringify(r.body));
    await thenNormalRequestSucceeds();
  });
});
