// An idle service keeps one Chromium per executor: the others (one per request
// slot, src/slot/browser/lanes.ts) are closed after IDLE_CHROMIUM_CLOSE_MS with no
// request and launched again when requests need their slots (issue 20: the
// process tree at rest).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../helpers/fixtures.js';
import { capturingLogger, serviceFor } from '../helpers/service.js';
import { alive } from '../helpers/system.js';
import { until } from '../helpers/wait.js';

const fixtures = new FixtureServer({ '/example': html(EXAMPLE_DOMAIN_HTML) });
const log = capturingLogger();
const svc = serviceFor(fixtures, { MAX_CONCURRENCY: '2', IDLE_CHROMIUM_CLOSE_MS: '1500' }, {}, log.logger);

const closedWhileIdle = (): number => log.lines.filter((l) => l.msg === 'chromium closed while idle').length;

/** Two requests at once, each holding its slot for a second: both of the executor's lanes are used. */
async function twoAtOnce(): Promise<void> {
  const script = 'await new Promise((r) => setTimeout(r, 1000)); return await page.title()';
  const rs = await Promise.all([0, 1].map(() => svc.post({ url: fixtures.url('/example'), script })));
  for (const r of rs) {
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data, 'Example Domain');
  }
}

test('the Chromiums past the first are closed while the service is idle, and launched again when two requests come', async () => {
  await until(() => svc.service.browser.ready && svc.service.browser.pids.length === 2, 'both lanes to be up', {
    timeoutMs: 60_000,
  });
  const { restarts, recycles } = svc.service.browser;
  await twoAtOnce();
  const both = [...svc.service.browser.pids];
  await until(() => svc.service.browser.pids.length === 1, 'the second Chromium to be closed', { timeoutMs: 20_000 });
  assert.equal(closedWhileIdle(), 1);
  const [kept] = svc.service.browser.pids;
  assert.ok(kept !== undefined && both.includes(kept), 'the first lane’s Chromium is kept');
  await until(() => both.filter((p) => p !== kept).every((p) => !alive(p)), 'the closed one’s process to be gone');
  await twoAtOnce();
  await until(() => svc.service.browser.pids.length === 2, 'the second lane to be up again');
  assert.equal(svc.service.browser.restarts, restarts, 'not counted as a restart');
  assert.equal(svc.service.browser.recycles, recycles, 'nor as a recycle');
  // One request at a time after an idle spell uses the first lane: nothing is launched for it.
  await until(() => svc.service.browser.pids.length === 1, 'closed again', { timeoutMs: 20_000 });
  const r = await svc.post({ url: fixtures.url('/example'), script: 'return await page.title()' });
  assert.equal(r.status, 200, r.text);
  await new Promise((res) => setTimeout(res, 300));
  assert.equal(svc.service.browser.pids.length, 1);
});
