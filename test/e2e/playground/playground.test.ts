// GET /playground driven in a real headless Chromium (the test's own, not the
// service's) against the running service and loopback fixtures: a person types
// a key, a URL and a script, runs it, reads the result, sees the failing line
// marked, and copies the request as curl, which bash then runs.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import puppeteer, { type Browser, type BrowserContext, type Page } from 'puppeteer';
import { request } from 'undici';
import { curlCommand } from '../../../playground/curl.js';
import { EXAMPLES } from '../../../playground/examples.js';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../../helpers/fixtures.js';
import { serviceFor, startTestService, TEST_KEY } from '../../helpers/service.js';

const run = promisify(execFile);
/** Screenshots of the page, to look at (not compared): test-output/playground/. */
const OUTPUT_DIR = join(import.meta.dirname, '..', '..', '..', 'test-output', 'playground');

const SHOP_HTML = `<!doctype html><html><head><title>Tea shop</title></head><body>
<ul id="items"><li data-price="4.50">Green tea</li><li data-price="6.00">Oolong</li><li data-price="9.25">Pu-erh</li></ul>
</body></html>`;

/** Copies of the structure of the pages the examples name. */
const EXAMPLE_PAGES: Record<string, string> = {
  title: EXAMPLE_DOMAIN_HTML,
  table: `<!doctype html><html><head><title>HTML Tables</title></head><body><h1>HTML Tables</h1>
<table id="customers"><tr><th>Company</th><th>Contact</th><th>Country</th></tr>
<tr><td>Alfreds Futterkiste</td><td>Maria Anders</td><td>Germany</td></tr>
<tr><td>Centro comercial Moctezuma</td><td>Francisco Chang</td><td>Mexico</td></tr>
<tr><td>Ernst Handel</td><td>Roland Mendel</td><td>Austria</td></tr></table></body></html>`,
  click: `<!doctype html><html><head><title>The Internet</title></head><body>
<div class="example"><h3>Dynamically Loaded Page Elements</h3><h4>Example 2: Element rendered after the fact</h4>
<div id="start"><button>Start</button></div><div id="loading" hidden>Loading...</div></div>
<script>
document.querySelector('#start button').addEventListener('click', () => {
  document.getElementById('start').hidden = true;
  document.getElementById('loading').hidden = false;
  setTimeout(() => {
    document.getElementById('loading').hidden = true;
    const f = document.createElement('div'); f.id = 'finish'; f.innerHTML = '<h4>Hello World!</h4>';
    document.querySelector('.example').appendChild(f);
  }, 300);
});
</script></body></html>`,
  cheerio: `<!doctype html><html><head><title>Hacker News</title></head><body><table>
${[1, 2, 3, 4, 5, 6]
  .map(
    (i) =>
      `<tr class="athing"><td class="title"><span class="titleline"><a href="https://news.example/${i}">Story ${i}</a><span class="sitebit"> (news.example)</span></span></td></tr>`,
  )
  .join('\n')}
</table></body></html>`,
};

const EXPECTED: Record<string, { data: unknown; logs?: (url: string) => string[] }> = {
  title: { data: { title: 'Example Domain', heading: 'Example Domain' }, logs: (url) => [`loaded ${url}`] },
  table: {
    data: [
      { Company: 'Alfreds Futterkiste', Contact: 'Maria Anders', Country: 'Germany' },
      { Company: 'Centro comercial Moctezuma', Contact: 'Francisco Chang', Country: 'Mexico' },
      { Company: 'Ernst Handel', Contact: 'Roland Mendel', Country: 'Austria' },
    ],
  },
  click: { data: 'Hello World!' },
  cheerio: {
    data: [1, 2, 3, 4, 5].map((i) => ({ title: `Story ${i}`, href: `https://news.example/${i}` })),
    logs: () => ['6 stories'],
  },
};

const fixtures = new FixtureServer({
  '/shop': html(SHOP_HTML),
  ...Object.fromEntries(Object.entries(EXAMPLE_PAGES).map(([id, body]) => [`/examples/${id}`, html(body)])),
});
const svc = serviceFor(fixtures);
let browser: Browser;

