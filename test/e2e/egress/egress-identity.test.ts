// The guard knows whose request it carries, end to end with real Chromium:
// Chromium's own requests (made with no request running) are let out by
// nothing, and a page's refused request is logged under its own request's id.
// The idle test waits a minute, so it runs beside the others (concurrency).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FixtureServer, html } from '../../helpers/fixtures.js';
import { capturingLogger, startTestService } from '../../helpers/service.js';

/** The issue's figure; PAGESCRIPT_IDLE_TEST_MS shortens it for a quick run. */
const IDLE_MS = Number(process.env.PAGESCRIPT_IDLE_TEST_MS ?? 60_000);

const fixtures = new FixtureServer({
  '/ok': html('<title>OK</title>'),
  '/metadata': html('<title>m</title><img src="http://169.254.169.254/latest/meta-data/">'),
  '/private': html('<title>p</title><img src="http://10.0.0.8/secret">'),
});

describe('the egress guard and requests', { concurrency: true }, () => {
  test(`a service left idle for ${IDLE_MS / 1000} s with Chromium running lets no connection out through the guard, and what Chromium tries on its own belongs to no request`, async (t) => {
    const log = capturingLogger();
    // The guard is in a slot process: the seam (names by the system's resolver, real dials) lets the test ask its counts.
    const svc = await startTestService({}, { egressSeam: { systemResolver: true } }, log.logger);
    try {
      await new Promise((r) => setTimeout(r, IDLE_MS));
      const counts = await svc.service.guard.counts();
      const refused = log.lines.filter((l) => l.msg === 'egress refused');
      t.diagnostic(
        `guard: ${JSON.stringify(counts)}; Chromium tried: ${[...new Set(refused.map((l) => `${String(l.host)}:${String(l.port)}`))].join(', ') || 'nothing'}`,
      );
      assert.equal(counts.upstreamConnections, 0, 'no connection left the guard');
      for (const l of refused) assert.equal(l.requestId, undefined, 'no request ran');
      assert.ok(counts.unclaimed >= refused.length);
    } finally {
      await svc.close();
    }
  });

  test("a page's refused request shows up in its own request's log line, and two requests at once are told apart", async () => {
    await fixtures.start();
    const log = capturingLogger();
    const svc = await startTestService({ EGRESS_ALLOWLIST: fixtures.allowEntry }, {}, log.logger);
    try {
      const script = 'await new Promise((r) => setTimeout(r, 300)); return await page.title()';
      const [a, b] = await Promise.all([
        svc.post({ url: fixtures.url('/metadata'), script }, { 'x-request-id': 'identity-a' }),
        svc.post({ url: fixtures.url('/private'), script }, { 'x-request-id': 'identity-b' }),
      ]);
      assert.equal(a.status, 200, a.text);
      assert.equal(b.status, 200, b.text);
      const refusals = (id: string): string[] =>
        log.lines.filter((l) => l.msg === 'egress refused' && l.requestId === id).map((l) => String(l.host));
      assert.deepEqual(refusals('identity-a'), ['169.254.169.254']);
      assert.deepEqual(refusals('identity-b'), ['10.0.0.8']);
      const done = log.lines.find((l) => l.msg === 'scrape done' && l.requestId === 'identity-a');
      const egress = done?.egress as { connections: number; refused: number; bytesReceived: number } | undefined;
      assert.ok(egress, 'the request line reports its egress');
      assert.equal(egress.refused, 1);
      assert.ok(egress.connections >= 1 && egress.bytesReceived > 0, JSON.stringify(egress));
    } finally {
      await svc.close();
      await fixtures.close();
    }
  });
});
