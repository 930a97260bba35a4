// After puppeteer/puppeteer test/src/page.spec.ts, navigation.spec.ts,
// waittask.spec.ts, console.spec.ts, dialog.spec.ts and emulation.spec.ts (Apache-2.0).
import type { Case } from '../harness.js';

export const cases: Case[] = [
  {
    area: 'page',
    name: 'title should return the page title',
    path: '/title.html',
    script: `return await page.title();`,
  },
  {
    area: 'page',
    name: 'url should work',
    script: `const before = page.url(); await page.goto(server.PREFIX + '/title.html'); return [before === server.EMPTY_PAGE, page.url() === server.PREFIX + '/title.html'];`,
  },
  {
    area: 'page',
    name: 'setContent should work',
    script: `await page.setContent('<div>hello</div>'); return await page.content();`,
  },
  {
    area: 'page',
    name: 'setContent should work with doctype',
    script: `await page.setContent('<!DOCTYPE html><div>hello</div>'); return await page.content();`,
  },
  {
    area: 'page',
    name: 'setContent should work with accents',
    script: `await page.setContent('<div>aberración</div>'); return await page.$eval('div', (d) => d.textContent);`,
  },
  {
    area: 'page',
    name: 'setContent should work with emojis',
    script: `await page.setContent('<div>🐥</div>'); return await page.$eval('div', (d) => d.textContent);`,
  },
  {
    area: 'page',
    name: 'setContent should work with newline',
    script: `await page.setContent('<div>\\n</div>'); return await page.$eval('div', (d) => d.textContent);`,
  },
  {
    area: 'page',
    name: 'setDefaultTimeout applies to waitForSelector',
    script: `page.setDefaultTimeout(1); const t0 = Date.now(); try { await page.waitForSelector("#never"); return "no error"; } catch (e) { return [e.name, Date.now() - t0 < 2000]; }`,
  },
  {
    area: 'page',
    name: 'setDefaultNavigationTimeout applies to waitForNavigation',
    script: `page.setDefaultNavigationTimeout(1); try { await page.waitForNavigation(); return 'no error'; } catch (e) { return [e.name, e.message]; }`,
  },
  {
    area: 'page',
    name: 'addScriptTag should work with a content',
    script: `const h = await page.addScriptTag({ content: 'window.__injected = 35;' }); return [!!h, await page.evaluate(() => globalThis.__injected)];`,
  },
  {
    area: 'page',
    name: 'addScriptTag should throw without options',
    script: `try { await page.addScriptTag(); return 'no error'; } catch (e) { return e.message; }`,
  },
  {
    area: 'page',
    name: 'addStyleTag should work with a content',
    script: `const h = await page.addStyleTag({ content: 'body { background-color: green; }' }); return await page.evaluate(() => getComputedStyle(document.body).backgroundColor);`,
  },
  {
    area: 'page',
    name: 'addScriptTag should work with a relative url',
    path: '/frames/one-frame.html',
    script: `const h = await page.addStyleTag({ url: '/frames/style.css' }); return !!h;`,
  },
  {
    area: 'page',
    name: 'select should select single option',
    path: '/input/select.html',
    script: `const r = await page.select('select', 'blue'); return [r, await page.evaluate(() => result)];`,
  },
  {
    area: 'page',
    name: 'select should select multiple options',
    path: '/input/select.html',
    script: `await page.evaluate(() => makeMultiple()); await page.select('select', 'blue', 'green', 'red'); return await page.evaluate(() => result.onInput);`,
  },
  {
    area: 'page',
    name: 'select should throw if passed in non-strings',
    script: `await page.setContent('<select><option value="12"/></select>'); try { await page.select('select', 12); return 'no error'; } catch (e) { return e.message; }`,
  },
  {
    area: 'page',
    name: 'select should return [] on no matched values',
    path: '/input/select.html',
    script: `return await page.select('select', '42', 'abc');`,
  },
  {
    area: 'page',
    name: 'pageerror event carries message and stack',
    path: '/empty.html',
    script: `const p = new Promise((r) => page.once('pageerror', r)); await page.goto(server.PREFIX + '/error.html'); const e = await p; return [e.message, typeof e.stack, e.stack.includes('Fancy error!')];`,
  },
  {
    area: 'page',
    name: 'metrics returns JSHeapUsedSize',
    script: `const m = await page.metrics(); return typeof m.JSHeapUsedSize;`,
  },
  {
    area: 'page',
    name: 'exposeFunction should work',
    script: `await page.exposeFunction('compute', (a, b) => a * b); return await page.evaluate(async () => await globalThis.compute(9, 4));`,
  },
  {
    area: 'page',
    name: 'exposeFunction should work with {default}',
    script: `await page.exposeFunction('compute', { default: (a, b) => a * b }); return await page.evaluate(async () => await globalThis.compute(9, 4));`,
  },
  {
    area: 'page',
    name: 'exposeFunction should throw exception in page context',
    script: `await page.exposeFunction('woof', () => { throw new Error('WOOF WOOF'); }); return await page.evaluate(async () => { try { await globalThis.woof(); } catch (e) { return { message: e.message }; } });`,
  },
  {
    area: 'page',
    name: 'removeExposedFunction should work',
    script: `await page.exposeFunction('compute', (a, b) => a * b); await page.removeExposedFunction('compute'); return await page.evaluate(() => typeof globalThis.compute);`,
  },
  {
    area: 'page',
    name: 'Page.Events.Close is not for scripts: close() refused',
    script: `try { await page.close(); return 'closed'; } catch (e) { return 'refused'; }`,
  },
  {
    area: 'page',
    name: 'setUserAgent should work',
    script: `await page.setUserAgent('foobar'); await page.goto(server.PREFIX + '/headers.json'); return JSON.parse(await page.evaluate(() => document.body.textContent)).ua;`,
  },
  {
    area: 'page',
    name: 'setExtraHTTPHeaders should work',
    script: `await page.setExtraHTTPHeaders({ foo: 'bar' }); await page.goto(server.PREFIX + '/headers.json'); return JSON.parse(await page.evaluate(() => document.body.textContent)).foo;`,
  },
  {
    area: 'page',
    name: 'setExtraHTTPHeaders should throw for non-string header values',
    script: `try { await page.setExtraHTTPHeaders({ foo: 1 }); return 'no error'; } catch (e) { return e.message; }`,
  },
  {
    area: 'page',
    name: 'setJavaScriptEnabled false',
    script: `await page.setJavaScriptEnabled(false); await page.goto('data:text/html, <script>var something = "forbidden"</script>'); try { await page.evaluate('something'); return 'no error'; } catch (e) { return e.message.includes('something is not defined'); }`,
  },
  {
    area: 'page',
    name: 'setBypassCSP should bypass CSP meta tag',
    script: `await page.setBypassCSP(true); await page.setContent('<meta http-equiv="Content-Security-Policy" content="default-src \\'self\\'">'); await page.addScriptTag({ content: 'window.__injected = 42;' }).catch(() => null); return await page.evaluate(() => globalThis.__injected);`,
  },
  { area: 'page', name: 'setCacheEnabled', script: `await page.setCacheEnabled(false); return 'ok';` },
  {
    area: 'page',
    name: 'setOfflineMode',
    script: `await page.setOfflineMode(true); try { await page.goto(server.PREFIX + '/title.html'); return 'loaded'; } catch (e) { return e.message.includes('net::ERR_INTERNET_DISCONNECTED'); }`,
  },
  {
    area: 'page',
    name: 'bringToFront',
    script: `await page.bringToFront(); return await page.evaluate(() => document.visibilityState);`,
  },
  { area: 'page', name: 'isJavaScriptEnabled', script: `return page.isJavaScriptEnabled();` },
  {
    area: 'navigation',
    name: 'goto should work',
    script: `await page.goto(server.EMPTY_PAGE); return page.url() === server.EMPTY_PAGE;`,
  },
  {
    area: 'navigation',
    name: 'goto should return response with status',
    script: `const r = await page.goto(server.PREFIX + '/404'); return [r.status(), r.ok()];`,
  },
  {
    area: 'navigation',
    name: 'goto should work with redirects',
    script: `const r = await page.goto(server.PREFIX + '/redirect/1.html'); return [r.status(), r.url().endsWith('/redirect/2.html'), r.request().redirectChain().length];`,
  },
  {
    area: 'navigation',
    name: 'goto should work with anchor navigation',
    script: `await page.goto(server.EMPTY_PAGE + '#foo'); return page.url().endsWith('#foo');`,
  },
  {
    area: 'navigation',
    name: 'goto should fail when navigating to bad url',
    script: `try { await page.goto('asdfasdf'); return 'no error'; } catch (e) { return e.message.includes('invalid URL') || e.message.includes('Cannot navigate to invalid URL'); }`,
  },
  {
    area: 'navigation',
    name: 'goto should fail when exceeding maximum navigation timeout',
    script: `try { await page.goto(server.PREFIX + '/never', { timeout: 1 }); return 'no error'; } catch (e) { return e.name; }`,
  },
  {
    area: 'navigation',
    name: 'goto with referer',
    script: `await page.goto(server.PREFIX + '/headers.json', { referer: 'http://google.com/' }); return JSON.parse(await page.evaluate(() => document.body.textContent)).referer;`,
  },
  {
    area: 'navigation',
    name: 'goto with referrerPolicy',
    script: `await page.goto(server.PREFIX + '/headers.json', { referer: 'http://google.com/', referrerPolicy: 'no-referrer' }); return JSON.parse(await page.evaluate(() => document.body.textContent)).referer;`,
  },
  {
    area: 'navigation',
    name: 'goto to data url',
    script: `const r = await page.goto('data:text/html,hello'); return r;`,
  },
  { area: 'navigation', name: 'goto returns null for about:blank', script: `return await page.goto('about:blank');` },
  {
    area: 'navigation',
    name: 'waitForNavigation should work with history.pushState',
    script: `await page.setContent('<a onclick="javascript:pushState()">SPA</a><script>function pushState() { history.pushState({}, "", "wow.html") }</script>'); const [response] = await Promise.all([page.waitForNavigation(), page.click('a')]); return [response, page.url().endsWith('/wow.html')];`,
  },
  {
    area: 'navigation',
    name: 'goBack should work',
    script: `await page.goto(server.PREFIX + '/title.html'); await page.goBack(); const a = page.url(); await page.goForward(); return [a === server.EMPTY_PAGE, page.url().endsWith('/title.html')];`,
  },
  {
    area: 'navigation',
    name: 'reload should work',
    script: `await page.evaluate(() => (globalThis._foo = 10)); await page.reload(); return await page.evaluate(() => globalThis._foo);`,
  },
  {
    area: 'waittask',
    name: 'waitForSelector should immediately resolve',
    script: `await page.setContent('<div></div>'); const h = await page.waitForSelector('div'); return !!h;`,
  },
  {
    area: 'waittask',
    name: 'waitForSelector should resolve when added',
    script: `const p = page.waitForSelector('div.late'); await page.evaluate(() => setTimeout(() => { const d = document.createElement('div'); d.className = 'late'; document.body.appendChild(d); }, 50)); return !!(await p);`,
  },
  {
    area: 'waittask',
    name: 'waitForSelector hidden',
    script: `await page.setContent('<div style="display: none">x</div>'); const h = await page.waitForSelector('div', { hidden: true }); return !!h;`,
  },
  {
    area: 'waittask',
    name: 'waitForSelector timeout error',
    script: `try { await page.waitForSelector('div', { timeout: 10 }); return 'no error'; } catch (e) { return [e.name, e.message]; }`,
  },
  {
    area: 'waittask',
    name: 'waitForFunction should accept a string',
    script: `return await (await page.waitForFunction('1 + 1')).jsonValue();`,
  },
  {
    area: 'waittask',
    name: 'waitForFunction with arguments',
    script: `return await (await page.waitForFunction((a, b) => a + b, {}, 1, 2)).jsonValue();`,
  },
  {
    area: 'waittask',
    name: 'waitForFunction should throw negative polling interval',
    script: `try { await page.waitForFunction(() => true, { polling: -10 }); return 'no error'; } catch (e) { return e.message; }`,
  },
  {
    area: 'waittask',
    name: 'waitForFunction should be cancellable with AbortSignal',
    script: `const ac = new AbortController(); const p = page.waitForFunction(() => false, { signal: ac.signal }); ac.abort(); try { await p; return 'no error'; } catch (e) { return e.name; }`,
  },
  {
    area: 'waittask',
    name: 'waitForTimeout-like: setTimeout in script',
    script: `const t0 = Date.now(); await new Promise((r) => setTimeout(r, 100)); return Date.now() - t0 >= 100;`,
  },
  {
    area: 'waittask',
    name: 'waitForFrame with a predicate',
    path: '/frames/one-frame.html',
    script: `const f = await page.waitForFrame((frame) => frame.url().endsWith('/frames/frame.html')); return f.url().endsWith('/frames/frame.html');`,
  },
  {
    area: 'console',
    name: 'console event with args',
    script: `const p = new Promise((r) => page.once('console', r)); await page.evaluate(() => console.log('hello', 5, { foo: 'bar' })); const m = await p; return [m.text(), m.type(), m.args().length, await Promise.all(m.args().map((a) => a.jsonValue()))];`,
  },
  {
    area: 'console',
    name: 'console stackTrace',
    script: `const p = new Promise((r) => page.once('console', r)); await page.evaluate(() => console.log('hi')); const m = await p; return Array.isArray(m.stackTrace());`,
  },
  {
    area: 'console',
    name: 'console location',
    path: '/consolelog.html',
    script: `const p = new Promise((r) => page.once('console', r)); await page.reload(); const m = await p; return [m.text(), m.location().url.endsWith('/consolelog.html')];`,
  },
  {
    area: 'dialog',
    name: 'should fire and accept',
    script: `page.on('dialog', (d) => { d.accept(); }); return await page.evaluate(() => { alert('yo'); return 'after'; });`,
  },
  {
    area: 'dialog',
    name: 'should allow accepting prompts',
    script: `page.on('dialog', (d) => { void d.accept('answer!'); }); return await page.evaluate(() => prompt('question?', 'yes.'));`,
  },
  {
    area: 'dialog',
    name: 'dialog type, message, defaultValue',
    script: `const p = new Promise((r) => page.on('dialog', async (d) => { r([d.type(), d.message(), d.defaultValue()]); await d.dismiss(); })); await page.evaluate(() => prompt('question?', 'yes.')); return await p;`,
  },
  {
    area: 'dialog',
    name: 'should be able to close the prompt',
    script: `page.on('dialog', (d) => { void d.dismiss(); }); return await page.evaluate(() => prompt('question?'));`,
  },
  {
    area: 'emulation',
    name: 'setViewport',
    script: `await page.setViewport({ width: 123, height: 456 }); return await page.evaluate(() => [innerWidth, innerHeight]);`,
  },
  {
    area: 'emulation',
    name: 'viewport()',
    script: `await page.setViewport({ width: 321, height: 654 }); return page.viewport();`,
  },
  {
    area: 'emulation',
    name: 'deviceScaleFactor 4',
    script: `await page.setViewport({ width: 100, height: 100, deviceScaleFactor: 4 }); return await page.evaluate(() => devicePixelRatio);`,
  },
  {
    area: 'emulation',
    name: 'emulate a device preset',
    script: `await page.emulate(KnownDevices['iPhone 15']); return [await page.evaluate(() => innerWidth), await page.evaluate(() => navigator.userAgent.includes('iPhone'))];`,
  },
  {
    area: 'emulation',
    name: 'emulateMediaType',
    script: `await page.emulateMediaType('print'); return await page.evaluate(() => matchMedia('print').matches);`,
  },
  {
    area: 'emulation',
    name: 'emulateMediaFeatures',
    script: `await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'dark' }]); return await page.evaluate(() => matchMedia('(prefers-color-scheme: dark)').matches);`,
  },
  {
    area: 'emulation',
    name: 'emulateTimezone',
    script: `await page.evaluate(() => { globalThis.date = new Date(1479579154987); }); await page.emulateTimezone('America/Jamaica'); return await page.evaluate(() => date.toString());`,
  },
  {
    area: 'emulation',
    name: 'emulateTimezone invalid',
    script: `try { await page.emulateTimezone('Foo/Bar'); return 'no error'; } catch (e) { return e.message; }`,
  },
  {
    area: 'emulation',
    name: 'emulateVisionDeficiency',
    script: `await page.emulateVisionDeficiency('achromatopsia'); return 'ok';`,
  },
  {
    area: 'emulation',
    name: 'emulateCPUThrottling',
    script: `await page.emulateCPUThrottling(2); await page.emulateCPUThrottling(null); return 'ok';`,
  },
  {
    area: 'emulation',
    name: 'emulateIdleState',
    script: `await page.emulateIdleState({ isUserActive: true, isScreenUnlocked: false }); return 'ok';`,
  },
];
