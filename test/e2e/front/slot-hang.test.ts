// A slot process or the egress process that hangs without dying (here: stopped
// with SIGSTOP, as a deadlock or a thread stuck in native code would leave it).
// The front's questions to the egress process fail at their deadline instead of
// waiting for ever, or at once when it exits; a request given to a hung slot
// process is answered by the front at the request's deadline (400
// SCRAPING_FAILED, the timeout), the process is killed and replaced, and the
// next request is served.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../../helpers/fixtures.js';
import { capturingLogger, startTestService, type TestService } from '../../helpers/service.js';
import { alive } from '../../helpers/system.js';
import { until } from '../../helpers/wait.js';
import { jobDeadlineMs } from '../../../src/front/jobs/job-deadline.js';

const fixtures = new FixtureServer({
  '/example': html(EXAMPLE_DOMAIN_HTML),
  '/script-running': html('ok'),
});
const log = capturingLogger();
let svc: TestService;
/** Every process this file stopped is killed in the end, whatever failed. */
const stopped = new Set<number>();

before(async () => {
  await fixtures.start();
  svc = await startTestService(
    // One slot: the request goes to the process stopped. With two, it went to slot 1 whenever slot 1 had a
    // spare context and slot 0 not yet (the front prefers a slot with one), and was served (200).
    {
      EGRESS_ALLOWLIST: fixtures.allowEntry,
      MAX_CONCURRENCY: '1',
      // Room for the script to reach its fetch on a loaded machine before its own limit ends it.
      SCRIPT_TIMEOUT_MS: '3000',
      NAVIGATION_TIMEOUT_MS: '1000',
    },
    { egressSeam: {} },
    log.logger,
  );
});
after(async () => {
  for (const pid of stopped) if (alive(pid)) process.kill(pid, 'SIGKILL');
  await svc.close();
  await fixtures.close();
});

/** Stops slot 0's process (a ready one: the tests wait for that first), the only slot. */
function stop(): number {
  assert.ok(svc.service.browser.ready, 'a slot process is ready');
  const [pid] = svc.service.slots.slotPids;
  assert.ok(pid !== undefined);
  stopped.add(pid);
  process.kill(pid, 'SIGSTOP');
  return pid;
}

/** Stops the egress process (a ready one). */
function stopEgress(): number {
  const pid = svc.service.egress.pid;
  assert.ok(pid !== undefined, 'the egress process is ready');
  stopped.add(pid);
  process.kill(pid, 'SIGSTOP');
  return pid;
}

describe('an egress process that hangs without dying', () => {
  test('a question it never answers fails at its deadline, not never; once resumed it answers again', async () => {
    assert.equal(typeof (await svc.service.guard.counts()).clientConnections, 'number', 'control: it answers');
    const pid = stopEgress();
    try {
      await assert.rejects(svc.service.egress.guardCounts(300), /did not answer guard-counts within 300 ms/);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    assert.equal(typeof (await svc.service.guard.counts()).clientConnections, 'number', 'it answers again');
  });

  test('closing its guard fails at the deadline too (the process is then replaced: its guard may close late)', async () => {
    const pid = stopEgress();
    const restarts = svc.service.egress.restarts;
    await assert.rejects(svc.service.egress.closeGuard(300), /did not answer close-guard within 300 ms/);
    process.kill(pid, 'SIGKILL');
    await until(() => svc.service.egress.restarts === restarts + 1, 'the egress process to be replaced');
    await until(() => svc.service.egress.ready, 'its replacement to be ready', { timeoutMs: 60_000 });
  });

  test('a question fails at once when the egress process exits before it answers', async () => {
    const pid = stopEgress();
    const restarts = svc.service.egress.restarts;
    const asked = svc.service.egress.guardCounts(600_000);
    process.kill(pid, 'SIGKILL');
    await assert.rejects(asked, /exited \(SIGKILL\) before it answered/);
    await until(() => svc.service.egress.restarts === restarts + 1, 'the egress process to be replaced');
    await until(() => svc.service.egress.ready, 'its replacement to be ready', { timeoutMs: 60_000 });
  });
});

describe('a slot process that hangs without dying', () => {
  test('a request whose script runs in it is answered 400 at its deadline by the front; the slot process is killed and replaced', async () => {
    await until(() => svc.service.browser.ready, 'a slot process to be ready', { timeoutMs: 60_000 });
    // Served once first: a slot is given a job only with the current egress process's channel (the tests
    // above replaced that process), so the next request goes to this process.
    const warm = await svc.post({ url: fixtures.url('/example'), script: 'return await page.title()' });
    assert.equal(warm.status, 200, warm.text);
    const restarts = svc.service.slots.restarts;
    const hits = fixtures.hits.get('/script-running') ?? 0;
    const pending = svc.post({
      url: fixtures.url('/example'),
      script:
        "await page.evaluate(() => fetch('/script-running')); await new Promise((r) => setTimeout(r, 10000)); return 1",
    });
    // Stopped once its script runs: past its preparation, the request is the caller's own work. Answered
    // before that (its preparation late on a loaded machine), the failure says how.
    const ran = until(() => (fixtures.hits.get('/script-running') ?? 0) > hits, 'the script to run', {
      timeoutMs: 60_000,
    });
    const first = await Promise.race([ran.then(() => undefined), pending]);
    if (first !== undefined) assert.fail(`answered before its script ran: ${first.status} ${first.text}`);
    const pid = stop();
    const r = await pending;
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.code, 'SCRAPING_FAILED');
    const deadlineMs = jobDeadlineMs(svc.service.config);
    assert.match(String(r.body.error), new RegExp(`did not finish within ${deadlineMs} ms`));
    const hung = log.lines.find((l) => /reached its deadline/.test(String(l.msg)));
    assert.ok(hung, 'the kill is logged');
    assert.equal(hung.pid, pid);
    assert.equal(hung.deadlineMs, deadlineMs);
    // Answered first, then killed: its exit is counted once it is seen.
    await until(() => svc.service.slots.restarts === restarts + 1, 'the hung slot process to be replaced');
    await until(() => !alive(pid), 'the hung slot process to be gone');
    const next = await svc.post({ url: fixtures.url('/example'), script: 'return await page.title()' });
    assert.equal(next.status, 200, next.text);
    assert.equal(next.body.data, 'Example Domain');
  });

  test('a request given to it before it prepared is the service’s lateness: served by its replacement, never 400', async () => {
    await until(() => svc.service.browser.contextsReady >= 1, 'a spare context', { timeoutMs: 30_000 });
    const warm = await svc.post({ url: fixtures.url('/example'), script: 'return await page.title()' });
    assert.equal(warm.status, 200, warm.text);
    const restarts = svc.service.slots.restarts;
    const pid = stop();
    const r = await svc.post({ url: fixtures.url('/example'), script: 'return await page.title()' });
    // Its lease never answered by the deadline: a 503 another slot makes good within the queue time.
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data, 'Example Domain');
    await until(() => svc.service.slots.restarts === restarts + 1, 'the hung slot process to be replaced');
    await until(() => !alive(pid), 'the hung slot process to be gone');
  });
});
