// After puppeteer/puppeteer test/src/cookies.spec.ts (Apache-2.0). Where the test
// compares whole cookies (expectCookieEquals), the case returns them whole; the
// fixture servers are 127.0.0.1 where Puppeteer's are localhost.
import type { Case } from '../harness.js';

const area = 'cookies';
/** Cookies sorted by name, as the tests sort them before comparing. */
const SORTED = `const byName = (list) => list.sort((a, b) => a.name.localeCompare(b.name));`;

export const cases: Case[] = [
  {
    area,
    name: 'should properly report httpOnly cookie',
    upstream: 'cookies: Page.cookies should properly report httpOnly cookie',
    path: '/cookies/httponly.html',
    script: `const cookies = await page.cookies(); return [cookies.length, cookies[0].httpOnly];`,
  },
  {
    area,
    name: 'should properly report "Strict" sameSite cookie',
    upstream: 'cookies: Page.cookies should properly report "Strict" sameSite cookie',
    path: '/cookies/strict.html',
    script: `const cookies = await page.cookies(); return [cookies.length, cookies[0].sameSite];`,
  },
  {
    area,
    name: 'should properly report "Lax" sameSite cookie',
    upstream: 'cookies: Page.cookies should properly report "Lax" sameSite cookie',
    path: '/cookies/lax.html',
    script: `const cookies = await page.cookies(); return [cookies.length, cookies[0].sameSite];`,
  },
  {
    area,
    name: 'should get multiple cookies',
    upstream: 'cookies: Page.cookies should get multiple cookies',
    // As 'should get a cookie' (network.ts): reading document.cookie waits for the queued writes.
    script: `${SORTED} await page.evaluate(() => { document.cookie = 'username=John Doe'; document.cookie = 'password=1234'; return document.cookie; }); return byName(await page.cookies());`,
  },
  {
    area,
    name: 'should get cookies from multiple urls',
    upstream: 'cookies: Page.cookies should get cookies from multiple urls',
    script: `${SORTED} await page.setCookie({ url: 'https://foo.com', name: 'doggo', value: 'woofs' }, { url: 'https://bar.com', name: 'catto', value: 'purrs' }, { url: 'https://baz.com', name: 'birdo', value: 'tweets' }); return byName(await page.cookies('https://foo.com', 'https://baz.com'));`,
  },
  {
    area,
    name: 'should set multiple cookies',
    upstream: 'cookies: Page.setCookie should set multiple cookies',
    script: `await page.setCookie({ name: 'password', value: '123456' }, { name: 'foo', value: 'bar' }); return await page.evaluate(() => document.cookie.split(';').map((c) => c.trim()).sort());`,
  },
  {
    area,
    name: 'should have |expires| set to |-1| for session cookies',
    upstream: 'cookies: Page.setCookie should have |expires| set to |-1| for session cookies',
    script: `await page.setCookie({ name: 'password', value: '123456' }); const cookies = await page.cookies(); return [cookies[0].session, cookies[0].expires];`,
  },
  {
    area,
    name: 'should set cookie with reasonable defaults',
    upstream: 'cookies: Page.setCookie should set cookie with reasonable defaults',
    script: `${SORTED} await page.setCookie({ name: 'password', value: '123456' }); return byName(await page.cookies());`,
  },
  {
    area,
    name: 'should set a cookie with a path',
    upstream: 'cookies: Page.setCookie should set a cookie with a path',
    path: '/grid.html',
    script: `await page.setCookie({ name: 'gridcookie', value: 'GRID', path: '/grid.html' }); const a = [await page.cookies(), await page.evaluate('document.cookie')]; await page.goto(server.EMPTY_PAGE); const b = [await page.cookies(), await page.evaluate('document.cookie')]; await page.goto(server.PREFIX + '/grid.html'); return [a, b, await page.evaluate('document.cookie')];`,
  },
  {
    area,
    name: 'should not set a cookie on a blank page',
    upstream: 'cookies: Page.setCookie should not set a cookie on a blank page',
    script: `await page.goto('about:blank'); try { await page.setCookie({ name: 'example-cookie', value: 'best' }); return 'no error'; } catch (e) { return e.message.includes('At least one of the url and domain needs to be specified'); }`,
  },
  {
    area,
    name: 'should not set a cookie with blank page URL',
    upstream: 'cookies: Page.setCookie should not set a cookie with blank page URL',
    script: `try { await page.setCookie({ name: 'example-cookie', value: 'best' }, { url: 'about:blank', name: 'example-cookie-blank', value: 'best' }); return 'no error'; } catch (e) { return e.message; }`,
  },
  {
    area,
    name: 'should default to setting secure cookie for HTTPS websites',
    upstream: 'cookies: Page.setCookie should default to setting secure cookie for HTTPS websites',
    script: `await page.setCookie({ url: 'https://example.com', name: 'foo', value: 'bar' }); const [cookie] = await page.cookies('https://example.com'); return cookie.secure;`,
  },
  {
    area,
    name: 'should be able to set insecure cookie for HTTP website',
    upstream: 'cookies: Page.setCookie should be able to set insecure cookie for HTTP website',
    script: `await page.setCookie({ url: 'http://example.com', name: 'foo', value: 'bar' }); const [cookie] = await page.cookies('http://example.com'); return cookie.secure;`,
  },
  {
    area,
    name: 'should set a cookie on a different domain',
    upstream: 'cookies: Page.setCookie should set a cookie on a different domain',
    script: `await page.setCookie({ url: 'https://www.example.com', name: 'example-cookie', value: 'best' }); return [await page.evaluate('document.cookie'), await page.cookies(), await page.cookies('https://www.example.com')];`,
  },
  {
    area,
    name: 'should set cookies from a frame',
    upstream: 'cookies: Page.setCookie should set cookies from a frame',
    path: '/grid.html',
    script: `await page.setCookie({ name: 'localhost-cookie', value: 'best' }); await page.evaluate((src) => { const iframe = document.createElement('iframe'); document.body.appendChild(iframe); const loaded = new Promise((r) => (iframe.onload = r)); iframe.src = src; return loaded; }, server.CROSS_PROCESS_PREFIX + '/empty.html'); await page.setCookie({ name: '127-cookie', value: 'worst', url: server.CROSS_PROCESS_PREFIX }); return [await page.evaluate('document.cookie'), await page.frames()[1].evaluate('document.cookie'), (await page.cookies()).map((c) => c.name).sort(), (await page.cookies(server.CROSS_PROCESS_PREFIX)).map((c) => c.name).sort()];`,
  },
];
