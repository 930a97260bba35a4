// POST /api/scrape end to end: real Chromium, real isolates, fixture pages on 127.0.0.1.
import assert from 'node:assert/strict';
import { realpathSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { EXEC_ONLY_DIR } from '../../../src/front/host/slot-privacy.js';
import { describe, test } from 'node:test';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../../helpers/fixtures.js';
import { TEST_KEY, serviceFor, startTestService, type TestService } from '../../helpers/service.js';
import { freePort } from '../../helpers/system.js';

const fixtures = new FixtureServer({
  '/example': html(EXAMPLE_DOMAIN_HTML),
  '/list': html(
    '<html><head><title>List</title></head><body><ul><li data-p="1">a</li><li data-p="2">b</li></ul></body></html>',
  ),
  '/missing': html('<title>Gone</title>', 404),
});
const svc = serviceFor(fixtures, { SCRIPT_MEMORY_MB: '64' });

function assertError(
  r: { status: number; body: Record<string, unknown>; headers: Record<string, unknown> },
  status: number,
  code: string,
  message?: string | RegExp,
): void {
  assert.equal(r.status, status, JSON.stringify(r.body));
  assert.equal(r.body.code, code);
  assert.equal(r.body.statusCode, status);
  assert.match(String(r.headers['content-type']), /^application\/json/);
  if (typeof message === 'string') assert.equal(r.body.error, message);
  else if (message) assert.match(String(r.body.error), message);
  assert.ok(!String(r.body.error).includes('    at '), 'no stack trace in the body');
}

describe('success', () => {
  test('a script returning the title answers 200 with message, data, executionTime and logs', async () => {
    const r = await svc.post({ url: fixtures.url('/example'), script: 'return await page.title()' });
    assert.equal(r.status, 200);
    assert.match(String(r.headers['content-type']), /^application\/json/);
    assert.equal(r.body.data, 'Example Domain');
    assert.equal(typeof r.body.message, 'string');
    assert.equal(typeof r.body.executionTime, 'number');
    assert.deepEqual(r.body.logs, []);
  });

  test('a script that returns nothing yields no data field', async () => {
    const r = await svc.post({ url: fixtures.url('/example'), script: 'await page.title()' });
    assert.equal(r.status, 200);
    assert.equal('data' in r.body, false);
  });

  test('a script that returns null yields data null, kept apart from undefined across the slot process wire', async () => {
    const r = await svc.post({ url: fixtures.url('/example'), script: 'await page.title(); return null' });
    assert.equal(r.status, 200);
    assert.equal('data' in r.body, true);
    assert.equal(r.body.data, null);
  });

  test('console.log lines come back in order, formatted like Node', async () => {
    const r = await svc.post({
      url: fixtures.url('/example'),
      script:
        'console.log("a", 1, {b: [1, "x"]}); console.info("%s=%d", "n", 42); console.error(new Error("e").message); return 1',
    });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.logs, ["a 1 { b: [ 1, 'x' ] }", 'n=42', 'e']);
  });

  test('cheerio parses page content inside the sandbox', async () => {
    const r = await svc.post({
      url: fixtures.url('/list'),
      script:
        'const $ = cheerio.load(await page.content()); return $("li").map((i, el) => $(el).text() + $(el).attr("data-p")).get()',
    });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.data, ['a1', 'b2']);
  });

  test('cheerio reached by a name built at run time is loaded on first use', async () => {
    // The script's text never names it, so the service does not load it ahead.
    const name = ['chee', 'rio'].map((p) => `'${p}'`).join(' + ');
    const r = await svc.post({
      url: fixtures.url('/list'),
      script: `const c = globalThis[${name}]; const $ = c.load(await page.content()); return [typeof c.load, $("li").length]`,
    });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.data, ['function', 2]);
  });

  test('a script may assign its own cheerio before using it', async () => {
    const r = await svc.post({ url: fixtures.url('/example'), script: 'cheerio = { mine: true }; return cheerio' });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.data, { mine: true });
  });

  test('targetUrl is the url given', async () => {
    const r = await svc.post({ url: fixtures.url('/example?q=1'), script: 'return targetUrl' });
    assert.equal(r.body.data, fixtures.url('/example?q=1'));
  });

  test('scriptBase64 runs like script', async () => {
    const src = 'const re = /"(\\w+)"/; return `${"x".replace(re, "")}` + \'ok\'\n';
    const r = await svc.post({ url: fixtures.url('/example'), scriptBase64: Buffer.from(src).toString('base64') });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.data, 'xok');
  });

  test('outputFormat html answers text/html with exactly the returned string', async () => {
    const r = await svc.post({ url: fixtures.url('/example'), outputFormat: 'html', script: 'return "<p>é & ü</p>"' });
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'text/html; charset=utf-8');
    assert.equal(r.text, '<p>é & ü</p>');
  });

  test('outputFormat html with a non-string result answers its JSON text, and nothing for undefined', async () => {
    const obj = await svc.post({ url: fixtures.url('/example'), outputFormat: 'html', script: 'return {a: 1}' });
    assert.equal(obj.text, '{"a":1}');
    const none = await svc.post({ url: fixtures.url('/example'), outputFormat: 'html', script: 'await page.title()' });
    assert.equal(none.status, 200);
    assert.equal(none.text, '');
  });

  test('no script is the reachability check: url, finalUrl, status, ok and title', async () => {
    const r = await svc.post({ url: fixtures.url('/example') });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.data, {
      url: fixtures.url('/example'),
      finalUrl: fixtures.url('/example'),
      status: 200,
      ok: true,
      title: 'Example Domain',
    });
    const missing = await svc.post({ url: fixtures.url('/missing') });
    assert.equal(missing.status, 200);
    assert.equal((missing.body.data as { status: number }).status, 404);
    assert.equal((missing.body.data as { ok: boolean }).ok, false);
  });

  test('no script with outputFormat html answers the page HTML', async () => {
    const r = await svc.post({ url: fixtures.url('/example'), outputFormat: 'html' });
    assert.equal(r.status, 200);
    assert.match(r.text, /<h1>Example Domain<\/h1>/);
  });

  test('every request gets a fresh browser context: cookies and storage do not carry over', async () => {
    const first = await svc.post({
      url: fixtures.url('/example'),
      script:
        'await page.evaluate(() => { document.cookie = "s=1; path=/"; localStorage.setItem("k", "v") }); return document === undefined',
    });
    assert.equal(first.status, 400, 'document is not defined in the isolate');
    await svc.post({
      url: fixtures.url('/example'),
      script: 'await page.evaluate(() => { document.cookie = "s=1; path=/"; localStorage.setItem("k", "v") })',
    });
    const second = await svc.post({
      url: fixtures.url('/example'),
      script: 'return await page.evaluate(() => [document.cookie, localStorage.getItem("k")])',
    });
    assert.deepEqual(second.body.data, ['', null]);
  });
});

