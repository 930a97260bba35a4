// A script whose isolate cannot be stopped. Disposing an isolate stops
// JavaScript at its next interrupt check, but some of V8's builtins run in C++
// without one: indexOf on a sparse array of length 2^32-1 runs ~100 s on this
// machine, holding a core past any deadline. isolated-vm reports the case it
// sees (its own time limit on the script's first turn: a catastrophic error,
// "Script failed to terminate"); the sandbox sees the rest (an isolate still
// busy 10 s after it was disposed). Either way the slot process ends, as
// isolated-vm's README says it must: the script's own request has had its
// timeout, the other request running on that slot process fails with 500, the
// queued one is served by a fresh slot process, and the restart is counted.
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../../helpers/fixtures.js';
import { capturingLogger, startTestService, type Reply, type TestService } from '../../helpers/service.js';
import { alive } from '../../helpers/system.js';
import { until } from '../../helpers/wait.js';

/** Responses held open: a navigation that is still running when the slot process ends. */
const held = new Set<ServerResponse>();
const fixtures = new FixtureServer({
  '/example': html(EXAMPLE_DOMAIN_HTML),
  '/hold': (_req, res) => void held.add(res),
});
const TOKEN = 'metrics-token-0123456789';
const AUTH = { headers: { authorization: `Bearer ${TOKEN}` } };
const log = capturingLogger();
let svc: TestService;

before(async () => {
  await fixtures.start();
  svc = await startTestService(
    {
      EGRESS_ALLOWLIST: fixtures.allowEntry,
      MAX_CONCURRENCY: '2',
      SCRIPT_TIMEOUT_MS: '2000',
      NAVIGATION_TIMEOUT_MS: '60000',
      METRICS_TOKEN: TOKEN,
    },
    {},
    log.logger,
  );
});
after(async () => {
  for (const res of held) res.destroy();
  await svc.close();
  await fixtures.close();
});

/** ~100 s of C++ with no interrupt check, and no memory to speak of (measured). */
const UNSTOPPABLE = 'const a = []; a[2 ** 32 - 2] = 1; a.indexOf(2);';
const run = (path: string, script: string): Promise<Reply> => svc.post({ url: fixtures.url(path), script });
const health = async (): Promise<Record<string, unknown>> => (await svc.raw('GET', '/health', AUTH)).body;

/** The process of the busy slot (other than the one of `besides`). */
function runningIn(besides?: number): number | undefined {
  const { busySlots, slotPids } = svc.service.slots;
  return slotPids.find((pid, i) => busySlots[i] === true && pid !== undefined && pid !== besides);
}

async function runaway(script: string, logged: RegExp): Promise<void> {
  await until(() => svc.service.browser.pid !== undefined, 'the first slot process to report its Chromium');
  const restarts = svc.service.slots.restarts;
  // Another tenant's request, still navigating, in the first slot's process.
  const other = run('/hold', 'return 1');
  await until(async () => (await health()).running === 1, 'the other request to run');
  // Which slot a request takes depends on the slots' state (choose() in the supervisor): ask, do not assume.
  // (A request counts as running before its slot is given: the slot may still be starting.)
  await until(() => runningIn() !== undefined, 'the other request to have its slot');
  const otherPid = runningIn();
  assert.ok(otherPid !== undefined);
  const bomb = run('/example', script);
  await until(async () => (await health()).running === 2, 'the script to run');
  await until(() => runningIn(otherPid) !== undefined, 'the bomb to have a slot process of its own');
  const pid = runningIn(otherPid);
  assert.ok(pid !== undefined);
  const queued = run('/example', 'return await page.title()');
  await until(async () => (await health()).queued === 1, 'a third request to queue');

  const own = await bomb;
  assert.equal(own.status, 400, own.text);
  assert.match(String(own.body.error), /timed out after 2000 ms/);
  // Its slot process ended; the other tenant's, in a process of its own, did not: its page loads when let go.
  for (const res of held) res.end('<title>held</title>');
  held.clear();
  const r = await other;
  assert.equal(r.status, 200, r.text);
  assert.ok(svc.service.slots.pids.includes(otherPid), "the other request's slot process lived");
  const next = await queued;
  assert.equal(next.status, 200, next.text);
  assert.equal(next.body.data, 'Example Domain');
  // The slot process ends itself ISOLATE_STOP_GRACE_MS (10 s) after the disposal: the wait covers that whatever
  // else took (the default 10 s did not, once the other requests were served sooner).
  await until(async () => (await health()).slotRestarts === restarts + 1, "the bomb's slot process replaced", {
    timeoutMs: 30_000,
  });
  const metrics = await svc.raw('GET', '/metrics', AUTH);
  assert.match(metrics.text, new RegExp(`^pagescript_slot_restarts_total ${restarts + 1}$`, 'm'));
  assert.match(metrics.text, new RegExp(`^pagescript_executor_restarts_total ${restarts + 1}$`, 'm'), 'deprecated');
  const fatal = log.lines.find((l) => l.level === 50 && l.fatal === true && logged.test(JSON.stringify(l.err)));
  assert.ok(fatal, `logged: ${logged}`);
  // It ended itself: exit() would have waited for ever on the stuck thread, leaving the front's deadline to kill it.
  assert.ok(!log.lines.some((l) => /reached its deadline/.test(String(l.msg))), 'the slot process ended itself');
  await until(() => !alive(pid), "the bomb's slot process to be gone");
}

describe('a script that its isolate cannot stop', () => {
  test('in its first turn: isolated-vm’s catastrophic error ends the slot process; the other running request is served', async () => {
    await runaway(`${UNSTOPPABLE} return 1`, /Script failed to terminate/);
  });

  test('after a page call: the isolate still busy after its disposal ends the slot process; the other running request is served', async () => {
    await runaway(`await page.title(); ${UNSTOPPABLE} return 1`, /went on running 10000 ms after it was disposed/);
  });
});
