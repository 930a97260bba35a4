// Browser-global channels between tenants: every request shares one Chromium,
// so anything Chromium keeps per browser (not per incognito context) could carry
// a token from one tenant's request to another's. Each test runs two requests
// with two different keys: A holds a token, B tries to read it by one route.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { BrowserHost } from '../../../src/slot/browser/browser-host.js';
import type { PageLease } from '../../../src/slot/browser/lease.js';
import { emptyClipboard, type EmptyClipboard } from '../../../src/slot/browser/clipboard.js';
import { EgressSession } from '../../../src/egress/session.js';
import { silentLogger } from '../../../src/common/log.js';
import { ApiError } from '../../../src/common/errors.js';
import { FixtureServer, html } from '../../helpers/fixtures.js';
import { TEST_KEY, startTestService, type Reply, type TestService } from '../../helpers/service.js';
import { until } from '../../helpers/wait.js';

const KEY_A = TEST_KEY;
const KEY_B = 'tenant-b-key-0123456789abcdef';
const TOKEN = 'TENANT-A-TOKEN-5d1e';

/** A web font whose glyphs are wider than the default serif's ("iiii" tells them apart). */
const FONT_FILE = '/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf';
const FONT = existsSync(FONT_FILE) ? readFileSync(FONT_FILE) : undefined;

/** The Referer of each request for /font.ttf: which page fetched it. */
const fontReferers: string[] = [];
const authSeen: string[] = [];
/** blob: URLs A's page made, for B's page to try. */
const blobUrls: string[] = [];
/** Available-Dictionary of each request to /compressed/a and /compressed/b (undefined: none offered). */
const dictionariesOffered: Array<[string, string | string[] | undefined]> = [];
/** What A's page reported after copying (?ok=true when the copy was made). */
const copies: string[] = [];
/** The longest a request holds something for the other to try (holdUntilReleased); the script deadline is longer. */
const HOLD_CAP_MS = 25_000;
/** The holds (by id) the test has let go: A's page asks /released?<id> and ends its hold at "yes". */
const released = new Set<string>();
const fixtures = new FixtureServer({
  '/released': (req, res) => {
    res.end(released.has(new URL(String(req.url), 'http://x').search.slice(1)) ? 'yes' : 'no');
  },
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
  '/dictionary.txt': (_req, res) => {
    res
      .writeHead(200, {
        'content-type': 'text/plain',
        'cache-control': 'max-age=3600',
        'use-as-dictionary': 'match="/compressed/*"',
      })
      .end(`${TOKEN} `.repeat(64));
  },
  '/compressed/a': (req, res) => {
    dictionariesOffered.push(['a', req.headers['available-dictionary']]);
    res.end(String(req.headers['available-dictionary'] !== undefined));
  },
  '/compressed/b': (req, res) => {
    dictionariesOffered.push(['b', req.headers['available-dictionary']]);
    res.end(String(req.headers['available-dictionary'] !== undefined));
  },
  '/font.ttf': (req, res) => {
    fontReferers.push(String(req.headers.referer));
    res.writeHead(200, { 'content-type': 'font/ttf', 'cache-control': 'public, max-age=3600' }).end(FONT);
  },
  '/fonts-a': html(
    `<title>fonts</title><style>@font-face { font-family: TenantAFont; src: url(/font.ttf) }</style><p style="font-family: TenantAFont">${TOKEN}</p>`,
  ),
  '/fonts-b': html(
    '<title>fonts</title><style>@font-face { font-family: TenantBFont; src: url(/font.ttf) }</style><p style="font-family: TenantBFont">b</p>',
  ),
  '/shared-worker.js': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/javascript' });
    res.end(
      "let held = ''; onconnect = (e) => { const p = e.ports[0]; p.onmessage = (m) => { if (m.data.set) held = m.data.set; p.postMessage(held); }; };",
    );
  },
  '/sw.js': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/javascript' }).end("self.addEventListener('fetch', () => {});");
  },
  '/blob-url': (req, res) => {
    const u = new URL(String(req.url), 'http://x').searchParams.get('u');
    if (u) blobUrls.push(u);
    res.end(blobUrls.at(-1) ?? '');
  },
  '/pip': (_req, res) => {
    // A frame of another site (localhost: its own renderer), a srcdoc frame, a sandboxed one and a data: URL.
    res.writeHead(200, { 'content-type': 'text/html' }).end(
      `<title>pip</title><iframe src="http://localhost:${fixtures.port}/pip-frame?other-site"></iframe>
      <iframe srcdoc="<p>srcdoc</p>"></iframe>
      <iframe sandbox="allow-scripts" src="/pip-frame?sandboxed"></iframe>
      <iframe src="data:text/html,<p>data</p>"></iframe>`,
    );
  },
  '/pip-frame': html('<title>pip frame</title><p>frame</p>'),
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
    SCRIPT_TIMEOUT_MS: String(HOLD_CAP_MS + 5000),
  });
});
after(async () => {
  await svc.close();
  await fixtures.close();
});

