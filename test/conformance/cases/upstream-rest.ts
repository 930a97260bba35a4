// After puppeteer/puppeteer test/src/*.spec.ts (Apache-2.0): the upstream tests of the pinned
// lists of upstream/ translated after upstream.ts (issue 37), each named with its upstream id.
// Helpers the tests import (attachFrame, detachFrame) are written out in the script.
import type { Case } from '../harness.js';
import { INFO } from './screenshot.js';

/** utils.ts's attachFrame and detachFrame, and the spec files' addElement. */
const ATTACH = `const attachFrame = async (id, url) => { const h = await page.evaluateHandle(async (id, url) => { const f = document.createElement('iframe'); f.src = url; f.id = id; document.body.appendChild(f); await new Promise((x) => (f.onload = x)); return f; }, id, url); return await h.contentFrame(); };`;
const DETACH = `const detachFrame = (id) => page.evaluate((id) => document.getElementById(id).remove(), id);`;
const ADD = `const addElement = (tag) => document.body.appendChild(document.createElement(tag));`;

const aria: Case[] = [
  {
    area: 'ariaqueryhandler',
    name: 'queryOne should find 2nd element by name',
    script: `await page.setContent('<div role="menu" id="mnu1" aria-label="menu-label1">menu div</div><div role="menu" id="mnu2" aria-label="menu-label2">menu div</div>'); const menu = await page.$('aria/menu-label2'); return await menu.evaluate((d) => d.id);`,
  },
  {
    area: 'ariaqueryhandler',
    name: 'waitForSelector (aria) should persist query handler bindings across navigations',
    script: `${ADD} await page.goto('data:text/html,'); await page.goto(server.EMPTY_PAGE); await page.evaluate(addElement, 'button'); await page.waitForSelector('aria/[role="button"]'); await page.goto('data:text/html,'); await page.goto(server.EMPTY_PAGE); await page.evaluate(addElement, 'button'); return !!(await page.waitForSelector('aria/[role="button"]'));`,
  },
  {
    area: 'ariaqueryhandler',
    name: 'waitForSelector (aria) should work with removed MutationObserver',
    script: `await page.evaluate(() => delete window.MutationObserver); const [h] = await Promise.all([page.waitForSelector('aria/anything'), page.setContent('<h1>anything</h1>')]); return await page.evaluate((x) => x.textContent, h);`,
  },
  {
    area: 'ariaqueryhandler',
    name: 'waitForSelector (aria) should work when node is added through innerHTML',
    script: `${ADD} await page.goto(server.EMPTY_PAGE); const w = page.waitForSelector('aria/name'); await page.evaluate(addElement, 'span'); await page.evaluate(() => (document.querySelector('span').innerHTML = '<h3><div aria-label="name"></div></h3>')); return await (await w).evaluate((e) => e.outerHTML);`,
  },
  {
    area: 'ariaqueryhandler',
    name: 'waitForSelector (aria) Page.waitForSelector is shortcut for main frame',
    script: `${ATTACH} ${ADD} await page.goto(server.EMPTY_PAGE); await attachFrame('frame1', server.EMPTY_PAGE); const other = page.frames()[1]; const w = page.waitForSelector('aria/[role="button"]'); await other.evaluate(addElement, 'button'); await page.evaluate(addElement, 'button'); const h = await w; return h.frame === page.mainFrame();`,
  },
  {
    area: 'ariaqueryhandler',
    name: 'waitForSelector (aria) should run in specified frame',
    script: `${ATTACH} ${ADD} await attachFrame('frame1', server.EMPTY_PAGE); await attachFrame('frame2', server.EMPTY_PAGE); const f1 = page.frames()[1]; const f2 = page.frames()[2]; const w = f2.waitForSelector('aria/[role="button"]'); await f1.evaluate(addElement, 'button'); await f2.evaluate(addElement, 'button'); const h = await w; return h.frame === f2;`,
  },
  {
    area: 'ariaqueryhandler',
    name: 'waitForSelector (aria) should throw when frame is detached',
    script: `${ATTACH} ${DETACH} await attachFrame('frame1', server.EMPTY_PAGE); const frame = page.frames()[1]; let err; const w = frame.waitForSelector('aria/does-not-exist').catch((e) => (err = e)); await detachFrame('frame1'); await w; return err.message;`,
  },
  {
    area: 'ariaqueryhandler',
    name: 'waitForSelector (aria) should survive cross-process navigation',
    script: `let found = false; const w = page.waitForSelector('aria/[role="image"]').then(() => (found = true)); await page.goto(server.EMPTY_PAGE); const a = found; await page.reload(); const b = found; await page.goto(server.CROSS_PROCESS_PREFIX + '/grid-images.html'); await w; return [a, b, found];`,
  },
  {
    area: 'ariaqueryhandler',
    name: 'waitForSelector (aria) should wait for visible',
    script: `let found = false; const w = page.waitForSelector('aria/name', { visible: true }).then(() => (found = true)); await page.setContent("<div aria-label='name' style='display: none; visibility: hidden;'>1</div>"); const a = found; await page.evaluate(() => document.querySelector('div').style.removeProperty('display')); const b = found; await page.evaluate(() => document.querySelector('div').style.removeProperty('visibility')); return [a, b, await w, found];`,
  },
  {
    area: 'ariaqueryhandler',
    name: 'waitForSelector (aria) should wait for visible recursively',
    script: `let visible = false; const w = page.waitForSelector('aria/inner', { visible: true }).then(() => (visible = true)).catch(() => (visible = false)); await page.setContent("<div style='display: none; visibility: hidden;'><div aria-label=\\"inner\\">hi</div></div>"); const a = visible; await page.evaluate(() => document.querySelector('div').style.removeProperty('display')); const b = visible; await page.evaluate(() => document.querySelector('div').style.removeProperty('visibility')); return [a, b, await w, visible];`,
  },
  {
    area: 'ariaqueryhandler',
    name: 'waitForSelector (aria) hidden should wait for visibility: hidden',
    script: `let hidden = false; await page.setContent("<div role='button' style='display: block;'>text</div>"); const w = page.waitForSelector('aria/[role="button"]', { hidden: true }).then(() => (hidden = true)).catch(() => (hidden = false)); await page.waitForSelector('aria/[role="button"]'); const a = hidden; await page.evaluate(() => document.querySelector('div').style.setProperty('visibility', 'hidden')); return [a, await w, hidden];`,
  },
  {
    area: 'ariaqueryhandler',
    name: 'waitForSelector (aria) hidden should wait for display: none',
    script: `let hidden = false; await page.setContent("<div role='main' style='display: block;'>text</div>"); const w = page.waitForSelector('aria/[role="main"]', { hidden: true }).then(() => (hidden = true)).catch(() => (hidden = false)); await page.waitForSelector('aria/[role="main"]'); const a = hidden; await page.evaluate(() => document.querySelector('div').style.setProperty('display', 'none')); return [a, await w, hidden];`,
  },
  {
    area: 'ariaqueryhandler',
    name: 'waitForSelector (aria) should have an error message specifically for awaiting an element to be hidden',
    script: `await page.setContent("<div role='main'>text</div>"); try { await page.waitForSelector('aria/[role="main"]', { hidden: true, timeout: 10 }); return 'no error'; } catch (e) { return [e.name, e.message]; }`,
  },
];

