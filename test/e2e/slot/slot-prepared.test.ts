// A slot is offered to the next request only once its work after a request's
// answer is done (src/slot/main.ts prepared): the context closed, its next
// context and isolate made. The next request then waits for that in the queue,
// where fairness is decided, instead of leasing beside it and being billed for
// it; the work's CPU is the service's (pagescript_slot_preparation_cpu_seconds_total).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../../helpers/fixtures.js';
import { serviceFor } from '../../helpers/service.js';
import { until } from '../../helpers/wait.js';

const TOKEN = 'metrics-token-0123456789abcdef';
const fixtures = new FixtureServer({ '/example': html(EXAMPLE_DOMAIN_HTML) });
const svc = serviceFor(fixtures, { MAX_CONCURRENCY: '1', METRICS_TOKEN: TOKEN });

test('a slot is free again only with its next context made: every request leases a context made ahead', async () => {
  const x = svc.service.slots;
  for (let i = 0; i < 5; i++) {
    const r = await svc.post({ url: fixtures.url('/example'), script: 'return await page.title()' });
    assert.equal(r.status, 200, r.text);
    await until(() => !x.busySlots[0], 'the slot to be free');
    // Read in the same turn as the slot is seen free: its status came before its word that the job is closed.
    assert.ok(x.browser.contextsReady >= 1, `request ${i}: the slot was offered before its next context was made`);
  }
});

test("the slot's work after an answer is counted as the service's own CPU", async () => {
  const r = await svc.raw('GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
  const seconds = Number(/^pagescript_slot_preparation_cpu_seconds_total (\S+)$/m.exec(r.text)?.[1]);
  assert.ok(seconds > 0, `pagescript_slot_preparation_cpu_seconds_total ${seconds}`);
});
