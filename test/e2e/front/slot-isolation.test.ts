// Each request slot's host-side work runs in a slot process of its own (issue 32):
// whatever happens to one slot process — killed, stopped, frozen, its heap or
// its memory blown — fails only the request it runs, with the documented code,
// while a neighbour's request in the other slot is served; the front answers at
// the request's deadline whatever the slot process does, and replaces it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../../helpers/fixtures.js';
import { capturingLogger, startTestService, type Reply, type TestService } from '../../helpers/service.js';
import { alive } from '../../helpers/system.js';
import { until } from '../../helpers/wait.js';
import { SLOT_SEMI_SPACE_MB } from '../../../src/common/config.js';
import { JOB_GRACE_MS } from '../../../src/front/jobs/job-deadline.js';

const fixtures = new FixtureServer({ '/example': html(EXAMPLE_DOMAIN_HTML) });
const log = capturingLogger();
let svc: TestService;
/** Every process this file stopped is killed in the end, whatever failed. */
const stopped = new Set<number>();

const SCRIPT_TIMEOUT_MS = 10_000;
const NAVIGATION_TIMEOUT_MS = 2000;

before(async () => {
  await fixtures.start();
  svc = await startTestService(
    {
      EGRESS_ALLOWLIST: fixtures.allowEntry,
      MAX_CONCURRENCY: '2',
      SCRIPT_TIMEOUT_MS: String(SCRIPT_TIMEOUT_MS),
      NAVIGATION_TIMEOUT_MS: String(NAVIGATION_TIMEOUT_MS),
      // A slot's memory ceiling follows from these; the bloat test must pass it well within the script's time on a
      // machine that maps fresh pages at ~200 MB/s (its slot's limit with the defaults is ~1.8 GiB).
      PAGE_MEMORY_MB: '192',
      MAX_RESULT_BYTES: String(2 ** 20),
      // Both slots stay up between the tests.
      IDLE_SLOT_CLOSE_MS: '0',
    },
    { egressSeam: { faults: true } },
    log.logger,
  );
});
after(async () => {
  for (const pid of stopped) if (alive(pid)) process.kill(pid, 'SIGKILL');
  await svc.close();
  await fixtures.close();
});

/** Waits until the script runs for as long as its slot is needed (the test ends it). */
const LONG = 'await new Promise((r) => setTimeout(r, 60000)); return 1';
const run = (script: string): Promise<Reply> => svc.post({ url: fixtures.url('/example'), script });
const TITLE = 'return await page.title()';

/** Both slots' processes ready. */
async function bothReady(): Promise<[number, number]> {
  await until(
    () => {
      const [a, b] = svc.service.slots.slotPids;
      return a !== undefined && b !== undefined && svc.service.browser.contextsReady >= 2;
    },
    'both slot processes to be ready',
    { timeoutMs: 60_000 },
  );
  const [a, b] = svc.service.slots.slotPids as [number, number];
  return [a, b];
}

/**
 * Starts the attacker's request in slot 0 (a lone request takes the lowest
 * free slot) and waits until its script runs there.
 */
async function attackerInSlot0(): Promise<{ reply: Promise<Reply>; pid: number }> {
  const [pid] = await bothReady();
  // The last test's requests are answered before their contexts close: until then their slots are busy, and the
  // attacker's request would take slot 1 while the test attacks slot 0's process (seen under npm test's load).
  await until(() => svc.service.slots.busySlots.every((busy) => !busy), 'both slots to be free');
  const reply = run(LONG);
  // Its job is handed to slot 0's process; what the test does next reaches that process after it.
  await until(() => svc.service.slots.busySlots[0] === true, 'the attacker’s request to be in slot 0');
  // Its script runs: a process that stops while a request is still being prepared gives it to another slot.
  await until(() => svc.service.slots.jobPhases[0] === 'script', 'the attacker’s script to run');
  return { reply, pid };
}

/** The neighbour, in slot 1, is served while the attacker's slot is in trouble. */
async function neighbourServed(): Promise<void> {
  const r = await run(TITLE);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.data, 'Example Domain');
}

/** The slot is served again by a fresh process. */
async function nextServed(old: number): Promise<void> {
  await until(() => !alive(old), 'the old slot process to be gone');
  await bothReady();
  const [r1, r2] = await Promise.all([run(TITLE), run(TITLE)]);
  assert.equal(r1.status, 200, r1.text);
  assert.equal(r2.status, 200, r2.text);
  assert.ok(!svc.service.slots.slotPids.includes(old), 'a fresh slot process serves the slot');
}