/** A key of the script's own for /stall and /release (see assets.ts). */
const KEY = `const key = Math.random().toString(36).slice(2);`;

const waits: Case[] = [
  {
    area: 'waittask',
    name: 'Frame.waitForFunction should work with strict CSP policy',
    script: `await page.goto(server.PREFIX + '/csp-script/empty.html'); let error; await Promise.all([page.waitForFunction(() => globalThis.__FOO === 'hit', { polling: 'raf' }).catch((e) => (error = e)), page.evaluate(() => (globalThis.__FOO = 'hit'))]); return error === undefined;`,
  },
];

const pageCases: Case[] = [
  {
    area: 'page',
    name: 'Page.waitForNetworkIdle should work',
    script: `await page.goto(server.EMPTY_PAGE); let res = 'unset'; const [t1, t2] = await Promise.all([page.waitForNetworkIdle().then((r) => { res = r; return Date.now(); }), page.evaluate(async () => { await Promise.all([fetch('/digits/1.png'), fetch('/digits/2.png')]); await new Promise((r) => setTimeout(r, 200)); await fetch('/digits/3.png'); await new Promise((r) => setTimeout(r, 200)); await fetch('/digits/4.png'); }).then(() => Date.now())]); return [res === undefined, t1 > t2, t1 - t2 >= 400];`,
  },
  {
    area: 'page',
    name: 'Page.waitForNetworkIdle should respect idleTime',
    script: `await page.goto(server.EMPTY_PAGE); const [t1, t2] = await Promise.all([page.waitForNetworkIdle({ idleTime: 10 }).then(() => Date.now()), page.evaluate(async () => { await Promise.all([fetch('/digits/1.png'), fetch('/digits/2.png')]); await new Promise((r) => setTimeout(r, 250)); }).then(() => Date.now())]); return t2 > t1;`,
  },
  {
    area: 'page',
    name: 'Page.waitForNetworkIdle should work with aborted requests',
    script: `await page.goto(server.PREFIX + '/abort-request.html'); const element = await page.$('#abort'); await element.click(); let error = false; await page.waitForNetworkIdle().catch(() => (error = true)); return error;`,
  },
  {
    area: 'page',
    name: 'Page.waitForNetworkIdle should work with delayed response',
    script: `${KEY} await page.goto(server.EMPTY_PAGE); const t0 = Date.now(); const [t1, t2] = await Promise.all([page.waitForNetworkIdle({ idleTime: 100 }).then(() => Date.now()), new Promise((r) => setTimeout(r, 300)).then(() => page.evaluate((k) => fetch('/release?k=' + k).then(() => Date.now()), key)).then(() => Date.now()), page.evaluate(async (k) => { await fetch('/stall?k=' + k); }, key)]); return [t1 > t2, t1 - t0 > 400, t1 - t2 >= 100];`,
  },
  {
    area: 'page',
    name: 'Page.exposeFunction should work with loading frames',
    script: `await page.setRequestInterception(true); let saveRequest; const iframeRequest = new Promise((r) => (saveRequest = r)); page.on('request', async (req) => { if (req.url().endsWith('/frames/frame.html')) saveRequest(req); else await req.continue(); }); let error; const nav = page.goto(server.PREFIX + '/frames/one-frame.html', { waitUntil: 'networkidle0' }).catch((e) => (error = e)); const req = await iframeRequest; const expose = page.exposeFunction('compute', (a, b) => Promise.resolve(a * b)); await Promise.all([req.continue(), expose]); await nav; const frame = page.frames()[1]; return [error === undefined, await frame.evaluate(async () => globalThis.compute(3, 5))];`,
  },
  {
    area: 'page',
    name: 'Page.setContent should respect timeout',
    script: `let error; await page.setContent(\`<img src="\${server.PREFIX}/stall-forever"></img>\`, { timeout: 1 }).catch((e) => (error = e)); return error && error.name;`,
  },
  {
    area: 'page',
    name: 'Page.setContent should respect default navigation timeout',
    script: `page.setDefaultNavigationTimeout(1); let error; await page.setContent(\`<img src="\${server.PREFIX}/stall-forever"></img>\`).catch((e) => (error = e)); return error && error.name;`,
  },
  {
    area: 'page',
    name: 'Page.setContent should await resources to load',
    script: `${KEY} const img = server.PREFIX + '/stall?k=' + key; let loaded = false; const content = page.setContent(\`<img src="\${img}"></img>\`).then(() => (loaded = true)); await page.waitForRequest(img); const before = loaded; await page.evaluate((k) => fetch('/release?k=' + k), key); await content; return [before, loaded];`,
  },
  {
    area: 'page',
    name: 'Page.setBypassCSP should bypass CSP header',
    script: `await page.goto(server.PREFIX + '/csp-header/empty.html'); await page.addScriptTag({ content: 'window.__injected = 42;' }).catch(() => undefined); const a = await page.evaluate(() => globalThis.__injected); await page.setBypassCSP(true); await page.reload(); await page.addScriptTag({ content: 'window.__injected = 42;' }); return [a === undefined, await page.evaluate(() => globalThis.__injected)];`,
  },
  {
    area: 'page',
    name: 'Page.setBypassCSP should bypass after cross-process navigation',
    script: `await page.setBypassCSP(true); await page.goto(server.PREFIX + '/csp.html'); await page.addScriptTag({ content: 'window.__injected = 42;' }); const a = await page.evaluate(() => globalThis.__injected); await page.goto(server.CROSS_PROCESS_PREFIX + '/csp.html'); await page.addScriptTag({ content: 'window.__injected = 42;' }); return [a, await page.evaluate(() => globalThis.__injected)];`,
  },
  {
    area: 'page',
    name: 'Page.setBypassCSP should bypass CSP in iframes as well',
    script: `${ATTACH} await page.goto(server.EMPTY_PAGE); const f1 = await attachFrame('frame1', server.PREFIX + '/csp.html'); await f1.addScriptTag({ content: 'window.__injected = 42;' }).catch(() => undefined); const a = await f1.evaluate(() => globalThis.__injected); await page.setBypassCSP(true); await page.reload(); const f2 = await attachFrame('frame1', server.PREFIX + '/csp.html'); await f2.addScriptTag({ content: 'window.__injected = 42;' }).catch(() => undefined); return [a === undefined, await f2.evaluate(() => globalThis.__injected)];`,
  },
  {
    area: 'page',
    name: 'Page.addScriptTag should work with a url and type=module',
    script: `await page.goto(server.EMPTY_PAGE); await page.addScriptTag({ url: '/es6/es6import.js', type: 'module' }); return await page.evaluate(() => window.__es6injected);`,
  },
  {
    area: 'page',
    name: 'Page.addScriptTag should work with a content and type=module',
    script: `await page.goto(server.EMPTY_PAGE); await page.addScriptTag({ content: "import num from '/es6/es6module.js';window.__es6injected = num;", type: 'module' }); await page.waitForFunction(() => window.__es6injected); return await page.evaluate(() => window.__es6injected);`,
  },
  {
    area: 'page',
    name: 'Page.addScriptTag should throw when added with content to the CSP page',
    script: `await page.goto(server.PREFIX + '/csp.html'); let error; await page.addScriptTag({ content: 'window.__injected = 35;' }).catch((e) => (error = e)); return !!error;`,
  },
  {
    area: 'page',
    name: 'Page.addScriptTag should throw when added with URL to the CSP page',
    script: `await page.goto(server.PREFIX + '/csp.html'); let error; await page.addScriptTag({ url: server.CROSS_PROCESS_PREFIX + '/injectedfile.js' }).catch((e) => (error = e)); return !!error;`,
  },
  {
    area: 'page',
    name: 'Page.addStyleTag should throw when added with content to the CSP page',
    script: `await page.goto(server.PREFIX + '/csp.html'); let error; await page.addStyleTag({ content: 'body { background-color: green; }' }).catch((e) => (error = e)); return !!error;`,
  },
  {
    area: 'page',
    name: 'Page.addStyleTag should throw when added with URL to the CSP page',
    script: `await page.goto(server.PREFIX + '/csp.html'); let error; await page.addStyleTag({ url: server.CROSS_PROCESS_PREFIX + '/injectedstyle.css' }).catch((e) => (error = e)); return !!error;`,
  },
  {
    area: 'page',
    name: 'Page.pdf can print to PDF and stream the result',
    script: `const stream = await page.createPDFStream(); let size = 0; const reader = stream.getReader(); for (;;) { const { done, value } = await reader.read(); if (done) break; size += value.length; } return size > 0;`,
  },
  {
    area: 'page',
    name: 'Page.select should respect event bubbling',
    path: '/input/select.html',
    script: `await page.evaluate(() => { window.result.onBubbledInput = null; window.result.onBubbledChange = null; document.body.addEventListener('input', () => { result.onBubbledInput = Array.from(document.querySelectorAll('option:checked')).map((o) => o.value); }, false); document.body.addEventListener('change', () => { result.onBubbledChange = Array.from(document.querySelectorAll('option:checked')).map((o) => o.value); }, false); }); await page.select('select', 'blue'); return [await page.evaluate(() => result.onBubbledInput), await page.evaluate(() => result.onBubbledChange)];`,
  },
];

