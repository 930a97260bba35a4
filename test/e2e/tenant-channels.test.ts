// Browser-global channels between tenants: every request shares one Chromium,
// so anything Chromium keeps per browser (not per incognito context) could carry
// a token from one tenant's request to another's. Each test runs two requests
// with two different keys: A holds a token, B tries to read it by one route.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { BrowserHost } from '../../src/browser/browser-host.js';
import { EgressSession } from '../../src/egress/session.js';
import { silentLogger } from '../../src/log.js';
import { FixtureServer, html } from '../helpers/fixtures.js';
import { TEST_KEY, startTestService, type Reply, type TestService } from '../helpers/service.js';
import { until } from '../helpers/wait.js';

const KEY_A = TEST_KEY;
const KEY_B = 'tenant-b-key-0123456789abcdef';
const TOKEN = 'TENANT-A-TOKEN-5d1e';

const authSeen: string[] = [];
/** What A's page reported after copying (?ok=true when the copy was made). */
const copies: string[] = [];
const fixtures = new FixtureServer({
  '/editor': html(
    '<title>editor</title><textarea id="t" style="width:400px;height:100px"></textarea><button id="b">b</button><input id="i" value="x">',
  ),
  '/copied': (req, res) => {
    copies.push(String(req.url));
    res.end('ok');
  },
  '/auth': (req, res) => {
    authSeen.push(String(req.headers.authorization ?? ''));
    if (!req.headers.authorization) {
      res.writeHead(401, { 'www-authenticate': 'Basic realm="tenants"', 'content-type': 'text/html' }).end('no');
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html' }).end('<title>in</title>');
  },
  '/cached.css': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/css', 'cache-control': 'public, max-age=3600' }).end('p{color:red}');
  },
  '/styled': html('<title>styled</title><link rel="stylesheet" href="/cached.css"><p>x</p>'),
  '/download': (_req, res) => {
    res
      .writeHead(200, {
        'content-type': 'application/octet-stream',
        'content-disposition': 'attachment; filename=t.txt',
      })
      .end(TOKEN);
  },
});

let svc: TestService;
before(async () => {
  await fixtures.start();
  svc = await startTestService({
    API_KEYS: `${KEY_A},${KEY_B}`,
    EGRESS_ALLOWLIST: fixtures.allowEntry,
    MAX_CONCURRENCY: '4',
    SCRIPT_TIMEOUT_MS: '15000',
  });
});
after(async () => {
  await svc.close();
  await fixtures.close();
});

const asA = (body: unknown): Promise<Reply> => svc.post(body, { 'x-gateway-key': KEY_A });
const asB = (body: unknown): Promise<Reply> => svc.post(body, { 'x-gateway-key': KEY_B });

/**
 * Request A: its page copies TOKEN to the clipboard (a click gives it the user
 * activation a copy needs), tells the fixture, and goes on copying it every
 * 100 ms for holdMs while B tries (another request's end empties the clipboard).
 */
async function copyTokenAndHold(holdMs: number): Promise<Reply> {
  const before = fixtures.hits.get('/copied') ?? 0;
  const a = asA({
    url: fixtures.url('/editor'),
    script: `await page.evaluate(() => {
        document.getElementById('b').onclick = () => {
          const t = document.getElementById('t');
          t.value = ${JSON.stringify(TOKEN)};
          t.focus();
          t.select();
          window.__copied = document.execCommand('copy');
          t.value = '';
        };
      });
      await page.click('#b');
      await page.evaluate(() => fetch('/copied?ok=' + window.__copied));
      const end = Date.now() + ${holdMs};
      while (Date.now() < end) {
        await page.click('#b');
        await new Promise((r) => setTimeout(r, 100));
      }
      return 'held'`,
  });
  await until(() => (fixtures.hits.get('/copied') ?? 0) > before, 'A to copy', { timeoutMs: 20_000 });
  assert.equal(copies.at(-1), '/copied?ok=true', 'A copied');
  return a;
}

