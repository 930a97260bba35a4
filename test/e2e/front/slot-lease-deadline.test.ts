// A slot process that takes a job and never prepares it (stopped, as a process an
// earlier tenant froze or a deadlock would leave it) holds the request only until
// LEASE_DEADLINE_MS, not until the job's deadline: the front answers the job as
// the service's own lateness, replaces the process, and the request is served by
// the replacement within its queue time.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../../helpers/fixtures.js';
import { capturingLogger, startTestService, type TestService } from '../../helpers/service.js';
import { alive } from '../../helpers/system.js';
import { until } from '../../helpers/wait.js';
import { jobDeadlineMs, LEASE_DEADLINE_MS } from '../../../src/front/jobs/job-deadline.js';
import { LOOKUP_DEADLINE_MS } from '../../../src/egress/checker.js';
import { EGRESS_WAIT_TIMEOUT_MS } from '../../../src/slot/egress-client/remote.js';

const fixtures = new FixtureServer({ '/example': html(EXAMPLE_DOMAIN_HTML) });
const log = capturingLogger();
let svc: TestService;
/** Every process this file stopped is killed in the end, whatever failed. */
const stopped = new Set<number>();

before(async () => {
  await fixtures.start();
  svc = await startTestService(
    {
      EGRESS_ALLOWLIST: fixtures.allowEntry,
      // One slot: the request goes to the process stopped.
      MAX_CONCURRENCY: '1',
      // A job's deadline far past the lease's: without the lease deadline the request waits for the job's.
      NAVIGATION_TIMEOUT_MS: '15000',
      SCRIPT_TIMEOUT_MS: '60000',
    },
    {},
    log.logger,
  );
});
after(async () => {
  for (const pid of stopped) if (alive(pid)) process.kill(pid, 'SIGKILL');
  await svc.close();
  await fixtures.close();
});

test("the lease deadline lies past the slot's own waits in preparation", () => {
  // The slot answers its own lateness first (a 503 it names) when it works: the front's deadline is for one that does not.
  assert.ok(LEASE_DEADLINE_MS > EGRESS_WAIT_TIMEOUT_MS, 'past the wait for a replaced egress process');
  assert.ok(LEASE_DEADLINE_MS > LOOKUP_DEADLINE_MS, "past the page's name lookup");
});

test('a request given to a stopped slot is served by its replacement once the lease deadline passes, not at the job deadline', async () => {
  const deadlineMs = jobDeadlineMs(svc.service.config, { script: 'return 1' });
  assert.ok(deadlineMs > LEASE_DEADLINE_MS * 2, `the job's deadline (${deadlineMs} ms) is far past the lease's`);
  await until(() => svc.service.browser.contextsReady >= 1, 'a spare context', { timeoutMs: 60_000 });
  const warm = await svc.post({ url: fixtures.url('/example'), script: 'return await page.title()' });
  assert.equal(warm.status, 200, warm.text);
  await until(() => !svc.service.slots.busySlots.some(Boolean), 'the slot to be free again');
  const restarts = svc.service.slots.restarts;
  const [pid] = svc.service.slots.slotPids;
  assert.ok(pid !== undefined);
  stopped.add(pid);
  process.kill(pid, 'SIGSTOP');
  const r = await svc.post({ url: fixtures.url('/example'), script: 'return await page.title()' });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.data, 'Example Domain');
  const late = log.lines.find((l) => /did not prepare for a request in time/.test(String(l.msg)));
  assert.ok(late, 'the lease deadline answered the job and is logged');
  assert.equal(late.pid, pid);
  assert.equal(late.leaseMs, LEASE_DEADLINE_MS);
  assert.ok(!log.lines.some((l) => /reached its deadline/.test(String(l.msg))), "the job's deadline never came");
  await until(() => svc.service.slots.restarts === restarts + 1, 'the stopped slot process to be replaced');
  await until(() => !alive(pid), 'the stopped slot process to be gone');
});
