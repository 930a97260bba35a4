// One test per way out of the sandbox a script might try. Each asserts what the
// script gets (nothing of the host) and, where it matters, that the host is unharmed.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { FixtureServer, html } from '../../helpers/fixtures.js';
import { serviceFor } from '../../helpers/service.js';

const fixtures = new FixtureServer({
  '/page': html(
    '<html><head><title>Fixture</title></head><body><h1 id="h">Hello</h1><input id="f" type="file"><a href="/page">x</a></body></html>',
  ),
});
const svc = serviceFor(fixtures);
const scratch = mkdtempSync(join(tmpdir(), 'pagescript-escape-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

async function run(script: string): Promise<{ status: number; data: unknown; error: unknown; code: unknown }> {
  const r = await svc.post({ url: fixtures.url('/page'), script });
  return { status: r.status, data: r.body.data, error: r.body.error, code: r.body.code };
}

/** A script that walks from `expr` to the Function constructor and asks for Node's globals. */
function walk(setup: string, expr: string): string {
  return `${setup}
  const v = ${expr};
  const F = v.constructor.constructor;
  const P = Object.getPrototypeOf(v);
  const G = F('return this')();
  return {
    sameFunction: F === Function,
    process: F('return typeof process')(),
    viaPrototype: P.constructor.constructor('return typeof require')(),
    require: typeof G.require,
    hostCallback: typeof G.__ps_host,
    runtime: typeof G.__ps_runtime,
  };`;
}

const NOTHING = {
  sameFunction: true,
  process: 'undefined',
  viaPrototype: 'undefined',
  require: 'undefined',
  hostCallback: 'undefined',
  runtime: 'undefined',
};

describe('constructor walks end inside the isolate', () => {
  const cases: [string, string, string][] = [
    ['a string returned by the membrane', '', 'await page.title()'],
    ['the page proxy', '', 'page'],
    ['an element handle', '', "await page.$('#h')"],
    ['a JS handle', '', 'await page.evaluateHandle(() => window)'],
    ['an error from the host', "let e; try { await page.goto('file:///etc/passwd') } catch (x) { e = x }", 'e'],
    ['an HTTP response', '', 'await page.goto(targetUrl)'],
    ['a frame', '', 'page.mainFrame()'],
    ['a locator', '', "page.locator('#h')"],
    ['a cheerio object', '', "cheerio.load('<p>x</p>')('p')"],
    [
      'the cheerio loader (an accessor, before first use)',
      '',
      "Object.getOwnPropertyDescriptor(globalThis, 'chee' + 'rio').get",
    ],
    ['bytes from a screenshot', '', 'await page.screenshot()'],
    ['console.log', '', 'console.log'],
    ['the keyboard', '', 'page.keyboard'],
  ];
  for (const [name, setup, expr] of cases) {
    test(`from ${name}`, async () => {
      const r = await run(walk(setup, expr));
      assert.equal(r.status, 200, JSON.stringify(r));
      assert.deepEqual(r.data, NOTHING);
    });
  }
});

describe('nothing of Node is reachable', () => {
  test('require, process, module, Buffer, fs, fetch and the host callback are undefined', async () => {
    const r = await run(
      'return [typeof require, typeof process, typeof module, typeof exports, typeof Buffer, typeof fs, typeof fetch, typeof XMLHttpRequest, typeof __ps_host, typeof __ps_runtime, typeof __ps_settings, typeof __ps_cheerio, typeof WebAssembly.instantiateStreaming]',
    );
    assert.deepEqual(r.data, Array(13).fill('undefined'));
  });

  test('the cheerio loader takes no input and loads once: called again and again, with arguments, it changes nothing', async () => {
    // Names are built at run time: a script whose text names it gets it loaded ahead, with no accessor.
    const r = await run(`
      const get = Object.getOwnPropertyDescriptor(globalThis, 'chee' + 'rio').get;
      const first = get.call(globalThis, 'require("fs")');
      for (let i = 0; i < 100; i++) get.call({}, { toString() { return 'process' } });
      return [typeof globalThis['__ps_chee' + 'rio'], first === globalThis['chee' + 'rio'], typeof first.load, typeof require, typeof process];
    `);
    assert.equal(r.status, 200, JSON.stringify(r));
    assert.deepEqual(r.data, ['undefined', true, 'function', 'undefined', 'undefined']);
  });

  test('import() of a Node module fails inside the isolate', async () => {
    const r = await run("try { await import('node:fs'); return 'imported' } catch (e) { return e.name }");
    assert.notEqual(r.data, 'imported');
  });

  test('Error.prepareStackTrace cannot reach functions of the runtime', async () => {
    const r = await run(`
      const found = [];
      Error.prepareStackTrace = (e, frames) => { for (const f of frames) { try { const fn = f.getFunction(); if (fn) found.push(String(fn).slice(0, 30)) } catch {} } return '' };
      const evil = { toJSON() { new Error().stack; return 1 } };
      try { await page.evaluate((x) => x, evil) } catch {}
      return found.filter((s) => !s.includes('toJSON'))`);
    assert.equal(r.status, 200, JSON.stringify(r));
    assert.deepEqual(r.data, []);
  });
});

describe('function source cannot be smuggled to the host', () => {
  test('overriding Function.prototype.toString changes nothing: the page gets the real source', async () => {
    const r = await run(`
      Function.prototype.toString = function () { return "() => process.exit(7)" };
      return await page.evaluate(() => 1 + 1)`);
    assert.equal(r.data, 2);
    assert.equal((await svc.raw('GET', '/health')).status, 200, 'the service is alive');
  });

  // A script's object with a "$ps" key crosses wrapped: the host reads it as data,
  // never as a tag (the host still checks every tag it does read: the unit tests
  // of src/slot/membrane/ and the kind check in HandleTable.handle(), handles.ts).
  test('a function tag written by the script is data: neither run nor sent as source', async () => {
    const r = await run(`return await page.evaluate({ $ps: 'f', src: '() => typeof process' })`);
    assert.equal(r.status, 400);
    assert.match(String(r.error), /expected a function or a string/);
  });

  test('a handle tag written by the script is data: it cannot turn the page into an argument', async () => {
    const r = await run(`return await page.evaluate((x) => x, { $ps: 'h', id: 1, k: 'ElementHandle' })`);
    assert.equal(r.status, 200, JSON.stringify(r));
    assert.deepEqual(r.data, { $ps: 'h', id: 1, k: 'ElementHandle' });
  });

  test('a __proto__ key in options pollutes nothing on the host', async () => {
    const r = await run(`
      await page.setExtraHTTPHeaders(JSON.parse('{"__proto__": "x", "x-a": "1"}'));
      await page.evaluate((o) => o, JSON.parse('{"__proto__": {"polluted": true}}'));
      return 1`);
    assert.equal(r.status, 200, JSON.stringify(r));
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
    assert.equal((Object.prototype as Record<string, unknown>).polluted, undefined);
  });
});

describe('refused methods say so by name', () => {
  const refused = [
    'page.browser()',
    'page.browserContext()',
    'page.target()',
    'await page.createCDPSession()',
    'await page.close()',
    'await page.screencast({ ffmpegPath: "/bin/sh" })',
    'await page.waitForFileChooser()',
    'page.tracing.start()',
    'page.coverage.startJSCoverage()',
    'page.workers()',
  ];
  for (const call of refused) {
    test(`${call} is refused`, async () => {
      const r = await run(`${call}; return 'reached'`);
      assert.equal(r.status, 400, JSON.stringify(r));
      assert.equal(r.code, 'SCRAPING_FAILED');
      const name = /page\.(\w+)/.exec(call)?.[1] ?? '';
      assert.match(String(r.error), new RegExp(`page\\.${name}.* not available in pagescript`));
    });
  }

  test('a method the allow-list does not know is refused on the host even if the isolate asks', async () => {
    const r = await run(
      `const F = page.constructor; Object.defineProperty(F.prototype, 'evil', { value: page.title }); return await page.evil.call(page)`,
    );
    // The stub sends "title" (its own name), so this is allowed; a renamed call is not possible from the isolate.
    assert.equal(r.data, 'Fixture');
  });
});

describe('the disk is out of reach', () => {
  test('screenshot with path writes no file', async () => {
    const target = join(scratch, 'shot.png');
    const r = await run(`return await page.screenshot({ path: ${JSON.stringify(target)} })`);
    assert.equal(r.status, 400);
    assert.match(String(r.error), /"path" option is not available/);
    assert.equal(existsSync(target), false);
  });

  test('pdf with path writes no file', async () => {
    const target = join(scratch, 'doc.pdf');
    const r = await run(`return await page.pdf({ path: ${JSON.stringify(target)} })`);
    assert.equal(r.status, 400);
    assert.equal(existsSync(target), false);
  });

  test('createPDFStream with path writes no file, as pdf', async () => {
    const target = join(scratch, 'stream.pdf');
    const r = await run(`return await page.createPDFStream({ path: ${JSON.stringify(target)} })`);
    assert.equal(r.status, 400);
    assert.equal(existsSync(target), false);
  });

  test('element screenshot with path writes no file', async () => {
    const target = join(scratch, 'el.png');
    const r = await run(`const h = await page.$('#h'); return await h.screenshot({ path: ${JSON.stringify(target)} })`);
    assert.equal(r.status, 400);
    assert.equal(existsSync(target), false);
  });

  test('uploadFile cannot read a local file into the page', async () => {
    const secret = join(scratch, 'secret.txt');
    writeFileSync(secret, 'TOP-SECRET');
    const r = await run(
      `const input = await page.$('#f'); await input.uploadFile(${JSON.stringify(secret)}); return await page.$eval('#f', (el) => el.files.length)`,
    );
    assert.equal(r.status, 400);
    assert.match(String(r.error), /uploadFile\(\) is not available/);
  });

  test('addStyleTag and addScriptTag with path are refused', async () => {
    for (const m of ['addStyleTag', 'addScriptTag']) {
      const r = await run(`await page.${m}({ path: '/etc/passwd' }); return await page.content()`);
      assert.equal(r.status, 400, m);
      assert.match(String(r.error), /"path" option is not available/);
      assert.ok(!String(r.error).includes('root:'), 'no file content in the error');
    }
  });

  test('file:, view-source: and chrome: navigations are refused', async () => {
    for (const url of [
      'file:///etc/passwd',
      'view-source:file:///etc/passwd',
      'chrome://version',
      'devtools://devtools/bundled/inspector.html',
      'javascript:alert(1)',
    ]) {
      const r = await run(`await page.goto(${JSON.stringify(url)}); return await page.content()`);
      assert.equal(r.status, 400, url);
      assert.match(String(r.error), /scheme is not allowed/, url);
      assert.ok(!String(r.error).includes('root:x:0:0'));
    }
  });

  test('an error from the host carries no host file paths', async () => {
    const r = await run(`await page.waitForSelector('#never', { timeout: 50 })`);
    assert.equal(r.status, 400);
    assert.ok(!/\/work\/|node_modules|\.js:\d+/.test(String(r.error)), String(r.error));
  });
});