/**
 * One route of B's, tried up to 20 times while A copies (another request's end
 * may have just emptied the clipboard): what the textarea held, or the error
 * that refused the route.
 */
async function tryPasteAsB(route: string): Promise<string> {
  const r = await asB({
    url: fixtures.url('/editor'),
    script: `let got = '';
      for (let i = 0; i < 20 && !got.includes(${JSON.stringify(TOKEN)}); i++) {
        await page.$eval('#t', (t) => { t.value = '' });
        await page.focus('#t');
        try { ${route} } catch (e) { return 'refused: ' + e.message }
        for (const k of ['Control', 'ControlLeft', 'Shift', 'Meta']) await page.keyboard.up(k);
        got = await page.$eval('#t', (t) => t.value);
        await new Promise((r) => setTimeout(r, 100));
      }
      return got`,
  });
  assert.equal(r.status, 200, r.text);
  return String(r.body.data);
}

describe('the clipboard', () => {
  test("Chromium's clipboard is emptied when a request ends", async () => {
    // The service's Chromium is in an executor process; this drives a BrowserHost launched the same way, here,
    // outside the membrane: context A copies the token, a probe context pastes what the clipboard holds,
    // again and again in one context (closing a context empties the clipboard) until it reads what it waits for.
    const host = new BrowserHost({
      executablePath: svc.service.config.executablePath,
      chromium: svc.service.config.chromium,
      guardPort: 9,
      // Pages are set with setContent: the contexts need no network (a closed port, as when the guard is down).
      openEgress: () => Promise.resolve(new EgressSession(undefined, 9, () => undefined)),
      protocolTimeoutMs: 30_000,
      prewarmedContexts: 0,
      recycleAfterContexts: 0,
      logger: silentLogger(),
    });
    try {
      const a = await host.lease('clipboard-a');
      let aClosed = false;
      const probe = await host.lease('clipboard-probe');
      try {
        await a.page.setContent('<p>a</p>');
        // Puppeteer's evaluate carries a user gesture, which execCommand('copy') needs.
        const copied = await a.page.evaluate(`(() => {
          const put = (e) => { e.clipboardData.setData('text/plain', ${JSON.stringify(TOKEN)}); e.preventDefault(); };
          document.addEventListener('copy', put, true);
          try { return document.execCommand('copy'); } finally { document.removeEventListener('copy', put, true); }
        })()`);
        assert.equal(copied, true, 'A copied');
        await probe.page.setContent('<textarea id="t"></textarea>');
        const paste = async (): Promise<string> => {
          await probe.page.$eval('#t', (t) => ((t as unknown as { value: string }).value = ''));
          await probe.page.focus('#t');
          await probe.page.keyboard.press('KeyV', { commands: ['Paste'] });
          return await probe.page.$eval('#t', (t) => (t as unknown as { value: string }).value);
        };
        // Control: while A's context is open, the probe does read the token (so an empty read below means emptied).
        await until(async () => (await paste()) === TOKEN, 'the probe to read the token', {
          timeoutMs: 15_000,
          everyMs: 100,
        });
        // The emptying runs once A's context is closed.
        await a.close();
        aClosed = true;
        await until(async () => (await paste()) === '', 'the clipboard to be emptied', {
          timeoutMs: 15_000,
          everyMs: 100,
        });
      } finally {
        if (!aClosed) await a.close();
        await probe.close();
      }
    } finally {
      await host.close();
    }
  });

  const routes: Record<string, string> = {
    'keyboard.press with commands: ["paste"]': `await page.keyboard.press('KeyV', { commands: ['paste'] })`,
    'keyboard.press with commands: ["PASTE"] (names are case-insensitive)': `await page.keyboard.press('KeyV', { commands: ['PASTE'] })`,
    'keyboard.press with commands: ["PasteAndMatchStyle"]': `await page.keyboard.press('KeyV', { commands: ['PasteAndMatchStyle'] })`,
    'elementHandle.press with commands: ["Paste"]': `const t = await page.$('#t'); await t.press('KeyV', { commands: ['Paste'] })`,
    'Ctrl+V with keyboard.down/press': `await page.keyboard.down('Control'); await page.keyboard.press('KeyV')`,
    'Ctrl+V with keyboard.down/down': `await page.keyboard.down('ControlLeft'); await page.keyboard.down('v')`,
    'Ctrl+Shift+V': `await page.keyboard.down('Control'); await page.keyboard.down('Shift'); await page.keyboard.press('KeyV')`,
    'Shift+Insert': `await page.keyboard.down('Shift'); await page.keyboard.press('Insert')`,
    'Ctrl held while typing "v"': `await page.keyboard.down('Control'); await page.keyboard.type('v')`,
    'Ctrl held while elementHandle.type("v")': `await page.keyboard.down('Control'); const t = await page.$('#t'); await t.type('V')`,
    'Ctrl held while page.type': `await page.keyboard.down('Control'); await page.type('#t', 'v')`,
    'a middle click (the selection clipboard)': `await page.click('#t', { button: 'middle' })`,
    'a middle mouse.click': `const b = await (await page.$('#t')).boundingBox(); await page.mouse.click(b.x + 5, b.y + 5, { button: 'middle' })`,
    'Ctrl held while locator.fill("v") types': `await page.keyboard.down('Control'); await page.locator('#t').fill('v')`,
    'Ctrl pressed while elementHandle.press("KeyV") focuses its element': `const t = await page.$('#t'); await Promise.all([t.press('KeyV'), page.keyboard.down('Control')])`,
    'Ctrl pressed while page.type is typing "v"s': `await Promise.all([page.type('#t', 'vvvvv', { delay: 50 }), page.keyboard.down('Control')])`,
    'Ctrl pressed while locator.fill is typing': `await Promise.all([page.locator('#t').fill('vvvvv'), page.keyboard.down('Control')])`,
    "the page's document.execCommand('paste')": `await page.evaluate(() => { document.getElementById('t').focus(); document.execCommand('paste') })`,
    "the page's navigator.clipboard.readText()": `await page.evaluate(async () => { document.getElementById('t').value = await navigator.clipboard.readText().catch((e) => 'denied') })`,
  };
  for (const [name, route] of Object.entries(routes)) {
    test(`${name} does not read another request's clipboard`, async () => {
      const a = copyTokenAndHold(4000);
      try {
        const got = await tryPasteAsB(route);
        assert.ok(!got.includes(TOKEN), `B read A's token by ${name}: ${got}`);
      } finally {
        assert.equal((await a).status, 200);
      }
    });
  }

  test('Shift with the key "\\u0000" (Delete\'s key code, so Shift+Delete: Cut into the shared clipboard) is refused', async () => {
    const r = await asB({
      url: fixtures.url('/editor'),
      script: `await page.type('#t', 'abc');
        await page.keyboard.press('KeyA', { commands: ['SelectAll'] });
        await page.keyboard.down('Shift');
        const got = await page.keyboard.press('\\u0000').then(() => 'pressed', (e) => e.message);
        await page.keyboard.up('Shift');
        return [got, await page.$eval('#t', (t) => t.value)]`,
    });
    assert.equal(r.status, 200, r.text);
    const [got, value] = r.body.data as [string, string];
    assert.match(got, /clipboard shortcuts are not available/);
    assert.equal(value, 'abc', 'nothing was cut');
  });

  test('commands that cannot touch the clipboard still work (SelectAll, DeleteBackward), in any case', async () => {
    const r = await asB({
      url: fixtures.url('/editor'),
      script: `await page.type('#t', 'abc');
        await page.keyboard.press('KeyA', { commands: ['selectall'] });
        await page.keyboard.press('Backspace', { commands: ['DeleteBackward'] });
        const cleared = await page.$eval('#t', (t) => t.value);
        await page.keyboard.down('Control'); await page.keyboard.press('KeyA'); await page.keyboard.up('Control');
        await page.keyboard.type('V typed after Ctrl was released');
        return [cleared, await page.$eval('#t', (t) => t.value)]`,
    });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.data, ['', 'V typed after Ctrl was released']);
  });
});

