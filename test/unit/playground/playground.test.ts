// The playground's pure parts: what the editor completes against what the
// membrane allows, the Server-Timing split, the error's line, the request body.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { base64Utf8, requestBody, shellQuote } from '../../../playground/curl.js';
import { MEMBERS, PAGE_MEMBERS } from '../../../playground/globals.js';
import { errorLocation, parseServerTiming, parseUsage } from '../../../playground/result.js';
import { loadConfig } from '../../../src/common/config.js';
import { ASYNC_METHODS, SYNC_METHODS, lookupMethod } from '../../../src/slot/membrane/methods/index.js';

/** Page members the isolate implements itself (sandbox/proxies.ts) instead of sending them to the host. */
const ISOLATE_SIDE = new Set(['on', 'once', 'off', 'waitForRequest', 'waitForResponse', 'createPDFStream']);
/**
 * Membrane entries a script does not call on page by that name: plumbing (subscribe), and
 * frameElement, which the page's table shares with the frame's but Puppeteer's Page lacks.
 */
// Host-only names the isolate sends for other things (page.on, Locator.race), and Frame's own.
const NOT_PAGE_API = new Set(['subscribe', 'frameElement', 'locatorRace']);

const allowed = (name: string): boolean =>
  lookupMethod(false, 'Page', name) !== undefined || lookupMethod(true, 'Page', name) !== undefined;

test('every page method the editor completes is one the membrane allows', () => {
  for (const m of PAGE_MEMBERS) {
    if (m.type !== 'method' || ISOLATE_SIDE.has(m.label)) continue;
    assert.ok(allowed(m.label), `page.${m.label} is offered but the membrane refuses it`);
  }
  for (const input of ['keyboard', 'mouse', 'touchscreen']) {
    for (const m of MEMBERS[`page.${input}`] ?? []) {
      assert.ok(allowed(`${input}.${m.label}`), `page.${input}.${m.label} is offered but refused`);
    }
  }
  // It can fail: a refused method is not allowed.
  assert.equal(allowed('createCDPSession'), false);
  assert.equal(allowed('browser'), false);
});

test('every page method the membrane allows is completed by the editor', () => {
  const offered = new Set(PAGE_MEMBERS.map((m) => m.label));
  for (const m of ['keyboard', 'mouse', 'touchscreen'])
    for (const x of MEMBERS[`page.${m}`] ?? []) offered.add(`${m}.${x.label}`);
  const membrane = [...Object.keys(ASYNC_METHODS.Page ?? {}), ...Object.keys(SYNC_METHODS.Page ?? {})];
  const missing = membrane.filter((name) => !NOT_PAGE_API.has(name) && !offered.has(name));
  assert.deepEqual(missing, []);
});

test('Server-Timing is split into named parts in milliseconds; malformed entries are skipped', () => {
  assert.deepEqual(parseServerTiming('queue;dur=0.4, lease;dur=1.0, navigation;dur=120.5, script;dur=33.2'), [
    { name: 'queue', ms: 0.4 },
    { name: 'lease', ms: 1 },
    { name: 'navigation', ms: 120.5 },
    { name: 'script', ms: 33.2 },
  ]);
  assert.deepEqual(parseServerTiming('cache;desc="x", bad name;dur=1, ok;desc=a;dur=2'), [{ name: 'ok', ms: 2 }]);
  assert.deepEqual(parseServerTiming(null), []);
});

test('the usage headers are read into labelled figures with their units; one absent or not a number is left out', () => {
  const headers: Record<string, string> = {
    'X-Usage-Cpu-Ms': '120',
    'X-Usage-Page-Memory-Peak-MiB': '12.5',
    'X-Usage-Isolate-Heap-Peak-MiB': '<b>2</b>',
    'X-Usage-Connections': '3',
  };
  assert.deepEqual(
    parseUsage((h) => headers[h] ?? null),
    [
      { header: 'X-Usage-Cpu-Ms', label: 'CPU', text: '120 ms' },
      { header: 'X-Usage-Page-Memory-Peak-MiB', label: 'page memory, peak', text: '12.5 MiB' },
      { header: 'X-Usage-Connections', label: 'connections', text: '3' },
    ],
  );
});

test("an error's line is read from the end of the SCRAPING_FAILED message", () => {
  const failed = (error: string): Record<string, unknown> => ({ error, code: 'SCRAPING_FAILED', statusCode: 400 });
  assert.deepEqual(errorLocation(failed('Script execution failed: Error: boom (line 3)'), 5), { line: 3 });
  assert.deepEqual(
    errorLocation(failed("Script execution failed: SyntaxError: Unexpected token '*' (line 2, column 12)"), 5),
    { line: 2, column: 12 },
  );
  // The script's own text saying "(line 4)" is not the location.
  assert.equal(errorLocation(failed('Script execution failed: Error: bad (line 4) input'), 5), undefined);
  assert.deepEqual(errorLocation(failed('Script execution failed: Error: see (line 4) (line 1)'), 5), { line: 1 });
  // Out of the script's range, another code, or no number: nothing is marked.
  assert.equal(errorLocation(failed('Script execution failed: Error: x (line 9)'), 5), undefined);
  assert.equal(errorLocation({ error: 'Invalid API key (line 1)', code: 'INVALID_API_KEY' }, 5), undefined);
  assert.equal(errorLocation(failed('Script execution failed: the script timed out after 5000 ms'), 5), undefined);
});

test('structured failure details (issue 18) are preferred to the message when present', () => {
  assert.deepEqual(
    errorLocation({ code: 'SCRAPING_FAILED', error: 'Script execution failed: x (line 1)', line: 4, column: 7 }, 5),
    { line: 4, column: 7 },
  );
});

test('the body carries the script as Base64 of its UTF-8 bytes, and leaves out an empty script and json', () => {
  const script = 'return "naïve ☕ 日本 `$x` \\n";';
  const body = JSON.parse(requestBody({ url: 'https://a.example/', script, outputFormat: 'json' })) as Record<
    string,
    string
  >;
  assert.deepEqual(Object.keys(body), ['url', 'scriptBase64']);
  assert.equal(Buffer.from(body.scriptBase64 ?? '', 'base64').toString('utf8'), script);
  assert.equal(base64Utf8(script), Buffer.from(script, 'utf8').toString('base64'));
  assert.deepEqual(JSON.parse(requestBody({ url: 'https://a.example/', script: '  \n', outputFormat: 'html' })), {
    url: 'https://a.example/',
    outputFormat: 'html',
  });
  // Long scripts are encoded in chunks (String.fromCharCode has an argument limit).
  const long = 'x'.repeat(200_000) + 'é';
  assert.equal(base64Utf8(long), Buffer.from(long, 'utf8').toString('base64'));
});

test("shellQuote writes ' as '\\''", () => {
  assert.equal(shellQuote("a'b"), `'a'\\''b'`);
  assert.equal(shellQuote('$HOME `x`'), `'$HOME \`x\`'`);
});

test('PLAYGROUND is on by default, off with "off", and anything else is refused', () => {
  assert.equal(loadConfig({}).playground, true);
  assert.equal(loadConfig({ PLAYGROUND: 'off' }).playground, false);
  assert.equal(loadConfig({ PLAYGROUND: ' ON ' }).playground, true);
  assert.throws(() => loadConfig({ PLAYGROUND: 'no' }), /PLAYGROUND: "no" must be on or off/);
});
