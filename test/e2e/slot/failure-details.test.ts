// A failed request says where and why (docs/api.md "When a script fails"): the
// phase, the page's URL, the line and column in the script as the caller sent
// it, the caller's own frames, the last page calls and, when asked, a
// screenshot; and never a host path or a host frame.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FixtureServer, html } from '../../helpers/fixtures.js';
import { serviceFor, type Reply } from '../../helpers/service.js';

const fixtures = new FixtureServer({
  '/app': html('<title>App</title><h1 id="h">Hello</h1><button id="b">Go</button>'),
  '/stalled-image': html('<title>Stalled</title><img src="/never">'),
  '/never': (_req, res) => {
    res.writeHead(200, { 'content-type': 'image/png' });
    res.write('');
  },
});
const svc = serviceFor(fixtures, { SCRIPT_TIMEOUT_MS: '4000' });

/** What no error body may contain: a host path, a module of ours or Node's, a host frame. */
const HOST_TRACES =
  /\/work\/|\/usr\/|\/tmp\/|\/home\/|\/root\/|node_modules|node:internal|file:\/\/|\.ts:\d|\.m?js:\d+:\d+(?<!script\.js:\d+:\d+)|\bdist\/|puppeteer|Membrane|ScriptSandbox|runScrape|Cdp[A-Z]/i;

async function fails(body: Record<string, unknown>): Promise<Reply> {
  const r = await svc.post({ url: fixtures.url('/app'), ...body });
  assert.equal(r.status, 400, r.text);
  assert.doesNotMatch(r.text.replace(/"screenshot":"[^"]*"/, ''), HOST_TRACES);
  return r;
}

describe('a failed script says where', () => {
  test('a thrown error gives the line and column in the script as sent, and the phase', async () => {
    const r = await fails({ script: "const a = 1;\nconst b = 2;\n  throw new Error('boom');" });
    assert.equal(r.body.code, 'SCRAPING_FAILED');
    assert.equal(r.body.phase, 'script');
    assert.equal(r.body.line, 3);
    assert.equal(r.body.column, 9);
    assert.equal(r.body.finalUrl, fixtures.url('/app'));
    assert.match(String(r.body.stack), /^Error: boom\n\s+at (?:async )?script\.js:3:9$/);
  });

  test('scriptBase64 gives the same line and column as script', async () => {
    const source = "const a = 1;\nconst b = 2;\n  throw new Error('boom');";
    const r = await fails({ scriptBase64: Buffer.from(source).toString('base64') });
    assert.equal(r.body.line, 3);
    assert.equal(r.body.column, 9);
  });

  test("a failed page call names the caller's line, not the host's", async () => {
    const r = await fails({
      script: "await page.title();\nfunction go() {\n  return page.click('#missing');\n}\nawait go();",
    });
    assert.equal(r.body.line, 3);
    assert.equal(r.body.column, 15);
    const frames = String(r.body.stack).split('\n').slice(1);
    assert.deepEqual(
      frames.map((f) => f.trim()),
      ['at go (script.js:3:15)', 'at script.js:5:7'],
    );
  });

  test('a syntax error gives its line and column', async () => {
    const r = await fails({ script: 'const a = 1;\nconst = 2;' });
    assert.equal(r.body.phase, 'script');
    assert.equal(r.body.line, 2);
    assert.equal(typeof r.body.column, 'number');
  });

  test('the last page calls are listed with method, duration and outcome, oldest first', async () => {
    const r = await fails({
      script: "await page.title();\ntry { await page.click('#missing') } catch {}\npage.url();\nthrow new Error('x');",
    });
    const calls = r.body.pageCalls as { method: string; durationMs: number; outcome: string; error?: string }[];
    assert.deepEqual(
      calls.map((c) => [c.method, c.outcome]),
      [
        ['page.title', 'ok'],
        ['page.click', 'error'],
        ['page.url', 'ok'],
      ],
    );
    assert.match(String(calls[1]?.error), /No element found for selector: #missing/);
    for (const c of calls) assert.ok(Number.isInteger(c.durationMs) && c.durationMs >= 0);
  });

  test('only the last 20 page calls are kept', async () => {
    const r = await fails({
      script: "for (let i = 0; i < 30; i++) await page.title();\npage.url();\nthrow new Error('x');",
    });
    const calls = r.body.pageCalls as { method: string }[];
    assert.equal(calls.length, 20);
    assert.equal(calls.at(-1)?.method, 'page.url');
  });

  test('a script that times out lists the call it was waiting on as pending', async () => {
    const r = await fails({ script: "await page.waitForSelector('#never', { timeout: 0 });" });
    assert.match(String(r.body.error), /timed out/);
    assert.equal(r.body.phase, 'script');
    const calls = r.body.pageCalls as { method: string; outcome: string }[];
    assert.deepEqual(
      calls.map((c) => [c.method, c.outcome]),
      [['page.waitForSelector', 'pending']],
    );
  });

  test('a failed navigation has phase navigation and no script position', async () => {
    const r = await svc.post({
      url: fixtures.url('/stalled-image'),
      script: 'return 1',
      options: { navigationTimeoutMs: 600 },
    });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.phase, 'navigation');
    assert.equal(r.body.finalUrl, fixtures.url('/stalled-image'));
    assert.equal(r.body.line, undefined);
    assert.equal(r.body.pageCalls, undefined);
  });
});

describe('screenshotOnError', () => {
  test('adds a PNG of the page as it was when the script failed', async () => {
    const r = await fails({
      script: "await page.evaluate(() => { document.body.style.background = 'red' });\nthrow new Error('x');",
      options: { screenshotOnError: true },
    });
    const png = Buffer.from(String(r.body.screenshot), 'base64');
    assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  });

  test('is absent unless asked for', async () => {
    const r = await fails({ script: "throw new Error('x');" });
    assert.equal(r.body.screenshot, undefined);
  });
});

describe('no host paths or frames in a failure', () => {
  test('a frame faked by the script through Error.prepareStackTrace is dropped', async () => {
    const r = await fails({
      script:
        "Error.prepareStackTrace = () => 'Error: x\\n    at /work/main/src/slot/membrane/membrane.ts:10:5\\n    at x (/etc/passwd:1:1)';\nthrow new Error('x');",
    });
    assert.equal(r.body.stack, undefined);
  });

  test('a Puppeteer error from a host call carries no host frame', async () => {
    const r = await fails({ script: "await page.waitForSelector('#never', { timeout: 50 });" });
    assert.match(String(r.body.error), /TimeoutError/);
    assert.match(String(r.body.stack), /^TimeoutError: .*\n\s+at script\.js:1:12$/);
  });

  test('a type error inside the runtime carries no runtime frame', async () => {
    const r = await fails({ script: 'await page.evaluate(42);' });
    for (const line of String(r.body.stack ?? '')
      .split('\n')
      .slice(1))
      assert.match(line, /script\.js:\d+:\d+\)?$/);
  });
});