before(async () => {
  mkdirSync(OUTPUT_DIR, { recursive: true });
  browser = await puppeteer.launch({
    executablePath: process.env.PUPPETEER_EXECUTABLE_PATH ?? '/usr/lib/chromium/chromium',
    headless: true,
    pipe: true,
    args: ['--no-sandbox'],
    defaultViewport: { width: 1280, height: 900 },
  });
});
after(async () => {
  await browser?.close();
});

interface Session {
  context: BrowserContext;
  page: Page;
  /** Requests the page made, and CSP violations it reported. */
  requests: string[];
  violations: string[];
  close(): Promise<void>;
}

/** A fresh incognito context with the playground open and its script started. */
async function openPlayground(): Promise<Session> {
  const context = await browser.createBrowserContext();
  await context.overridePermissions(svc.base, ['clipboard-read', 'clipboard-write', 'clipboard-sanitized-write']);
  const page = await context.newPage();
  const requests: string[] = [];
  const violations: string[] = [];
  page.on('request', (r) => requests.push(r.url()));
  page.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
  });
  await page.exposeFunction('__reportViolation', (v: string) => violations.push(v));
  await page.evaluateOnNewDocument(`document.addEventListener('securitypolicyviolation', (e) =>
    window.__reportViolation(e.effectiveDirective + ' ' + e.blockedURI));`);
  await page.goto(`${svc.base}/playground`, { waitUntil: 'load' });
  await page.waitForSelector('html[data-ready="true"]');
  return { context, page, requests, violations, close: () => context.close() };
}

/** Runs fn with a fresh playground page, closed afterwards whatever happens. */
async function withPlayground(fn: (page: Page, s: Session) => Promise<void>): Promise<void> {
  const s = await openPlayground();
  try {
    await fn(s.page, s);
  } finally {
    await s.close();
  }
}

/** Types the key and the URL (the shop fixture unless told), and the script when given. */
async function fill(page: Page, o: { key?: string; url?: string; script?: readonly string[] } = {}): Promise<void> {
  await setField(page, '#pg-key', o.key ?? TEST_KEY);
  await setField(page, '#pg-url', o.url ?? fixtures.url('/shop'));
  if (o.script) await typeScript(page, o.script);
}

/** Replaces the editor's text by typing it as a person would (Escape closes the completion list before Enter). */
async function typeScript(page: Page, lines: readonly string[]): Promise<void> {
  await page.click('.cm-content');
  await page.keyboard.down('Control');
  await page.keyboard.press('a');
  await page.keyboard.up('Control');
  await page.keyboard.press('Backspace');
  for (const [i, line] of lines.entries()) {
    await page.keyboard.type(line);
    await page.keyboard.press('Escape');
    if (i < lines.length - 1) await page.keyboard.press('Enter');
  }
}

async function setField(page: Page, selector: string, value: string): Promise<void> {
  await page.click(selector, { count: 3 });
  await page.keyboard.press('Backspace');
  await page.type(selector, value);
}

async function textOf(page: Page, selector: string): Promise<string> {
  return page.$eval(selector, (el) => el.textContent ?? '');
}

/** Runs with Ctrl+Enter, Cmd+Enter (Meta) or the Run button, and waits for this run's outcome. */
async function runAndWait(page: Page, how: 'ctrl-enter' | 'cmd-enter' | 'button'): Promise<string> {
  const before = await page.$eval('#pg-status', (el) => el.getAttribute('data-request-id') ?? '');
  if (how !== 'button') {
    const modifier = how === 'ctrl-enter' ? 'Control' : 'Meta';
    await page.keyboard.down(modifier);
    await page.keyboard.press('Enter');
    await page.keyboard.up(modifier);
  } else {
    await page.click('#pg-run');
  }
  // A finished run has an outcome and a request id other than the last one's.
  await page.waitForFunction(
    `(() => { const s = document.getElementById('pg-status');
      return ['ok', 'error'].includes(s.dataset.outcome) && (s.dataset.requestId || '') !== ${JSON.stringify(before)}; })()`,
  );
  return page.$eval('#pg-status', (el) => el.getAttribute('data-outcome') ?? '');
}