/** A release of a held response (assets.ts), from the page: its text when `body` is given. */
const RELEASE = `const release = (k, body) => page.evaluate((k, body) => fetch('/release?k=' + encodeURIComponent(k) + (body === undefined ? '' : '&body=' + encodeURIComponent(body))).then(() => undefined), k, body);`;

const navigation: Case[] = [
  {
    area: 'navigation',
    name: 'Page.goto should return response when page replaces its state during load',
    script: `const response = await page.goto(server.PREFIX + '/historyapi-replaceState.html', { waitUntil: 'networkidle2' }); return [response.status(), page.url() === server.PREFIX + '/historyapi-replaceState.html'];`,
  },
  {
    area: 'navigation',
    name: 'Page.goto should work with subframes return 204',
    script: `let error; await page.goto(server.PREFIX + '/frames/one-frame-204.html').catch((e) => (error = e)); return error === undefined;`,
  },
  {
    area: 'navigation',
    name: 'Page.goto should fail when server returns 204',
    script: `let error = null; await page.goto(server.PREFIX + '/204').catch((e) => (error = e)); return [error !== null, error && error.message.includes('net::ERR_ABORTED')];`,
  },
  {
    area: 'navigation',
    name: 'Page.goto should fail when exceeding default maximum navigation timeout',
    script: `let error; page.setDefaultNavigationTimeout(1); await page.goto(server.PREFIX + '/stall-forever').catch((e) => (error = e)); return [error.name, error.message.includes('Navigation timeout of 1 ms exceeded')];`,
  },
  {
    area: 'navigation',
    name: 'Page.goto should fail when exceeding default maximum timeout',
    script: `let error; page.setDefaultTimeout(1); await page.goto(server.PREFIX + '/stall-forever').catch((e) => (error = e)); return [error.name, error.message.includes('Navigation timeout of 1 ms exceeded')];`,
  },
  {
    area: 'navigation',
    name: 'Page.goto should prioritize default navigation timeout over default timeout',
    script: `let error; page.setDefaultTimeout(0); page.setDefaultNavigationTimeout(1); await page.goto(server.PREFIX + '/stall-forever').catch((e) => (error = e)); return [error.name, error.message.includes('Navigation timeout of 1 ms exceeded')];`,
  },
  {
    area: 'navigation',
    name: 'Page.goto should work when navigating to a URL with a client redirect',
    script: `const response = await page.goto(server.PREFIX + '/client-redirect.html'); return [response.ok(), response.url() === server.PREFIX + '/client-redirect.html'];`,
  },
  {
    area: 'navigation',
    name: 'Page.goto should not throw an error for a 404 response with an empty body',
    script: `const response = await page.goto(server.PREFIX + '/404-error'); return [response.ok(), response.status()];`,
  },
  {
    area: 'navigation',
    name: 'Page.goto should not throw an error for a 500 response with an empty body',
    script: `const response = await page.goto(server.PREFIX + '/500-error'); return [response.ok(), response.status()];`,
  },
  {
    area: 'navigation',
    name: 'Page.goto should wait for network idle to succeed navigation',
    script: `${KEY} ${RELEASE} const url = (x) => server.PREFIX + '/stall?k=' + key + '-' + x; let finished = false; const first = Promise.all(['a', 'b', 'c'].map((x) => page.waitForRequest(url(x)))); const d = page.waitForRequest(url('d')); const loaded = new Promise((r) => page.once('load', r)); let error; const nav = page.goto(server.PREFIX + '/networkidle.html?k=' + key, { waitUntil: 'networkidle0' }).then((r) => { finished = true; return r; }).catch((e) => { error = e; return null; }); const seen = []; await loaded; seen.push(finished); await first; seen.push(finished); for (const x of ['a', 'b', 'c']) await release(key + '-' + x, 'File not found'); await d; seen.push(finished); await release(key + '-d', 'File not found'); const response = await nav; return [seen, finished, error === undefined && response.ok()];`,
  },
  {
    area: 'navigation',
    name: 'Page.goto should work with self requesting page',
    script: `const response = await page.goto(server.PREFIX + '/self-request.html'); return [response.status(), response.url().includes('self-request.html')];`,
  },
  {
    area: 'navigation',
    name: 'Page.waitForNavigation should work with both domcontentloaded and load',
    script: `${KEY} ${RELEASE} let error; let bothFired = false; const nav = page.goto(server.PREFIX + '/stalled-style.html?k=' + key).catch((e) => (error = e)); const dcl = page.waitForNavigation({ waitUntil: 'domcontentloaded' }).catch((e) => (error = e)); const load = page.waitForNavigation({ waitUntil: 'load' }).then(() => (bothFired = true)).catch((e) => (error = e)); await page.waitForRequest(server.PREFIX + '/stall?k=' + key); await dcl; const before = bothFired; await release(key); await load; await nav; return [before, bothFired, error === undefined];`,
  },
  {
    area: 'navigation',
    name: 'Page.waitForNavigation should work when subframe issues window.stop()',
    script: `const attached = new Promise((r) => page.once('frameattached', r)); const nav = page.goto(server.PREFIX + '/frames/one-frame-stalled.html'); const frame = await attached; await Promise.all([frame.evaluate(() => window.stop()), nav]); return 'ok';`,
  },
  {
    area: 'navigation',
    name: 'Frame.goto should reject when frame detaches',
    script: `await page.goto(server.PREFIX + '/frames/one-frame.html'); const url = server.PREFIX + '/stall-forever'; const requested = page.waitForRequest(url); const nav = page.frames()[1].goto(url).catch((e) => e); await requested; await page.$eval('iframe', (f) => f.remove()); const error = await nav; return ['Navigating frame was detached', 'Frame detached', 'net::ERR_ABORTED'].some((m) => error.message.includes(m));`,
  },
  {
    area: 'navigation',
    name: 'Frame.goto should return matching responses',
    script: `${ATTACH} ${KEY} ${RELEASE} await page.setCacheEnabled(false); await page.goto(server.EMPTY_PAGE); const frames = await Promise.all([attachFrame('frame1', server.EMPTY_PAGE), attachFrame('frame2', server.EMPTY_PAGE), attachFrame('frame3', server.EMPTY_PAGE)]); const navigations = []; for (let i = 0; i < 3; ++i) { const url = server.PREFIX + '/stall?k=' + key + '-' + i; const requested = page.waitForRequest(url); navigations.push(frames[i].goto(url)); await requested; } const texts = ['AAA', 'BBB', 'CCC']; const out = []; for (const i of [1, 2, 0]) { await release(key + '-' + i, texts[i]); const response = await navigations[i]; out.push([response.frame() === frames[i], await response.text()]); } return out;`,
  },
  {
    area: 'navigation',
    name: 'Frame.waitForNavigation should fail when frame detaches',
    script: `await page.goto(server.PREFIX + '/frames/one-frame.html'); const frame = page.frames()[1]; let error; const nav = frame.waitForNavigation().catch((e) => (error = e)); const url = server.PREFIX + '/stall-forever'; await Promise.all([page.waitForRequest(url), frame.evaluate((u) => (window.location = u), url)]); await page.$eval('iframe', (f) => f.remove()); await nav; return ['Navigating frame was detached', 'Frame detached'].some((m) => error.message.includes(m));`,
  },
];

