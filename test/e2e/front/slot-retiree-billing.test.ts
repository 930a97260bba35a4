// A slot process retired after SLOT_RECYCLE_REQUESTS that does not exit when
// asked (code that escaped into it ignores `shutdown` and spins). Its slot's
// replacement shares the slot's groups, whose CPU count is what a job there is
// billed (slot-job.ts): no job may run in the slot while the retiree lives, or
// the next key's job is billed for the retiree's spin.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../../helpers/fixtures.js';
import { TEST_KEY, capturingLogger, startTestService, type Reply, type TestService } from '../../helpers/service.js';
import { SLOT_GROUPS_SKIP as skip } from '../../helpers/slot-groups.js';
import { until, within } from '../../helpers/wait.js';

const HOSTILE = 'ps_hostile_retire_0123456789abcdefghij';
const fixtures = new FixtureServer({ '/example': html(EXAMPLE_DOMAIN_HTML) });
/** The innocent job: it waits 3 s in its page and uses tens of ms of CPU. */
const WAITS = 'await page.evaluate(() => new Promise((r) => setTimeout(r, 3000))); return 1';
/** Well above what the waiting job uses, well below what a spinner sharing its slot adds (a core, or half of one, for 3 s). */
const MAX_BILLED_MS = 1000;
const log = capturingLogger();
const KILLED = 'a slot process asked to close did not exit in time; killing it';
let svc: TestService;

before(async () => {
  if (skip) return;
  await fixtures.start();
  svc = await startTestService(
    {
      API_KEYS: `${TEST_KEY},${HOSTILE}`,
      EGRESS_ALLOWLIST: fixtures.allowEntry,
      MAX_CONCURRENCY: '1',
      // Each slot process serves one request, then is retired and replaced.
      SLOT_RECYCLE_REQUESTS: '1',
      SCRIPT_TIMEOUT_MS: '8000',
      NAVIGATION_TIMEOUT_MS: '8000',
      QUEUE_TIMEOUT_MS: '60000',
    },
    { egressSeam: { faults: true } },
    log.logger,
  );
});

after(async () => {
  if (skip) return;
  await svc?.close();
  await fixtures.close();
});

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

test(
  "a retired slot process that spins instead of exiting: the next key's job, in its replacement, is not billed for it",
  { skip },
  async () => {
    await until(() => svc.service.slots.readyPids.length === 1, 'the slot process to be ready', {
      timeoutMs: 60_000,
    });
    // Baseline: the same job right after an honest retirement (the process exits when asked).
    const first = await svc.post({ url: fixtures.url('/example'), script: 'return 1' });
    assert.equal(first.status, 200, first.text);
    const baseline = await svc.post({ url: fixtures.url('/example'), script: WAITS });
    assert.equal(baseline.status, 200, baseline.text);
    const baselineMs = Number(baseline.headers['x-usage-cpu-ms']);
    assert.ok(baselineMs < MAX_BILLED_MS, `baseline ${baselineMs}`);
    // Honest retirements are quiet: each process exits when asked, none is killed.
    await until(() => svc.service.slots.recycles === 2, 'both honest processes to be retired');
    await until(() => svc.service.slots.pids.length === 1, 'the retired processes to exit', { timeoutMs: 30_000 });
    assert.deepEqual(
      log.lines.filter((l) => l.msg === KILLED),
      [],
    );
    await until(
      () => svc.service.slots.readyPids.length === 1 && !svc.service.slots.busySlots[0],
      'the slot to be free',
      { timeoutMs: 60_000 },
    );
    let release = (): void => undefined;
    const arrived = new Promise<void>((resolve) =>
      fixtures.route('/held', (_req, res) => {
        release = () => res.end('open');
        resolve();
      }),
    );
    const hostileReply: Promise<Reply> = svc.post(
      {
        url: fixtures.url('/example'),
        script: "return await page.evaluate(() => fetch('/held').then((r) => r.text()))",
      },
      { 'x-gateway-key': HOSTILE },
    );
    await arrived;
    await until(() => svc.service.slots.jobPhases[0] === 'script', 'the hostile job to be in its script');
    const id = svc.service.slots.jobIds[0];
    const retiree = svc.service.slots.slotPids[0] as number;
    // Code in the slot answers its job and closes it (the front retires the process), then stops reading its wire:
    // `shutdown` is never read, and the process lives on.
    svc.service.slots.fault(
      'send',
      { type: 'done', id, outcome: { json: '1', logs: [], executionTimeMs: 1, timings: {} } },
      0,
    );
    svc.service.slots.fault('send', { type: 'closed', id }, 0);
    svc.service.slots.fault('hang', undefined, 0);
    const h = await within(hostileReply, 'the hostile answer', 30_000);
    release();
    assert.equal(h.status, 200, h.text);
    await until(() => svc.service.slots.recycles === 3, 'the hostile job’s process to be retired');
    const r = await within(svc.post({ url: fixtures.url('/example'), script: WAITS }), 'the honest request', 60_000);
    const retireeAliveAtEnd = alive(retiree);
    assert.equal(r.status, 200, r.text);
    const billed = Number(r.headers['x-usage-cpu-ms']);
    assert.equal(log.lines.filter((l) => l.msg === KILLED).length, 1, 'the spinning retiree is killed');
    assert.equal(
      retireeAliveAtEnd,
      false,
      `the retired process ${retiree} outlived the next job of its slot (billed ${billed} ms, ${baselineMs} ms after an honest retirement)`,
    );
    assert.ok(
      billed < MAX_BILLED_MS,
      `the honest key was billed ${billed} ms of CPU (${baselineMs} ms after an honest retirement) for a job that waited 3 s`,
    );
  },
);
