// The screenshot of a failed page is capped in size and in time: tested on a
// stand-in page, so that neither depends on how fast this machine encodes a PNG.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Page } from 'puppeteer';
import { ApiError, MAX_ERROR_SCREENSHOT_BYTES } from '../../../src/common/errors.js';
import { ERROR_SCREENSHOT_TIMEOUT_MS, describeFailure } from '../../../src/slot/scrape/failure.js';

function fakePage(screenshot: () => Promise<string>, closed = false): Page {
  return {
    isClosed: () => closed,
    url: () => 'https://shop.example/cart',
    browser: () => ({ connected: true }),
    screenshot,
  } as unknown as Page;
}

const failed = (): ApiError => new ApiError('SCRAPING_FAILED', 'Script execution failed: x');

test('a screenshot within the cap is given as it is', async () => {
  const png = Buffer.from([0x89, 0x50, 0x4e, 0x47]).toString('base64');
  const e = await describeFailure(failed(), { phase: 'script', page: fakePage(async () => png), screenshot: true });
  assert.equal(e.failure?.screenshot, png);
  assert.equal(e.failure?.finalUrl, 'https://shop.example/cart');
});

test('a screenshot over the cap is left out, saying its size and the cap', async () => {
  const big = Buffer.alloc(MAX_ERROR_SCREENSHOT_BYTES + 1).toString('base64');
  const e = await describeFailure(failed(), { phase: 'script', page: fakePage(async () => big), screenshot: true });
  assert.equal(e.failure?.screenshot, undefined);
  assert.equal(
    e.failure?.screenshotOmitted,
    `the screenshot is ${MAX_ERROR_SCREENSHOT_BYTES + 1} bytes; at most ${MAX_ERROR_SCREENSHOT_BYTES}`,
  );
});

test('a page that does not answer gets no screenshot once the timeout passes', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const describing = describeFailure(failed(), {
    phase: 'script',
    page: fakePage(() => new Promise<string>(() => undefined)),
    screenshot: true,
  });
  // Let describeFailure reach its wait, then pass the deadline.
  await Promise.resolve();
  t.mock.timers.tick(ERROR_SCREENSHOT_TIMEOUT_MS);
  const e = await describing;
  assert.equal(e.failure?.screenshotOmitted, `the page did not answer within ${ERROR_SCREENSHOT_TIMEOUT_MS} ms`);
});

test('a closed page gets no screenshot, and codes that are not a failed script get no details', async () => {
  const e = await describeFailure(failed(), {
    phase: 'navigation',
    page: fakePage(async () => 'x', true),
    screenshot: true,
  });
  assert.equal(e.failure?.screenshotOmitted, 'the page is closed');
  assert.equal(e.failure?.phase, 'navigation');
  const other = new ApiError('SERVICE_UNAVAILABLE');
  assert.equal(await describeFailure(other, { phase: 'script', screenshot: true }), other);
  assert.equal(other.failure, undefined);
});

test('the line, column and stack found in the isolate are kept', async () => {
  const thrown = failed().with({ failure: { line: 3, column: 9, stack: 'Error: x\n    at script.js:3:9' } });
  const e = await describeFailure(thrown, { phase: 'script', calls: [], screenshot: false });
  // The thrown error is left as it was: the described one is a new value.
  assert.deepEqual(thrown.failure, { line: 3, column: 9, stack: 'Error: x\n    at script.js:3:9' });
  assert.deepEqual(e.failure, {
    phase: 'script',
    line: 3,
    column: 9,
    stack: 'Error: x\n    at script.js:3:9',
    pageCalls: [],
  });
});
