// One test per memory limit, and the rules for results. Each ends with a normal request that
// must succeed. The deadline is long here, so that what ends a script is the cap.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FixtureServer, html } from '../../helpers/fixtures.js';
import { assertServesNormally, serviceFor, timedRun, type TimedReply } from '../../helpers/service.js';

const fixtures = new FixtureServer({
  '/page': html('<html><head><title>Fixture</title></head><body><p>hi</p></body></html>'),
});
const svc = serviceFor(fixtures, {
  SCRIPT_TIMEOUT_MS: '15000',
  SCRIPT_MEMORY_MB: '64',
  MAX_RESULT_BYTES: '100000',
});

const run = (script: string, url = fixtures.url('/page')): Promise<TimedReply> => timedRun(svc, url, script);
const thenNormalRequestSucceeds = (): Promise<void> => assertServesNormally(svc, fixtures.url('/page'), 'Fixture');

describe('memory', () => {
  test('a heap bomb in the script is MEMORY_LIMIT_EXCEEDED', async () => {
    const r = await run('const a = []; while (true) a.push(new Array(1e5).fill(Math.random()))');
    assert.equal(r.body.code, 'MEMORY_LIMIT_EXCEEDED', JSON.stringify(r.body));
    await thenNormalRequestSucceeds();
  });

  test('a huge string bomb is MEMORY_LIMIT_EXCEEDED or a clean error', async () => {
    const r = await run('let s = "x"; const keep = []; while (true) { s = s + s; keep.push(s + "y") }');
    assert.equal(r.status, 400);
    assert.ok(['MEMORY_LIMIT_EXCEEDED', 'SCRAPING_FAILED'].includes(String(r.body.code)), JSON.stringify(r.body));
    await thenNormalRequestSucceeds();
  });

  test('typed-array allocations count against the cap', async () => {
    const r = await run('const keep = []; while (true) keep.push(new Uint8Array(16 * 1024 * 1024))');
    assert.equal(r.status, 400);
    assert.ok(['MEMORY_LIMIT_EXCEEDED', 'SCRAPING_FAILED'].includes(String(r.body.code)), JSON.stringify(r.body));
    await thenNormalRequestSucceeds();
  });

  test('cheerio parsing a huge document counts against the cap', async () => {
    const r = await run(
      'const keep = []; const doc = "<div><p class=a>x</p></div>".repeat(20000); while (true) keep.push(cheerio.load(doc))',
    );
    assert.equal(r.body.code, 'MEMORY_LIMIT_EXCEEDED', JSON.stringify(r.body));
    await thenNormalRequestSucceeds();
  });

  test('serialising a result too big for memory is MEMORY_LIMIT_EXCEEDED, not a host copy', async () => {
    const r = await run('const s = "x".repeat(8 * 1024 * 1024); return new Array(20).fill(s)');
    assert.equal(r.status, 400);
    assert.ok(['MEMORY_LIMIT_EXCEEDED', 'RESULT_TOO_LARGE'].includes(String(r.body.code)), JSON.stringify(r.body));
    await thenNormalRequestSucceeds();
  });

  test('deep recursion is a clean RangeError', async () => {
    const r = await run('const f = (n) => f(n + 1) + 1; return f(0)');
    assert.equal(r.status, 400);
    assert.match(String(r.body.error), /RangeError: Maximum call stack size exceeded/);
    await thenNormalRequestSucceeds();
  });
});

describe('results', () => {
  test('a result over MAX_RESULT_BYTES is 400 RESULT_TOO_LARGE', async () => {
    const r = await run('return "x".repeat(200000)');
    assert.equal(r.status, 400);
    assert.equal(r.body.code, 'RESULT_TOO_LARGE');
    assert.match(String(r.body.error), /larger than 100000 bytes/);
  });

  test('a cycle cannot be returned and says why', async () => {
    const r = await run('const a = {}; a.self = a; return a');
    assert.equal(r.body.code, 'SCRAPING_FAILED');
    assert.match(String(r.body.error), /cannot be serialised as JSON: .*circular/i);
  });

  test('a BigInt cannot be returned and says why', async () => {
    const r = await run('return { n: 10n }');
    assert.equal(r.body.code, 'SCRAPING_FAILED');
    assert.match(String(r.body.error), /BigInt/);
  });

  test('a handle cannot be returned and says what to return instead', async () => {
    const r = await run('return await page.$("p")');
    assert.equal(r.body.code, 'SCRAPING_FAILED');
    assert.match(String(r.body.error), /ElementHandle cannot be returned/);
  });

  test('a Date becomes its ISO string and bytes become Base64', async () => {
    const r = await run('return { d: new Date(0), b: new Uint8Array([104, 105]), u: undefined, n: null }');
    assert.deepEqual(r.body.data, { d: '1970-01-01T00:00:00.000Z', b: 'aGk=', n: null });
  });
});
