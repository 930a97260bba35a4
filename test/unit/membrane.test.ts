import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cleanMessage, toWireError } from '../../src/sandbox/membrane.js';

test('host file paths are removed from error messages, URLs in them are kept', () => {
  const e = new Error(
    'boom at /work/main/node_modules/puppeteer-core/lib/esm/x.js:12:3 (file:///srv/app/dist/server.js:1:2)',
  );
  assert.equal(cleanMessage(e), 'boom at <internal> (<internal>)');
  const nav = new Error('net::ERR_FAILED at http://127.0.0.1:8080/static/app.js');
  assert.equal(cleanMessage(nav), 'net::ERR_FAILED at http://127.0.0.1:8080/static/app.js');
});

test('only known error names cross; others become Error', () => {
  assert.equal(toWireError(Object.assign(new Error('t'), { name: 'TimeoutError' })).name, 'TimeoutError');
  assert.equal(toWireError(Object.assign(new Error('x'), { name: 'HostInternalError' })).name, 'Error');
  assert.equal(toWireError('plain').message, 'plain');
});
