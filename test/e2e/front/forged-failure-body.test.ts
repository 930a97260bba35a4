// Attack (H15, compromised slot process): a `failed` message whose `failure` passes
// the front's checks (src/protocol/jobs.ts isFailure: every known field of the right kind)
// but carries one more field, which errorBody (src/front/http/reply.ts) copies into
// the reply. A value JSON cannot write (a BigInt, a cycle) cannot cross the
// front's wire (JSON lines) at all: the slot process that tries fails, and the reply
// must still be sent (a 500, or the message refused and the slot process killed),
// never leave the client waiting.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../../helpers/fixtures.js';
import { capturingLogger, serviceFor } from '../../helpers/service.js';
import { until } from '../../helpers/wait.js';

const fixtures = new FixtureServer({ '/example': html(EXAMPLE_DOMAIN_HTML) });
const log = capturingLogger();
// faults: the slot processes send what the test gives them, as a compromised one would.
const svc = serviceFor(fixtures, {}, { egressSeam: { faults: true } }, log.logger);

test('a forged failure whose extra field JSON cannot write still gets its client an answer', async () => {
  await until(() => svc.service.browser.ready, 'a slot process to be ready', { timeoutMs: 60_000 });
  // Job ids are given from 1, one per request: this request is job 1.
  const slow = svc.post({
    url: fixtures.url('/example'),
    script: 'await new Promise((r) => setTimeout(r, 20000)); return 1',
  });
  await until(() => (fixtures.hits.get('/example') ?? 0) > 0, 'job 1 to load its page in the slot process');
  svc.service.slots.fault('send', {
    type: 'failed',
    id: 1,
    error: { code: 'SCRAPING_FAILED', message: 'x', failure: { phase: 'script', extra: [{ toJSON: null }, 10] } },
  });
  const r = await Promise.race([
    slow,
    new Promise<'no answer'>((resolve) => setTimeout(() => resolve('no answer'), 15_000).unref()),
  ]);
  assert.notEqual(r, 'no answer', 'the client got no answer long after the failure came');
});
