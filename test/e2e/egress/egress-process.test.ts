// The egress guard's own process: when it dies (killed, as a hostile upstream or
// a bug in the guard would leave it), only the requests in flight fail, with 500
// naming the egress process; later requests are served through its replacement;
// /health and /metrics count the restart; no slot process keeps a context whose port
// belonged to the dead process: every slot process is replaced, with a channel to
// the new one given at its spawn. One that sends the front a message it cannot
// read is killed, as a slot process would be.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../../helpers/fixtures.js';
import { capturingLogger, startTestService, type Reply, type TestService } from '../../helpers/service.js';
import { alive } from '../../helpers/system.js';
import { until } from '../../helpers/wait.js';

const fixtures = new FixtureServer({ '/example': html(EXAMPLE_DOMAIN_HTML) });
const TOKEN = 'metrics-token-0123456789';
const AUTH = { headers: { authorization: `Bearer ${TOKEN}` } };
const log = capturingLogger();
let svc: TestService;

before(async () => {
  await fixtures.start();
  svc = await startTestService(
    { EGRESS_ALLOWLIST: fixtures.allowEntry, MAX_CONCURRENCY: '1', SCRIPT_TIMEOUT_MS: '20000', METRICS_TOKEN: TOKEN },
    { egressSeam: { faults: true } },
    log.logger,
  );
});
after(async () => {
  await svc.close();
  await fixtures.close();
});

/** Tells the test it is in its script (past navigation: a failure there would be the navigation's own), then waits. */
const WAITING =
  "await page.evaluate(() => fetch('/script-running')); await new Promise((r) => setTimeout(r, 15000)); return 1";
const run = (script: string): Promise<Reply> => svc.post({ url: fixtures.url('/example'), script });

async function restartsCounted(): Promise<{ health: number; metrics: number }> {
  const health = await svc.raw('GET', '/health', AUTH);
  const metrics = await svc.raw('GET', '/metrics', AUTH);
  const line = metrics.text.split('\n').find((l) => l.startsWith('pagescript_egress_restarts_total '));
  return { health: Number(health.body.egressRestarts), metrics: Number(line?.split(' ').pop()) };
}

