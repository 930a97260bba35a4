// After puppeteer/puppeteer test/src/page.spec.ts, navigation.spec.ts,
// jshandle.spec.ts, emulation.spec.ts, network.spec.ts, waittask.spec.ts and
// locator.spec.ts (Apache-2.0): Puppeteer's own argument checks and their
// words, every wait's default timeout and AbortSignal, values thrown across
// the membrane, and options passed on whole. Each case returns the error's
// name and message where the test asserts on them, so the words are compared.
import type { Case } from '../harness.js';

/** The error a promise rejects with, as [name, message]; 'no error' when it resolves. */
const OUTCOME = `const outcome = (p) => p.then(() => 'no error', (e) => [e && e.name, e && e.message !== undefined ? e.message : e]);`;

/** A wait started, then its signal aborted: Puppeteer's "should be cancellable". */
const cancelled = (start: string): string =>
  `${OUTCOME} const c = new AbortController(); const task = ${start}; c.abort(); return await outcome(task);`;

export const cases: Case[] = [
  // ---------------------------------------------------------------- argument checks
  {
    area: 'page',
    name: 'Page.setGeolocation should throw when invalid longitude',
    script: `${OUTCOME} return await outcome(page.setGeolocation({ longitude: 200, latitude: 10 }));`,
  },
  {
    area: 'page',
    name: 'Page.setGeolocation throws for an invalid latitude',
    script: `${OUTCOME} return await outcome(page.setGeolocation({ longitude: 10, latitude: -100 }));`,
  },
  {
    area: 'page',
    name: 'Page.setGeolocation throws for a negative accuracy',
    script: `${OUTCOME} return await outcome(page.setGeolocation({ longitude: 10, latitude: 10, accuracy: -1 }));`,
  },
  {
    area: 'page',
    name: 'Page.addScriptTag should throw an error if no options are provided',
    script: `${OUTCOME} return await outcome(page.addScriptTag('/injectedfile.js'));`,
  },
  {
    area: 'page',
    name: 'Page.addStyleTag should throw an error if no options are provided',
    script: `${OUTCOME} return await outcome(page.addStyleTag('/injectedstyle.css'));`,
  },
  {
    area: 'page',
    name: 'frame.addScriptTag with a string throws as page.addScriptTag',
    script: `${OUTCOME} return await outcome(page.mainFrame().addScriptTag('/injectedfile.js'));`,
  },
  {
    area: 'jshandle',
    name: 'Page.evaluateHandle should throw on recursive objects',
    upstream: 'jshandle: Page.evaluateHandle should warn about recursive objects',
    script: `${OUTCOME} const test = {}; test.obj = test; const [name, message] = await outcome(page.evaluateHandle((o) => o, test)); return [name, message.includes('Recursive objects are not allowed.')];`,
  },
  {
    area: 'evaluation',
    name: 'Page.evaluate throws on recursive objects as evaluateHandle',
    script: `${OUTCOME} const test = {}; test.obj = test; const [name, message] = await outcome(page.evaluate((o) => o, test)); return [name, message.includes('Recursive objects are not allowed.')];`,
  },
  {
    area: 'navigation',
    name: 'Page.goto should fail when navigating to bad url',
    script: `${OUTCOME} return await outcome(page.goto('asdfasdf'));`,
  },
  {
    area: 'navigation',
    name: 'Frame.goto fails for a bad url as page.goto',
    script: `${OUTCOME} return await outcome(page.mainFrame().goto('http://'));`,
  },
  {
    area: 'screenshot',
    name: 'screenshot quality out of range throws in Puppeteer words',
    script: `${OUTCOME} return await outcome(page.screenshot({ type: 'jpeg', quality: 101 }));`,
  },
  {
    area: 'screenshot',
    name: 'png screenshot with quality throws in Puppeteer words',
    script: `${OUTCOME} return await outcome(page.screenshot({ type: 'png', quality: 50 }));`,
  },
  {
    area: 'page',
    name: 'pdf with an unknown format throws in Puppeteer words',
    script: `${OUTCOME} return await outcome(page.pdf({ format: 'nonsense' }));`,
  },
  {
    area: 'mouse',
    name: 'mouse.click with an unknown button throws in Puppeteer words',
    script: `${OUTCOME} return await outcome(page.mouse.click(1, 1, { button: 'nonsense' }));`,
  },
  {
    area: 'mouse',
    name: 'mouse.click with a count of 0 throws in Puppeteer words',
    script: `${OUTCOME} return await outcome(page.mouse.click(1, 1, { count: 0 }));`,
  },
  // ---------------------------------------------------------------- default timeouts reach every wait
  {
    area: 'page',
    name: 'Page.waitForRequest should respect default timeout',
    script: `${OUTCOME} page.setDefaultTimeout(1); return await outcome(page.waitForRequest(() => false));`,
  },
  {
    area: 'page',
    name: 'Page.waitForResponse should respect default timeout',
    script: `${OUTCOME} page.setDefaultTimeout(1); return await outcome(page.waitForResponse(() => false));`,
  },
  {
    area: 'page',
    name: 'Page.waitForRequest by url respects the default timeout',
    script: `${OUTCOME} page.setDefaultTimeout(1); return await outcome(page.waitForRequest(server.PREFIX + '/nothing'));`,
  },
  {
    area: 'page',
    name: 'Page.waitForFrame by url respects the default timeout',
    script: `${OUTCOME} page.setDefaultTimeout(1); return await outcome(page.waitForFrame(server.PREFIX + '/nothing'));`,
  },
  {
    area: 'page',
    name: 'Page.waitForFrame by predicate respects the default timeout',
    script: `${OUTCOME} page.setDefaultTimeout(1); return await outcome(page.waitForFrame(() => false));`,
  },
  {
    area: 'page',
    name: 'Page.waitForNetworkIdle respects the default timeout',
    script: `${OUTCOME} page.setDefaultTimeout(1); return await outcome(page.waitForNetworkIdle({ idleTime: 1000 }));`,
  },
  {
    area: 'waittask',
    name: 'waitForSelector should respect default timeout',
    script: `${OUTCOME} page.setDefaultTimeout(1); return await outcome(page.waitForSelector('div'));`,
  },
  {
    area: 'waittask',
    name: 'waitForFunction should respect default timeout',
    upstream: 'waittask: Frame.waitForFunction should respect default timeout',
    script: `${OUTCOME} page.setDefaultTimeout(1); return await outcome(page.waitForFunction('false'));`,
  },
  {
    area: 'navigation',
    name: 'waitForNavigation respects the default navigation timeout',
    script: `${OUTCOME} page.setDefaultNavigationTimeout(1); return await outcome(page.waitForNavigation());`,
  },
  {
    area: 'navigation',
    name: 'waitForNavigation respects the default timeout',
    script: `${OUTCOME} page.setDefaultTimeout(1); return await outcome(page.waitForNavigation());`,
  },
  {
    area: 'locator',
    name: 'locator.wait respects the default timeout',
    script: `${OUTCOME} page.setDefaultTimeout(1); return await outcome(page.locator('div').wait());`,
  },
  // ---------------------------------------------------------------- every signal ends its wait
  {
    area: 'page',
    name: 'Page.waitForRequest should be cancellable',
    script: cancelled(`page.waitForRequest(server.EMPTY_PAGE, { signal: c.signal })`),
  },
  {
    area: 'page',
    name: 'Page.waitForResponse should be cancellable',
    script: cancelled(`page.waitForResponse(server.EMPTY_PAGE, { signal: c.signal })`),
  },
  {
    area: 'page',
    name: 'Page.waitForRequest by predicate is cancellable with a reason',
    script: `${OUTCOME} const c = new AbortController(); const task = page.waitForRequest(() => false, { signal: c.signal }); c.abort(new Error('stop')); return await outcome(task);`,
  },
  {
    area: 'page',
    name: 'Page.waitForFrame should be cancellable',
    script: cancelled(`page.waitForFrame(server.EMPTY_PAGE + '?x', { signal: c.signal })`),
  },
  {
    area: 'page',
    name: 'Page.waitForFrame by predicate is cancellable',
    script: cancelled(`page.waitForFrame(() => false, { signal: c.signal })`),
  },
  {
    area: 'page',
    name: 'Page.waitForNetworkIdle should be cancellable',
    upstream: 'page: Page.waitForNetworkIdle should be cancelable',
    script: cancelled(`page.waitForNetworkIdle({ idleTime: 1000, signal: c.signal })`),
  },
  {
    area: 'waittask',
    name: 'Frame.waitForSelector should be cancellable',
    script: cancelled(`page.waitForSelector('.nothing', { signal: c.signal })`),
  },
  {
    area: 'waittask',
    name: 'Frame.waitForFunction should be cancellable',
    script: cancelled(`page.waitForFunction(() => false, { signal: c.signal })`),
  },
  {
    area: 'navigation',
    name: 'waitForNavigation should be cancellable',
    upstream: 'navigation: Page.waitForNavigation should be cancellable',
    script: cancelled(`page.waitForNavigation({ signal: c.signal })`),
  },
  {
    area: 'locator',
    name: 'Locator.wait should be cancellable',
    script: cancelled(`page.locator('.nothing').wait({ signal: c.signal })`),
  },
  {
    area: 'locator',
    name: 'Locator.click should be cancellable',
    script: cancelled(`page.locator('.nothing').click({ signal: c.signal })`),
  },
  // ---------------------------------------------------------------- values thrown across
  {
    area: 'page',
    name: 'Page.exposeFunction should support throwing "null"',
    script: `await page.exposeFunction('woof', () => { throw null; }); return await page.evaluate(async () => { try { await globalThis.woof(); return 'no error'; } catch (e) { return [e === null, typeof e]; } });`,
  },
  {
    area: 'page',
    name: 'Page.exposeFunction throwing a string gives the page the string',
    script: `await page.exposeFunction('woof', () => { throw 'WOOF'; }); return await page.evaluate(async () => { try { await globalThis.woof(); return 'no error'; } catch (e) { return [typeof e, e]; } });`,
  },
  {
    area: 'page',
    name: 'Page.exposeFunction throwing an object gives the page the object',
    script: `await page.exposeFunction('woof', () => { throw { code: 7 }; }); return await page.evaluate(async () => { try { await globalThis.woof(); return 'no error'; } catch (e) { return [e instanceof Error, e]; } });`,
  },
  // ---------------------------------------------------------------- options passed on
  {
    area: 'page',
    name: 'Page.setUserAgent should work with additional userAgentMetdata',
    script: `await page.setUserAgent('MockBrowser', { architecture: 'Mock1', mobile: false, model: 'Mockbook', platform: 'MockOS', platformVersion: '3.1' });
await page.goto(server.PREFIX + '/headers.json');
const ua = JSON.parse(await page.evaluate(() => document.body.textContent)).ua;
const mobile = await page.evaluate(() => navigator.userAgentData.mobile);
const data = await page.evaluate(() => navigator.userAgentData.getHighEntropyValues(['architecture', 'model', 'platform', 'platformVersion']));
return [ua, mobile, data.architecture, data.model, data.platform, data.platformVersion];`,
  },
  {
    area: 'page',
    name: 'Page.setUserAgent with an options object and metadata',
    script: `await page.setUserAgent({ userAgent: 'MockBrowser', userAgentMetadata: { architecture: 'Mock2', mobile: true, model: 'M', platform: 'P', platformVersion: '1', brands: [{ brand: 'B', version: '9' }] } });
await page.goto(server.EMPTY_PAGE);
return await page.evaluate(() => [navigator.userAgent, navigator.userAgentData.mobile, navigator.userAgentData.brands.map((b) => b.brand + '/' + b.version)]);`,
  },
  // ---------------------------------------------------------------- parts that were missing
  {
    area: 'page',
    name: 'Page.Events.Metrics metrics event fired on console.timeStamp',
    upstream: 'page: Page.metrics metrics event fired on console.timeStamp',
    script: `const got = new Promise((resolve) => page.once('metrics', resolve)); await page.evaluate(() => console.timeStamp('test42')); const m = await got; return [m.title, typeof m.metrics.JSHeapUsedSize, typeof m.metrics.Nodes];`,
  },
  {
    area: 'network',
    name: 'Page.Events.RequestServedFromCache',
    upstream: 'network: Network Events Page.Events.RequestServedFromCache',
    script: `const cached = []; page.on('requestservedfromcache', (r) => cached.push(r.url().split('/').pop())); await page.goto(server.PREFIX + '/cached/one-style.html'); const first = [...cached]; await page.reload(); return [first, cached];`,
  },
  {
    area: 'emulation',
    name: 'Page.emulateNetworkConditions should change navigator.connection.effectiveType',
    script: `const read = () => page.evaluate('window.navigator.connection.effectiveType');
const before = await read();
await page.emulateNetworkConditions(PredefinedNetworkConditions['Fast 3G']);
const fast = await read();
await page.emulateNetworkConditions(PredefinedNetworkConditions['Slow 3G']);
const slow = await read();
await page.emulateNetworkConditions(null);
return [before, fast, slow, await read()];`,
  },
  {
    area: 'emulation',
    name: 'Page.emulateNetworkConditions offline fails the page requests',
    script: `await page.emulateNetworkConditions({ offline: true, download: -1, upload: -1, latency: 0 }); const r = await page.evaluate((u) => fetch(u).then(() => 'ok', (e) => e.name), server.EMPTY_PAGE); await page.emulateNetworkConditions(null); return r;`,
  },
  // ---------------------------------------------------------------- navigation history
  // Puppeteer's goBack answers null for a page restored from the back/forward cache. The headless shell
  // (CHROMIUM=shell, the default) has no such cache (BackForwardCacheDisabledForDelegate), raw or not.
  {
    area: 'navigation',
    name: 'Page.goBack should work',
    script: `await page.goto(server.EMPTY_PAGE); await page.goto(server.PREFIX + '/grid.html');
const back = await page.goBack(); const a = back && [back.ok(), back.url().includes(server.EMPTY_PAGE)];
const fwd = await page.goForward(); const b = fwd && [fwd.ok(), fwd.url().includes('/grid.html')];
const last = await page.goForward().then((r) => r && r.url(), (e) => e.message);
return [a, b, last];`,
  },
  {
    area: 'navigation',
    name: 'Page.goBack should work with HistoryAPI',
    script: `await page.goto(server.EMPTY_PAGE); await page.evaluate(() => { history.pushState({}, '', '/first.html'); history.pushState({}, '', '/second.html'); });
const u0 = page.url(); await page.goBack(); const u1 = page.url(); await page.goBack(); const u2 = page.url(); await page.goForward(); const u3 = page.url();
return [u0, u1, u2, u3].map((u) => u.replace(server.PREFIX, ''));`,
  },
];
