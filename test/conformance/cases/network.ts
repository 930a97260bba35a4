// After puppeteer/puppeteer test/src/network.spec.ts, requestinterception.spec.ts,
// cookies.spec.ts, screenshot.spec.ts and frame.spec.ts (Apache-2.0).
import type { Case } from '../harness.js';

export const cases: Case[] = [
  {
    area: 'network',
    name: 'request event fires',
    script: `const reqs = []; page.on('request', (r) => reqs.push(r.url())); await page.goto(server.PREFIX + '/title.html'); return reqs.length;`,
  },
  {
    area: 'network',
    name: 'request.method, resourceType, isNavigationRequest',
    script: `let r; page.on('request', (q) => (r = q)); await page.goto(server.PREFIX + '/title.html'); return [r.method(), r.resourceType(), r.isNavigationRequest()];`,
  },
  {
    area: 'network',
    name: 'request.frame',
    script: `let f; page.on('request', (q) => (f = q.frame())); await page.goto(server.PREFIX + '/title.html'); return f === page.mainFrame();`,
  },
  {
    area: 'network',
    name: 'request.initiator',
    path: '/frames/one-frame.html',
    script: `const init = {}; page.on('request', (r) => { init[r.url().split('/').pop()] = r.initiator(); }); await page.reload(); return [init['one-frame.html'] && init['one-frame.html'].type, init['frame.html'] && init['frame.html'].type, init['style.css'] && init['style.css'].type];`,
  },
  {
    area: 'network',
    name: 'request.postData',
    script: `let pd; page.on('request', (r) => { if (r.method() === 'POST') pd = r.postData(); }); await page.evaluate((u) => fetch(u, { method: 'POST', body: JSON.stringify({ foo: 'bar' }) }).then((r) => r.text()), server.PREFIX + '/post'); return pd;`,
  },
  {
    area: 'network',
    name: 'request.fetchPostData',
    script: `let p; page.on('request', (r) => { if (r.method() === 'POST') p = r.fetchPostData(); }); await page.evaluate((u) => fetch(u, { method: 'POST', body: 'hello' }).then((r) => r.text()), server.PREFIX + '/post'); return await p;`,
  },
  {
    area: 'network',
    name: 'response.text',
    script: `const r = await page.goto(server.PREFIX + '/simple.json'); return await r.text();`,
  },
  {
    area: 'network',
    name: 'response.json',
    script: `const r = await page.goto(server.PREFIX + '/simple.json'); return await r.json();`,
  },
  {
    area: 'network',
    name: 'response.headers',
    script: `const r = await page.goto(server.PREFIX + '/headers.json'); return r.headers()['x-answer'];`,
  },
  {
    area: 'network',
    name: 'response.statusText',
    script: `const r = await page.goto(server.PREFIX + '/404'); return r.statusText();`,
  },
  {
    area: 'network',
    name: 'response.fromCache, fromServiceWorker',
    script: `const r = await page.goto(server.PREFIX + '/title.html'); return [r.fromCache(), r.fromServiceWorker()];`,
  },
  {
    area: 'network',
    name: 'response.remoteAddress',
    script: `const r = await page.goto(server.PREFIX + '/title.html'); const a = r.remoteAddress(); return [typeof a.ip, typeof a.port];`,
  },
  {
    area: 'network',
    name: 'response.timing',
    script: `const r = await page.goto(server.PREFIX + '/title.html'); return typeof r.timing();`,
  },
  {
    area: 'network',
    name: 'response.securityDetails is null for http',
    script: `const r = await page.goto(server.PREFIX + '/title.html'); return r.securityDetails();`,
  },
  {
    area: 'network',
    name: 'requestfinished and requestfailed events',
    script: `const ev = []; page.on('requestfinished', () => ev.push('finished')); page.on('requestfailed', () => ev.push('failed')); await page.goto(server.PREFIX + '/title.html'); return ev;`,
  },
  {
    area: 'network',
    name: 'waitForRequest',
    script: `const [r] = await Promise.all([page.waitForRequest(server.PREFIX + '/simple.json'), page.evaluate((u) => fetch(u), server.PREFIX + '/simple.json')]); return r.url().endsWith('/simple.json');`,
  },
  {
    area: 'network',
    name: 'waitForResponse with predicate',
    script: `const [r] = await Promise.all([page.waitForResponse((r) => r.url().endsWith('/simple.json')), page.evaluate((u) => fetch(u), server.PREFIX + '/simple.json')]); return r.status();`,
  },
  {
    area: 'network',
    name: 'waitForNetworkIdle',
    script: `await page.waitForNetworkIdle({ idleTime: 50 }); return 'idle';`,
  },
  {
    area: 'requestinterception',
    name: 'should intercept and continue',
    script: `await page.setRequestInterception(true); page.on('request', (r) => r.continue()); const resp = await page.goto(server.PREFIX + '/title.html'); return resp.ok();`,
  },
  {
    area: 'requestinterception',
    name: 'should abort',
    script: `await page.setRequestInterception(true); page.on('request', (r) => (r.url().endsWith('.css') ? r.abort() : r.continue())); let failed = 0; page.on('requestfailed', () => failed++); await page.goto(server.PREFIX + '/frames/one-frame.html'); return failed;`,
  },
  {
    area: 'requestinterception',
    name: 'should respond with a string body',
    script: `await page.setRequestInterception(true); page.on('request', (r) => r.respond({ status: 201, headers: { foo: 'bar' }, body: 'Yo, page!' })); const resp = await page.goto(server.EMPTY_PAGE); return [resp.status(), resp.headers().foo, await page.evaluate(() => document.body.textContent)];`,
  },
  {
    area: 'requestinterception',
    name: 'should respond with a Uint8Array body',
    script: `await page.setRequestInterception(true); page.on('request', (r) => r.respond({ status: 200, body: new TextEncoder().encode('bytes!') })); await page.goto(server.EMPTY_PAGE); return await page.evaluate(() => document.body.textContent);`,
  },
  {
    area: 'requestinterception',
    name: 'should respond with array header values',
    script: `await page.setRequestInterception(true); page.on('request', (r) => r.respond({ status: 200, headers: { 'set-cookie': ['a=1', 'b=2'] }, body: 'x' })); await page.goto(server.EMPTY_PAGE); return (await page.cookies()).map((c) => c.name).sort();`,
  },
  {
    area: 'requestinterception',
    name: 'should work with redirects',
    script: `await page.setRequestInterception(true); const urls = []; page.on('request', (r) => { urls.push(r.url().split('/').pop()); r.continue(); }); const resp = await page.goto(server.PREFIX + '/redirect/1.html'); return [urls, resp.status()];`,
  },
  {
    area: 'requestinterception',
    name: 'should be able to override headers on continue',
    script: `await page.setRequestInterception(true); page.on('request', (r) => r.continue({ headers: { ...r.headers(), foo: 'bar' } })); await page.goto(server.PREFIX + '/headers.json'); return JSON.parse(await page.evaluate(() => document.body.textContent)).foo;`,
  },
  {
    area: 'requestinterception',
    name: 'interceptResolutionState',
    script: `await page.setRequestInterception(true); let st; page.on('request', (r) => { st = r.interceptResolutionState(); r.continue(); }); await page.goto(server.PREFIX + '/title.html'); return st;`,
  },
  {
    area: 'cookies',
    name: 'should return no cookies in pristine browser context',
    script: `return await page.cookies();`,
  },
  {
    area: 'cookies',
    name: 'should get a cookie',
    script: `await page.evaluate(() => { document.cookie = 'username=John Doe'; }); const c = await page.cookies(); return c.map(({ name, value, domain, path, httpOnly, secure, session }) => ({ name, value, domain, path, httpOnly, secure, session }));`,
  },
  {
    area: 'cookies',
    name: 'should set a cookie',
    script: `await page.setCookie({ name: 'password', value: '123456' }); return await page.evaluate(() => document.cookie);`,
  },
  {
    area: 'cookies',
    name: 'should delete a cookie',
    script: `await page.setCookie({ name: 'cookie1', value: '1' }, { name: 'cookie2', value: '2' }); await page.deleteCookie({ name: 'cookie2' }); return await page.evaluate(() => document.cookie);`,
  },
  {
    area: 'cookies',
    name: 'should not set a cookie on a data URL page',
    script: `await page.goto('data:text/html,Hello'); try { await page.setCookie({ name: 'example-cookie', value: 'best' }); return 'no error'; } catch (e) { return e.message; }`,
  },
  {
    area: 'screenshot',
    name: 'should work',
    path: '/grid.html',
    script: `await page.setViewport({ width: 500, height: 500 }); const s = await page.screenshot(); return [s instanceof Uint8Array, s.length > 1000];`,
  },
  {
    area: 'screenshot',
    name: 'should clip rect',
    path: '/grid.html',
    script: `await page.setViewport({ width: 500, height: 500 }); const s = await page.screenshot({ clip: { x: 50, y: 100, width: 150, height: 100 } }); return s.length > 100;`,
  },
  {
    area: 'screenshot',
    name: 'should work with encoding base64',
    path: '/grid.html',
    script: `const s = await page.screenshot({ encoding: 'base64' }); return typeof s;`,
  },
  {
    area: 'screenshot',
    name: 'jpeg quality',
    path: '/grid.html',
    script: `const s = await page.screenshot({ type: 'jpeg', quality: 50 }); return [s[0], s[1]];`,
  },
  {
    area: 'screenshot',
    name: 'pdf',
    script: `const p = await page.pdf(); return String.fromCharCode(p[0], p[1], p[2], p[3]);`,
  },
  {
    area: 'frame',
    name: 'frames() lists nested frames',
    path: '/frames/nested-frames.html',
    script: `return page.frames().map((f) => f.name());`,
  },
  {
    area: 'frame',
    name: 'frame.parentFrame and childFrames',
    path: '/frames/nested-frames.html',
    script: `const main = page.mainFrame(); return [main.parentFrame(), main.childFrames().length];`,
  },
  {
    area: 'frame',
    name: 'frame.evaluate',
    path: '/frames/one-frame.html',
    script: `return await page.frames()[1].evaluate(() => document.querySelector('div').textContent);`,
  },
  {
    area: 'frame',
    name: 'frame.isDetached',
    path: '/frames/one-frame.html',
    script: `const f = page.frames()[1]; await page.evaluate(() => document.querySelector('iframe').remove()); return f.detached;`,
  },
  {
    area: 'frame',
    name: 'frameattached event',
    script: `const names = []; page.on('frameattached', (f) => names.push('attached')); await page.goto(server.PREFIX + '/frames/one-frame.html'); return names;`,
  },
  {
    area: 'frame',
    name: 'frame.content and title',
    path: '/frames/one-frame.html',
    script: `const f = page.frames()[1]; return [(await f.content()).includes("Hi, I'm frame"), await f.title()];`,
  },
  {
    area: 'frame',
    name: 'frame.url',
    path: '/frames/one-frame.html',
    script: `return page.frames()[1].url().endsWith('/frames/frame.html');`,
  },
  {
    area: 'frame',
    name: 'frame.goto',
    path: '/frames/one-frame.html',
    script: `const f = page.frames()[1]; await f.goto(server.PREFIX + '/title.html'); return await f.title();`,
  },
  {
    area: 'frame',
    name: 'cross-origin frame evaluate',
    script: `await page.setContent('<p>x</p>'); await page.evaluate(async (u) => { const f = document.createElement('iframe'); f.src = u; document.body.appendChild(f); await new Promise((r) => (f.onload = r)); }, server.CROSS_PROCESS_PREFIX + '/title.html'); return await page.frames()[1].title();`,
  },
];
