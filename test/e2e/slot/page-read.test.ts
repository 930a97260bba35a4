// A request without a script reads its page's title or HTML. The page may
// navigate itself once loaded, open a dialog, spin or grow past the DevTools
// message limit: each is the page's doing, answered 200 or 400 as a script's
// would be, never 500, and never by killing the slot process at the deadline.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FixtureServer, html } from '../../helpers/fixtures.js';
import { startTestService, type Reply, type TestService } from '../../helpers/service.js';

const fixtures = new FixtureServer({
  '/moves': html(`<!doctype html><title>Moves</title><script>onload = () => location.replace('/landed')</script>`),
  '/refresh': html(`<!doctype html><title>Refresh</title><meta http-equiv="refresh" content="0;url=/landed">`),
  '/landed': html(`<!doctype html><title>Landed</title><p>here`),
  '/ping': html(`<!doctype html><title>Ping</title><meta http-equiv="refresh" content="0;url=/pong">`),
  '/pong': html(`<!doctype html><title>Pong</title><meta http-equiv="refresh" content="0;url=/ping">`),
  '/alert': html(`<!doctype html><title>Alert</title><script>onload = () => setTimeout(() => alert('hi'), 0)</script>`),
  '/spin': html(`<!doctype html><title>Spin</title><script>onload = () => setTimeout(() => { for (;;); }, 0)</script>`),
  '/big-title': html(`<!doctype html><title>t</title><script>document.title = 'x'.repeat(26 * 2 ** 20)</script>`),
});
let svc: TestService;

before(async () => {
  await fixtures.start();
  svc = await startTestService({
    EGRESS_ALLOWLIST: fixtures.allowEntry,
    MAX_CONCURRENCY: '1',
    SCRIPT_TIMEOUT_MS: '3000',
    MAX_RESULT_BYTES: String(64 * 2 ** 20),
  });
});
after(async () => {
  await svc.close();
  await fixtures.close();
});

const get = (path: string, html = false): Promise<Reply> =>
  svc.post({ url: fixtures.url(path), ...(html ? { outputFormat: 'html' } : {}) });

describe('a request without a script', () => {
  test('a page that navigates itself once loaded gives the title and HTML of where it lands', async () => {
    for (let i = 0; i < 8; i++)
      for (const path of ['/moves', '/refresh']) {
        const r = await get(path);
        assert.equal(r.status, 200, r.text);
        assert.ok(
          ['Moves', 'Refresh', 'Landed'].includes(String((r.body.data as { title?: unknown } | undefined)?.title)),
          r.text,
        );
        const h = await get(path, true);
        assert.equal(h.status, 200, h.text);
      }
  });

  test('a page that navigates for ever is a 400 naming it, never a 500', async () => {
    for (let i = 0; i < 5; i++)
      for (const asHtml of [false, true]) {
        const r = await get('/ping', asHtml);
        assert.ok(r.status === 200 || r.status === 400, `${r.status} ${r.text}`);
        if (r.status === 400) assert.equal(r.body.code, 'SCRAPING_FAILED');
      }
  });

  test('a dialog the page opens after loading is dismissed: 200, the slot process kept', async () => {
    const pids = svc.service.slots.pids;
    for (const asHtml of [false, true]) {
      const r = await get('/alert', asHtml);
      assert.equal(r.status, 200, r.text);
    }
    assert.deepEqual(svc.service.slots.pids, pids);
  });

  test('a page that spins after loading is a 400 at the script time, the slot process kept', async () => {
    const pids = svc.service.slots.pids;
    const r = await get('/spin');
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.code, 'SCRAPING_FAILED');
    assert.match(String(r.body.error), /did not give its title within 3000 ms/);
    assert.deepEqual(svc.service.slots.pids, pids);
    const next = await get('/landed');
    assert.equal(next.status, 200, next.text);
  });

  test('a title past the DevTools message limit is a 400 (RESULT_TOO_LARGE, or the read timed out), not 500', async () => {
    const r = await get('/big-title');
    assert.equal(r.status, 400, r.text.slice(0, 300));
    // Chromium may take longer than the script limit to build a 26 MiB answer: then the read times out first; on
    // a loaded machine the page's own 26 MiB title may even hold its load past the navigation limit.
    if (r.body.code !== 'RESULT_TOO_LARGE') {
      assert.equal(r.body.code, 'SCRAPING_FAILED', r.text.slice(0, 300));
      assert.match(String(r.body.error), /did not give its title within \d+ ms|Navigation timeout of \d+ ms exceeded/);
    }
    const next = await get('/landed');
    assert.equal(next.status, 200, next.text);
  });
});