const network: Case[] = [
  {
    area: 'network',
    name: 'Response.headers should work',
    script: `const response = await page.goto(server.PREFIX + '/foo-header.html'); return response.headers()['foo'];`,
  },
  {
    area: 'network',
    name: 'Request.initiator should return the initiator',
    script: `const initiators = new Map(); page.on('request', (r) => initiators.set(r.url().split('/').pop(), r.initiator())); await page.goto(server.PREFIX + '/initiator.html'); await page.waitForFunction(() => window.__injected === 42); const i = (n) => initiators.get(n); return [i('initiator.html').type, i('initiator.js').type, i('initiator.js').url === server.PREFIX + '/initiator.html', i('frame.html').type, i('frame.html').url === server.PREFIX + '/initiator.html', i('style.css').type, i('style.css').url === server.PREFIX + '/frames/frame.html', i('injectedfile.js').type, i('injectedfile.js').stack.callFrames[0].url === server.PREFIX + '/initiator.js', i('injectedstyle.css').type, i('injectedstyle.css').stack.callFrames[0].url === server.PREFIX + '/initiator.js'];`,
  },
  {
    area: 'network',
    name: 'Response.fromCache should work',
    script: `const responses = new Map(); page.on('response', (r) => !r.url().endsWith('favicon.ico') && responses.set(r.url().split('/').pop(), r)); await page.goto(server.PREFIX + '/cached/one-style.html'); await page.reload(); return [responses.size, responses.get('one-style.css').status(), responses.get('one-style.css').fromCache(), responses.get('one-style.html').status(), responses.get('one-style.html').fromCache()];`,
  },
  {
    area: 'network',
    name: 'Response.text should return uncompressed text',
    script: `const response = await page.goto(server.PREFIX + '/gzip/simple.json'); return [response.headers()['content-encoding'], (await response.text()).trimEnd()];`,
  },
  {
    area: 'network',
    name: 'Response.text should wait until response completes',
    script: `${KEY} ${RELEASE} await page.goto(server.EMPTY_PAGE); let requestFinished = false; page.on('requestfinished', (r) => (requestFinished = requestFinished || r.url().includes('/partial'))); const [response] = await Promise.all([page.waitForResponse((r) => r.url().includes('/partial')), page.evaluate((k) => { void fetch('/partial?k=' + k).then((r) => r.text()); }, key)]); const status = response.status(); const before = requestFinished; const text = response.text(); await release(key); return [status, before, await text];`,
  },
  {
    area: 'network',
    name: 'Response.buffer should work',
    script: `const response = await page.goto(server.PREFIX + '/pptr.png'); const b = await response.buffer(); return [b.length, b[0], b[1], b[2], b[3]];`,
  },
  {
    area: 'network',
    name: 'Response.buffer should work with compression',
    script: `const response = await page.goto(server.PREFIX + '/gzip/pptr.png'); const b = await response.buffer(); return [b.length, b[0], b[1], b[2], b[3]];`,
  },
  {
    area: 'network',
    name: 'Response.buffer should throw if the response does not have a body',
    script: `await page.goto(server.PREFIX + '/empty.html'); const url = server.CROSS_PROCESS_PREFIX + '/cors.html'; const preflight = page.waitForResponse((r) => r.request().method() === 'OPTIONS' && r.url() === url); await page.evaluate(async (src) => { await fetch(src, { method: 'POST', headers: { 'x-ping': 'pong' } }); }, url); const response = await preflight; try { await response.buffer(); return 'no error'; } catch (e) { return e.message; }`,
  },
  {
    area: 'network',
    name: 'Response.statusText should work',
    script: `const response = await page.goto(server.PREFIX + '/cool'); return response.statusText();`,
  },
  {
    area: 'network',
    name: 'Response.statusText handles missing status text',
    script: `const response = await page.goto(server.PREFIX + '/nostatus'); return response.statusText();`,
  },
  {
    area: 'network',
    name: 'Request.isNavigationRequest should work',
    script: `const requests = new Map(); page.on('request', (r) => requests.set(r.url().split('/').pop(), r)); await page.goto(server.PREFIX + '/rrredirect-frame'); return ['rrredirect-frame', 'one-frame.html', 'frame.html', 'style.css'].map((n) => requests.get(n).isNavigationRequest());`,
  },
  {
    area: 'network',
    name: 'Request.isNavigationRequest should work with request interception',
    script: `const requests = new Map(); page.on('request', (r) => { requests.set(r.url().split('/').pop(), r); void r.continue(); }); await page.setRequestInterception(true); await page.goto(server.PREFIX + '/rrredirect-frame'); return ['rrredirect-frame', 'one-frame.html', 'frame.html', 'style.css'].map((n) => requests.get(n).isNavigationRequest());`,
  },
  {
    area: 'network',
    name: 'Page.authenticate should work',
    script: `let first; try { first = (await page.goto(server.PREFIX + '/auth1/empty.html')).status(); } catch (e) { first = e.message.includes('net::ERR_INVALID_AUTH_CREDENTIALS') ? 401 : e.message; } await page.authenticate({ username: 'user', password: 'pass' }); const response = await page.reload(); return [first, response.status()];`,
  },
  {
    area: 'network',
    name: 'Page.authenticate should fail if wrong credentials',
    script: `await page.authenticate({ username: 'foo', password: 'bar' }); const response = await page.goto(server.PREFIX + '/auth2/empty.html'); return response.status();`,
  },
  {
    area: 'network',
    name: 'Page.authenticate should allow disable authentication',
    script: `await page.authenticate({ username: 'user3', password: 'pass3' }); const first = (await page.goto(server.PREFIX + '/auth3/empty.html')).status(); await page.authenticate({ username: '', password: '' }); let second; try { second = (await page.goto(server.CROSS_PROCESS_PREFIX + '/auth3/empty.html')).status(); } catch (e) { second = e.message.includes('net::ERR_INVALID_AUTH_CREDENTIALS') ? 401 : e.message; } return [first, second];`,
  },
  {
    area: 'network',
    name: 'Page.authenticate should not disable caching',
    script: `await page.authenticate({ username: 'user4', password: 'pass4' }); const responses = new Map(); page.on('response', (r) => responses.set(r.url().split('/').pop(), r)); await page.goto(server.PREFIX + '/auth4/cached/one-style.html'); await page.reload(); return [responses.get('one-style.css').status(), responses.get('one-style.css').fromCache(), responses.get('one-style.html').status(), responses.get('one-style.html').fromCache()];`,
  },
  {
    area: 'network',
    name: 'raw network headers Same-origin set-cookie navigation',
    script: `const response = await page.goto(server.PREFIX + '/set-cookie.html'); return response.headers()['set-cookie'];`,
  },
  {
    area: 'network',
    name: 'raw network headers Same-origin set-cookie subresource',
    script: `await page.goto(server.EMPTY_PAGE); const [response] = await Promise.all([page.waitForResponse((r) => !r.url().endsWith('favicon.ico')), page.evaluate(() => { const xhr = new XMLHttpRequest(); xhr.open('GET', '/foo'); xhr.send(); })]); return response.headers()['set-cookie'];`,
  },
  {
    area: 'network',
    name: 'Response.remoteAddress should support redirects',
    script: `const response = await page.goto(server.PREFIX + '/foo.html'); const chain = response.request().redirectChain(); return [chain.length, chain[0].url().includes('/foo.html'), String(chain[0].response().remoteAddress().port) === new URL(server.PREFIX).port];`,
  },
];

