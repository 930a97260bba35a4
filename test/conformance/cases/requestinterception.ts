// After puppeteer/puppeteer test/src/requestinterception.spec.ts (Apache-2.0): the
// cases the first cut (cases/network.ts) did not take. Where the test reads the
// request its server received (server.waitForRequest), the fixture /headers.json
// echoes the headers back and the case reads them from the page.
import type { Case } from '../harness.js';

const area = 'requestinterception';
/** Puppeteer's isFavicon(request). */
const FAVICON = `const isFavicon = (r) => r.url().includes('favicon.ico');`;
const ECHO = `const echoed = async () => JSON.parse(await page.evaluate(() => document.body.textContent));`;

export const cases: Case[] = [
  {
    area,
    name: 'should intercept',
    upstream: 'requestinterception: Page.setRequestInterception should intercept',
    script: `${FAVICON} await page.goto('about:blank'); await page.setRequestInterception(true); let seen; page.on('request', (request) => { if (isFavicon(request)) { void request.continue(); return; } seen = [request.url().includes('empty.html'), !!request.headers()['user-agent'], request.method(), request.isNavigationRequest(), request.frame() === page.mainFrame(), request.frame().url()]; void request.continue(); }); const response = await page.goto(server.EMPTY_PAGE); return [seen, response.ok()];`,
  },
  {
    area,
    name: 'should work when POST is redirected with 302',
    upstream: 'requestinterception: Page.setRequestInterception should work when POST is redirected with 302',
    script: `await page.setRequestInterception(true); page.on('request', (request) => request.continue()); await page.setContent('<form action="/rredirect" method="post"><input type="hidden" id="foo" name="foo" value="FOOBAR"></form>'); await Promise.all([page.$eval('form', (form) => form.submit()), page.waitForNavigation()]); return page.url().endsWith('/empty.html');`,
  },
  {
    area,
    name: 'should work when header manipulation headers with redirect',
    upstream:
      'requestinterception: Page.setRequestInterception should work when header manipulation headers with redirect',
    script: `${ECHO} await page.setRequestInterception(true); page.on('request', (request) => { const headers = Object.assign({}, request.headers(), { foo: 'bar' }); void request.continue({ headers }); }); await page.goto(server.PREFIX + '/rrredirect'); return (await echoed()).foo;`,
  },
  {
    area,
    name: 'should contain referer header',
    upstream: 'requestinterception: Page.setRequestInterception should contain referer header',
    script: `${FAVICON} await page.setRequestInterception(true); const requests = []; page.on('request', (request) => { if (!isFavicon(request)) requests.push(request); void request.continue(); }); await page.goto(server.PREFIX + '/one-style.html'); return [requests[1].url().includes('/one-style.css'), requests[1].headers()['referer'].includes('/one-style.html')];`,
  },
  {
    area,
    name: 'should properly return navigation response when URL has cookies',
    upstream:
      'requestinterception: Page.setRequestInterception should properly return navigation response when URL has cookies',
    script: `await page.setCookie({ name: 'foo', value: 'bar' }); await page.setRequestInterception(true); page.on('request', (request) => request.continue()); const response = await page.reload(); return response.status();`,
  },
  {
    area,
    name: 'should stop intercepting',
    upstream: 'requestinterception: Page.setRequestInterception should stop intercepting',
    script: `await page.setRequestInterception(true); page.once('request', (request) => request.continue()); await page.goto(server.EMPTY_PAGE); await page.setRequestInterception(false); const response = await page.goto(server.EMPTY_PAGE); return response.ok();`,
  },
  {
    area,
    name: 'should show custom HTTP headers',
    upstream: 'requestinterception: Page.setRequestInterception should show custom HTTP headers',
    script: `await page.setExtraHTTPHeaders({ foo: 'bar' }); await page.setRequestInterception(true); let foo; page.on('request', (request) => { foo = request.headers()['foo']; void request.continue(); }); const response = await page.goto(server.EMPTY_PAGE); return [foo, response.ok()];`,
  },
  {
    area,
    name: 'should work with custom referer headers',
    upstream: 'requestinterception: Page.setRequestInterception should work with custom referer headers',
    script: `await page.setExtraHTTPHeaders({ referer: server.EMPTY_PAGE }); await page.setRequestInterception(true); let request; page.on('request', (req) => { request = req; void request.continue(); }); const response = await page.goto(server.EMPTY_PAGE); return [request.headers()['referer'] === server.EMPTY_PAGE, response.ok()];`,
  },
  {
    area,
    name: 'should be abortable',
    upstream: 'requestinterception: Page.setRequestInterception should be abortable',
    script: `await page.setRequestInterception(true); page.on('request', (request) => { if (request.url().endsWith('.css')) void request.abort(); else void request.continue(); }); let failedRequests = 0; page.on('requestfailed', () => ++failedRequests); const response = await page.goto(server.PREFIX + '/one-style.html'); return [response.ok(), response.request().failure(), failedRequests];`,
  },
  {
    area,
    name: 'should be abortable with custom error codes',
    upstream: 'requestinterception: Page.setRequestInterception should be abortable with custom error codes',
    script: `await page.setRequestInterception(true); page.on('request', (request) => { void request.abort('internetdisconnected'); }); const [failedRequest] = await Promise.all([new Promise((r) => page.once('requestfailed', r)), page.goto(server.EMPTY_PAGE).catch(() => {})]); return failedRequest.failure().errorText;`,
  },
  {
    area,
    name: 'should send referer',
    upstream: 'requestinterception: Page.setRequestInterception should send referer',
    script: `${ECHO} await page.setExtraHTTPHeaders({ referer: 'http://google.com/' }); await page.setRequestInterception(true); page.on('request', (request) => request.continue()); await page.goto(server.PREFIX + '/headers.json'); return (await echoed()).referer;`,
  },
  {
    area,
    name: 'should fail navigation when aborting main resource',
    upstream: 'requestinterception: Page.setRequestInterception should fail navigation when aborting main resource',
    script: `await page.setRequestInterception(true); page.on('request', (request) => request.abort()); return await page.goto(server.EMPTY_PAGE).then(() => 'no error', (e) => e.message.includes('net::ERR_FAILED'));`,
  },
  {
    area,
    name: 'should work with redirects (redirect chain)',
    script: `${FAVICON} await page.setRequestInterception(true); const requests = []; page.on('request', (request) => { void request.continue(); if (!isFavicon(request)) requests.push(request); }); const response = await page.goto(server.PREFIX + '/non-existing-page.html'); const chain = response.request().redirectChain(); return [response.status(), response.url().includes('empty.html'), requests.length, chain.length, chain[0].url().includes('/non-existing-page.html'), chain[2].url().includes('/non-existing-page-3.html'), chain.map((r, i) => r.isNavigationRequest() && r.redirectChain().indexOf(r) === i)];`,
  },
  {
    area,
    name: 'should be able to abort redirects',
    upstream: 'requestinterception: Page.setRequestInterception should be able to abort redirects',
    script: `await page.setRequestInterception(true); page.on('request', (request) => { if (request.url().includes('non-existing-2')) void request.abort(); else void request.continue(); }); await page.goto(server.EMPTY_PAGE); const result = await page.evaluate(async () => { try { return await fetch('/non-existing.json'); } catch (error) { return error.message; } }); return String(result).includes('Failed to fetch');`,
  },
  {
    area,
    name: 'should navigate to dataURL and fire dataURL requests',
    upstream: 'requestinterception: Page.setRequestInterception should navigate to dataURL and fire dataURL requests',
    script: `${FAVICON} await page.setRequestInterception(true); const requests = []; page.on('request', (request) => { void request.continue(); if (!isFavicon(request)) requests.push(request); }); const dataURL = 'data:text/html,<div>yo</div>'; const response = await page.goto(dataURL); return [response.status(), requests.length, requests[0].url() === dataURL];`,
  },
];
