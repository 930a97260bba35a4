// Exercises every method the membrane offers, against fixture pages, so that a
// method missing from the membrane (or broken in it) fails a test.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FixtureServer, html } from '../../helpers/fixtures.js';
import { serviceFor } from '../../helpers/service.js';

const APP = `<!doctype html><html><head><title>App</title></head><body>
<h1 id="h">Hello</h1>
<input id="name" value="">
<select id="sel"><option value="a">A</option><option value="b">B</option></select>
<button id="btn" onclick="document.getElementById('out').textContent='clicked'">Go</button>
<div id="out"></div>
<div id="hov" onmouseover="this.textContent='hovered'" style="width:200px;height:50px">hover me</div>
<a id="next" href="/next">next</a>
<ul><li>one</li><li>two</li><li>three</li></ul>
<iframe name="child" src="/frame"></iframe>
<div style="height:3000px" id="tall">tall</div>
<script>
  document.addEventListener('keydown', (e) => { document.body.dataset.key = e.key });
  document.addEventListener('click', (e) => { document.body.dataset.click = (document.body.dataset.click || '') + e.clientX + ',' + e.clientY + ';' });
  document.addEventListener('touchstart', () => { document.body.dataset.touched = 'yes' });
</script>
</body></html>`;

const fixtures = new FixtureServer({
  '/app': html(APP),
  '/next': html('<title>Next</title><p>next page</p>'),
  '/frame': html('<title>Frame</title><p id="fp">in frame</p>'),
  '/late': html(
    '<title>Late</title><script>setTimeout(() => { const d = document.createElement("div"); d.id = "late"; d.textContent = "arrived"; document.body.appendChild(d) }, 200)</script>',
  ),
  '/lang': (req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<title>${String(req.headers['accept-language'])}</title>`);
  },
  '/headers': (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'x-custom': 'yes' });
    res.end(
      JSON.stringify({
        ua: req.headers['user-agent'],
        extra: req.headers['x-extra'] ?? null,
        cookie: req.headers.cookie ?? null,
      }),
    );
  },
});
const svc = serviceFor(fixtures, { SCRIPT_TIMEOUT_MS: '10000' });

async function run(script: string, path = '/app'): Promise<unknown> {
  const r = await svc.post({ url: fixtures.url(path), script });
  assert.equal(r.status, 200, `${r.text}\n--- script:\n${script}`);
  return r.body.data;
}

describe('Page', () => {
  test('navigation: goto, reload, goBack, goForward, url, title, waitForNavigation', async () => {
    const d = await run(`
      const out = [];
      const r = await page.goto(targetUrl.replace('/app', '/next'), { waitUntil: 'domcontentloaded' });
      out.push(r.status(), page.url().endsWith('/next'), await page.title());
      await page.reload();
      out.push(await page.title());
      await page.goBack();
      out.push(await page.title());
      await page.goForward();
      out.push(await page.title());
      await page.goBack();
      const [nav] = await Promise.all([page.waitForNavigation(), page.click('#next')]);
      out.push(nav.url().endsWith('/next'));
      return out`);
    assert.deepEqual(d, [200, true, 'Next', 'Next', 'App', 'Next', true]);
  });

  test('content and setContent', async () => {
    const d = await run(`
      const before = (await page.content()).includes('<h1 id="h">Hello</h1>');
      await page.setContent('<title>Set</title><p class="x">set</p>');
      return [before, await page.title(), (await page.content()).includes('<p class="x">set</p>')]`);
    assert.deepEqual(d, [true, 'Set', true]);
  });

  test('queries: $, $$, $eval, $$eval, evaluate with arguments, evaluateHandle', async () => {
    const d = await run(`
      const h = await page.$('#h');
      const items = await page.$$('li');
      const text = await page.$eval('#h', (el, suffix) => el.textContent + suffix, '!');
      const all = await page.$$eval('li', (els) => els.map((e) => e.textContent));
      const sum = await page.evaluate((a, b) => a + b, 2, 3);
      const viaHandle = await page.evaluate((el) => el.id, h);
      const win = await page.evaluateHandle(() => ({ answer: 42 }));
      const missing = await page.$('#missing');
      return [items.length, text, all, sum, viaHandle, await win.jsonValue(), missing, await page.evaluate('1 + 1')]`);
    assert.deepEqual(d, [3, 'Hello!', ['one', 'two', 'three'], 5, 'h', { answer: 42 }, null, 2]);
  });

  test('waiting: waitForSelector, waitForFunction, waitForNetworkIdle, waitForRequest, waitForResponse', async () => {
    const d = await run(
      `
      const el = await page.waitForSelector('#late');
      const fn = await page.waitForFunction((id) => document.getElementById(id)?.textContent, { polling: 50 }, 'late');
      await page.waitForNetworkIdle({ idleTime: 100 });
      const [req, res] = await Promise.all([
        page.waitForRequest((r) => r.url().endsWith('/headers')),
        page.waitForResponse(targetUrl.replace('/late', '/headers')),
        page.evaluate(() => fetch('/headers').then((r) => r.text())),
      ]);
      return [await el.evaluate((e) => e.textContent), await fn.jsonValue(), req.method(), res.status()]`,
      '/late',
    );
    assert.deepEqual(d, ['arrived', 'arrived', 'GET', 200]);
  });

  test('input: click, type, focus, hover, select, tap, keyboard, mouse', async () => {
    const d = await run(`
      // hasTouch first: Puppeteer reloads the page when it changes.
      await page.setViewport({ width: 800, height: 600, hasTouch: true });
      await page.click('#btn');
      await page.type('#name', 'abc', { delay: 1 });
      await page.focus('#name');
      await page.keyboard.press('End');
      await page.keyboard.type('!');
      await page.keyboard.down('Shift');
      await page.keyboard.up('Shift');
      await page.keyboard.sendCharacter('?');
      await page.hover('#hov');
      const selected = await page.select('#sel', 'b');
      await page.mouse.move(5, 5);
      await page.mouse.click(10, 12);
      await page.mouse.down();
      await page.mouse.up();
      await page.mouse.wheel({ deltaY: 100 });
      await page.tap('#btn');
      await page.touchscreen.tap(5, 5);
      return [
        await page.$eval('#out', (e) => e.textContent),
        await page.$eval('#name', (e) => e.value),
        await page.$eval('#hov', (e) => e.textContent),
        selected,
        await page.evaluate(() => [document.body.dataset.key, document.body.dataset.click.includes(';10,12;'), document.body.dataset.touched]),
      ]`);
    assert.deepEqual(d, ['clicked', 'abc!?', 'hovered', ['b'], ['Shift', true, 'yes']]);
  });

  test('touchscreen.touchStart, touchMove and touchEnd reach the page as touch events; mouse.drag is refused', async () => {
    const d = await run(`
      await page.setViewport({ width: 800, height: 600, hasTouch: true });
      await page.evaluate(() => {
        window.seen = [];
        for (const t of ['touchstart', 'touchmove', 'touchend'])
          document.addEventListener(t, (e) => seen.push(t + ':' + Math.round((e.changedTouches[0] || {}).clientX)));
      });
      const started = await page.touchscreen.touchStart(10, 10);
      await page.touchscreen.touchMove(40, 10);
      await page.touchscreen.touchEnd();
      let drag;
      try { await page.mouse.drag({ x: 1, y: 1 }, { x: 2, y: 2 }); } catch (e) { drag = e.message; }
      // Chromium may deliver a touch event to the page after it acknowledged the command (seen under load:
      // touchend not yet there): wait for all three, then compare what arrived.
      await page.waitForFunction(() => seen.length >= 3, { timeout: 3000 }).catch(() => undefined);
      return [Object.prototype.toString.call(started), await page.evaluate(() => seen), drag];
    `);
    assert.deepEqual(d, [
      '[object TouchHandle]',
      ['touchstart:10', 'touchmove:40', 'touchend:40'],
      'mouse.drag() is not available in pagescript: drag data can name files on the server',
    ]);
  });

  test("setBypassServiceWorker is the request's page's own setting, read back by isServiceWorkerBypassed", async () => {
    const d = await run(`
      const before = page.isServiceWorkerBypassed();
      await page.setBypassServiceWorker(true);
      const on = page.isServiceWorkerBypassed();
      await page.reload();
      return [before, on, await page.title()];
    `);
    assert.deepEqual(d, [false, true, 'App']);
  });

  test('touches started from element handles count against the touch bound', async () => {
    const d = await run(`
      await page.setViewport({ width: 800, height: 600, hasTouch: true });
      const btn = await page.$('#btn');
      const touches = [];
      for (let i = 0; i < 9; i++) touches.push(await btn.touchStart());
      touches.push(await page.touchscreen.touchStart(5, 5));
      const refused = [];
      for (const start of [() => btn.touchStart(), () => page.touchscreen.touchStart(6, 6)])
        refused.push(await start().then(() => 'started', (e) => e.message));
      // A touch ended through its handle frees a place, on either route.
      await touches[0].move(20, 20);
      await touches[0].end();
      const again = await btn.touchStart();
      let notATouch;
      try { await btn.touchMove(btn); } catch (e) { notATouch = e.message; }
      let nothingElse;
      try { await again.start(); } catch (e) { nothingElse = e.message; }
      await btn.touchEnd();
      return [refused, Object.prototype.toString.call(again), notATouch, nothingElse];
    `);
    assert.deepEqual(d, [
      ['elementHandle.touchStart: at most 10 touches at once', 'touchscreen.touchStart: at most 10 touches at once'],
      '[object TouchHandle]',
      'elementHandle.touchMove: expected TouchHandle',
      'again.start is not a function',
    ]);
  });

  test('locators: click, fill, hover, scroll, wait, setTimeout, filter, map', async () => {
    const d = await run(`
      await page.locator('#btn').setTimeout(2000).click();
      await page.locator('#name').fill('filled');
      await page.locator('#hov').hover();
      await page.locator('#tall').scroll({ scrollTop: 10 });
      // A locator takes the first match; filter waits until the predicate holds for it.
      const second = await page.locator('#h').filter((el) => el.textContent === 'Hello').map((el) => el.textContent.toUpperCase()).wait();
      const handle = await page.locator('#h').waitHandle();
      return [await page.$eval('#out', (e) => e.textContent), await page.$eval('#name', (e) => e.value), second, await handle.evaluate((e) => e.tagName)]`);
    assert.deepEqual(d, ['clicked', 'filled', 'HELLO', 'H1']);
  });

  test('emulation: setViewport, viewport, setUserAgent, setExtraHTTPHeaders, emulateMediaType, setJavaScriptEnabled', async () => {
    const d = await run(`
      await page.setViewport({ width: 640, height: 480, deviceScaleFactor: 1 });
      await page.setUserAgent('pagescript-test/1.0');
      await page.setExtraHTTPHeaders({ 'x-extra': 'on' });
      await page.emulateMediaType('print');
      const print = await page.evaluate(() => matchMedia('print').matches);
      await page.setJavaScriptEnabled(false);
      const jsOff = !page.isJavaScriptEnabled();
      await page.setJavaScriptEnabled(true);
      const r = await page.goto(targetUrl.replace('/app', '/headers'));
      return [page.viewport().width, print, jsOff, await r.json()]`);
    assert.deepEqual(d, [640, true, true, { ua: 'pagescript-test/1.0', extra: 'on', cookie: null }]);
  });

  test('emulation: emulateMediaFeatures, emulateVisionDeficiency, emulateCPUThrottling, emulateIdleState, metrics', async () => {
    const d = await run(`
      await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'dark' }]);
      const dark = await page.evaluate(() => matchMedia('(prefers-color-scheme: dark)').matches);
      await page.emulateMediaFeatures();
      const light = await page.evaluate(() => matchMedia('(prefers-color-scheme: dark)').matches);
      await page.emulateVisionDeficiency('blurredVision');
      await page.emulateVisionDeficiency();
      await page.emulateCPUThrottling(4);
      await page.emulateCPUThrottling(null);
      const refused = [];
      for (const f of [101, 0.5]) await page.emulateCPUThrottling(f).catch((e) => refused.push(e.message));
      await page.emulateIdleState({ isUserActive: false, isScreenUnlocked: true });
      await page.emulateIdleState();
      const m = await page.metrics();
      return [dark, light, refused, typeof m.JSHeapUsedSize, m.Nodes > 0]`);
    assert.deepEqual(d, [
      true,
      false,
      [
        'page.emulateCPUThrottling: factor must be a number from -1000000000 to 100',
        'Throttling rate should be greater or equal to 1',
      ],
      'number',
      true,
    ]);
  });

  test('the page asks for en-US, en in Accept-Language and navigator.languages, on either Chromium', async () => {
    const r = await svc.post({
      url: fixtures.url('/lang'),
      script: 'return [await page.title(), await page.evaluate(() => navigator.languages.join(","))]',
    });
    assert.equal(r.status, 200, r.text);
    // The full browser adds ";q=0.9" to en; the shell sends the list as given.
    assert.match(String((r.body.data as string[])[0]), /^en-US,en(;q=0\.9)?$/);
    assert.equal((r.body.data as string[])[1], 'en-US,en');
  });

  test('cookies: setCookie, cookies, deleteCookie', async () => {
    const d = await run(`
      await page.setCookie({ name: 'a', value: '1' }, { name: 'b', value: '2', path: '/' });
      const names = (await page.cookies()).map((c) => c.name).sort();
      await page.deleteCookie({ name: 'a' });
      const r = await page.goto(targetUrl.replace('/app', '/headers'));
      return [names, (await page.cookies()).map((c) => c.name), (await r.json()).cookie]`);
    assert.deepEqual(d, [['a', 'b'], ['b'], 'b=2']);
  });

  test('request interception: continue, respond, abort, and request/response/requestfailed events', async () => {
    const d = await run(`
      const seen = { request: 0, response: 0, failed: [] };
      page.on('request', (r) => { seen.request++ });
      page.on('response', (r) => { seen.response++ });
      page.on('requestfailed', (r) => { seen.failed.push(r.failure()?.errorText) });
      await page.setRequestInterception(true);
      page.on('request', (r) => {
        if (r.url().endsWith('/next')) r.respond({ status: 200, contentType: 'text/html', body: '<title>Mocked</title>' });
        else if (r.url().endsWith('/blocked')) r.abort();
        else r.continue({ headers: { ...r.headers(), 'x-extra': 'intercepted' } });
      });
      await page.goto(targetUrl.replace('/app', '/next'));
      const mocked = await page.title();
      const headers = await (await page.goto(targetUrl.replace('/app', '/headers'))).json();
      await page.evaluate(() => fetch('/blocked').catch(() => null));
      await new Promise((r) => setTimeout(r, 100));
      return [mocked, headers.extra, seen.request >= 3, seen.response >= 2, seen.failed]`);
    assert.deepEqual(d, ['Mocked', 'intercepted', true, true, ['net::ERR_FAILED']]);
  });

  test('a request listener that throws: the intercepted request is aborted at once and the error is logged', async () => {
    const r = await svc.post({
      url: fixtures.url('/app'),
      script: `
        await page.setRequestInterception(true);
        page.on('request', (req) => {
          if (req.url().endsWith('/next')) throw new Error('listener broke');
          req.continue();
        });
        let failed;
        try { await page.goto(targetUrl.replace('/app', '/next'), { timeout: 8000 }); } catch (e) { failed = e.message; }
        return { failed };`,
    });
    assert.equal(r.status, 200, r.text);
    // A request left hanging would end in goto's TimeoutError instead.
    assert.deepEqual(r.body.data, { failed: `net::ERR_FAILED at ${fixtures.url('/next')}` });
    const logs = r.body.logs as string[];
    assert.ok(
      logs.some((l) => l.startsWith('Uncaught in request listener:') && l.includes('listener broke')),
      logs.join('\n'),
    );
  });

  test('events: console, dialog, load, domcontentloaded, once and off', async () => {
    const d = await run(`
      const seen = [];
      page.on('console', (m) => seen.push('console:' + m.type() + ':' + m.text()));
      page.on('dialog', async (dlg) => { seen.push('dialog:' + dlg.type() + ':' + dlg.message()); await dlg.accept('yes') });
      page.once('load', () => seen.push('load'));
      const dcl = () => seen.push('dcl');
      page.on('domcontentloaded', dcl);
      await page.evaluate(() => console.log('from page'));
      const answer = await page.evaluate(() => prompt('q?'));
      await page.reload();
      page.off('domcontentloaded', dcl);
      await page.reload();
      await new Promise((r) => setTimeout(r, 50));
      return [seen, answer]`);
    assert.deepEqual(d, [['console:log:from page', 'dialog:prompt:q?', 'dcl', 'load'], 'yes']);
  });

  test('a dialog without a listener is dismissed instead of blocking the page', async () => {
    assert.equal(await run('return await page.evaluate(() => confirm("sure?"))'), false);
  });

  test('frames: frames, mainFrame, child frame methods and element handles', async () => {
    const d = await run(`
      await page.waitForFunction(() => document.querySelector('iframe').contentDocument?.readyState === 'complete');
      const frames = page.frames();
      const main = page.mainFrame();
      const child = main.childFrames()[0];
      const el = await page.$('iframe');
      const viaElement = await el.contentFrame();
      return [frames.length, main.url().endsWith('/app'), child.name(), child.url().endsWith('/frame'), await child.title(),
        await child.$eval('#fp', (e) => e.textContent), viaElement === child, child.parentFrame() === main, child.page() === page]`);
    assert.deepEqual(d, [2, true, 'child', true, 'Frame', 'in frame', true, true, true]);
  });

  test('screenshot (bytes and base64) and pdf (bytes)', async () => {
    const d = await run(`
      const png = await page.screenshot();
      const b64 = await page.screenshot({ encoding: 'base64', type: 'jpeg', quality: 50 });
      const clip = await page.screenshot({ clip: { x: 0, y: 0, width: 10, height: 10 } });
      const pdf = await page.pdf({ format: 'A4' });
      const el = await (await page.$('#h')).screenshot();
      return [png instanceof Uint8Array, [...png.slice(1, 4)].map((c) => String.fromCharCode(c)).join(''), typeof b64, atob(b64).charCodeAt(0), clip.length > 0,
        pdf instanceof Uint8Array, new TextDecoder().decode(pdf.slice(0, 4)), el.length > 0]`);
    assert.deepEqual(d, [true, 'PNG', 'string', 0xff, true, true, '%PDF', true]);
  });

  test("createPDFStream: page.pdf's bytes read through getReader() and for await, in chunks", async () => {
    const d = await run(`
      const whole = await page.pdf({ format: 'A4' });
      const stream = await page.createPDFStream({ format: 'A4' });
      const reader = stream.getReader();
      let locked; try { stream.getReader(); } catch (e) { locked = e instanceof TypeError; }
      const chunks = [];
      for (;;) { const { done, value } = await reader.read(); if (done) break; chunks.push(value); }
      reader.releaseLock();
      let n = 0; for await (const c of await page.createPDFStream()) n += c.length;
      const bytes = chunks.reduce((a, c) => a + c.length, 0);
      return [locked, chunks.every((c) => c instanceof Uint8Array && c.length <= 65536), new TextDecoder().decode(chunks[0].slice(0, 4)),
        bytes > 0, n > 0, stream.locked, (await reader.read().catch((e) => e.constructor.name))]`);
    assert.deepEqual(d, [true, true, '%PDF', true, true, false, 'TypeError']);
  });

  test('evaluateOnNewDocument and exposeFunction (which runs in the isolate)', async () => {
    const d = await run(`
      await page.evaluateOnNewDocument((v) => { window.injected = v }, 'early');
      let calls = 0;
      await page.exposeFunction('hostAdd', (a, b) => { calls++; return a + b });
      await page.reload();
      const injected = await page.evaluate(() => window.injected);
      const sum = await page.evaluate(() => window.hostAdd(20, 22));
      return [injected, sum, calls, typeof process]`);
    assert.deepEqual(d, ['early', 42, 1, 'undefined']);
  });
});

describe('ElementHandle and JSHandle', () => {
  test('element methods', async () => {
    const d = await run(`
      const h = await page.$('#h');
      const box = await h.boundingBox();
      const model = await h.boxModel();
      const prop = await h.getProperty('id');
      const props = await (await page.evaluateHandle(() => ({ x: 1, y: 2 }))).getProperties();
      const inUl = await (await page.$('ul')).$$('li');
      const first = await (await page.$('ul')).$eval('li', (e) => e.textContent);
      const btn = await page.$('#btn');
      await btn.click();
      const input = await page.$('#name');
      await input.type('zz');
      await input.press('Backspace');
      await input.focus();
      await (await page.$('#hov')).hover();
      await (await page.$('#tall')).scrollIntoView();
      const sel = await page.$('#sel');
      await sel.select('b');
      return [box.width > 0, Array.isArray(model.content), await prop.jsonValue(), [...props.keys()].sort(), inUl.length, first,
        await h.isVisible(), await h.isHidden(), typeof (await h.isIntersectingViewport()), h.asElement() === h,
        await page.$eval('#name', (e) => e.value), await page.$eval('#out', (e) => e.textContent), await sel.evaluate((e) => e.value)]`);
    assert.deepEqual(d, [true, true, 'h', ['x', 'y'], 3, 'one', true, false, 'boolean', true, 'z', 'clicked', 'b']);
  });

  test('dispose, and a disposed handle is refused', async () => {
    const d = await run(`
      const h = await page.$('#h');
      await h.dispose();
      try { await h.evaluate((e) => e.id); return 'used' } catch (e) { return e.message.length > 0 }`);
    assert.equal(d, true);
  });
});

describe('HTTPResponse and HTTPRequest', () => {
  test('request.initiator, request.fetchPostData, request.interceptResolutionState, response.timing', async () => {
    const d = await run(`
      await page.setRequestInterception(true);
      const seen = {};
      page.on('request', async (r) => {
        if (r.method() === 'POST') { seen.post = await r.fetchPostData(); seen.initiator = r.initiator().type; }
        seen.state = r.interceptResolutionState().action;
        r.continue();
      });
      const res = await page.goto(targetUrl.replace('/app', '/next'));
      await page.evaluate(() => fetch('/headers', { method: 'POST', body: 'hello' }).then((x) => x.text()));
      const t = res.timing();
      return [seen.post, seen.initiator, seen.state, typeof t.requestTime, t.receiveHeadersEnd >= 0]`);
    assert.deepEqual(d, ['hello', 'script', 'none', 'number', true]);
  });

  test('response methods: url, status, statusText, ok, headers, text, json, buffer, request', async () => {
    const d = await run(`
      const r = await page.goto(targetUrl.replace('/app', '/headers'));
      const req = r.request();
      return [r.url().endsWith('/headers'), r.status(), r.statusText(), r.ok(), r.headers()['x-custom'], typeof (await r.text()), typeof (await r.json()),
        (await r.buffer()) instanceof Uint8Array, req.url() === r.url(), req.method(), req.resourceType(), req.isNavigationRequest(), req.postData(), typeof req.headers()]`);
    assert.deepEqual(d, [
      true,
      200,
      'OK',
      true,
      'yes',
      'string',
      'object',
      true,
      true,
      'GET',
      'document',
      true,
      null,
      'object',
    ]);
  });
});

test('script globals: URL, URLSearchParams and structuredClone load on first use; atob, btoa; a script may replace them first', async () => {
  const r = await svc.post({
    url: fixtures.url('/next'),
    script: `
      const u = new URL('/a?b=1#c', 'https://example.com/x');
      const q = new URLSearchParams('a=1&a=2&b=%20');
      const clone = structuredClone({ d: new Date(0), m: new Map([[1, 2]]) });
      const before = typeof structuredClone;
      URLSearchParams = 'mine';
      return [u.href, u.searchParams.get('b'), q.getAll('a'), q.get('b'), clone.d instanceof Date, clone.m.get(1), before,
        URLSearchParams, atob(btoa('h\u00e9llo')), btoa('abc')];`,
  });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.body.data, [
    'https://example.com/a?b=1#c',
    '1',
    ['1', '2'],
    ' ',
    true,
    2,
    'function',
    'mine',
    'h\u00e9llo',
    'YWJj',
  ]);
});

test('every method of the issue list exists on the page proxy', async () => {
  const names = [
    'goto',
    'reload',
    'goBack',
    'goForward',
    'url',
    'title',
    'content',
    'setContent',
    'waitForSelector',
    'waitForFunction',
    'waitForNavigation',
    'waitForNetworkIdle',
    'waitForRequest',
    'waitForResponse',
    'evaluate',
    'evaluateHandle',
    '$',
    '$$',
    '$eval',
    '$$eval',
    'click',
    'type',
    'focus',
    'hover',
    'select',
    'tap',
    'locator',
    'setViewport',
    'viewport',
    'setUserAgent',
    'setExtraHTTPHeaders',
    'setCookie',
    'cookies',
    'deleteCookie',
    'setJavaScriptEnabled',
    'emulateMediaType',
    'setRequestInterception',
    'on',
    'once',
    'off',
    'frames',
    'mainFrame',
    'screenshot',
    'pdf',
    'evaluateOnNewDocument',
    'exposeFunction',
  ];
  const d = await run(`return ${JSON.stringify(names)}.filter((n) => typeof page[n] !== 'function')
    .concat(['down', 'up', 'press', 'type'].filter((n) => typeof page.keyboard[n] !== 'function'))
    .concat(['move', 'click', 'down', 'up', 'wheel'].filter((n) => typeof page.mouse[n] !== 'function'))`);
  assert.deepEqual(d, []);
});