describe('a slot process in trouble fails only its own request', () => {
  test('a slot process SIGKILLed mid-request: its request is 500, the neighbour is served, the next request too', async () => {
    const { reply, pid } = await attackerInSlot0();
    process.kill(pid, 'SIGKILL');
    const r = await reply;
    assert.equal(r.status, 500, r.text);
    assert.match(String(r.body.error), /script runner stopped/);
    await neighbourServed();
    await nextServed(pid);
  });

  test('a slot process SIGSTOPped mid-request: the neighbour is served meanwhile; its request is 400 at the deadline', async () => {
    const { reply, pid } = await attackerInSlot0();
    stopped.add(pid);
    process.kill(pid, 'SIGSTOP');
    let answered = false;
    reply.then(
      () => (answered = true),
      () => (answered = true),
    );
    await neighbourServed();
    assert.equal(answered, false, 'the stopped slot’s request is still waiting for its deadline');
    const r = await reply;
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.code, 'SCRAPING_FAILED');
    assert.match(
      String(r.body.error),
      new RegExp(`did not finish within ${NAVIGATION_TIMEOUT_MS + SCRIPT_TIMEOUT_MS + JOB_GRACE_MS} ms`),
    );
    // Counted as a timeout of its own phase.
    const metrics = await svc.raw('GET', '/metrics');
    assert.match(metrics.text, /^pagescript_timeouts_total\{phase="deadline"\} 1$/m);
    await nextServed(pid);
  });

  test('a hung slot (its main thread never yields) past the deadline: its caller gets 400 at the deadline, the neighbour is unaffected', async () => {
    const { reply, pid } = await attackerInSlot0();
    svc.service.slots.fault('hang', undefined, 0);
    await neighbourServed();
    const r = await reply;
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.code, 'SCRAPING_FAILED');
    assert.match(String(r.body.error), /did not finish within/);
    const killed = log.lines.find((l) => l.pid === pid && /reached its deadline/.test(String(l.msg)));
    assert.ok(killed, 'the front ended it at the deadline');
    await nextServed(pid);
  });

  test('each slot process runs with its V8 heap limit and a bounded young generation (config.ts SLOT_SEMI_SPACE_MB)', async () => {
    for (const pid of await bothReady()) {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      assert.ok(argv.includes(`--max-old-space-size=${svc.service.config.memory.slotHeapMb}`), argv.join(' '));
      // Unbounded, its young generation grew to 64 MiB semi-spaces and the old space was collected back to back.
      assert.ok(argv.includes(`--max-semi-space-size=${SLOT_SEMI_SPACE_MB}`), argv.join(' '));
    }
  });

  test('a slot whose host side blows its V8 heap: its request is 400 MEMORY_LIMIT_EXCEEDED naming the host side; the neighbour is served', async () => {
    const { reply, pid } = await attackerInSlot0();
    svc.service.slots.fault('oom', undefined, 0);
    const r = await reply;
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.code, 'MEMORY_LIMIT_EXCEEDED');
    assert.match(String(r.body.error), /host side of the request \(its slot process\) used more than its \d+ MiB heap/);
    await neighbourServed();
    await nextServed(pid);
  });

  test('a slot whose resident memory passes its ceiling: 400 MEMORY_LIMIT_EXCEEDED, and the process is replaced (by the kernel with slot cgroups, else by the front reading /proc)', async () => {
    const { reply, pid } = await attackerInSlot0();
    svc.service.slots.fault('bloat', undefined, 0);
    const r = await reply;
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.code, 'MEMORY_LIMIT_EXCEEDED', r.text);
    if (svc.service.slots.slotCgroups === 'on') {
      // The kernel's limit on the slot's memory group (the slot's level and the request's share) stopped it.
      assert.match(String(r.body.error), /used more than its \d+ MiB share; its host side was stopped/);
    } else {
      const limit = svc.service.config.memory.slotHostLimitMb;
      assert.match(
        String(r.body.error),
        new RegExp(`host side of the request \\(its slot process\\) used more than ${limit} MiB`),
      );
      const seen = log.lines.find((l) => l.pid === pid && /over its memory ceiling/.test(String(l.msg)));
      assert.ok(seen, 'the front saw it');
      assert.ok(Number(seen.mb) > limit);
    }
    await neighbourServed();
    await nextServed(pid);
  });
});