describe('isolation between requests', () => {
  test('every request gets a fresh isolate: globals a script sets are gone for the next one', async () => {
    const first = await svc.post({
      url: fixtures.url('/example'),
      script: 'globalThis.leak = "secret"; Array.prototype.leaky = 1; return 1',
    });
    assert.equal(first.status, 200);
    for (let i = 0; i < 4; i++) {
      const next = await svc.post({
        url: fixtures.url('/example'),
        script: 'return [typeof leak, [].leaky === undefined]',
      });
      assert.deepEqual(next.body.data, ['undefined', true]);
    }
  });
});

describe('script failures', () => {
  test('a syntax error is 400 SCRAPING_FAILED with its line and column', async () => {
    const r = await svc.post({ url: fixtures.url('/example'), script: 'let x = 1;\nfoo bar' });
    assertError(r, 400, 'SCRAPING_FAILED', /^Script execution failed: SyntaxError: .*\(line 2, column 5\)$/);
  });

  test('a thrown error is 400 SCRAPING_FAILED with its message and line, and keeps the logs', async () => {
    const r = await svc.post({ url: fixtures.url('/example'), script: 'console.log("before");\nnull.x' });
    assertError(
      r,
      400,
      'SCRAPING_FAILED',
      /^Script execution failed: TypeError: Cannot read properties of null \(reading 'x'\) \(line 2\)$/,
    );
    assert.deepEqual(r.body.logs, ['before']);
  });

  test('waiting for a missing element is 400 SCRAPING_FAILED naming the selector', async () => {
    const r = await svc.post({
      url: fixtures.url('/example'),
      script: 'await page.waitForSelector("#nope", {timeout: 200})',
    });
    assertError(r, 400, 'SCRAPING_FAILED', /TimeoutError: .*#nope/);
  });

  test('a navigation failure is 400 SCRAPING_FAILED, with a script and without', async () => {
    const closedPort = await freePort();
    const url = `http://127.0.0.1:${closedPort}/`;
    const local = await startTestService({ EGRESS_ALLOWLIST: `127.0.0.1:${closedPort}` });
    try {
      const noScript = await local.post({ url });
      assertError(
        noScript,
        400,
        'SCRAPING_FAILED',
        /^Script execution failed: navigation to .* failed: net::ERR_CONNECTION_REFUSED/,
      );
      const withScript = await local.post({ url, script: 'return 1' });
      assertError(withScript, 400, 'SCRAPING_FAILED', /net::ERR_CONNECTION_REFUSED/);
    } finally {
      await local.close();
    }
  });

  test('an upstream that resets, or closes without answering, is named as Chromium names it without a proxy', async () => {
    const { createServer } = await import('node:net');
    const resetter = createServer((sock) => sock.once('data', () => sock.resetAndDestroy()));
    const hanger = createServer((sock) => sock.once('data', () => sock.end()));
    await new Promise<void>((r) => resetter.listen(0, '127.0.0.1', r));
    await new Promise<void>((r) => hanger.listen(0, '127.0.0.1', r));
    const rp = (resetter.address() as { port: number }).port;
    const hp = (hanger.address() as { port: number }).port;
    // Both servers are closed however the test ends: an open one keeps the file's process alive after its tests.
    let local: TestService | undefined;
    try {
      local = await startTestService({ EGRESS_ALLOWLIST: `127.0.0.1:${rp},127.0.0.1:${hp}` });
      assertError(
        await local.post({ url: `http://127.0.0.1:${rp}/` }),
        400,
        'SCRAPING_FAILED',
        /net::ERR_CONNECTION_RESET/,
      );
      assertError(
        await local.post({ url: `http://127.0.0.1:${hp}/` }),
        400,
        'SCRAPING_FAILED',
        /net::ERR_EMPTY_RESPONSE/,
      );
    } finally {
      await local?.close();
      resetter.close();
      hanger.close();
    }
  });

  test('a script over the memory cap is 400 MEMORY_LIMIT_EXCEEDED', async () => {
    const r = await svc.post({
      url: fixtures.url('/example'),
      script: 'const a = []; while (true) a.push(new Array(1e5).fill(1))',
    });
    assertError(r, 400, 'MEMORY_LIMIT_EXCEEDED', 'Memory limit exceeded');
  });
});

describe('request validation', () => {
  test('empty body, malformed JSON, a non-object and a missing url are 400 MISSING_REQUIRED_FIELD', async () => {
    for (const body of ['', '{"url":', '[1,2]', '"x"', 'null', '{}', '{"url":null}', '{"url":""}']) {
      const r = await svc.post(body);
      assertError(r, 400, 'MISSING_REQUIRED_FIELD', 'Missing url');
    }
  });

  test('a url that is not an absolute http(s) address is 400 INVALID_URL_FORMAT', async () => {
    for (const url of [
      'not a url',
      '/relative',
      'ftp://example.com/',
      'file:///etc/passwd',
      'javascript:alert(1)',
      'http://',
      42,
      'data:text/html,hi',
    ]) {
      const r = await svc.post({ url });
      assertError(r, 400, 'INVALID_URL_FORMAT', 'Invalid URL format');
    }
  });

  test('an outputFormat other than json or html is 400 INVALID_OUTPUT_FORMAT', async () => {
    for (const outputFormat of ['xml', 'JSON', 1, '']) {
      const r = await svc.post({ url: fixtures.url('/example'), outputFormat });
      assertError(r, 400, 'INVALID_OUTPUT_FORMAT', 'Invalid output format. Supported: json, html');
    }
  });

  test('script and scriptBase64 together are 400 CONFLICTING_SCRIPT_FIELDS', async () => {
    const r = await svc.post({ url: fixtures.url('/example'), script: 'return 1', scriptBase64: 'cmV0dXJuIDE=' });
    assertError(r, 400, 'CONFLICTING_SCRIPT_FIELDS');
  });

  test('undecodable scriptBase64 is 400 INVALID_SCRIPT_ENCODING', async () => {
    for (const scriptBase64 of ['%%%not base64%%%', 'a', Buffer.from([0xff, 0xfe, 0x00]).toString('base64')]) {
      const r = await svc.post({ url: fixtures.url('/example'), scriptBase64 });
      assertError(r, 400, 'INVALID_SCRIPT_ENCODING');
    }
  });

  test('a script that is not a string is 400 INVALID_FIELD_TYPE', async () => {
    const r = await svc.post({ url: fixtures.url('/example'), script: 42 });
    assertError(r, 400, 'INVALID_FIELD_TYPE');
  });

  test('a body that is not application/json is 415 UNSUPPORTED_MEDIA_TYPE', async () => {
    const r = await svc.post(JSON.stringify({ url: fixtures.url('/example') }), {
      'content-type': 'application/x-www-form-urlencoded',
    });
    assertError(r, 415, 'UNSUPPORTED_MEDIA_TYPE');
  });

  test('a body over the size limit is 413 PAYLOAD_TOO_LARGE', async () => {
    const r = await svc.post({ url: fixtures.url('/example'), script: `return "${'x'.repeat(1024 * 1024)}"` });
    assertError(r, 413, 'PAYLOAD_TOO_LARGE');
  });
});

describe('authentication and routing', () => {
  test('no key is 401 MISSING_API_KEY', async () => {
    const r = await svc.raw('POST', '/api/scrape', { body: '{}', headers: { 'content-type': 'application/json' } });
    assertError(r, 401, 'MISSING_API_KEY', 'API key is required');
  });

  test('a wrong key is 401 INVALID_API_KEY, checked before validation', async () => {
    const r = await svc.post('not json', { 'x-gateway-key': `${TEST_KEY}x` });
    assertError(r, 401, 'INVALID_API_KEY', 'Invalid API key');
  });

  test('an unknown path is 404 and a wrong method is 405, both JSON', async () => {
    assertError(await svc.raw('GET', '/nope'), 404, 'NOT_FOUND');
    const r = await svc.raw('GET', '/api/scrape');
    assertError(r, 405, 'METHOD_NOT_ALLOWED');
    assert.equal(r.headers.allow, 'POST');
  });

  test('GET /health answers 200 without a key once the browser is ready', async () => {
    const r = await svc.raw('GET', '/health');
    assert.equal(r.status, 200);
    assert.equal(r.body.status, 'ok');
  });

  test('GET /ready and GET /live answer 200 without a key once the browser is ready', async () => {
    const ready = await svc.raw('GET', '/ready');
    assert.equal(ready.status, 200);
    assert.deepEqual(ready.body, { status: 'ready' });
    const live = await svc.raw('GET', '/live');
    assert.equal(live.status, 200);
    assert.deepEqual(live.body, { status: 'alive' });
  });

  test('GET /health says which Chromium runs, and it is the executable of the running browser', async () => {
    const r = await svc.raw('GET', '/health');
    const { chromium, executablePath } = svc.service.config;
    assert.equal(r.body.chromium, chromium);
    // The suite runs on the binary npm test chose: CHROMIUM=full npm test runs it on the full browser.
    if (process.env.CHROMIUM) assert.equal(chromium, process.env.CHROMIUM);
    const pid = svc.service.browser.pid;
    assert.ok(pid);
    // As root with its SUID sandbox helper, its execute-only copy (src/front/host/slot-privacy.ts).
    const exe = realpathSync(`/proc/${pid}/exe`);
    if (r.body.slotNonDumpable === 'on') {
      assert.equal(dirname(dirname(exe)), EXEC_ONLY_DIR);
      assert.equal(basename(exe), basename(realpathSync(executablePath)));
    } else assert.equal(exe, realpathSync(executablePath));
    assert.equal(/headless[-_]shell/.test(executablePath), chromium === 'shell');
  });

  test('the request id is echoed, or made', async () => {
    const given = await svc.raw('GET', '/health', { headers: { 'x-request-id': 'abc-123' } });
    assert.equal(given.headers['x-request-id'], 'abc-123');
    const made = await svc.raw('GET', '/health');
    assert.match(String(made.headers['x-request-id']), /^[0-9a-f-]{36}$/);
  });
});

describe('gateway host and rate limit', () => {
  test('with GATEWAY_HOST set, a different X-Gateway-Host is 401 INVALID_GATEWAY_HOST', async () => {
    const local = await startTestService({ GATEWAY_HOST: 'api.example.net', EGRESS_ALLOWLIST: fixtures.allowEntry });
    try {
      assertError(await local.post({ url: fixtures.url('/example') }), 401, 'INVALID_GATEWAY_HOST');
      const ok = await local.post({ url: fixtures.url('/example') }, { 'x-gateway-host': 'API.example.net' });
      assert.equal(ok.status, 200);
    } finally {
      await local.close();
    }
  });

  test('requests over RATE_LIMIT in the window are 429 RATE_LIMIT_EXCEEDED with Retry-After, after auth', async () => {
    const local = await startTestService({
      RATE_LIMIT: '2',
      RATE_LIMIT_WINDOW_MS: '60000',
      EGRESS_ALLOWLIST: fixtures.allowEntry,
    });
    try {
      const a = await local.post('{}');
      assert.equal(a.status, 400);
      assert.equal(a.headers['ratelimit-remaining'], '1');
      await local.post('{}');
      const c = await local.post('{}');
      assertError(c, 429, 'RATE_LIMIT_EXCEEDED', 'Rate limit exceeded');
      assert.ok(Number(c.headers['retry-after']) >= 1);
      // A bad key is refused before the limit is counted.
      assertError(await local.post('{}', { 'x-gateway-key': 'wrong-key-wrong-key' }), 401, 'INVALID_API_KEY');
    } finally {
      await local.close();
    }
  });
});
