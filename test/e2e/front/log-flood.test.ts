// A page or a script chooses how often it is refused, and each refusal used to
// be one log line: measured, a page's fetch loop made ~220 lines a second and a
// script's page.goto loop ~3,900. Past the first MAX_REFUSALS_LOGGED_PER_REQUEST
// of a request, refusals are counted (the request's egress.refused, the
// metric), not logged one by one.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { FixtureServer, html } from '../../helpers/fixtures.js';
import { capturingLogger, startTestService, type TestService } from '../../helpers/service.js';
import { MAX_REFUSALS_LOGGED_PER_REQUEST } from '../../../src/protocol/egress.js';

const fixtures = new FixtureServer({
  '/plain': html('<!doctype html><title>plain</title>'),
  // Private addresses, each refused by the guard.
  '/fetch-loop': html(`<!doctype html><title>loop</title><script>
    let n = 0;
    window.failed = 0;
    const go = () => { for (let i = 0; i < 50; i++) fetch('http://10.0.' + ((n >> 8) & 255) + '.' + (n++ & 255) + ':81/').catch(() => window.failed++); setTimeout(go, 10); };
    go();
  </script>`),
});
const log = capturingLogger();
let svc: TestService;
before(async () => {
  await fixtures.start();
  // Time enough on a loaded machine: the tests wait for events, not for the clock.
  svc = await startTestService(
    { EGRESS_ALLOWLIST: fixtures.allowEntry, SCRIPT_TIMEOUT_MS: '60000', NAVIGATION_TIMEOUT_MS: '60000' },
    { egressSeam: {} },
    log.logger,
  );
});
after(async () => {
  await svc.close();
  await fixtures.close();
});

const refusalLines = (requestId: unknown): number =>
  log.lines.filter((l) => l.msg === 'egress refused' && l.requestId === requestId).length;
const doneLine = (): Record<string, unknown> | undefined => log.lines.findLast((l) => l.msg === 'scrape done');

test('a page refused over and over: its first refusals are logged, the rest only counted', async () => {
  // The page counts its own failed fetches; the script waits until there are plenty.
  const script = `while ((await page.evaluate(() => window.failed)) < ${2 * MAX_REFUSALS_LOGGED_PER_REQUEST}) await new Promise((r) => setTimeout(r, 50)); return 1`;
  const r = await svc.post({ url: fixtures.url('/fetch-loop'), script });
  assert.equal(r.status, 200, r.text);
  const done = doneLine();
  const refused = (done?.egress as { refused?: number } | undefined)?.refused ?? 0;
  assert.ok(refused > MAX_REFUSALS_LOGGED_PER_REQUEST, `refusals counted: ${refused}`);
  assert.equal(refusalLines(done?.requestId), MAX_REFUSALS_LOGGED_PER_REQUEST);
});

test('a script refused over and over (page.goto to a private address): its first refusals are logged, the rest not', async () => {
  const tries = 2 * MAX_REFUSALS_LOGGED_PER_REQUEST;
  const script = `let refused = 0; for (let i = 0; i < ${tries}; i++) { try { await page.goto('http://10.1.2.3/' + i); } catch { refused++; } } return refused`;
  const r = await svc.post({ url: fixtures.url('/plain'), script });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.data, tries);
  assert.equal(refusalLines(doneLine()?.requestId), MAX_REFUSALS_LOGGED_PER_REQUEST);
});