const pageMore: Case[] = [
  {
    area: 'page',
    name: 'Page.setCacheEnabled should enable or disable the cache based on the state passed',
    script: `${KEY} const url = server.PREFIX + '/cached/one-style.html?k=' + key; await page.goto(url); await page.reload(); await page.setCacheEnabled(false); await page.reload(); const seen = await page.evaluate((k) => fetch('/cached/seen?k=' + k).then((r) => r.json()), key); return seen.map((s) => s !== null);`,
  },
  {
    area: 'page',
    name: 'Page.setCacheEnabled should stay disabled when toggling request interception on/off',
    script: `${KEY} await page.setCacheEnabled(false); await page.setRequestInterception(true); await page.setRequestInterception(false); const url = server.PREFIX + '/cached/one-style.html?k=' + key; await page.goto(url); await page.reload(); const seen = await page.evaluate((k) => fetch('/cached/seen?k=' + k).then((r) => r.json()), key); return seen.map((s) => s !== null);`,
  },
];

const interception: Case[] = [
  {
    area: 'requestinterception',
    name: 'Page.setRequestInterception should be able to remove headers',
    script: `await page.setRequestInterception(true); page.on('request', (request) => { const headers = Object.assign({}, request.headers(), { foo: 'bar', origin: undefined }); void request.continue({ headers }, 0); }); const response = await page.goto(server.PREFIX + '/echo-headers'); const h = await response.json(); return [h.origin === undefined, h.foo];`,
  },
  {
    area: 'requestinterception',
    name: 'Page.setRequestInterception should work with redirect inside sync XHR',
    script: `await page.goto(server.EMPTY_PAGE); await page.setRequestInterception(true); page.on('request', (request) => request.continue({}, 0)); return await page.evaluate(async () => { const request = new XMLHttpRequest(); request.open('GET', '/logo.png', false); request.send(null); return request.status; });`,
  },
  {
    area: 'requestinterception',
    name: 'Page.setRequestInterception should work with redirects for subresources',
    script: `await page.setRequestInterception(true); const requests = []; page.on('request', (request) => { void request.continue({}, 0); if (!request.url().endsWith('favicon.ico')) requests.push(request); }); const response = await page.goto(server.PREFIX + '/redirect-style.html'); const chain = requests[1].redirectChain(); return [response.status(), response.url().includes('redirect-style.html'), requests.length, requests[0].resourceType(), requests[1].resourceType(), chain.length, chain[0].url().includes('/r1.css'), chain[2].url().includes('/r3.css')];`,
  },
  {
    area: 'requestinterception',
    name: 'Page.setRequestInterception should work with equal requests',
    script: `${KEY} await page.goto(server.EMPTY_PAGE); await page.setRequestInterception(true); let spinner = false; page.on('request', (request) => { if (request.url().endsWith('favicon.ico')) { void request.continue({}, 0); return; } void (spinner ? request.abort('failed', 0) : request.continue({}, 0)); spinner = !spinner; }); return await page.evaluate((k) => Promise.all([1, 2, 3].map(() => fetch('/zzz?k=' + k).then((r) => r.text()).catch(() => 'FAILED'))), key);`,
  },
  {
    area: 'requestinterception',
    name: 'Page.setRequestInterception should work with badly encoded server',
    script: `await page.setRequestInterception(true); page.on('request', (request) => request.continue({}, 0)); const response = await page.goto(server.PREFIX + '/malformed?rnd=%911'); return response.status();`,
  },
  {
    area: 'requestinterception',
    name: 'Page.setRequestInterception should work wit h encoded server - 2',
    // The stylesheet's request can end after goto's answer: the case waits for its end.
    script: `await page.setRequestInterception(true); const requests = []; page.on('request', (request) => { void request.continue({}, 0); requests.push(request); }); const css = new Promise((r) => { const ended = (q) => q.url().startsWith('http') && q.url().includes('/fonts?') && r(q); page.on('requestfinished', ended); page.on('requestfailed', ended); }); const response = await page.goto(\`data:text/html,<link rel="stylesheet" href="\${server.PREFIX}/fonts?helvetica|arial"/>\`); const q = await css; return [response.status(), requests.length, q.response() ? q.response().status() : q.failure().errorText];`,
  },
  {
    area: 'requestinterception',
    name: 'Page.setRequestInterception should not throw "Invalid Interception Id" if the request was cancelled',
    script: `await page.setContent('<iframe></iframe>'); await page.setRequestInterception(true); let request; page.on('request', async (r) => (request = r)); const requested = new Promise((r) => page.once('request', r)); void page.$eval('iframe', (frame, url) => (frame.src = url), server.EMPTY_PAGE).catch(() => undefined); await requested; await page.$eval('iframe', (frame) => frame.remove()); let error; await request.continue({}, 0).catch((e) => (error = e)); return error === undefined;`,
  },
  {
    area: 'requestinterception',
    name: 'Page.setRequestInterception should not cache if cache disabled',
    script: `await page.goto(server.PREFIX + '/cached/one-style.html'); await page.setRequestInterception(true); await page.setCacheEnabled(false); page.on('request', (request) => request.continue({}, 0)); const cached = []; page.on('requestservedfromcache', (r) => cached.push(r.url())); await page.reload(); return cached.length;`,
  },
  {
    area: 'requestinterception',
    name: 'Page.setRequestInterception should cache if cache enabled',
    script: `await page.goto(server.PREFIX + '/cached/one-style.html'); await page.setRequestInterception(true); await page.setCacheEnabled(true); page.on('request', (request) => request.continue({}, 0)); const cached = []; page.on('requestservedfromcache', (r) => cached.push(r.url())); await page.reload(); return cached.length;`,
  },
  {
    area: 'requestinterception',
    name: 'Page.setRequestInterception should load fonts if cache enabled',
    script: `await page.setRequestInterception(true); await page.setCacheEnabled(true); page.on('request', (request) => request.continue({}, 0)); const font = page.waitForResponse((r) => r.url().endsWith('/one-style.woff')); await page.goto(server.PREFIX + '/cached/one-style-font.html'); return (await font).url().endsWith('/one-style.woff');`,
  },
  {
    area: 'requestinterception',
    name: 'Request.respond should allow mocking binary responses',
    script: `${INFO} const png = Uint8Array.from(atob('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=='), (c) => c.charCodeAt(0)); await page.setRequestInterception(true); page.on('request', (request) => { void request.respond({ contentType: 'image/png', body: png }, 0); }); await page.evaluate((PREFIX) => { const img = document.createElement('img'); img.src = PREFIX + '/does-not-exist.png'; document.body.appendChild(img); return new Promise((fulfill) => (img.onload = fulfill)); }, server.PREFIX); const img = await page.$('img'); return info(await img.screenshot());`,
  },
];