describe('the egress process', () => {
  test('runs apart from the front and the slot processes, and Chromium is not under it', () => {
    const pid = svc.service.egress.pid;
    assert.ok(pid !== undefined && alive(pid));
    assert.ok(!svc.service.slots.pids.includes(pid), 'not a slot process');
    assert.notEqual(pid, process.pid);
  });

  test('killed (SIGKILL) mid-request: that request is 500 naming the egress process, the next is 200', async () => {
    const before = svc.service.egress.restarts;
    const pid = svc.service.egress.pid;
    assert.ok(pid !== undefined);
    const slot = svc.service.slots.pids[0];
    const mark = log.lines.length;
    const hits = fixtures.hits.get('/script-running') ?? 0;
    const running = run(WAITING);
    // Not /health's running count: that counts navigation too, and the egress process
    // dying under a navigation fails it with the network error (seen once in a full run).
    await until(() => (fixtures.hits.get('/script-running') ?? 0) > hits, 'the script to run');
    process.kill(pid, 'SIGKILL');
    const r = await running;
    assert.equal(r.status, 500, r.text);
    assert.equal(r.body.code, 'INTERNAL_SERVER_ERROR');
    assert.match(String(r.body.error), /egress process stopped/);
    const next = await run('return await page.title()');
    assert.equal(next.status, 200, next.text);
    assert.equal(next.body.data, 'Example Domain');
    // Served through the new channel at once, not after a question on it was lost
    // and waited for (EGRESS_ASK_TIMEOUT_MS): the front never reads a channel it connects.
    const lost = log.lines.slice(mark).filter((l) => /did not answer/.test(JSON.stringify(l)));
    assert.deepEqual(lost, [], 'a question to the new egress process went unanswered');
    assert.notEqual(svc.service.egress.pid, pid, 'a new egress process served it');
    // Its channel was the dead process's: a new slot process, spawned with a channel to the new one, served it.
    assert.notEqual(svc.service.slots.pids[0], slot, 'the slot process was replaced');
    assert.deepEqual(await restartsCounted(), { health: before + 1, metrics: before + 1 });
  });

  test('a slot process keeps no context of a dead egress process: its spare is replaced before the next request', async () => {
    // Up to 30 s: under a full run's load, a slot that has not drained the killed process's contexts within
    // EGRESS_DRAIN_TIMEOUT_MS is killed and replaced (its log below says so when it happens).
    await until(() => svc.service.browser.contextsReady >= 1 && svc.service.egress.ready, 'a spare context', {
      timeoutMs: 30_000,
    }).catch((e: unknown) => {
      for (const l of log.lines.slice(-40)) console.log('service log:', JSON.stringify(l).slice(0, 400));
      throw e;
    });
    const pid = svc.service.egress.pid;
    assert.ok(pid !== undefined);
    const slot = svc.service.slots.pids[0];
    process.kill(pid, 'SIGKILL');
    // The slot process whose spare's port was the dead process's is replaced; only its
    // replacement, spawned with a channel to the new egress process, serves.
    await until(() => svc.service.egress.ready && svc.service.egress.pid !== pid, 'the replacement to be ready', {
      timeoutMs: 60_000,
    });
    await until(
      () => svc.service.slots.readyPids.length === 1 && svc.service.slots.readyPids[0] !== slot,
      'the slot process to be replaced',
      { timeoutMs: 60_000 },
    );
    await until(() => svc.service.browser.contextsReady >= 1, 'a new spare context', { timeoutMs: 60_000 });
    // Every request after it is served through the new process's ports: the
    // counts the request's log line carries come from the new guard.
    const r = await run('await page.goto(page.url()); return await page.title()');
    assert.equal(r.status, 200, r.text);
    const counts = await svc.service.guard.counts();
    assert.ok(counts.upstreamConnections >= 1, JSON.stringify(counts));
  });

  test('a message the front cannot read gets it killed and replaced; requests go on', async () => {
    await until(() => svc.service.egress.ready, 'the egress process to be ready', { timeoutMs: 60_000 });
    const restarts = svc.service.egress.restarts;
    const pid = svc.service.egress.pid;
    assert.ok(pid !== undefined);
    svc.service.egress.fault('send', { type: 'memory', bytes: 'a lot' });
    await until(() => svc.service.egress.restarts === restarts + 1, 'the egress process to be killed');
    assert.ok(log.lines.some((l) => /bad message from the egress process/.test(String(l.msg))));
    await until(() => !alive(pid), 'the old process to be gone');
    await until(() => svc.service.egress.ready, 'its replacement');
    const r = await run('return await page.title()');
    if (r.status !== 200)
      for (const l of log.lines.slice(-40)) console.log('service log:', JSON.stringify(l).slice(0, 400));
    assert.equal(r.status, 200, r.text);
    assert.equal((await svc.raw('GET', '/health')).status, 200);
  });
});

describe('a slot process that forges its egress messages', () => {
  test('a forged egress-drained, repeated, makes no new channel: the slot process is killed for it, and every request is still served', async () => {
    await until(() => svc.service.slots.readyPids.length === 1, 'the slot process to be ready', {
      timeoutMs: 60_000,
    });
    const made = svc.service.egress.channelsMade;
    const slot = svc.service.slots.pids[0];
    // What a slot process that escaped our code could send: "drained" (a message of the old wire, when a
    // channel was handed to a live process), while its channel is up. No message of a slot makes a channel.
    for (let i = 0; i < 50; i++) svc.service.slots.fault('send', { type: 'egress-drained' });
    await until(() => !svc.service.slots.pids.includes(slot ?? -1), 'the slot process to be killed');
    const r = await run('return await page.title()');
    assert.equal(r.status, 200, r.text);
    // Before: each forged message made the front hand a new channel: thousands of channels, every request 500.
    // Now the only channel made is its replacement's, given at its spawn.
    assert.equal(svc.service.egress.channelsMade, made + 1, 'one channel was made, for its replacement');
  });

  test('a second channel for the same slot process closes its first, so its sessions never add up', async () => {
    // Were the front ever to hand a slot process a second channel, the egress process keeps one:
    // MAX_SESSIONS_PER_CHANNEL holds per slot process, not per channel.
    const first = await svc.service.egress.channel(1_000_000);
    const closed = new Promise<void>((resolve) => first.socket.once('close', () => resolve()));
    first.socket.resume();
    const second = await svc.service.egress.channel(1_000_000);
    try {
      await closed;
      assert.ok(!second.socket.destroyed, 'the second channel is up');
    } finally {
      first.socket.destroy();
      second.socket.destroy();
    }
  });
});
