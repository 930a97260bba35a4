// Without a script, the page itself chooses the size of the answer (its HTML, its
// title). It crosses from the slot process to the front and back to the client, so
// it is held to MAX_RESULT_BYTES as a script's result is: measured before this,
// a page that grew its body to 20 MB cost the front ~100 MB at the peak per
// request, with nothing but the navigation's time to bound it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FixtureServer, html, type Route } from '../../helpers/fixtures.js';
import { serviceFor } from '../../helpers/service.js';

const MAX = 100_000;
const grow = (what: string): Route =>
  html(`<!doctype html><title>t</title><body><script>${what} = 'x'.repeat(${2 * MAX});</script>`);
const fixtures = new FixtureServer({
  '/small': html('<!doctype html><title>small</title><body>small'),
  '/big-body': grow('document.body.textContent'),
  '/big-title': grow('document.title'),
});
const svc = serviceFor(fixtures, { MAX_RESULT_BYTES: String(MAX) });

test('a page whose HTML is over MAX_RESULT_BYTES: outputFormat html is 400 RESULT_TOO_LARGE', async () => {
  const r = await svc.post({ url: fixtures.url('/big-body'), outputFormat: 'html' });
  assert.equal(r.status, 400, r.text.slice(0, 200));
  assert.equal(r.body.code, 'RESULT_TOO_LARGE');
  assert.match(String(r.body.error), /the page's HTML is larger than 100000 bytes/);
});

test('a page whose title is over MAX_RESULT_BYTES: the reachability summary is 400 RESULT_TOO_LARGE', async () => {
  const r = await svc.post({ url: fixtures.url('/big-title') });
  assert.equal(r.status, 400, r.text.slice(0, 200));
  assert.equal(r.body.code, 'RESULT_TOO_LARGE');
  assert.match(String(r.body.error), /the page's summary is larger than 100000 bytes/);
});

test('a page under the limit is answered whole (control)', async () => {
  const r = await svc.post({ url: fixtures.url('/small'), outputFormat: 'html' });
  assert.equal(r.status, 200, r.text);
  assert.match(r.text, /<title>small<\/title>/);
});
