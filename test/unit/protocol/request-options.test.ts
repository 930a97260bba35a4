// The request's options as the front and the slot process both check them
// (src/protocol/request-options.ts), and the pieces of a failure's description that can
// be tested without a browser: the caller's frames and the bounded call log.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiError } from '../../../src/common/errors.js';
import { parseScrapeRequest } from '../../../src/front/http/validate.js';
import {
  OptionsError,
  VIEWPORT_BOUNDS,
  clampNavigationTimeoutMs,
  parseRequestOptions,
  refusedHeader,
} from '../../../src/protocol/request-options.js';
import { CallLog, MAX_RECENT_CALLS } from '../../../src/slot/membrane/call-log.js';
import { scriptFramesOf } from '../../../src/slot/membrane/outcome.js';
import { VIEWPORT } from '../../../src/slot/membrane/option-schemas.js';
import { recheckOptions } from '../../../src/slot/scrape/page-setup.js';

const URL_ = 'https://www.shop.example/cart';

function field(options: unknown, url = URL_): string {
  try {
    parseRequestOptions(options, url);
  } catch (e) {
    assert.ok(e instanceof OptionsError, String(e));
    return e.field;
  }
  return 'accepted';
}

test('a body without options is unchanged: no options key reaches the job', () => {
  const parsed = parseScrapeRequest(Buffer.from(JSON.stringify({ url: URL_, script: 'return 1' })));
  assert.deepEqual(parsed, { url: URL_, script: 'return 1', outputFormat: 'json' });
});

test('a bad option in the body is 400 INVALID_OPTIONS naming the field', () => {
  try {
    parseScrapeRequest(Buffer.from(JSON.stringify({ url: URL_, options: { viewport: { width: 0, height: 1 } } })));
    assert.fail('accepted');
  } catch (e) {
    assert.ok(e instanceof ApiError);
    assert.equal(e.code, 'INVALID_OPTIONS');
    assert.equal(e.status, 400);
    assert.match(e.message, /^Invalid options: options\.viewport\.width must be a number from 1 to 4096$/);
  }
});

test('options are checked after the url, so a bad url is still INVALID_URL_FORMAT', () => {
  assert.throws(
    () => parseScrapeRequest(Buffer.from(JSON.stringify({ url: 'nope', options: { nope: 1 } }))),
    (e: unknown) => e instanceof ApiError && e.code === 'INVALID_URL_FORMAT',
  );
});

test('unknown keys are refused by name, at every level', () => {
  assert.equal(field({ proxyServer: 'http://10.0.0.1' }), 'options.proxyServer');
  assert.equal(field({ path: '/etc/passwd' }), 'options.path');
  assert.equal(field({ viewport: { width: 10, height: 10, path: '/x' } }), 'options.viewport.path');
  assert.equal(field({ cookies: [{ name: 'a', value: 'b', partitionKey: 'x' }] }), 'options.cookies[0].partitionKey');
});

test('the viewport bounds are the membrane bounds', () => {
  assert.equal(field({ viewport: { width: VIEWPORT_BOUNDS.maxSide, height: 1 } }), 'accepted');
  assert.equal(field({ viewport: { width: VIEWPORT_BOUNDS.maxSide + 1, height: 1 } }), 'options.viewport.width');
  // The membrane's own schema refuses the same value.
  const check = VIEWPORT.width as (v: unknown, where: string) => unknown;
  assert.throws(() => check(VIEWPORT_BOUNDS.maxSide + 1, 'w'));
  assert.equal(field({ viewport: { width: 4096, height: 4096, deviceScaleFactor: 5 } }), 'options.viewport');
});

test('headers the guard relies on, Host and Cookie are refused, in any case', () => {
  for (const h of ['Host', 'PROXY-AUTHORIZATION', 'proxy-connection', 'Connection', 'Transfer-Encoding', 'Cookie'])
    assert.notEqual(refusedHeader(h), undefined, h);
  assert.notEqual(refusedHeader('X-Pagescript-Egress'), undefined);
  assert.notEqual(refusedHeader('bad header'), undefined);
  assert.equal(refusedHeader('Authorization'), undefined);
  assert.equal(field({ extraHTTPHeaders: { 'x-a': '1', 'X-A': '2' } }), 'options.extraHTTPHeaders.X-A');
  assert.equal(field({ extraHTTPHeaders: { 'x-a': 'a\nb' } }), 'options.extraHTTPHeaders.x-a');
  assert.equal(field({ extraHTTPHeaders: { 'x-a': 1 } }), 'options.extraHTTPHeaders.x-a');
  // A header named "__proto__" stays an own header, never the object's prototype.
  const odd = parseRequestOptions({ extraHTTPHeaders: JSON.parse('{"__proto__":"x"}') as unknown }, URL_);
  assert.deepEqual(Object.keys(odd.extraHTTPHeaders ?? {}), ['__proto__']);
  assert.equal(Object.getPrototypeOf(odd.extraHTTPHeaders), Object.prototype);
});

