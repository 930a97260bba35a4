import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiError } from '../../../src/common/errors.js';
import { decodeScriptBase64, parseScrapeRequest, validUrl } from '../../../src/front/http/validate.js';

const parse = (v: unknown): ReturnType<typeof parseScrapeRequest> =>
  parseScrapeRequest(Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)));
const code = (fn: () => unknown): string => {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof ApiError);
    return e.code;
  }
  return 'none';
};

test('url is checked before outputFormat, and outputFormat before the script fields', () => {
  assert.equal(
    code(() => parse({ outputFormat: 'xml', script: 1, scriptBase64: 'x' })),
    'MISSING_REQUIRED_FIELD',
  );
  assert.equal(
    code(() => parse({ url: 'nope', outputFormat: 'xml' })),
    'INVALID_URL_FORMAT',
  );
  assert.equal(
    code(() => parse({ url: 'https://a.example', outputFormat: 'xml', script: 'x', scriptBase64: 'x' })),
    'INVALID_OUTPUT_FORMAT',
  );
});

test('valid URLs are absolute http(s) with a host', () => {
  for (const u of ['http://a.example', 'https://a.example:8443/p?q#f', 'http://[::1]:80/', 'http://127.0.0.1'])
    assert.ok(validUrl(u), u);
  for (const u of ['a.example', '//a.example', 'ws://a.example', 'https://', `http://a.example/${'x'.repeat(9000)}`])
    assert.ok(!validUrl(u), u);
});

test('an empty script is the reachability check; null fields are absent', () => {
  assert.deepEqual(parse({ url: 'https://a.example', script: '  ' }), {
    url: 'https://a.example',
    outputFormat: 'json',
  });
  assert.deepEqual(
    parse({ url: 'https://a.example', script: null, scriptBase64: 'cmV0dXJuIDE=', outputFormat: null }),
    {
      url: 'https://a.example',
      script: 'return 1',
      outputFormat: 'json',
    },
  );
});

test('scriptBase64 accepts padding or none, URL-safe letters and line breaks; refuses junk and non-UTF-8', () => {
  const src = 'return "é" + `>?`;';
  const std = Buffer.from(src).toString('base64');
  assert.equal(decodeScriptBase64(std), src);
  assert.equal(decodeScriptBase64(std.replace(/=+$/, '')), src);
  assert.equal(decodeScriptBase64(Buffer.from(src).toString('base64url')), src);
  assert.equal(decodeScriptBase64(std.replace(/(.{8})/g, '$1\n')), src);
  for (const bad of ['@@@@', 'abcde', '', Buffer.from([0xc3, 0x28]).toString('base64')]) {
    assert.equal(
      code(() => decodeScriptBase64(bad)),
      'INVALID_SCRIPT_ENCODING',
      bad,
    );
  }
});