describe('other state Chromium keeps', () => {
  test("the HTTP authentication cache: B's request carries no credentials A gave", async () => {
    authSeen.length = 0;
    const a = await asA({
      url: fixtures.url('/editor'),
      script: `await page.authenticate({ username: 'user', password: ${JSON.stringify(TOKEN)} });
        await page.goto(${JSON.stringify(fixtures.url('/auth'))});
        return await page.title()`,
    });
    assert.equal(a.status, 200, a.text);
    assert.equal(a.body.data, 'in');
    assert.ok(
      authSeen.some((h) => h.startsWith('Basic ')),
      'A did authenticate',
    );
    authSeen.length = 0;
    // B has no credentials: Chromium gives up at the challenge (ERR_INVALID_AUTH_CREDENTIALS).
    const b = await asB({
      url: fixtures.url('/editor'),
      script: `return await page.goto(${JSON.stringify(fixtures.url('/auth'))}).then((r) => r.status(), (e) => e.message)`,
    });
    assert.equal(b.status, 200, b.text);
    assert.ok(authSeen.length > 0, 'B reached the protected page');
    assert.deepEqual(
      authSeen.filter((h) => h !== ''),
      [],
      'B sent no Authorization header',
    );
  });

  test('the HTTP cache: a resource A cached is fetched again for B (no timing channel through it)', async () => {
    const before = fixtures.hits.get('/cached.css') ?? 0;
    assert.equal((await asA({ url: fixtures.url('/styled') })).status, 200);
    assert.equal((await asB({ url: fixtures.url('/styled') })).status, 200);
    assert.equal((fixtures.hits.get('/cached.css') ?? 0) - before, 2);
  });

  test("permissions: what A's page asked for does not change what B's page is told", async () => {
    const names = ['geolocation', 'notifications', 'camera', 'microphone', 'clipboard-read', 'midi'];
    const query = `const out = {};
      for (const name of ${JSON.stringify(names)}) {
        out[name] = await navigator.permissions.query({ name }).then((s) => s.state, (e) => 'error');
      }
      return out`;
    const a = await asA({
      url: fixtures.url('/editor'),
      script: `await page.click('#b');
        await page.evaluate(async () => {
          await Notification.requestPermission().catch(() => undefined);
          await new Promise((r) => navigator.geolocation.getCurrentPosition(r, r, { timeout: 500 }));
          await navigator.mediaDevices?.getUserMedia({ audio: true }).catch(() => undefined);
        });
        return await page.evaluate(async () => { ${query} })`,
    });
    assert.equal(a.status, 200, a.text);
    const b = await asB({
      url: fixtures.url('/editor'),
      script: `return await page.evaluate(async () => { ${query} })`,
    });
    assert.equal(b.status, 200, b.text);
    const fresh = await asB({
      url: fixtures.url('/styled'),
      script: `return await page.evaluate(async () => { ${query} })`,
    });
    assert.deepEqual(b.body.data, fresh.body.data, 'B sees what a page nobody asked from sees');
    for (const v of Object.values(b.body.data as Record<string, string>)) assert.notEqual(v, 'granted');
  });

  test("media devices: B's page sees no identifier that A's page saw", async () => {
    const list = `return await page.evaluate(async () => (await navigator.mediaDevices.enumerateDevices()).flatMap((d) => [d.deviceId, d.groupId]).filter(Boolean))`;
    const a = await asA({ url: fixtures.url('/editor'), script: list });
    const b = await asB({ url: fixtures.url('/editor'), script: list });
    assert.equal(a.status, 200, a.text);
    assert.equal(b.status, 200, b.text);
    const seenByA = new Set(a.body.data as string[]);
    for (const id of b.body.data as string[]) assert.ok(!seenByA.has(id), `shared id ${id}`);
  });

  test('focus and visibility: B bringing its page to the front or focusing it is not seen by A', async () => {
    const before = fixtures.hits.get('/copied') ?? 0;
    const a = asA({
      url: fixtures.url('/editor'),
      script: `await page.evaluate(() => {
          window.__events = [];
          for (const e of ['blur', 'focus', 'visibilitychange', 'pagehide', 'freeze']) {
            window.addEventListener(e, () => window.__events.push(e + ':' + document.visibilityState + ':' + document.hasFocus()), true);
            document.addEventListener(e, () => window.__events.push(e + ':' + document.visibilityState + ':' + document.hasFocus()), true);
          }
          window.__start = [document.visibilityState, document.hasFocus()];
        });
        await page.evaluate(() => fetch('/copied'));
        await new Promise((r) => setTimeout(r, 3000));
        return await page.evaluate(() => [window.__start, window.__events, document.visibilityState, document.hasFocus()])`,
    });
    await until(() => (fixtures.hits.get('/copied') ?? 0) > before, 'A to listen', { timeoutMs: 20_000 });
    const b = await asB({
      url: fixtures.url('/editor'),
      script: `await page.bringToFront();
        await page.focus('#t');
        await page.evaluate(() => { window.focus(); document.getElementById('t').focus() });
        await page.click('#i');
        return await page.evaluate(() => [document.visibilityState, document.hasFocus()])`,
    });
    assert.equal(b.status, 200, b.text);
    const ra = await a;
    assert.equal(ra.status, 200, ra.text);
    const [start, events, visibility, focused] = ra.body.data as [[string, boolean], string[], string, boolean];
    assert.deepEqual(events, [], 'A saw no focus or visibility event');
    assert.deepEqual([visibility, focused], start);
    assert.deepEqual([visibility, focused], ['visible', true], 'every page is visible and focused');
  });

  test("downloads: A's download is refused and leaves no file B could find", async () => {
    const dirs = [join(homedir(), 'Downloads'), process.cwd(), tmpdir()];
    const a = await asA({
      url: fixtures.url('/editor'),
      script: `await page.evaluate(() => { const l = document.createElement('a'); l.href = '/download'; l.download = 't.txt'; document.body.append(l); l.click() });
        await new Promise((r) => setTimeout(r, 1000));
        return 1`,
    });
    assert.equal(a.status, 200, a.text);
    const found: string[] = [];
    const started = Date.now() - 60_000;
    for (const dir of dirs) {
      let names: string[] = [];
      try {
        names = readdirSync(dir);
      } catch {
        continue;
      }
      for (const n of names) {
        const p = join(dir, n);
        try {
          const st = statSync(p);
          if (st.isFile() && st.size < 4096 && st.mtimeMs > started && readFileSync(p, 'latin1').includes(TOKEN))
            found.push(p);
        } catch {
          // gone meanwhile
        }
      }
    }
    assert.deepEqual(found, []);
  });

  test("print: A's window.print() neither blocks nor shows up in B's request", async () => {
    const a = await asA({
      url: fixtures.url('/editor'),
      script: `await page.evaluate(() => { document.title = ${JSON.stringify(TOKEN)}; window.print(); }); return 'printed'`,
    });
    assert.equal(a.status, 200, a.text);
    const b = await asB({
      url: fixtures.url('/editor'),
      script: 'return [await page.title(), (await page.pdf()).length > 0]',
    });
    assert.equal(b.status, 200, b.text);
    assert.deepEqual(b.body.data, ['editor', true]);
  });
});
