// A request watches its slot's Chromium for a disconnect while its script runs
// (src/slot/scrape/job.ts), and stops watching when it ends: the Browser lives
// for many requests, and a listener left on it keeps the request's page,
// membrane and sandbox alive with it (a slot process grew ~75 KB a request).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EventEmitter, type Browser } from 'puppeteer';
import { whenDisconnected } from '../../../src/slot/scrape/job.js';

/** Puppeteer's own emitter, as a Browser's: its once() wraps the handler, which off() then cannot find. */
type BrowserLike = EventEmitter<{ disconnected: undefined }> & Pick<Browser, 'on' | 'off'> & { connected: boolean };
const browserLike = (connected = true): BrowserLike =>
  Object.assign(new EventEmitter<{ disconnected: undefined }>(), { connected }) as BrowserLike;

test('a request that ends leaves no disconnect listener on its slot’s Browser (a slot process grew with every request)', () => {
  const browser = browserLike();
  for (let i = 0; i < 100; i++) {
    const stop = whenDisconnected(browser, () => assert.fail('no Chromium disconnected'));
    assert.equal(browser.listenerCount('disconnected'), 1);
    stop();
  }
  assert.equal(browser.listenerCount('disconnected'), 0);
});

test('a request still running hears its Chromium disconnect', () => {
  const browser = browserLike();
  let heard = 0;
  const stop = whenDisconnected(browser, () => heard++);
  browser.emit('disconnected', undefined);
  assert.equal(heard, 1);
  stop();
  browser.emit('disconnected', undefined);
  assert.equal(heard, 1);
});

test('a Chromium that disconnected before the request listened (while its isolate was attached) ends it at once', () => {
  const browser = browserLike(false);
  let heard = 0;
  const stop = whenDisconnected(browser, () => heard++);
  // Its 'disconnected' event fired before the listener was there; without the check the script would run to its limit.
  assert.equal(heard, 1);
  stop();
  assert.equal(browser.listenerCount('disconnected'), 0);
});
