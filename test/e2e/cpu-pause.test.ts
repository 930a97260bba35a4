// CPU between requests: a request's renderer that has used its CPU budget is
// stopped for most of each watchdog poll while another request runs (SIGSTOP,
// SIGCONT; src/slot/browser/page-memory.ts PAGE_CPU_PAUSE_MS). Each slot is a
// process of its own: the front tells it whether another slot's request runs
// (src/front/children/cpu-share.ts). Shown here on a real service: a busy
// renderer is seen stopped while another slot's request is served; and a slot
// process killed while it held a renderer stopped leaves nothing stopped
// behind (the front continues it; it then exits with its Chromium, which lost its pipe).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../helpers/fixtures.js';
import { WORKING_BESIDE } from '../helpers/scripts.js';
import { capturingLogger, serviceFor, startTestService } from '../helpers/service.js';
import { alive, descendants, statFields } from '../helpers/system.js';
import { until } from '../helpers/wait.js';

const fixtures = new FixtureServer({ '/example': html(EXAMPLE_DOMAIN_HTML) });
const log = capturingLogger();
const svc = serviceFor(fixtures, { MAX_CONCURRENCY: '2', SCRIPT_TIMEOUT_MS: '8000' }, {}, log.logger);

const BUSY = 'await page.evaluate(() => { for (;;) {} })';

const stopped = (pid: number): boolean => statFields(pid)?.[0] === 'T';

/** Processes of the service's Chromiums that are stopped now, by lane (its browser's pid). */
function stoppedByLane(): Map<number, number[]> {
  const out = new Map<number, number[]>();
  for (const root of svc.service.browser.pids) {
    const pids = [root, ...descendants(root)].filter(stopped);
    if (pids.length > 0) out.set(root, pids);
  }
  return out;
}

function stoppedChromium(): number[] {
  return [...stoppedByLane().values()].flat();
}

test('a busy renderer is stopped while another slot’s request runs, and runs again in between; the other is served', async () => {
  await until(() => svc.service.browser.ready, 'the browser to be ready', { timeoutMs: 60_000 });
  const busy = svc.post({ url: fixtures.url('/example'), script: BUSY });
  const beside = svc.post({ url: fixtures.url('/example'), script: WORKING_BESIDE });
  const lanesSeen = new Set<number>();
  const sample = (): number[] => {
    const byLane = stoppedByLane();
    for (const lane of byLane.keys()) lanesSeen.add(lane);
    return [...byLane.values()].flat();
  };
  await until(() => sample().length > 0, 'the busy lane to be stopped', { timeoutMs: 20_000 });
  const [paused] = sample() as [number];
  await until(() => sample().length >= 0 && !stopped(paused), 'the busy lane to run again');
  await until(() => sample().length > 0, 'and to be stopped again', { timeoutMs: 20_000 });
  assert.equal(lanesSeen.size, 1, 'only the busy request’s lane is ever stopped');
  const r = await beside;
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.data, 'Example Domain');
  // The busy request ends at its deadline; nothing is left stopped.
  const b = await busy;
  assert.equal(b.status, 400, b.text);
  assert.deepEqual(stoppedChromium(), []);
});

test('a slot process killed while it holds a renderer stopped leaves nothing stopped: the renderer runs and exits', async () => {
  await until(() => svc.service.browser.ready, 'the browser to be ready', { timeoutMs: 60_000 });
  const busy = svc.post({ url: fixtures.url('/example'), script: BUSY });
  const beside = svc.post({ url: fixtures.url('/example'), script: WORKING_BESIDE });
  let paused: number | undefined;
  // Killed in the same turn as the renderer is seen stopped, so that it is still stopped when the executor dies.
  // The executor killed is the one whose Chromium the stopped renderer is (either slot may take the busy request:
  // CI once saw slot 0's process not yet ready, the busy request in slot 1 and slot 0 killed instead).
  await until(
    () => {
      paused = stoppedChromium()[0];
      if (paused === undefined) return false;
      const executor = svc.service.executors.slotPids.find(
        (p) => p !== undefined && descendants(p).includes(paused as number),
      );
      assert.ok(executor !== undefined, `the stopped process ${paused} is no slot process's descendant`);
      process.kill(executor, 'SIGKILL');
      return true;
    },
    'the busy renderer to be stopped',
    { timeoutMs: 20_000 },
  );
  await Promise.all([busy, beside]);
  await until(() => !alive(paused as number), 'the renderer the dead executor held stopped to exit', {
    timeoutMs: 30_000,
  });
});

test('a Chromium being replaced while it still serves a request is reported with its successor (the front can continue it)', async () => {
  const own = await startTestService({
    EGRESS_ALLOWLIST: fixtures.allowEntry,
    BROWSER_RECYCLE_CONTEXTS: '2',
    MAX_CONCURRENCY: '1',
  });
  try {
    let most = 0;
    for (let i = 0; i < 6 && most < 2; i++) {
      const running = own.post({
        url: fixtures.url('/example'),
        script: 'await new Promise((r) => setTimeout(r, 1500)); return 1',
      });
      let done = false;
      running.then(
        () => (done = true),
        () => (done = true),
      );
      while (!done) {
        most = Math.max(most, own.service.browser.pids.length);
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.equal((await running).status, 200);
    }
    assert.equal(most, 2, 'one lane: its current Chromium and the one retiring under the request');
  } finally {
    await own.close();
  }
});