const asA = (body: unknown): Promise<Reply> => svc.post(body, { 'x-gateway-key': KEY_A });
const asB = (body: unknown): Promise<Reply> => svc.post(body, { 'x-gateway-key': KEY_B });

/**
 * In-page code that holds a request until the test lets `id` go (adds it to
 * released), or HOLD_CAP_MS pass: what it held is held through all that the
 * test did meanwhile, and no longer than that.
 */
const holdUntilReleased = (id: string): string => `for (const end = Date.now() + ${HOLD_CAP_MS}; Date.now() < end; ) {
    if ((await page.evaluate(() => fetch('/released?${id}').then((r) => r.text()))) === 'yes') break;
    await new Promise((r) => setTimeout(r, 50));
  }`;
const holdId = (): string => Math.random().toString(36).slice(2);

/**
 * Request A: its page copies TOKEN to the clipboard (a click gives it the user
 * activation a copy needs), tells the fixture, and goes on copying it every
 * 100 ms while B tries (another request's end empties the clipboard), until
 * the test lets it go (release) or HOLD_CAP_MS pass. A's data says which: "released"
 * means it held for all of B's tries.
 */
async function copyTokenAndHold(): Promise<{ reply: Promise<Reply>; release: () => void }> {
  const before = fixtures.hits.get('/copied') ?? 0;
  const id = holdId();
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
      const end = Date.now() + ${HOLD_CAP_MS};
      while (Date.now() < end) {
        if ((await page.evaluate(() => fetch('/released?${id}').then((r) => r.text()))) === 'yes') return 'released';
        await page.click('#b');
        await new Promise((r) => setTimeout(r, 100));
      }
      return 'not released'`,
  });
  await until(() => (fixtures.hits.get('/copied') ?? 0) > before, 'A to copy', { timeoutMs: 20_000 });
  assert.equal(copies.at(-1), '/copied?ok=true', 'A copied');
  return { reply: a, release: () => released.add(id) };
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

/** Run in a page: copies TOKEN (Puppeteer's evaluate carries a user gesture, which execCommand('copy') needs). */
const COPY_TOKEN = `(() => {
  const put = (e) => { e.clipboardData.setData('text/plain', ${JSON.stringify(TOKEN)}); e.preventDefault(); };
  document.addEventListener('copy', put, true);
  try { return document.execCommand('copy'); } finally { document.removeEventListener('copy', put, true); }
})()`;

/** What a paste into the page's empty textarea #t gives: what the clipboard holds. */
async function pasteInto(page: PageLease['page']): Promise<string> {
  await page.$eval('#t', (t) => ((t as unknown as { value: string }).value = ''));
  await page.focus('#t');
  await page.keyboard.press('KeyV', { commands: ['Paste'] });
  return await page.$eval('#t', (t) => (t as unknown as { value: string }).value);
}

/**
 * A BrowserHost launched as a slot process's is, here, outside the membrane. Pages are set with setContent: the
 * contexts need no network (a closed port, as when the guard is down).
 */
function offlineHost(prewarmedContexts: number, emptyClipboard?: EmptyClipboard): BrowserHost {
  return new BrowserHost({
    executablePath: svc.service.config.executablePath,
    chromium: svc.service.config.chromium,
    guardPort: 9,
    openEgress: () => Promise.resolve(new EgressSession(undefined, 9, () => undefined)),
    protocolTimeoutMs: 30_000,
    prewarmedContexts,
    recycleAfterContexts: 0,
    ...(emptyClipboard ? { emptyClipboard } : {}),
    logger: silentLogger(),
  });
}

/** A's page copies TOKEN; a probe context open beside it reads it (the control: an empty read later means emptied). */
async function copyBesideProbe(a: PageLease, probe: PageLease): Promise<void> {
  await a.page.setContent('<p>a</p>');
  await probe.page.setContent('<textarea id="t"></textarea>');
  await until(
    async () => (await a.page.evaluate(COPY_TOKEN)) === true && (await pasteInto(probe.page)) === TOKEN,
    'the probe to read the token A copied',
    {
      timeoutMs: 15_000,
      everyMs: 100,
    },
  );
}

describe('the clipboard', () => {
  for (const prewarmed of [0, 2])
    test(`a request's page is given with Chromium's clipboard emptied (${prewarmed} contexts made ahead), at once`, async () => {
      // The service's Chromium is in a slot process; this drives a BrowserHost launched the same way, here,
      // outside the membrane. Attack: B, leased right after A ended (from a context made ahead when there is
      // one), pastes at once on the blank page it was given: the soonest a page could read.
      const host = offlineHost(prewarmed);
      try {
        const a = await host.lease(`clipboard-a-${prewarmed}`);
        const probe = await host.lease(`clipboard-probe-${prewarmed}`);
        try {
          await copyBesideProbe(a, probe);
          await a.close();
          const b = await host.lease(`clipboard-b-${prewarmed}`);
          try {
            await b.page.evaluate(`document.body.contentEditable = 'true'; document.body.focus()`);
            await b.page.keyboard.press('KeyV', { commands: ['Paste'] });
            assert.equal(await b.page.evaluate('document.body.innerText'), '', "B read A's clipboard");
            // The probe, open all along, reads it emptied too: emptied, not only hidden from B.
            assert.equal(await pasteInto(probe.page), '', 'the clipboard still holds the token');
            // Control: B's paste does read what is there (its own copy).
            await b.page.evaluate(
              `document.addEventListener('copy', (e) => { e.clipboardData.setData('text/plain', 'B-OWN'); e.preventDefault() }, true); document.execCommand('copy')`,
            );
            await b.page.evaluate(`document.body.focus()`);
            await b.page.keyboard.press('KeyV', { commands: ['Paste'] });
            assert.match(String(await b.page.evaluate('document.body.innerText')), /B-OWN/);
          } finally {
            await b.close();
          }
        } finally {
          await a.close();
          await probe.close();
        }
      } finally {
        await host.close();
      }
    });

  /** What a paste event in the page finds on the clipboard: each type with its data. */
  async function pastedTypes(page: PageLease['page']): Promise<string> {
    await page.evaluate(`(() => {
      window.pasted = 'no paste event';
      document.body.contentEditable = 'true';
      document.body.focus();
      document.addEventListener('paste', (e) => {
        const d = e.clipboardData;
        window.pasted = JSON.stringify([...d.types].map((t) => [t, d.getData(t)]));
        e.preventDefault();
      }, { once: true, capture: true });
    })()`);
    await page.keyboard.press('KeyV', { commands: ['Paste'] });
    return String(await page.evaluate('window.pasted'));
  }

  test('the clipboard is emptied of every format A copied (HTML, a custom type, a URI list), not only of its text', async () => {
    // Attack (issue 32, fresh eyes): the emptying writes one empty text; a copy of other formats only would
    // survive it if a write replaced the text alone. Outside the membrane, as above (scripts cannot paste).
    const host = offlineHost(1);
    try {
      const a = await host.lease('clipboard-formats-a');
      try {
        await a.page.setContent('<p>a</p>');
        const copied = await a.page.evaluate(`(() => {
          const put = (e) => {
            e.clipboardData.setData('text/html', '<b>${TOKEN}</b>');
            e.clipboardData.setData('application/x-secret', '${TOKEN}');
            e.clipboardData.setData('text/uri-list', 'http://127.0.0.1/${TOKEN}');
            e.preventDefault();
          };
          document.addEventListener('copy', put, true);
          try { return document.execCommand('copy'); } finally { document.removeEventListener('copy', put, true); }
        })()`);
        assert.equal(copied, true);
        // Control: a paste in A's own page finds all three.
        const own = await pastedTypes(a.page);
        for (const type of ['text/html', 'application/x-secret', 'text/uri-list'])
          assert.ok(own.includes(type) && own.includes(TOKEN), `A's own paste: ${own}`);
      } finally {
        await a.close();
      }
      const b = await host.lease('clipboard-formats-b');
      try {
        assert.equal(await pastedTypes(b.page), '[]', "B's paste found something of A's");
      } finally {
        await b.close();
      }
    } finally {
      await host.close();
    }
  });

  // Attack (issue 32, fresh eyes): Linux's selection clipboard (what a page last selected with the mouse, pasted
  // by the middle button) is one per Chromium too, and a copy does not empty it: B's middle button, outside the
  // membrane, pasted what A selected. The membrane refuses the middle button; this is the layer beneath.
  test("the selection clipboard: B's middle button (outside the membrane) does not paste what A selected", async () => {
    const host = offlineHost(1);
    try {
      const a = await host.lease('selection-a');
      try {
        await a.page.setContent(`<p id="p">${TOKEN}</p><textarea id="t"></textarea>`);
        const p = (await (await a.page.$('#p'))?.boundingBox()) as { x: number; y: number };
        await a.page.mouse.click(p.x + 5, p.y + 5, { clickCount: 3 });
        // Control: A's own middle button pastes its selection.
        const t = (await (await a.page.$('#t'))?.boundingBox()) as { x: number; y: number };
        await a.page.mouse.click(t.x + 5, t.y + 5, { button: 'middle' });
        assert.match(await a.page.$eval('#t', (e) => (e as unknown as { value: string }).value), new RegExp(TOKEN));
      } finally {
        await a.close();
      }
      const b = await host.lease('selection-b');
      try {
        await b.page.setContent('<textarea id="t"></textarea>');
        const t = (await (await b.page.$('#t'))?.boundingBox()) as { x: number; y: number };
        await b.page.mouse.click(t.x + 5, t.y + 5, { button: 'middle' });
        assert.doesNotMatch(
          await b.page.$eval('#t', (e) => (e as unknown as { value: string }).value),
          new RegExp(TOKEN),
          "B's middle button pasted what A selected",
        );
      } finally {
        await b.close();
      }
    } finally {
      await host.close();
    }
  });

  test('a Chromium whose clipboard cannot be emptied from a leased page is replaced before the page is given', async () => {
    // A stuck or failing emptying must not give the page anyway: the Chromium (and its clipboard) is replaced.
    let failures = 1;
    const host = offlineHost(1, async (page, selection) =>
      failures-- > 0 ? false : await emptyClipboard(page, selection),
    );
    try {
      await host.start();
      const first = host.pid as number;
      const a = await host.lease('clipboard-replaced');
      try {
        assert.notEqual(a.pid, first, 'the page came from the Chromium whose clipboard was not emptied');
        await until(() => !alive(first), 'the first Chromium to be gone', { timeoutMs: 15_000 });
      } finally {
        await a.close();
      }
      // Never emptied: no page is given at all, and the request is told so with 503 (the service's own
      // preparation failed, not the caller's work), never 500.
      failures = 2;
      await assert.rejects(host.lease('clipboard-never'), (e: unknown) => {
        assert.ok(e instanceof ApiError, String(e));
        assert.equal(e.code, 'SERVICE_UNAVAILABLE');
        assert.equal(e.housekeeping, 'clipboard');
        assert.match(String(e.cause), /clipboard could not be emptied/);
        return true;
      });
    } finally {
      await host.close();
    }
  });

  function alive(pid: number): boolean {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }

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
    'the context menu (a right-click, then keys to choose Paste)': `await page.click('#t', { button: 'right' }); for (const k of ['ArrowDown', 'ArrowDown', 'ArrowDown', 'ArrowDown', 'Enter']) await page.keyboard.press(k)`,
    'the context menu key, then keys to choose Paste': `await page.keyboard.press('ContextMenu'); for (const k of ['ArrowDown', 'ArrowDown', 'ArrowDown', 'ArrowDown', 'Enter']) await page.keyboard.press(k)`,
    "the page's document.execCommand('paste')": `await page.evaluate(() => { document.getElementById('t').focus(); document.execCommand('paste') })`,
    "the page's navigator.clipboard.readText()": `await page.evaluate(async () => { document.getElementById('t').value = await navigator.clipboard.readText().catch((e) => 'denied') })`,
  };
  for (const [name, route] of Object.entries(routes)) {
    test(`${name} does not read another request's clipboard`, async () => {
      const a = await copyTokenAndHold();
      try {
        const got = await tryPasteAsB(route);
        assert.ok(!got.includes(TOKEN), `B read A's token by ${name}: ${got}`);
      } finally {
        a.release();
        const ra = await a.reply;
        assert.equal(ra.status, 200, ra.text);
        assert.equal(ra.body.data, 'released', "A held the token through all of B's tries");
      }
    });
  }

  test("drag and drop: text A's page is dragging does not drop into B's page", async () => {
    const before = fixtures.hits.get('/copied') ?? 0;
    const id = holdId();
    // A selects its token and starts dragging it with the mouse (down, then moves), and holds the drag.
    const a = asA({
      url: fixtures.url('/editor'),
      script: `await page.$eval('#t', (t) => {
          t.value = ${JSON.stringify(TOKEN)}; t.focus(); t.select();
          window.__started = [];
          document.addEventListener('dragstart', (e) => window.__started.push(e.dataTransfer.getData('text/plain')), true);
        });
        const box = await (await page.$('#t')).boundingBox();
        await page.mouse.move(box.x + 20, box.y + 10);
        await page.mouse.down();
        await page.mouse.move(box.x + 300, box.y + 300, { steps: 10 });
        await page.evaluate(() => fetch('/copied?drag'));
        ${holdUntilReleased(id)}
        await page.mouse.up();
        return await page.evaluate(() => window.__started)`,
    });
    await until(() => (fixtures.hits.get('/copied') ?? 0) > before, 'A to start dragging', { timeoutMs: 20_000 });
    const b = await asB({
      url: fixtures.url('/editor'),
      script: `await page.evaluate(() => {
          window.__drops = [];
          for (const e of ['dragstart', 'dragenter', 'drop']) document.addEventListener(e, (ev) => window.__drops.push(e + ':' + ev.target.id + ':' + [...(ev.dataTransfer?.types ?? [])] + ':' + (ev.dataTransfer?.getData('text/plain') ?? '')), true);
        });
        const box = await (await page.$('#t')).boundingBox();
        for (let i = 0; i < 5; i++) {
          // The mouse passes over the textarea and is released there (a click: B drags nothing of its own).
          await page.mouse.move(box.x + 10 + i, box.y + box.height + 50);
          await page.mouse.move(box.x + 10 + i, box.y + 10, { steps: 5 });
          await page.mouse.down();
          await page.mouse.up();
        }
        return [await page.$eval('#t', (t) => t.value), await page.evaluate(() => window.__drops)]`,
    });
    released.add(id);
    assert.equal(b.status, 200, b.text);
    assert.deepEqual(b.body.data, ['', []], 'nothing was dragged into B');
    const ra = await a;
    assert.equal(ra.status, 200, ra.text);
    // Control: A's drag did start, carrying the token.
    assert.deepEqual(ra.body.data, [TOKEN]);
  });

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

  test("shared dictionaries: a dictionary A's page was given (Use-As-Dictionary) is not offered by B's requests (Available-Dictionary)", async () => {
    // Chromium uses dictionaries only on secure origins whose certificate has a known root, or on localhost.
    const local = (path: string): string => `http://localhost:${fixtures.port}${path}`;
    dictionariesOffered.length = 0;
    const id = holdId();
    const a = asA({
      url: local('/editor'),
      script: `await page.evaluate(() => fetch('/dictionary.txt').then((r) => r.text()));
        // Chromium registers the dictionary once its body is read: A's own requests offer it soon after.
        let offered = false;
        for (let i = 0; i < 50 && !offered; i++) {
          offered = (await page.evaluate(() => fetch('/compressed/a').then((r) => r.text()))) === 'true';
          if (!offered) await new Promise((r) => setTimeout(r, 100));
        }
        if (offered) { ${holdUntilReleased(id)} }
        return offered`,
    });
    // Control: A's request did offer it (so B's offering none below means per context), and A holds it meanwhile.
    await until(
      () => dictionariesOffered.some(([who, d]) => who === 'a' && d !== undefined),
      'A to offer the dictionary',
      {
        timeoutMs: 20_000,
      },
    );
    const b = await asB({
      url: local('/editor'),
      script: `const out = [];
        for (let i = 0; i < 3; i++) out.push(await page.evaluate(() => fetch('/compressed/b').then((r) => r.text())));
        return out`,
    });
    assert.equal(b.status, 200, b.text);
    assert.deepEqual(b.body.data, ['false', 'false', 'false']);
    assert.deepEqual(
      dictionariesOffered.filter(([who]) => who === 'b').map(([, d]) => d),
      [undefined, undefined, undefined],
    );
    released.add(id);
    const ra = await a;
    assert.equal(ra.status, 200, ra.text);
    assert.equal(ra.body.data, true);
  });

  test(
    "fonts: web fonts A's page loaded are neither used, listed nor cached for B's page",
    { skip: FONT ? false : `no ${FONT_FILE}` },
    async (t) => {
      // Widths by canvas (not timing): a family B's page never declared renders in the fallback unless the font leaked.
      const widths = `(families) => {
      const c = document.createElement('canvas').getContext('2d');
      return families.map((f) => { c.font = '40px ' + f; return c.measureText('iiiiiiii').width });
    }`;
      const families = ['TenantAFont, serif', 'TenantAScriptFont, serif', 'serif'];
      fontReferers.length = 0;
      const id = holdId();
      const a = asA({
        url: fixtures.url('/fonts-a'),
        script: `await page.evaluate(async () => {
          await document.fonts.ready;
          const f = new FontFace('TenantAScriptFont', 'url(/font.ttf)');
          await f.load();
          document.fonts.add(f);
        });
        const seen = await page.evaluate(${widths}, ${JSON.stringify(families)});
        await page.evaluate(() => fetch('/copied?fonts'));
        ${holdUntilReleased(id)}
        return seen`,
      });
      await until(() => copies.includes('/copied?fonts'), 'A to load its fonts', { timeoutMs: 20_000 });
      const b = await asB({
        url: fixtures.url('/editor'),
        script: `const seen = await page.evaluate(${widths}, ${JSON.stringify(families)});
        const listed = await page.evaluate(() => [...document.fonts].map((f) => f.family));
        const local = await page.evaluate(() => typeof window.queryLocalFonts === 'function'
          ? window.queryLocalFonts().then((l) => l.map((f) => f.family), (e) => e.name)
          : 'absent');
        await page.goto(${JSON.stringify(fixtures.url('/fonts-b'))});
        await page.evaluate(() => document.fonts.ready);
        return { seen, listed, local }`,
      });
      released.add(id);
      const ra = await a;
      assert.equal(ra.status, 200, ra.text);
      assert.equal(b.status, 200, b.text);
      const [aFont, aScriptFont, aSerif] = ra.body.data as number[];
      // Control: in A's page the fonts are in use (wider than the fallback), so B's equal widths mean not shared.
      assert.ok(aFont !== aSerif && aScriptFont !== aSerif, `A's fonts are in use: ${String(ra.body.data)}`);
      const { seen, listed, local } = b.body.data as { seen: number[]; listed: string[]; local: unknown };
      const [bFont, bScriptFont, bSerif] = seen;
      assert.deepEqual([bFont, bScriptFont], [bSerif, bSerif], "B's page renders A's families in the fallback");
      assert.deepEqual(listed, [], "B's document.fonts lists none of A's");
      // The machine's installed fonts are the same for every request, and none is a request's to add.
      t.diagnostic(`queryLocalFonts in B's page: ${JSON.stringify(local).slice(0, 200)}`);
      assert.ok(!JSON.stringify(local).includes('TenantA'), `queryLocalFonts: ${JSON.stringify(local)}`);
      // The font file is fetched again for B's page (A's copy is in A's context's caches only).
      assert.ok(fontReferers.includes(fixtures.url('/fonts-a')), 'A fetched it');
      assert.deepEqual(
        fontReferers.filter((r) => r === fixtures.url('/fonts-b')),
        [fixtures.url('/fonts-b')],
        'B fetched it',
      );
    },
  );

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

  test("screen capture: A's page asking to capture the screen or a tab is refused, and B's request beside it is unharmed", async () => {
    const pid = svc.service.browser.pid;
    const restarts = svc.service.browser.restarts;
    const before = fixtures.hits.get('/copied') ?? 0;
    const id = holdId();
    // B runs first and waits: the full browser used to die at A's getDisplayMedia, and every request with it.
    const b = asB({
      url: fixtures.url('/editor'),
      script: `await page.evaluate(() => fetch('/copied?capture'));
        ${holdUntilReleased(id)}
        return await page.title()`,
    });
    await until(() => (fixtures.hits.get('/copied') ?? 0) > before, 'B to be running', { timeoutMs: 20_000 });
    const a = await asA({
      url: fixtures.url('/editor'),
      script: `const out = [];
        for (const o of [{ video: true }, { video: true, preferCurrentTab: true }, { video: { displaySurface: 'monitor' }, audio: true, systemAudio: 'include' }]) {
          await page.click('#b');
          out.push(await page.evaluate((o) => navigator.mediaDevices.getDisplayMedia(o).then((s) => 'captured ' + s.getTracks().length, (e) => e.name), o));
        }
        return out`,
    });
    released.add(id);
    assert.equal(a.status, 200, a.text);
    for (const r of a.body.data as string[]) assert.match(r, /^(NotAllowedError|NotSupportedError)$/);
    const rb = await b;
    assert.equal(rb.status, 200, rb.text);
    assert.equal(rb.body.data, 'editor');
    assert.equal(svc.service.browser.restarts, restarts, 'Chromium did not restart');
    assert.equal(svc.service.browser.pid, pid);
  });

  const pictureInPicture: Record<string, { open: string }> = {
    'a document picture-in-picture window': {
      open: `window.documentPictureInPicture
        ? documentPictureInPicture.requestWindow().then((w) => { w.addEventListener('pagehide', () => window.__left = true); return 'opened' }, (e) => e.name)
        : 'absent'`,
    },
    'a video in picture-in-picture': {
      open: `(async () => {
        const v = document.createElement('video'); v.muted = true;
        const c = document.createElement('canvas'); c.getContext('2d').fillRect(0, 0, 10, 10);
        v.srcObject = c.captureStream(); document.body.append(v); await v.play();
        v.addEventListener('leavepictureinpicture', () => window.__left = true);
        return v.requestPictureInPicture().then(() => 'opened', (e) => e.name);
      })()`,
    },
  };
  for (const [what, { open }] of Object.entries(pictureInPicture)) {
    test(`picture-in-picture: B opening ${what} does not close A's`, async () => {
      const before = fixtures.hits.get('/copied') ?? 0;
      const a = asA({
        url: fixtures.url('/editor'),
        script: `const opened = await page.evaluate(() => ${open});
          await page.evaluate(() => fetch('/copied?pip'));
          await new Promise((r) => setTimeout(r, 3000));
          return [opened, await page.evaluate(() => window.__left === true)]`,
      });
      await until(() => (fixtures.hits.get('/copied') ?? 0) > before, 'A to open its window', { timeoutMs: 20_000 });
      const b = await asB({ url: fixtures.url('/editor'), script: `return await page.evaluate(() => ${open})` });
      assert.equal(b.status, 200, b.text);
      const ra = await a;
      assert.equal(ra.status, 200, ra.text);
      const [opened, left] = ra.body.data as [string, boolean];
      assert.equal(left, false, `A's ${what} (${opened}) was closed by B's (${String(b.body.data)})`);
    });
  }

  // Run in a window of the page (its own realm): [pictureInPictureEnabled, how requestPictureInPicture ended].
  const PIP_PROBE = `(async (w) => {
    const d = w.document;
    const v = d.createElement('video'); v.muted = true;
    const c = d.createElement('canvas'); c.getContext('2d').fillRect(0, 0, 10, 10);
    v.srcObject = c.captureStream(); d.body.append(v); await v.play().catch(() => {});
    const got = await w.HTMLVideoElement.prototype.requestPictureInPicture.call(v).then(() => 'opened', (e) => e.name);
    return [d.pictureInPictureEnabled, got];
  })`;

  test('picture-in-picture: no realm a page reaches can put a video in it (frames of another site, about:blank, srcdoc, sandboxed, data:, a popup)', async () => {
    // The window is one per browser on the full browser (B's closed A's); it is turned off where the browser
    // makes pages (a Blink setting), so no frame, popup or fresh realm of the page has a working copy of the method.
    const r = await asA({
      url: fixtures.url('/pip'),
      // Emulation changes make the browser send the page's settings again: the setting must survive them.
      script: `await page.setViewport({ width: 500, height: 400, isMobile: true, hasTouch: true, deviceScaleFactor: 2 });
        await page.setJavaScriptEnabled(false);
        await page.setJavaScriptEnabled(true);
        await page.emulateMediaType('print');
        await page.setUserAgent('pip-probe');
        await page.setBypassCSP(true);
        await page.reload();
        const out = [['main', await page.evaluate(() => (${PIP_PROBE})(window))]];
        for (const f of page.frames()) {
          if (f === page.mainFrame()) continue;
          out.push([f.url(), await f.evaluate(() => (${PIP_PROBE})(window))]);
        }
        out.push(...(await page.evaluate(async () => {
          const probe = ${PIP_PROBE};
          const f = document.createElement('iframe');
          document.body.append(f);
          const found = [['about:blank', await probe(f.contentWindow)]];
          const w = window.open('/pip-frame?popup');
          if (!w) return [...found, ['popup', 'none opened']];
          for (let i = 0; i < 200 && !(w.location.search === '?popup' && w.document.readyState === 'complete'); i++)
            await new Promise((r) => setTimeout(r, 50));
          return [...found, ['popup', await probe(w)]];
        })));
        return out`,
    });
    assert.equal(r.status, 200, r.text);
    const realms = new Map(r.body.data as [string, unknown][]);
    const port = fixtures.port;
    const expected = [
      'main',
      `http://localhost:${port}/pip-frame?other-site`,
      'about:srcdoc',
      `http://127.0.0.1:${port}/pip-frame?sandboxed`,
      'data:text/html,<p>data</p>',
      'about:blank',
      'popup',
    ];
    assert.deepEqual([...realms.keys()].sort(), expected.sort(), 'every realm was probed');
    for (const [realm, got] of realms) {
      // The headless shell opens no popup (--block-new-web-contents); the full browser opens one on a gesture.
      if (realm === 'popup' && svc.service.config.chromium === 'shell') {
        assert.equal(got, 'none opened');
        continue;
      }
      assert.deepEqual(got, [false, 'NotSupportedError'], `${realm}: ${JSON.stringify(got)}`);
    }
  });

  test("picture-in-picture: nothing of A's video window is left to the next request on the same Chromium", async () => {
    // A then B, one after the other, in the same Chromium (checked below).
    // (Before the Blink setting, on the full browser: A's window closed with A's context, and B's opened as if first.)
    const pid = svc.service.browser.pid;
    const open = pictureInPicture['a video in picture-in-picture']?.open ?? '';
    const a = await asA({ url: fixtures.url('/editor'), script: `return await page.evaluate(() => ${open})` });
    assert.equal(a.status, 200, a.text);
    const b = await asB({
      url: fixtures.url('/editor'),
      script: `const seen = await page.evaluate(() => [document.pictureInPictureElement, document.visibilityState, document.hasFocus()]);
        const opened = await page.evaluate(() => ${open});
        await new Promise((r) => setTimeout(r, 500));
        return [seen, opened, await page.evaluate(() => window.__left === true)]`,
    });
    assert.equal(b.status, 200, b.text);
    assert.equal(svc.service.browser.pid, pid, 'both ran in the same Chromium');
    assert.deepEqual(b.body.data, [[null, 'visible', true], a.body.data, false]);
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

/**
 * A's page sets a channel up with TOKEN and keeps it up (its request holding)
 * until B's page has tried to read it; then A says what it saw of B.
 * Each probe has a control of its own where the channel works within one page,
 * so a B that sees nothing means the channel does not cross requests.
 */
async function holdAndProbe(
  setupA: string,
  probeB: string,
): Promise<{ seenByA: unknown; seenByB: Record<string, unknown> }> {
  const id = holdId();
  const mark = `/copied?ready-${id}`;
  const a = asA({
    url: fixtures.url('/editor'),
    script: `await page.evaluate(async (TOKEN) => { window.__seen = []; ${setupA} }, ${JSON.stringify(TOKEN)});
      await page.evaluate((mark) => fetch(mark), ${JSON.stringify(mark)});
      ${holdUntilReleased(id)}
      return await page.evaluate(() => window.__seen)`,
  });
  await until(() => copies.includes(mark), 'A to set the channel up', { timeoutMs: 20_000 });
  const b = await asB({
    url: fixtures.url('/editor'),
    script: `return await page.evaluate(async () => { ${probeB} })`,
  });
  released.add(id);
  const ra = await a;
  assert.equal(ra.status, 200, ra.text);
  assert.equal(b.status, 200, b.text);
  assert.ok(!b.text.includes(TOKEN), `B saw A's token: ${b.text}`);
  return { seenByA: ra.body.data, seenByB: b.body.data as Record<string, unknown> };
}

const sleep = 'await new Promise((r) => setTimeout(r, 500));';

describe('web platform channels between two requests', () => {
  test("BroadcastChannel: B's page hears nothing A's page broadcasts, and A hears nothing of B's", async () => {
    const { seenByA, seenByB } = await holdAndProbe(
      `const c = new BroadcastChannel('tenants');
       c.onmessage = (e) => window.__seen.push(e.data);
       setInterval(() => c.postMessage(TOKEN), 50);`,
      `const heard = [];
       const mine = new BroadcastChannel('tenants');
       mine.onmessage = (e) => heard.push(e.data);
       new BroadcastChannel('tenants').postMessage('from B');
       ${sleep}
       return { heard }`,
    );
    // Control: B's own second channel object heard B's message.
    assert.deepEqual(seenByB.heard, ['from B']);
    assert.deepEqual(seenByA, []);
  });

  test("SharedWorker: B's page connecting to a worker of the same URL and name gets a fresh one, not A's", async () => {
    const { seenByB } = await holdAndProbe(
      `const w = new SharedWorker('/shared-worker.js', { name: 'tenants' });
       await new Promise((r) => { w.port.onmessage = r; w.port.postMessage({ set: TOKEN }); });`,
      `const w = new SharedWorker('/shared-worker.js', { name: 'tenants' });
       const held = await new Promise((r) => { w.port.onmessage = (e) => r(e.data); w.port.postMessage({}); });
       return { held }`,
    );
    // Control: the worker answered (with what it holds: nothing).
    assert.equal(seenByB.held, '');
  });

  test("Web Locks: a lock A's page holds is neither listed for B's page nor keeps B from taking it", async () => {
    const { seenByB } = await holdAndProbe(
      `navigator.locks.request('tenants-' + TOKEN, () => new Promise(() => {}));
       navigator.locks.request('tenants', () => new Promise(() => {}));`,
      `const taken = await navigator.locks.request('tenants', { ifAvailable: true }, (l) => l !== null);
       let listed;
       await navigator.locks.request('b-own', async () => { listed = (await navigator.locks.query()).held.map((l) => l.name) });
       return { taken, listed }`,
    );
    // Control: B's own lock is listed while held.
    assert.deepEqual(seenByB, { taken: true, listed: ['b-own'] });
  });

  test("service workers: a worker A's page registered does not exist for B's page", async () => {
    const { seenByB } = await holdAndProbe(
      `const reg = await navigator.serviceWorker.register('/sw.js?' + TOKEN);
       await navigator.serviceWorker.ready;`,
      `const before = (await navigator.serviceWorker.getRegistrations()).map((r) => r.active?.scriptURL ?? 'installing');
       return { before, controlled: navigator.serviceWorker.controller !== null }`,
    );
    assert.deepEqual(seenByB, { before: [], controlled: false });
  });

  test("blob URLs: B's page cannot read a blob: URL A's page made", async () => {
    blobUrls.length = 0;
    const { seenByA, seenByB } = await holdAndProbe(
      `const u = URL.createObjectURL(new Blob([TOKEN]));
       window.__seen.push(await fetch(u).then((r) => r.text()));
       await fetch('/blob-url?u=' + encodeURIComponent(u));`,
      `const u = await fetch('/blob-url').then((r) => r.text());
       const got = await fetch(u).then((r) => r.text(), (e) => 'refused: ' + e.name);
       return { u, got }`,
    );
    // Control: the URL works in A's page.
    assert.deepEqual(seenByA, [TOKEN]);
    assert.match(String(seenByB.u), /^blob:http:\/\/127\.0\.0\.1:\d+\//);
    assert.equal(seenByB.got, 'refused: TypeError');
  });

  test("storage: what A's page keeps in localStorage, IndexedDB, Cache Storage and storage buckets, while its request runs, is not there for B's page", async () => {
    const { seenByB } = await holdAndProbe(
      `localStorage.setItem('tenants', TOKEN);
       sessionStorage.setItem('tenants', TOKEN);
       await new Promise((r) => { const o = indexedDB.open('tenants-' + TOKEN); o.onupgradeneeded = () => o.result.createObjectStore('s'); o.onsuccess = r; });
       await (await caches.open('tenants-' + TOKEN)).put('/x', new Response(TOKEN));
       if (navigator.storageBuckets) await navigator.storageBuckets.open('tenants');
       window.__seen.push(localStorage.getItem('tenants'));`,
      `return {
         local: localStorage.getItem('tenants'),
         session: sessionStorage.getItem('tenants'),
         databases: (await indexedDB.databases()).map((d) => d.name),
         caches: await caches.keys(),
         buckets: navigator.storageBuckets ? await navigator.storageBuckets.keys() : [],
       }`,
    );
    assert.deepEqual(seenByB, { local: null, session: null, databases: [], caches: [], buckets: [] });
  });
});