/** The script the page will send, read back from its curl command (scriptBase64). */
async function scriptInCurl(page: Page): Promise<string> {
  const cmd = await page.$eval('#pg-curl', (el) => (el as unknown as { value: string }).value);
  const m = /"scriptBase64":"([^"]+)"/.exec(cmd);
  assert.ok(m, cmd);
  return Buffer.from(m[1] as string, 'base64').toString('utf8');
}

async function shoot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(OUTPUT_DIR, `${name}.png`) as `${string}.png`, fullPage: true });
}

function assertOnlyOwnOrigin(s: Session): void {
  const foreign = s.requests.filter((u) => !u.startsWith(`${svc.base}/`) && !u.startsWith('data:'));
  assert.deepEqual(foreign, [], 'the page loaded nothing from elsewhere');
  assert.deepEqual(s.violations, [], 'no Content-Security-Policy violation');
}

const SHOP_SCRIPT = [
  "const items = await page.$$eval('#items li', (lis) => lis.map((li) => ({ name: li.textContent, price: Number(li.dataset.price) })));",
  "console.log('found ' + items.length + ' items on ' + (await page.title()));",
  'return { cheapest: items.sort((a, b) => a.price - b.price)[0], count: items.length };',
];

describe('the playground page', () => {
  test('GET /playground is HTML with a CSP that allows scripts only from the service, none inline', async () => {
    const r = await svc.raw('GET', '/playground');
    assert.equal(r.status, 200);
    assert.match(String(r.headers['content-type']), /^text\/html/);
    const csp = String(r.headers['content-security-policy']);
    const scriptSrc = /(?:^|;\s*)script-src ([^;]*)/.exec(csp)?.[1] ?? '';
    assert.equal(scriptSrc.trim(), "'self'");
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*|https?:/);
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /frame-ancestors 'none'/);
    // Every <script> has a src on this origin (relative): no inline script, no CDN.
    const scripts = [...r.text.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    assert.equal(scripts.length, 1);
    for (const [, attrs, body] of scripts) {
      assert.match(attrs ?? '', /\bsrc="playground\/playground\.js"/);
      assert.equal((body ?? '').trim(), '');
    }
    assert.doesNotMatch(r.text, /(?:src|href)="(?:https?:)?\/\//, 'no reference to another origin');
    // The nonce (for CodeMirror's <style>) is new in every response.
    const again = await svc.raw('GET', '/playground');
    assert.notEqual(String(again.headers['content-security-policy']), csp);
  });

  test('the script and stylesheet are served by the service, gzipped when asked, revalidated by ETag', async () => {
    for (const [path, type] of [
      ['/playground/playground.js', 'text/javascript'],
      ['/playground/playground.css', 'text/css'],
    ] as const) {
      const plain = await svc.raw('GET', path);
      assert.equal(plain.status, 200);
      assert.match(String(plain.headers['content-type']), new RegExp(`^${type}`));
      assert.equal(plain.headers['x-content-type-options'], 'nosniff');
      const etag = String(plain.headers.etag);
      const gz = await request(`${svc.base}${path}`, { headers: { 'accept-encoding': 'gzip' } });
      assert.equal(gz.headers['content-encoding'], 'gzip');
      assert.ok(Number(gz.headers['content-length']) < Buffer.byteLength(plain.text));
      await gz.body.dump();
      const cached = await request(`${svc.base}${path}`, { headers: { 'if-none-match': etag } });
      assert.equal(cached.statusCode, 304);
      assert.equal(await cached.body.text(), '');
    }
    const post = await svc.raw('POST', '/playground', { body: '' });
    assert.equal(post.status, 405);
  });

  test('a person types a key, a URL and a script, runs it with Ctrl+Enter and reads data, logs and timings', async () => {
    await withPlayground(async (page, s) => {
      await fill(page, { script: SHOP_SCRIPT });
      assert.equal(await scriptInCurl(page), SHOP_SCRIPT.join('\n'), 'the editor holds what was typed');
      await page.focus('.cm-content');
      assert.equal(await runAndWait(page, 'ctrl-enter'), 'ok');
      assert.equal(await textOf(page, '#pg-status'), '200 Script executed successfully');
      assert.equal(await textOf(page, '#pg-data-label'), 'Data (JSON)');
      const shown = await textOf(page, '#pg-data');
      assert.deepEqual(JSON.parse(shown), { cheapest: { name: 'Green tea', price: 4.5 }, count: 3 });
      assert.equal(shown, JSON.stringify(JSON.parse(shown), null, 2), 'pretty-printed');
      assert.deepEqual(await page.$$eval('#pg-logs li', (lis) => lis.map((li) => li.textContent)), [
        'found 3 items on Tea shop',
      ]);
      assert.match(await textOf(page, '#pg-exec-time'), /^\d+ ms$/);
      const parts = await page.$$eval('#pg-timing-parts li', (lis) =>
        lis.map((li) => [li.getAttribute('data-part'), li.textContent]),
      );
      const names = parts.map(([n]) => n);
      for (const n of ['queue', 'navigation', 'script', 'serialize']) assert.ok(names.includes(n), `${n} in ${names}`);
      for (const [, t] of parts) assert.match(t ?? '', /\d+\.\d ms$/);
      // What it cost, beside the timings, from the X-Usage-* headers.
      const usage = Object.fromEntries(
        await page.$$eval('#pg-usage dd', (dds) => dds.map((dd) => [dd.getAttribute('data-header'), dd.textContent])),
      ) as Record<string, string>;
      assert.match(usage['X-Usage-Cpu-Ms'] ?? '', /^\d+ ms$/);
      assert.match(usage['X-Usage-Page-Memory-Peak-MiB'] ?? '', /^\d+\.\d MiB$/);
      assert.match(usage['X-Usage-Isolate-Heap-Peak-MiB'] ?? '', /^\d+\.\d MiB$/);
      assert.equal(await page.$('.pg-error-line'), null, 'no line marked');
      await shoot(page, 'success');
      assertOnlyOwnOrigin(s);
    });
  });

  test('HTML output is shown as text, never rendered', async () => {
    await withPlayground(async (page, s) => {
      await fill(page, { script: ["return '<img src=x id=injected><b>bold</b>';"] });
      await page.click('input[name="format"][value="html"]');
      assert.equal(await runAndWait(page, 'button'), 'ok');
      assert.equal(await textOf(page, '#pg-data-label'), 'Data (HTML, shown as text)');
      assert.equal(await textOf(page, '#pg-data'), '<img src=x id=injected><b>bold</b>');
      assert.equal(await page.$('#injected'), null, 'the HTML did not become elements');
      assertOnlyOwnOrigin(s);
    });
  });

  test('a script that throws on line 3 gets line 3 marked in the editor, with its message and logs', async () => {
    await withPlayground(async (page, s) => {
      await fill(page);
      const lines = [
        'const title = await page.title();',
        "console.log('before the error');",
        "throw new Error('no price on ' + title);",
        'return title;',
      ];
      await typeScript(page, lines);
      assert.equal(await runAndWait(page, 'button'), 'error');
      assert.equal(await textOf(page, '#pg-status'), '400 SCRAPING_FAILED');
      assert.equal(
        await textOf(page, '#pg-error-text'),
        'Script execution failed: Error: no price on Tea shop (line 3)',
      );
      const marked = await page.$$eval('.cm-line', (ls) =>
        ls.map((l, i) => [i + 1, l.classList.contains('pg-error-line'), l.textContent] as const).filter((x) => x[1]),
      );
      assert.deepEqual(marked, [[3, true, lines[2]]]);
      assert.ok(await page.$('.cm-lint-marker-error'), 'a marker in the gutter');
      assert.deepEqual(await page.$$eval('#pg-logs li', (lis) => lis.map((li) => li.textContent)), [
        'before the error',
      ]);
      assert.equal(await textOf(page, '#pg-error-goto'), 'Go to line 3');
      await shoot(page, 'failure');
      // The button puts the cursor on the line.
      await page.click('#pg-error-goto');
      const active = await page.$eval('.cm-activeLine', (l) => l.textContent);
      assert.equal(active, lines[2]);
      assertOnlyOwnOrigin(s);
    });
  });

  test('a syntax error marks its line, and the next successful run (Cmd+Enter) clears the mark', async () => {
    await withPlayground(async (page) => {
      await fill(page, { script: ['const a = 1;', 'return a +* 2;'] });
      assert.equal(await runAndWait(page, 'button'), 'error');
      assert.match(await textOf(page, '#pg-error-text'), /SyntaxError: .* \(line 2, column \d+\)$/);
      const marked = await page.$$eval('.cm-line', (ls) =>
        ls.flatMap((l, i) => (l.classList.contains('pg-error-line') ? [i + 1] : [])),
      );
      assert.deepEqual(marked, [2]);
      await typeScript(page, ['return 1 + 2;']);
      assert.equal(await runAndWait(page, 'cmd-enter'), 'ok', 'Cmd+Enter runs too');
      assert.equal(await page.$('.pg-error-line'), null);
      assert.equal(await textOf(page, '#pg-data'), '3');
    });
  });

  test('a wrong key shows 401 INVALID_API_KEY and marks nothing', async () => {
    await withPlayground(async (page) => {
      await fill(page, { key: 'not-the-key-0123456789' });
      assert.equal(await runAndWait(page, 'button'), 'error');
      assert.equal(await textOf(page, '#pg-status'), '401 INVALID_API_KEY');
      assert.equal(await page.$('.pg-error-line'), null);
    });
  });

  test('Copy as curl puts on the clipboard a command that bash runs to the same answer', async () => {
    await withPlayground(async (page) => {
      await fill(page, { script: SHOP_SCRIPT });
      assert.equal(await runAndWait(page, 'button'), 'ok');
      const shown = JSON.parse(await textOf(page, '#pg-data')) as unknown;
      const logs = await page.$$eval('#pg-logs li', (lis) => lis.map((li) => li.textContent));

      await page.click('#pg-curl-copy');
      await page.waitForFunction(`document.getElementById('pg-curl-status').textContent !== ''`);
      assert.equal(await textOf(page, '#pg-curl-status'), 'Copied to the clipboard.');
      const copied = (await page.evaluate('navigator.clipboard.readText()')) as string;
      assert.equal(copied, await page.$eval('#pg-curl', (el) => (el as unknown as { value: string }).value));
      assert.ok(!copied.includes(TEST_KEY), 'the key is left out unless asked for');
      assert.match(copied, /"X-Gateway-Key: \$KEY"/);
      assert.match(copied, /"scriptBase64"/);

      const viaShell = await run('bash', ['-c', copied], { env: { PATH: process.env.PATH ?? '', KEY: TEST_KEY } });
      const answer = JSON.parse(viaShell.stdout) as Record<string, unknown>;
      assert.equal(answer.message, 'Script executed successfully');
      assert.deepEqual(answer.data, shown);
      assert.deepEqual(answer.logs, logs);

      // With the key in it, the command runs as it is.
      await page.click('#pg-curl-key');
      await page.click('#pg-curl-copy');
      const withKey = (await page.evaluate('navigator.clipboard.readText()')) as string;
      assert.ok(withKey.includes(`X-Gateway-Key: ${TEST_KEY}`));
      const again = await run('bash', ['-c', withKey], { env: { PATH: process.env.PATH ?? '' } });
      assert.deepEqual((JSON.parse(again.stdout) as Record<string, unknown>).data, shown);
    });
  });

  test('the API key is kept in sessionStorage only: not in localStorage, cookies or another tab', async () => {
    await withPlayground(async (page, s) => {
      await setField(page, '#pg-key', TEST_KEY);
      const stored = await page.evaluate(`({
      session: sessionStorage.getItem('pagescript.key'),
      local: localStorage.length,
      cookie: document.cookie,
      url: location.href,
    })`);
      assert.deepEqual(stored, { session: TEST_KEY, local: 0, cookie: '', url: `${svc.base}/playground` });
      await page.reload({ waitUntil: 'load' });
      await page.waitForSelector('html[data-ready="true"]');
      assert.equal(
        await page.$eval('#pg-key', (el) => (el as unknown as { value: string }).value),
        TEST_KEY,
        'kept in the tab',
      );
      assert.equal(await page.$eval('#pg-key', (el) => (el as unknown as { type: string }).type), 'password');
      const other = await s.context.newPage();
      await other.goto(`${svc.base}/playground`, { waitUntil: 'load' });
      await other.waitForSelector('html[data-ready="true"]');
      assert.equal(
        await other.$eval('#pg-key', (el) => (el as unknown as { value: string }).value),
        '',
        'not in another tab',
      );
      assert.ok(
        s.requests.every((u) => !u.includes(TEST_KEY)),
        'the key is in no URL',
      );
    });
  });

  test('keyboard only: every control is labelled, Tab goes through them in order with a visible focus', async () => {
    await withPlayground(async (page) => {
      // A control is named by a <label>, aria-labelledby (to elements with text), aria-label, or its own text (buttons).
      const unlabelled = await page.evaluate(`[...document.querySelectorAll(
        'input, select, textarea, button, [contenteditable="true"]')]
      .filter((el) => {
        const by = el.getAttribute('aria-labelledby');
        const named = (el.labels && el.labels.length > 0) ||
          (by !== null && by.split(' ').every((id) => (document.getElementById(id)?.textContent || '') !== '')) ||
          (el.getAttribute('aria-label') || '') !== '' ||
          (el.tagName === 'BUTTON' && el.textContent.trim() !== '');
        return !named && !el.hidden;
      })
      .map((el) => el.outerHTML.slice(0, 80))`);
      assert.deepEqual(unlabelled, []);

      const order: string[] = [];
      await page.evaluate('document.activeElement?.blur()');
      while (order.length < 20 && order.at(-1) !== 'pg-curl') {
        await page.keyboard.press('Tab');
        // Which element has the focus, and whether an outline of 2px or more shows it (the editor's frame for the editor).
        const seen = (await page.evaluate(`(() => {
        const el = document.activeElement;
        const inEditor = el.classList.contains('cm-content');
        const st = getComputedStyle(inEditor ? el.closest('.pg-editor') : el);
        return {
          id: inEditor ? 'editor' : el.id || el.tagName.toLowerCase() + ':' + (el.getAttribute('name') ?? el.textContent),
          visible: st.outlineStyle !== 'none' && parseFloat(st.outlineWidth) >= 2,
        };
      })()`)) as { id: string; visible: boolean };
        order.push(seen.id);
        assert.ok(seen.visible, `focus is visible on ${seen.id}`);
      }
      const expected = [
        'pg-example',
        'pg-url',
        'editor',
        'input:format',
        'pg-key',
        'pg-host',
        'pg-run',
        'pg-curl-copy',
        'pg-curl-key',
        'pg-curl',
      ];
      const at = order.indexOf('pg-example');
      assert.deepEqual(order.slice(at, at + expected.length), expected, order.join(' → '));

      // Choose an example and run it, keys only.
      await page.focus('#pg-example');
      await page.keyboard.press('ArrowDown');
      await page.keyboard.press('ArrowDown');
      assert.equal(await page.$eval('#pg-url', (el) => (el as unknown as { value: string }).value), EXAMPLES[1]?.url);
      assert.equal(await scriptInCurl(page), EXAMPLES[1]?.script);
    });
  });

  test('completion offers the page methods the membrane allows', async () => {
    await withPlayground(async (page) => {
      await typeScript(page, []);
      await page.keyboard.type('await page.waitForSel');
      await page.waitForFunction(
        `[...document.querySelectorAll('.cm-tooltip-autocomplete .cm-completionLabel')].some((l) => l.textContent === 'waitForSelector')`,
      );
      // A click takes it (Enter is ignored in the list's first 75 ms, so that fast typing is not taken for a choice).
      const option = await page.$$('.cm-tooltip-autocomplete li');
      for (const li of option) {
        if ((await li.evaluate((el) => el.querySelector('.cm-completionLabel')?.textContent)) === 'waitForSelector') {
          await li.click();
          break;
        }
      }
      assert.equal(await page.$eval('.cm-line', (l) => l.textContent), 'await page.waitForSelector');
      await page.keyboard.type('; page.keyboard.pr');
      // The list follows the typing: wait until it offers what page.keyboard has for "pr", and only that.
      await page.waitForFunction(
        `[...document.querySelectorAll('.cm-tooltip-autocomplete .cm-completionLabel')].map((l) => l.textContent).join() === 'press'`,
      );
      const highlighted = await page.$$eval('.cm-line span', (spans) => spans.length);
      assert.ok(highlighted > 0, 'the script is highlighted');
      assert.ok((await page.$$('.cm-lineNumbers .cm-gutterElement')).length > 0, 'line numbers');
    });
  });
});