test("cookies are for the target's host or a parent domain of it, never a top-level domain or another site", () => {
  const c = (domain: string): unknown => ({ cookies: [{ name: 'a', value: 'b', domain }] });
  assert.equal(field(c('www.shop.example')), 'accepted');
  assert.equal(field(c('.shop.example')), 'accepted');
  assert.equal(field(c('example')), 'options.cookies[0].domain');
  assert.equal(field(c('other.example')), 'options.cookies[0].domain');
  assert.equal(field(c('op.example')), 'options.cookies[0].domain', 'a suffix of the name that is not a parent domain');
  assert.equal(field(c('0.0.1'), 'http://127.0.0.1/'), 'options.cookies[0].domain');
  assert.equal(field(c('127.0.0.1'), 'http://127.0.0.1/'), 'accepted');
  assert.equal(field({ cookies: [{ name: 'a=b', value: 'c' }] }), 'options.cookies[0].name');
  assert.equal(field({ cookies: [{ name: 'a', value: 'b;c' }] }), 'options.cookies[0].value');
});

test('resource types are Puppeteer names, not the document itself', () => {
  assert.equal(field({ blockResourceTypes: ['image', 'font', 'media', 'image'] }), 'accepted');
  assert.deepEqual(parseRequestOptions({ blockResourceTypes: ['image', 'image'] }, URL_).blockResourceTypes, ['image']);
  assert.equal(field({ blockResourceTypes: ['document'] }), 'options.blockResourceTypes[0]');
  assert.equal(field({ blockResourceTypes: ['Image'] }), 'options.blockResourceTypes[0]');
  assert.equal(field({ blockResourceTypes: 'image' }), 'options.blockResourceTypes');
});

test('navigationTimeoutMs is clamped to the server limit, 0 being that limit', () => {
  assert.equal(clampNavigationTimeoutMs(undefined, 15_000), 15_000);
  assert.equal(clampNavigationTimeoutMs(0, 15_000), 15_000);
  assert.equal(clampNavigationTimeoutMs(1_000, 15_000), 1_000);
  assert.equal(clampNavigationTimeoutMs(9_999_999, 15_000), 15_000);
  assert.equal(field({ navigationTimeoutMs: -1 }), 'options.navigationTimeoutMs');
  assert.equal(field({ navigationTimeoutMs: 1.5 }), 'options.navigationTimeoutMs');
});

test('waitUntil, media type, locale and time zone take only known values', () => {
  assert.equal(field({ waitUntil: ['load', 'networkidle0'] }), 'accepted');
  assert.equal(field({ waitUntil: [] }), 'options.waitUntil');
  assert.equal(field({ waitUntil: 'networkidle' }), 'options.waitUntil');
  assert.equal(field({ emulateMediaType: 'tv' }), 'options.emulateMediaType');
  assert.equal(parseRequestOptions({ locale: 'de-de' }, URL_).locale, 'de-DE');
  assert.equal(field({ locale: 'de_DE;q=1' }), 'options.locale');
  assert.equal(field({ timezoneId: 'Europe/Paris' }), 'accepted');
  assert.equal(field({ timezoneId: '../../etc/localtime' }), 'options.timezoneId');
});

test('the slot process checks the options again and refuses a selector the membrane would refuse', () => {
  assert.equal(recheckOptions(undefined, URL_), undefined);
  assert.deepEqual(recheckOptions({ javaScriptEnabled: false }, URL_), { javaScriptEnabled: false });
  assert.throws(
    () => recheckOptions({ viewport: { width: 1e6, height: 1 } }, URL_),
    (e: unknown) => e instanceof ApiError && e.code === 'INVALID_OPTIONS',
  );
  assert.throws(
    () => recheckOptions({ waitForSelector: ':is('.repeat(20) + 'a' + ')'.repeat(20) }, URL_),
    (e: unknown) => e instanceof ApiError && e.code === 'INVALID_OPTIONS' && /options\.waitForSelector/.test(e.message),
  );
});

test('only frames of the caller script are kept from the stack the isolate reports', () => {
  const stack = [
    '    at go (script.js:3:15)',
    '    at /work/main/src/slot/membrane/membrane.ts:10:5',
    '    at x (/etc/passwd:1:1)',
    '    at /etc/passwd (script.js:1:1)',
    '    at node:internal/process/task_queues:95:5',
    '    at http://site.example/script.js:4:4',
    '    at async script.js:5:7',
  ].join('\n');
  assert.deepEqual(scriptFramesOf(stack), ['    at go (script.js:3:15)', '    at async script.js:5:7']);
  assert.equal(scriptFramesOf(Array(100).fill('    at script.js:1:1').join('\n')).length, 20);
});

test('the call log keeps the last calls only, and reports pending ones', () => {
  let now = 0;
  const log = new CallLog(() => now);
  for (let i = 0; i < MAX_RECENT_CALLS + 5; i++) log.start('Page', 'title')();
  const last = log.start('ElementHandle', 'click');
  now = 40;
  const calls = log.recent();
  assert.equal(calls.length, MAX_RECENT_CALLS);
  assert.deepEqual(calls.at(-1), { method: 'elementHandle.click', durationMs: 40, outcome: 'pending' });
  last({ name: 'TimeoutError', message: 'x'.repeat(1000) });
  const ended = log.recent().at(-1);
  assert.equal(ended?.outcome, 'error');
  assert.ok((ended?.error?.length ?? 0) <= 300);
});
