// What a slot says of its own Chromium (its `status` message) is its word, and
// one slot's word must not decide whether the instance gets requests: with one
// slot (MAX_CONCURRENCY=1, or once the others were closed while idle), a slot
// that says its Chromium is not ready would make /ready 503 for every tenant,
// and its balancer would take the instance out. /ready and /health follow the
// front's own view of its slot processes (Supervisor.serving).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../../helpers/fixtures.js';
import { serviceFor } from '../../helpers/service.js';
import { until } from '../../helpers/wait.js';

const fixtures = new FixtureServer({ '/example': html(EXAMPLE_DOMAIN_HTML) });
const svc = serviceFor(
  fixtures,
  { MAX_CONCURRENCY: '1', NAVIGATION_TIMEOUT_MS: '3000', SCRIPT_TIMEOUT_MS: '3000' },
  { egressSeam: { faults: true } },
);
const NOT_READY = {
  type: 'status',
  browser: { ready: false, pids: [], restarts: 0, recycles: 0, contextsReady: 0 },
};

/** Slot 0's process says its Chromium is not ready; resolves once the front has read it. */
async function saysNotReady(): Promise<void> {
  svc.service.slots.fault('send', NOT_READY, 0);
  await until(() => !svc.service.browser.ready, 'the front to read the forged status');
}

async function probes(): Promise<{ ready: number; health: number }> {
  const [ready, health] = await Promise.all([svc.raw('GET', '/ready'), svc.raw('GET', '/health')]);
  return { ready: ready.status, health: health.status };
}

/** The slot is free and has said so of its Chromium (its next context prepared): no honest status is due. */
async function quiet(): Promise<void> {
  await until(
    () => !svc.service.slots.busySlots[0] && svc.service.browser.ready && svc.service.browser.contextsReady > 0,
    'the slot to have prepared its next context',
    { timeoutMs: 60_000 },
  );
}

test('a slot that says its Chromium is not ready: /ready and /health stay 200 while it serves', async () => {
  await until(
    () => svc.service.browser.ready && svc.service.slots.readyPids.length === 1,
    'the slot process to be ready',
    { timeoutMs: 60_000 },
  );
  await until(async () => (await svc.raw('GET', '/ready')).status === 200, '/ready to be 200', { timeoutMs: 60_000 });
  const pid = svc.service.slots.slotPids[0];
  await quiet();
  await saysNotReady();
  assert.deepEqual(await probes(), { ready: 200, health: 200 });
  // The slot process serves, as the front itself sees it.
  const served = await svc.post({ url: fixtures.url('/example'), script: 'return await page.title()' });
  assert.equal(served.status, 200, served.text);
  assert.deepEqual(svc.service.slots.slotPids, [pid]);
  // Said again after its own honest reports (which come as its Chromium changes).
  await quiet();
  await saysNotReady();
  assert.deepEqual(await probes(), { ready: 200, health: 200 });
});