/** touch-event-utils.ts's initializeTouchEventReport: each touch event's changed and current touches, kept in the page. */
const TOUCHES = `await page.evaluate(() => { window.__events = []; const points = (list) => [...list].map((t) => [Math.round(t.clientX), Math.round(t.clientY)]); for (const type of ['touchstart', 'touchmove', 'touchend', 'touchcancel']) document.addEventListener(type, (e) => window.__events.push({ changed: points(e.changedTouches), touches: points(e.touches) }), { passive: true }); }); const events = async (n) => { await page.waitForFunction((n) => window.__events.length >= n, {}, n); return await page.evaluate(() => window.__events); };`;
/** The div the ElementHandle touch and click tests use. */
const DIV = `await page.evaluate(() => { document.body.style.padding = '0'; document.body.style.margin = '0'; document.body.innerHTML = '<div style="cursor: pointer; width: 120px; height: 60px; margin: 30px; padding: 15px;"></div>'; }); const divHandle = await page.$('div');`;

const elementhandle: Case[] = [
  {
    area: 'elementhandle',
    name: 'ElementHandle.boundingBox should handle nested frames',
    script: `await page.setViewport({ width: 500, height: 500 }); await page.goto(server.PREFIX + '/frames/nested-frames.html'); const nested = page.frames()[1].childFrames()[1]; const e = await nested.$('div'); return await e.boundingBox();`,
  },
  {
    area: 'elementhandle',
    name: 'ElementHandle.boxModel should work',
    script: `${ATTACH} await page.goto(server.PREFIX + '/resetcss.html'); await attachFrame('frame1', server.PREFIX + '/resetcss.html'); await page.evaluate(() => { const f = document.querySelector('#frame1'); f.style.position = 'absolute'; f.style.left = '1px'; f.style.top = '2px'; }); const frame = page.frames()[1]; const div = (await frame.evaluateHandle(() => { const div = document.createElement('div'); document.body.appendChild(div); Object.assign(div.style, { boxSizing: 'border-box', position: 'absolute', borderLeft: '1px solid black', paddingLeft: '2px', marginLeft: '3px', left: '4px', top: '5px', width: '6px', height: '7px' }); return div; })).asElement(); const box = await div.boxModel(); return [box.width, box.height, box.margin[0], box.border[0], box.padding[0], box.content[0]];`,
  },
  {
    area: 'elementhandle',
    name: 'ElementHandle.touchStart should work',
    script: `${TOUCHES} ${DIV} await divHandle.touchStart(); return await events(1);`,
  },
  {
    area: 'elementhandle',
    name: 'ElementHandle.touchStart should work with the returned Touch',
    script: `${TOUCHES} ${DIV} const touch = await divHandle.touchStart(); await touch.move(150, 150); return await events(2);`,
  },
  {
    area: 'elementhandle',
    name: 'ElementHandle.touchMove should work',
    script: `${TOUCHES} ${DIV} await page.touchscreen.touchStart(200, 200); await divHandle.touchMove(); return await events(2);`,
  },
  {
    area: 'elementhandle',
    name: 'ElementHandle.touchMove should work with a pre-existing Touch',
    script: `${TOUCHES} ${DIV} await page.touchscreen.touchStart(200, 200); const second = await page.touchscreen.touchStart(200, 100); await divHandle.touchMove(second); return await events(3);`,
  },
  {
    area: 'elementhandle',
    name: 'ElementHandle.touchEnd should work',
    script: `${TOUCHES} ${DIV} await page.touchscreen.touchStart(100, 100); await divHandle.touchEnd(); return await events(2);`,
  },
  {
    area: 'elementhandle',
    name: 'ElementHandle.clickablePoint should not work if the click box is not visible due to the iframe',
    script: `const out = []; for (const [name, side] of [['frame', 'left'], ['frame2', 'top']]) { await page.setContent(\`<iframe name='\${name}' style='position: absolute; \${side}: -100px' srcdoc="<button style='width: 10px; height: 10px;'></button>"></iframe>\`); const frame = await page.waitForFrame(async (f) => { const el = await f.frameElement(); if (!el) return false; return (await el.evaluate((x) => x.name)) === name; }); const handle = await frame.locator('button').waitHandle(); out.push(await handle.clickablePoint().then(() => 'no error', (e) => e instanceof Error)); } return out;`,
  },
  {
    area: 'elementhandle',
    name: 'ElementHandle.clickablePoint should work for iframes',
    script: `await page.evaluate(() => { document.body.style.padding = '10px'; document.body.style.margin = '10px'; document.body.innerHTML = '<iframe style="border: none; margin: 0; padding: 0;" seamless sandbox srcdoc="<style>* { margin: 0; padding: 0;}</style><div style=\\'cursor: pointer; width: 120px; height: 60px; margin: 30px; padding: 15px;\\' />"></iframe>'; }); await page.evaluate(() => new Promise((r) => window.requestAnimationFrame(r))); const frame = page.frames()[1]; const div = await frame.$('div'); return [await div.clickablePoint(), await div.clickablePoint({ x: 10, y: 15 })];`,
  },
  {
    area: 'elementhandle',
    name: 'ElementHandle.isIntersectingViewport should work with svg elements',
    script: `await page.goto(server.PREFIX + '/inline-svg.html'); const [circle, svg] = await Promise.all([page.$('circle'), page.$('svg')]); const [hiddenCircle, hiddenSvg] = await Promise.all([page.$('div circle'), page.$('div svg')]); const t = (e) => Promise.all([e.isIntersectingViewport({ threshold: 1 }), e.isIntersectingViewport({ threshold: 0 })]); return [await t(circle), await t(svg), await t(hiddenCircle), await t(hiddenSvg)];`,
  },
];

