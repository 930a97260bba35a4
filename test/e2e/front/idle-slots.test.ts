// An idle service keeps one slot process (slot 0's, with its Chromium): the
// others are closed after IDLE_SLOT_CLOSE_MS with no request, their Chromium
// with them, and started again when requests need their slots (issue 20: the
// process tree at rest; issue 32: a process per slot).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../../helpers/fixtures.js';
import { capturingLogger, serviceFor } from '../../helpers/service.js';
import { alive } from '../../helpers/system.js';
import { until } from '../../helpers/wait.js';

const fixtures = new FixtureServer({ '/example': html(EXAMPLE_DOMAIN_HTML) });
const log = capturingLogger();
const svc = serviceFor(fixtures, { MAX_CONCURRENCY: '2', IDLE_SLOT_CLOSE_MS: '1500' }, {}, log.logger);

const closedWhileIdle = (): number => log.lines.filter((l) => l.msg === 'slot process closed while idle').length;

/** Two requests at once, each holding its slot for a second: both slots are used. */
async function twoAtOnce(): Promise<void> {
  const script = 'await new Promise((r) => setTimeout(r, 1000)); return await page.title()';
  const rs = await Promise.all([0, 1].map(() => svc.post({ url: fixtures.url('/example'), script })));
  for (const r of rs) {
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data, 'Example Domain');
  }
}

test('the slot processes past the first are closed with their Chromium while idle, and started again when two requests come', async () => {
  const slots = (): (number | undefined)[] => svc.service.slots.slotPids;
  await until(() => svc.service.browser.ready && slots().every((p) => p !== undefined), 'both slots to be up', {
    timeoutMs: 60_000,
  });
  const { restarts } = svc.service.slots;
  const browserRestarts = svc.service.browser.restarts;
  // Under load the second slot may already have been closed (and started again) while the first came up.
  const closedBefore = closedWhileIdle();
  await twoAtOnce();
  const [first, second] = slots();
  assert.ok(first !== undefined && second !== undefined);
  const secondChromium = svc.service.browser.pids.filter((p) => p !== svc.service.browser.pid);
  await until(() => slots()[1] === undefined, 'the second slot process to be closed', { timeoutMs: 20_000 });
  assert.equal(closedWhileIdle(), closedBefore + 1);
  assert.equal(slots()[0], first, 'the first slot’s process is kept');
  await until(() => !alive(second) && secondChromium.every((p) => !alive(p)), 'it and its Chromium to be gone');
  await twoAtOnce();
  assert.ok(slots()[1] !== undefined && slots()[1] !== second, 'the second slot has a new process');
  assert.equal(svc.service.slots.restarts, restarts, 'not counted as a restart');
  assert.equal(svc.service.browser.restarts, browserRestarts, 'nor as a Chromium restart');
  const started = (): Record<string, unknown> | undefined =>
    log.lines.find((l) => l.msg === 'slot process ready' && l.onDemand === true);
  await until(() => started() !== undefined, 'the second slot’s new process to be ready', { timeoutMs: 60_000 });
  assert.equal(typeof started()?.startMs, 'number', 'the start on demand is logged with its time');
  // One request at a time after an idle spell uses the first slot: nothing is started for it.
  await until(() => slots()[1] === undefined, 'closed again', { timeoutMs: 20_000 });
  const r = await svc.post({ url: fixtures.url('/example'), script: 'return await page.title()' });
  assert.equal(r.status, 200, r.text);
  assert.equal(slots()[1], undefined, 'no slot process was started for a lone request');
});
