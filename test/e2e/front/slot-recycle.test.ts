// SLOT_RECYCLE_REQUESTS: a slot process is replaced, with its Chromium, after
// serving that many requests, so that its memory starts afresh; no request is
// lost to it, and the replacement serves the next.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../../helpers/fixtures.js';
import { startTestService, type TestService } from '../../helpers/service.js';
import { until } from '../../helpers/wait.js';

const fixtures = new FixtureServer({ '/example': html(EXAMPLE_DOMAIN_HTML) });
const EVERY = 3;
let svc: TestService;

before(async () => {
  await fixtures.start();
  svc = await startTestService({
    EGRESS_ALLOWLIST: fixtures.allowEntry,
    MAX_CONCURRENCY: '1',
    SLOT_RECYCLE_REQUESTS: String(EVERY),
  });
});

after(async () => {
  await svc?.close();
  await fixtures.close();
});

test(`a slot process is retired after ${EVERY} requests and replaced; every request is served`, async () => {
  const pids = new Set<number>();
  for (let n = 0; n < 2 * EVERY + 1; n++) {
    const r = await svc.post({ url: fixtures.url('/example'), script: 'return await page.title()' });
    assert.equal(r.status, 200, r.text);
    // The replacement is started as the retired process closes: the next request waits for it if need be.
    await until(() => svc.service.slots.slotPids[0] !== undefined, 'the slot to have a process');
    pids.add(svc.service.slots.slotPids[0] as number);
  }
  await until(() => svc.service.slots.recycles === 2, 'two retirements');
  assert.equal(pids.size, 3, `processes seen: ${[...pids].join(', ')}`);
});
