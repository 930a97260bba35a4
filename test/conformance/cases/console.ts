// After puppeteer/puppeteer test/src/console.spec.ts (Apache-2.0). Each case waits
// for the page's `console` event as the test's waitEvent does, and returns what the
// test asserts on.
import type { Case } from '../harness.js';

const area = 'console';
/** Puppeteer's waitEvent(page, 'console'). */
const WAIT = `const next = new Promise((resolve) => page.once('console', resolve));`;

export const cases: Case[] = [
  {
    area,
    name: 'should work for Error instances',
    script: `${WAIT} await page.evaluate(() => console.log(new Error('test error'))); const m = await next; return [m.text(), m.type(), m.args().length];`,
  },
  {
    area,
    name: 'should return the first line of the error message in text()',
    script: `${WAIT} await page.evaluate(() => console.log(new Error('test error\\nsecond line'))); const m = await next; return [m.text(), m.type(), m.args().length];`,
  },
  {
    area,
    name: 'should work on script call right after navigation',
    upstream: [
      'console: should work on script call right after navigation',
      'page: Page.Events.Console should work on script call right after navigation',
    ],
    script: `${WAIT} await page.goto("data:text/html,<!DOCTYPE html><script>console.log('SOME_LOG_MESSAGE');</script>"); return (await next).text();`,
  },
  {
    area,
    name: 'should work for console.trace',
    upstream: [
      'console: should work for different console API calls with logging functions',
      'page: Page.Events.Console should work for different console API calls with logging functions',
    ],
    script: `${WAIT} await page.evaluate(() => { console.trace('calling console.trace'); }); const m = await next; return [m.type(), m.text()];`,
  },
  {
    area,
    name: 'should work for console.dir',
    upstream: [
      'console: should work for different console API calls with logging functions',
      'page: Page.Events.Console should work for different console API calls with logging functions',
    ],
    script: `${WAIT} await page.evaluate(() => { console.dir('calling console.dir'); }); const m = await next; return [m.type(), m.text()];`,
  },
  {
    area,
    name: 'should work for console.warn',
    upstream: [
      'console: should work for different console API calls with logging functions',
      'page: Page.Events.Console should work for different console API calls with logging functions',
    ],
    script: `${WAIT} await page.evaluate(() => { console.warn('calling console.warn'); }); const m = await next; return [m.type(), m.text()];`,
  },
  {
    area,
    name: 'should work for console.error',
    upstream: [
      'console: should work for different console API calls with logging functions',
      'page: Page.Events.Console should work for different console API calls with logging functions',
    ],
    script: `${WAIT} await page.evaluate(() => { console.error('calling console.error'); }); const m = await next; return [m.type(), m.text()];`,
  },
  {
    area,
    name: 'should work for console.log with promise',
    upstream: [
      'console: should work for different console API calls with logging functions',
      'page: Page.Events.Console should work for different console API calls with logging functions',
    ],
    script: `${WAIT} await page.evaluate(() => { console.log(Promise.resolve('should not wait until resolved!')); }); const m = await next; return [m.type(), m.text()];`,
  },
  {
    area,
    name: 'should work for different console API calls with timing functions',
    upstream: [
      'console: should work for different console API calls with timing functions',
      'page: Page.Events.Console should work for different console API calls with timing functions',
    ],
    script: `const messages = []; page.on('console', (m) => messages.push(m)); await page.evaluate(() => { console.time('calling console.time'); console.timeEnd('calling console.time'); }); return [messages.map((m) => m.type()), messages[0].text().includes('calling console.time')];`,
  },
  {
    area,
    name: 'should work for different console API calls with group functions',
    upstream: [
      'console: should work for different console API calls with group functions',
      'page: Page.Events.Console should work for different console API calls with group functions',
    ],
    script: `const messages = []; page.on('console', (m) => messages.push(m)); await page.evaluate(() => { console.group('calling console.group'); console.groupEnd(); }); return [messages.map((m) => m.type()), messages[0].text().includes('calling console.group')];`,
  },
  {
    area,
    name: 'should not fail for window object',
    upstream: [
      'console: should not fail for window object',
      'page: Page.Events.Console should not fail for window object',
    ],
    script: `${WAIT} await page.evaluate(() => console.error(window)); return (await next).text();`,
  },
  {
    area,
    name: 'should return remote objects',
    upstream: ['console: should return remote objects', 'page: Page.Events.Console should return remote objects'],
    script: `${WAIT} await page.evaluate(() => { globalThis.test = 1; console.log(1, 2, 3, globalThis); }); const log = await next; const args = log.args(); const property = args.length === 4 ? await args[3].getProperty('test') : null; return [log.text(), args.length, property && (await property.jsonValue())];`,
  },
  {
    area,
    name: 'should not dispose handles when page has listeners',
    script: `${WAIT} await page.evaluate(() => console.log({ foo: 'bar' })); const handle = (await next).args()[0]; const before = handle.disposed; const value = await handle.jsonValue(); await handle.dispose(); return [before, value, handle.disposed];`,
  },
  {
    area,
    name: 'should have location and stack trace for console API calls',
    upstream: [
      'console: should have location and stack trace for console API calls',
      'page: Page.Events.Console should have location and stack trace for console API calls',
    ],
    script: `${WAIT} await page.goto(server.PREFIX + '/consoletrace.html'); const m = await next; const rel = (f) => ({ ...f, url: f.url.replace(server.PREFIX, '') }); return [m.text(), m.type(), rel(m.location()), m.stackTrace().map(rel)];`,
  },
];