describe('the examples', () => {
  for (const ex of EXAMPLES) {
    test(`example "${ex.title}" works against a copy of ${ex.url}`, async () => {
      const url = fixtures.url(`/examples/${ex.id}`);
      const want = EXPECTED[ex.id];
      assert.ok(want, `an expectation for ${ex.id}`);
      const r = await svc.post({ url, script: ex.script, outputFormat: ex.outputFormat });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body.data, want.data);
      if (want.logs) assert.deepEqual(r.body.logs, want.logs(url));
    });
  }
});

describe('copy as curl', () => {
  test('a script with quotes, backticks, $( ), backslashes and non-ASCII text survives bash', async () => {
    const script = [
      'const s = \'it\\\'s\'; const d = "say \\"hi\\""; const t = `${s} $(echo pwned) \\`x\\``;',
      "console.log('naïve ☕ 日本', \"$HOME\", '\\\\n');",
      'return { s, d, t, re: /a\'b"c/.source, title: await page.title() };',
    ].join('\n');
    const direct = await svc.post({ url: fixtures.url('/shop'), script });
    assert.equal(direct.status, 200, direct.text);
    const cmd = curlCommand({
      endpoint: `${svc.base}/api/scrape`,
      url: fixtures.url('/shop'),
      script,
      outputFormat: 'json',
      key: undefined,
      gatewayHost: 'localhost',
    });
    const out = await run('bash', ['-c', cmd], { env: { PATH: process.env.PATH ?? '', KEY: TEST_KEY } });
    const viaShell = JSON.parse(out.stdout) as Record<string, unknown>;
    assert.deepEqual(viaShell.data, direct.body.data);
    assert.deepEqual(viaShell.logs, direct.body.logs);
    assert.deepEqual(direct.body.data, {
      s: "it's",
      d: 'say "hi"',
      t: "it's $(echo pwned) `x`",
      re: 'a\'b"c',
      title: 'Tea shop',
    });
  });

  test('a URL and a key with single quotes are quoted for the shell', async () => {
    const cmd = curlCommand({
      endpoint: "http://127.0.0.1:1/api/scrape?x='y'",
      url: "https://example.com/?q='; rm -rf ~; echo '",
      script: '',
      outputFormat: 'html',
      key: "k'ey",
      gatewayHost: 'h',
    });
    // bash prints the arguments curl would get, one per line.
    const { stdout } = await run('bash', ['-c', cmd.replace(/^curl/, "printf '%s\\n'")]);
    const args = stdout.trimEnd().split('\n');
    assert.deepEqual(args, [
      '-sS',
      "http://127.0.0.1:1/api/scrape?x='y'",
      '-H',
      "X-Gateway-Key: k'ey",
      '-H',
      'X-Gateway-Host: h',
      '-H',
      'Content-Type: application/json',
      '--data-raw',
      JSON.stringify({ url: "https://example.com/?q='; rm -rf ~; echo '", outputFormat: 'html' }),
    ]);
  });
});

describe('PLAYGROUND=off', () => {
  test('removes the page and its assets (404) and its paths from the OpenAPI document', async () => {
    const off = await startTestService({ PLAYGROUND: 'off' });
    try {
      for (const path of ['/playground', '/playground/playground.js', '/playground/playground.css']) {
        const r = await request(`${off.base}${path}`);
        assert.equal(r.statusCode, 404, path);
        assert.equal(((await r.body.json()) as { code: string }).code, 'NOT_FOUND');
      }
      const doc = (await off.raw('GET', '/openapi.json')).body as { paths: Record<string, unknown> };
      assert.deepEqual(
        Object.keys(doc.paths).filter((p) => p.startsWith('/playground')),
        [],
      );
      assert.doesNotMatch((await off.raw('GET', '/docs')).text, /playground/i);
    } finally {
      await off.close();
    }
  });
});