const rest: Case[] = [
  {
    area: 'page',
    name: 'Page.pdf should respect timeout',
    script: `await page.goto(server.PREFIX + '/pdf.html', { waitUntil: 'domcontentloaded' }); const error = await page.pdf({ timeout: 1 }).catch((e) => e); return error && error.name;`,
  },
  {
    area: 'locator',
    name: 'Locator.click should work with a OOPIF',
    script: `await page.setViewport({ width: 500, height: 500 }); await page.setContent(\`<iframe src="data:text/html,<button onclick=&quot;this.innerText = 'clicked';&quot;>test</button>"></iframe>\`); const frame = await page.waitForFrame((f) => f.url().startsWith('data')); let willClick = false; await frame.locator('button').on('action', () => { willClick = true; }).click(); const button = await frame.$('button'); return [await button.evaluate((el) => el.innerText), willClick];`,
  },
  {
    area: 'locator',
    name: 'Locator.prototype.clone should work internally with delegated locators',
    script: `const locator = page.locator('div'); const delegated = [locator.map((div) => div.textContent), locator.filter((div) => div.textContent?.length === 0)]; return delegated.map((d) => d.setTimeout(500).timeout !== locator.timeout);`,
  },
  {
    area: 'network',
    name: 'Response.fromServiceWorker Response.fromServiceWorker',
    script: `const responses = new Map(); page.on('response', (r) => !r.url().endsWith('favicon.ico') && responses.set(r.url().split('/').pop(), r)); await page.goto(server.PREFIX + '/serviceworkers/fetch/sw.html', { waitUntil: 'networkidle2' }); await page.evaluate(async () => await globalThis.activationPromise); await page.reload(); const r = (n) => [responses.get(n).status(), responses.get(n).fromServiceWorker()]; return [responses.size, r('sw.html'), r('style.css')];`,
  },
  {
    area: 'network',
    name: 'Page.setBypassServiceWorker bypass for network',
    script: `const responses = new Map(); page.on('response', (r) => !r.url().endsWith('favicon.ico') && responses.set(r.url().split('/').pop(), r)); await page.goto(server.PREFIX + '/serviceworkers/fetch/sw.html', { waitUntil: 'networkidle2' }); await page.evaluate(async () => await globalThis.activationPromise); await page.reload({ waitUntil: 'networkidle2' }); const r = (n) => [responses.get(n).status(), responses.get(n).fromServiceWorker()]; const before = [page.isServiceWorkerBypassed(), responses.size, r('sw.html'), r('style.css')]; await page.setBypassServiceWorker(true); await page.reload({ waitUntil: 'networkidle2' }); return [before, [page.isServiceWorkerBypassed(), r('sw.html'), r('style.css')]];`,
  },
  {
    area: 'frame',
    name: 'Frame Management should send events when frames are manipulated dynamically',
    script: `${ATTACH} ${DETACH} await page.goto(server.EMPTY_PAGE); const attached = []; page.on('frameattached', (f) => attached.push(f)); await attachFrame('frame1', './assets/frame.html'); const a = [attached.length, attached[0].url().includes('/assets/frame.html')]; const navigated = []; page.on('framenavigated', (f) => navigated.push(f)); await page.evaluate((id, url) => { const f = document.getElementById(id); f.src = url; return new Promise((x) => (f.onload = x)); }, 'frame1', './empty.html'); const n = [navigated.length, navigated[0].url() === server.EMPTY_PAGE]; const detached = []; page.on('framedetached', (f) => detached.push(f)); await detachFrame('frame1'); return [a, n, detached.length, detached[0].isDetached()];`,
  },
  {
    area: 'frame',
    name: 'Frame Management should support framesets',
    script: `let attached = [], detached = [], navigated = []; page.on('frameattached', (f) => attached.push(f)); page.on('framedetached', (f) => detached.push(f)); page.on('framenavigated', (f) => navigated.push(f)); await page.goto(server.PREFIX + '/frames/frameset.html'); const first = [attached.length, detached.length, navigated.length]; attached = []; detached = []; navigated = []; await page.goto(server.EMPTY_PAGE); return [first, [attached.length, detached.length, navigated.length]];`,
  },
  {
    area: 'frame',
    name: 'Frame Management should report frame from-inside shadow DOM',
    script: `await page.goto(server.PREFIX + '/shadow.html'); await page.evaluate(async (url) => { const frame = document.createElement('iframe'); frame.src = url; document.body.shadowRoot.appendChild(frame); await new Promise((x) => (frame.onload = x)); }, server.EMPTY_PAGE); return [page.frames().length, page.frames()[1].url() === server.EMPTY_PAGE];`,
  },
  {
    area: 'frame',
    name: 'Frame Management should support url fragment',
    script: `await page.goto(server.PREFIX + '/frames/one-frame-url-fragment.html'); return [page.frames().length, page.frames()[1].url() === server.PREFIX + '/frames/frame.html?param=value#fragment'];`,
  },
  {
    area: 'click',
    name: 'should click a rotated button',
    script: `await page.goto(server.PREFIX + '/input/rotatedButton.html'); await page.click('button'); return await page.evaluate(() => globalThis.result);`,
  },
  {
    area: 'click',
    name: 'should fire aux event on middle click',
    script: `await page.goto(server.PREFIX + '/input/button.html'); await page.evaluate(() => { window.__aux = null; document.querySelector('button').addEventListener('auxclick', (e) => (window.__aux = e.button)); }); await page.click('button', { button: 'middle' }); return await page.evaluate(() => window.__aux);`,
  },
  {
    area: 'cookies',
    name: 'Page.deleteCookie should delete cookie for specified URL regardless of the current page',
    script: `await page.goto(server.EMPTY_PAGE); const URL_1 = server.EMPTY_PAGE; const URL_2 = server.CROSS_PROCESS_PREFIX + '/empty.html'; const NAME = 'some_cookie_name'; await page.setCookie({ url: URL_1, name: NAME, value: 'some_cookie_value' }, { url: URL_2, name: NAME, value: 'some_cookie_value' }); const before = [(await page.cookies(URL_1)).length, (await page.cookies(URL_2)).length]; await page.deleteCookie({ url: URL_2, name: NAME }); return [before, (await page.cookies(URL_1)).length, (await page.cookies(URL_2)).length];`,
  },
  {
    area: 'mouse',
    name: 'should throw if buttons are pressed incorrectly',
    script: `await page.goto(server.EMPTY_PAGE); await page.mouse.down(); try { await page.mouse.down(); return 'no error'; } catch (e) { return e instanceof Error; }`,
  },
  {
    area: 'keyboard',
    name: 'should trigger commands of keyboard shortcuts',
    path: '/input/textarea.html',
    script: `await page.type('textarea', 'hello'); await page.keyboard.down('Control'); await page.keyboard.press('a', { commands: ['SelectAll'] }); await page.keyboard.up('Control'); await page.keyboard.down('Control'); await page.keyboard.down('c', { commands: ['Copy'] }); await page.keyboard.up('c'); await page.keyboard.up('Control'); await page.keyboard.down('Control'); await page.keyboard.press('v', { commands: ['Paste'] }); await page.keyboard.press('v', { commands: ['Paste'] }); await page.keyboard.up('Control'); return await page.evaluate(() => document.querySelector('textarea').value);`,
  },
  {
    area: 'queryhandler',
    name: 'XPath selectors in Page should return empty array for non-existing element',
    script: `const elements = await page.$$('xpath/html/body/non-existing-element'); return elements.length;`,
  },
  {
    area: 'queryhandler',
    name: 'P selectors should handle escapes',
    script: `await page.setContent('<div><span>My name is Jun (pronounced like "June")</span></div>'); const found = (s) => page.$(s).then((h) => !!h, (e) => 'error: ' + e.message); return [await found(':scope >>> ::-p-text(My name is Jun \\\\(pronounced like "June"\\\\))'), await found(':scope >>> ::-p-text("My name is Jun (pronounced like \\\\"June\\\\")")'), await found(':scope >>> ::-p-text(My name is Jun \\\\(pronounced like "June"\\\\)")'), await found(':scope >>> ::-p-text("My name is Jun \\\\(pronounced like "June"\\\\))')];`,
  },
  {
    area: 'evaluation',
    name: 'Page.evaluateOnNewDocument should work with CSP',
    script: `await page.evaluateOnNewDocument(() => { globalThis.injected = 123; }); await page.goto(server.PREFIX + '/csp-script/empty.html'); const a = await page.evaluate(() => globalThis.injected); await page.addScriptTag({ content: 'window.e = 10;' }).catch(() => undefined); return [a, await page.evaluate(() => window.e === undefined)];`,
  },
  {
    area: 'emulation',
    name: 'Page.viewport should be detectable by Modernizr',
    script: `await page.goto(server.PREFIX + '/detect-touch.html'); const a = await page.evaluate(() => document.body.textContent.trim()); await page.setViewport(KnownDevices['iPhone 6'].viewport); await page.goto(server.PREFIX + '/detect-touch.html'); return [a, await page.evaluate(() => document.body.textContent.trim())];`,
  },
  {
    area: 'emulation',
    name: 'Page.viewport should detect touch when applying viewport with touches',
    script: `await page.setViewport({ width: 800, height: 600, hasTouch: true }); await page.addScriptTag({ url: server.PREFIX + '/modernizr.js' }); return await page.evaluate(() => globalThis.Modernizr.touchevents);`,
  },
  {
    area: 'emulation',
    name: 'Page.viewport should update media queries when resoltion changes',
    script: `const out = []; for (const dpr of [1, 2, 3]) { await page.setViewport({ width: 800, height: 600, deviceScaleFactor: dpr }); await page.goto(server.PREFIX + '/resetcss.html'); out.push(await page.evaluate((dpr) => [window.devicePixelRatio, matchMedia('(resolution: ' + dpr + 'dppx)').matches], dpr)); } return out;`,
  },
  {
    area: 'emulation',
    name: 'Page.viewport should load correct pictures when emulation dpr',
    script: `const out = []; for (const dpr of [1, 2, 3]) { await page.setViewport({ width: 800, height: 600, deviceScaleFactor: dpr }); await page.goto(server.PREFIX + '/picture.html'); out.push(await page.evaluate(() => document.querySelector('img').currentSrc.split('/').pop())); } return out;`,
  },
  {
    area: 'emulation',
    name: 'Page.emulateVisionDeficiency should work',
    script: `${INFO} await page.setViewport({ width: 500, height: 500 }); await page.goto(server.PREFIX + '/grid.html'); const out = []; for (const type of ['none', 'achromatopsia', 'blurredVision', 'deuteranopia', 'protanopia', 'reducedContrast', 'tritanopia', 'none']) { await page.emulateVisionDeficiency(type); out.push(info(await page.screenshot())); } try { await page.emulateVisionDeficiency('invalid'); out.push('no error'); } catch (e) { out.push(e.message); } return out;`,
  },
  {
    area: 'screenshot',
    name: 'Page.screenshot should clip clip bigger than the viewport without "captureBeyondViewport"',
    script: `${INFO} await page.setViewport({ width: 50, height: 50 }); await page.goto(server.PREFIX + '/grid.html'); return info(await page.screenshot({ clip: { x: 25, y: 25, width: 100, height: 100 }, captureBeyondViewport: false }));`,
  },
  {
    area: 'screenshot',
    name: 'Page.screenshot should take fullPage screenshots without captureBeyondViewport',
    script: `${INFO} await page.setViewport({ width: 500, height: 500 }); await page.goto(server.PREFIX + '/grid.html'); const shot = info(await page.screenshot({ fullPage: true, captureBeyondViewport: false })); return [shot, page.viewport()];`,
  },
  {
    area: 'screenshot',
    name: 'Cdp should use scale for clip',
    script: `${INFO} await page.setViewport({ width: 500, height: 500 }); await page.goto(server.PREFIX + '/grid.html'); return info(await page.screenshot({ clip: { x: 50, y: 100, width: 150, height: 100, scale: 2 } }));`,
  },
  {
    area: 'locator',
    name: 'Locator.click should work',
    script: `await page.setViewport({ width: 500, height: 500 }); await page.setContent(\`<button onclick="this.innerText = 'clicked';">test</button>\`); let willClick = false; await page.locator('button').on('action', () => { willClick = true; }).click(); const button = await page.$('button'); return [await button.evaluate((el) => el.innerText), willClick];`,
  },
  {
    area: 'locator',
    name: 'Locator.click should retry clicks on errors',
    script: `await page.setViewport({ width: 500, height: 500 }); await page.setContent(\`<button style="display: none;" onclick="this.innerText = 'clicked';">test</button>\`); try { await page.locator('button').setTimeout(100).click(); return 'no error'; } catch (e) { return [e.name, e.message]; }`,
  },
  {
    area: 'locator',
    name: 'Locator.fill should work for textarea',
    script: `await page.setContent('<textarea></textarea>'); let filled = false; await page.locator('textarea').on('action', () => { filled = true; }).fill('test'); return [await page.evaluate(() => document.querySelector('textarea').value), filled];`,
  },
];

export const cases: Case[] = [
  ...aria,
  ...waits,
  ...pageCases,
  ...pageMore,
  ...navigation,
  ...network,
  ...interception,
  ...elementhandle,
  ...rest,
];
