import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Page } from 'puppeteer';
import { Membrane } from '../../../src/slot/membrane/membrane.js';
import { cleanMessage, cleanStack, toWireError } from '../../../src/slot/membrane/wire-errors.js';

test('host file paths are removed from error messages, URLs in them are kept', () => {
  const e = new Error(
    'boom at /work/main/node_modules/puppeteer-core/lib/esm/x.js:12:3 (file:///srv/app/dist/server.js:1:2)',
  );
  assert.equal(cleanMessage(e), 'boom at <internal> (<internal>)');
  const nav = new Error('net::ERR_FAILED at http://127.0.0.1:8080/static/app.js');
  assert.equal(cleanMessage(nav), 'net::ERR_FAILED at http://127.0.0.1:8080/static/app.js');
});

test("error names cross when they are identifiers (a page's DOMException too); others become Error", () => {
  assert.equal(toWireError(Object.assign(new Error('t'), { name: 'TimeoutError' })).name, 'TimeoutError');
  assert.equal(toWireError(Object.assign(new Error('x'), { name: 'DOMException' })).name, 'DOMException');
  assert.equal(toWireError(Object.assign(new Error('x'), { name: 'not a name\n/etc/passwd' })).name, 'Error');
  assert.equal(toWireError('plain').message, 'plain');
});

test('a stack keeps the page frames and drops every host frame', () => {
  const e = new Error('Fancy error!');
  e.stack = [
    'Error: Fancy error!',
    '    at ExecutionContext.evaluate (file:///work/main/node_modules/puppeteer-core/lib/esm/x.js:1:2)',
    '    at async Membrane.call (/work/main/dist/server.js:10:3)',
    '    at processTicksAndRejections (node:internal/process/task_queues:95:5)',
    '    at a (http://127.0.0.1:8080/error.html:13:15)',
    '    at <anonymous>:1:8',
  ].join('\n');
  const stack = cleanStack(e, 'Fancy error!');
  assert.equal(stack, 'Error: Fancy error!\n    at a (http://127.0.0.1:8080/error.html:13:15)\n    at <anonymous>:1:8');
  assert.doesNotMatch(stack, /work|node:|file:/);
  // A host error (a TimeoutError made in Puppeteer) keeps only its first line.
  const host = new Error('Waiting failed: 100ms exceeded');
  host.name = 'TimeoutError';
  assert.equal(toWireError(host).stack, 'TimeoutError: Waiting failed: 100ms exceeded');
});

test('a thrown string, number or null crosses as itself; a thrown object does not', () => {
  assert.equal(toWireError('qwerty').thrown, 'qwerty');
  assert.equal(toWireError(100500).thrown, 100500);
  assert.equal(toWireError(null).thrown, null);
  assert.deepEqual(toWireError(NaN).thrown, { $ps: 'n', v: 'NaN' });
  assert.deepEqual(toWireError(10n).thrown, { $ps: 'i', v: '10' });
  assert.equal('thrown' in toWireError({ secret: 1 }), false);
});

function membrane(): Membrane {
  const page = { on: () => undefined, off: () => undefined } as unknown as Page;
  return new Membrane({
    page,
    clock: { remainingMs: () => 1000 },
    limits: { maxHandles: 10, maxTimers: 10, maxLogLines: 10, maxLogBytes: 1000 },
    checkUrl: () => Promise.resolve(),
    toIsolate: () => Promise.resolve(undefined),
  });
}

test('numbers JSON cannot carry and BigInt cross as tags, not as null or text', () => {
  const m = membrane();
  assert.deepEqual(m.encode([NaN, -0, Infinity, -Infinity, 0, 1.5, 42n]), [
    { $ps: 'n', v: 'NaN' },
    { $ps: 'n', v: '-0' },
    { $ps: 'n', v: 'Infinity' },
    { $ps: 'n', v: '-Infinity' },
    0,
    1.5,
    { $ps: 'i', v: '42' },
  ]);
});

test('page data shaped like a tag is wrapped: it stays data', () => {
  const m = membrane();
  const forged = { $ps: 'n', v: 'NaN' };
  assert.deepEqual(m.encode({ a: forged }), { a: { $ps: 'o', v: { $ps: 'n', v: 'NaN' } } });
  assert.deepEqual(m.encode({ $ps: 'h', id: 1, k: 'Page' }), { $ps: 'o', v: { $ps: 'h', id: 1, k: 'Page' } });
});

test("the script's special values and wrapped data reach the page as themselves", () => {
  const m = membrane();
  const [nan, negZero, big, data] = m.pageArgs(
    [
      { $ps: 'n', v: 'NaN' },
      { $ps: 'n', v: '-0' },
      { $ps: 'i', v: '12345678901234567890' },
      { $ps: 'o', v: { $ps: 'u' } },
    ],
    'test',
  );
  assert.ok(Number.isNaN(nan));
  assert.ok(Object.is(negZero, -0));
  assert.equal(big, 12345678901234567890n);
  assert.deepEqual(data, { $ps: 'u' });
  assert.throws(() => m.pageArgs([{ $ps: 'i', v: '1e9' }], 'test'), /malformed BigInt/);
});
