// The crash boundary: scripts run in a slot process. When it dies (killed,
// a native abort, an exception or rejection nobody handled), only the request
// it was running fails, with 500 naming the script runner (V8 out of memory in
// its own heap: 400 MEMORY_LIMIT_EXCEEDED naming the host side); queued and later
// requests are served by a fresh slot process; /health and /metrics count the
// restart; the front (this process) goes on.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../../helpers/fixtures.js';
import { capturingLogger, startTestService, type Reply, type TestService } from '../../helpers/service.js';
import { alive } from '../../helpers/system.js';
import { until } from '../../helpers/wait.js';

const fixtures = new FixtureServer({ '/example': html(EXAMPLE_DOMAIN_HTML) });
const TOKEN = 'metrics-token-0123456789';
const SLOT_HEAP_MB = 128;
const log = capturingLogger();
let svc: TestService;

before(async () => {
  await fixtures.start();
  svc = await startTestService(
    { EGRESS_ALLOWLIST: fixtures.allowEntry, MAX_CONCURRENCY: '1', SCRIPT_TIMEOUT_MS: '20000', METRICS_TOKEN: TOKEN },
    // A V8 heap small enough to run out of quickly (the slot process needs ~30 MB of it).
    { egressSeam: { faults: true, heapMb: SLOT_HEAP_MB } },
    log.logger,
  );
});
after(async () => {
  await svc.close();
  await fixtures.close();
});

const WAITING = 'await new Promise((r) => setTimeout(r, 15000)); return 1';
const run = (script: string): Promise<Reply> => svc.post({ url: fixtures.url('/example'), script });

/** /health shows the counts (running, queued, restarts) only with the metrics token. */
const AUTH = { headers: { authorization: `Bearer ${TOKEN}` } };

/** The key's slot-died security events, as /metrics counts them. */
async function slotDeaths(): Promise<number> {
  const metrics = await svc.raw('GET', '/metrics', AUTH);
  const line = metrics.text
    .split('\n')
    .find((l) => l.startsWith('pagescript_security_events_total{key="env-1",class="slot-died"} '));
  return Number(line?.split(' ').pop() ?? 0);
}

async function restartsCounted(): Promise<{ health: number; metrics: number }> {
  const health = await svc.raw('GET', '/health', AUTH);
  const metrics = await svc.raw('GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
  const count = (name: string): number =>
    Number(
      metrics.text
        .split('\n')
        .find((l) => l.startsWith(`${name} `))
        ?.split(' ')
        .pop(),
    );
  // The deprecated names (executorRestarts, pagescript_executor_restarts_total) say the same, for one release.
  assert.equal(health.body.executorRestarts, health.body.slotRestarts, 'executorRestarts is slotRestarts');
  assert.equal(count('pagescript_executor_restarts_total'), count('pagescript_slot_restarts_total'));
  return { health: Number(health.body.slotRestarts), metrics: count('pagescript_slot_restarts_total') };
}

/**
 * Starts a request that runs until the slot process fails and one queued behind it,
 * fails the slot process with `fail`, and checks: the running one is 500 naming the
 * script runner, the queued one is served by a new slot process, the restart is counted.
 */
async function failWhileRunning(
  fail: (pid: number) => void,
  expected: { status: number; code: string; error: RegExp } = {
    status: 500,
    code: 'INTERNAL_SERVER_ERROR',
    error: /script runner stopped/,
  },
): Promise<void> {
  const before = svc.service.slots.restarts;
  const deathsBefore = await slotDeaths();
  const [pid] = svc.service.slots.pids;
  assert.ok(pid);
  const chromium = svc.service.browser.pid;
  assert.ok(chromium);
  const running = run(WAITING);
  await until(async () => (await svc.raw('GET', '/health', AUTH)).body.running === 1, 'the request to be in its slot');
  // A process that stops while a request is still being prepared gives it to another slot: its script must run.
  await until(() => svc.service.slots.jobPhases[0] === 'script', 'the script to run');
  const queued = run('return await page.title()');
  await until(async () => (await svc.raw('GET', '/health', AUTH)).body.queued === 1, 'the second request to queue');

  fail(pid);
  const r = await running;
  assert.equal(r.status, expected.status, r.text);
  assert.equal(r.body.code, expected.code);
  assert.match(String(r.body.error), expected.error);
  const next = await queued;
  assert.equal(next.status, 200, next.text);
  assert.equal(next.body.data, 'Example Domain');
  const [fresh] = svc.service.slots.pids;
  assert.ok(fresh !== undefined && fresh !== pid, 'a new slot process served it');
  assert.deepEqual(await restartsCounted(), { health: before + 1, metrics: before + 1 });
  // A slot process that died under its request is a security event of its key; a memory kill is not.
  assert.equal(await slotDeaths(), deathsBefore + (expected.code === 'INTERNAL_SERVER_ERROR' ? 1 : 0));
  await until(() => !alive(pid) && !alive(chromium), 'the old slot process and its Chromium to be gone');
}

describe('a slot process that dies', () => {
  test('killed (SIGKILL) mid-request: that request is 500, the queued one is served by a fresh slot process', async () => {
    await failWhileRunning((pid) => process.kill(pid, 'SIGKILL'));
  });

  test('a 500 says why once: one error line with its request id, key, slot and cause, and a count by cause', async () => {
    const counted = async (): Promise<number> => {
      const text = (await svc.raw('GET', '/metrics', AUTH)).text;
      const line = text
        .split('\n')
        .find((l) => l.startsWith('pagescript_internal_errors_total{cause="runner-stopped"} '));
      return Number(line?.split(' ').pop() ?? 0);
    };
    const before = await counted();
    const [pid] = svc.service.slots.readyPids;
    assert.ok(pid);
    const hits = fixtures.hits.get('/phase-script') ?? 0;
    const running = run(
      "await page.evaluate(() => fetch('/phase-script')); await new Promise((r) => setTimeout(r, 15000)); return 1",
    );
    // The script runs in the slot (and said so before its first page call).
    await until(() => (fixtures.hits.get('/phase-script') ?? 0) > hits, 'the script to run');
    process.kill(pid, 'SIGKILL');
    const r = await running;
    assert.equal(r.status, 500, r.text);
    const requestId = String(r.headers['x-request-id']);
    const errors = log.lines.filter((l) => l.level === 50 && l.requestId === requestId);
    assert.equal(errors.length, 1, JSON.stringify(errors));
    assert.equal(errors[0]?.keyName, 'env-1');
    assert.equal(errors[0]?.slot, 0);
    assert.equal(errors[0]?.cause, 'runner-stopped');
    // The slot said its job's script had begun; the front, which answered, logs it.
    assert.equal(errors[0]?.phase, 'script');
    assert.doesNotMatch(r.text, /runner-stopped/, 'the internal cause reached the caller');
    assert.equal(await counted(), before + 1);
    // The next test starts on its replacement, ready and with its Chromium up.
    await until(
      () => !alive(pid) && svc.service.slots.readyPids.some((p) => p !== pid) && svc.service.browser.pid !== undefined,
      'a fresh slot process',
    );
  });

  test('a native abort (SIGABRT) mid-request: that request is 500, the queued one is served by a fresh slot process', async () => {
    await failWhileRunning((pid) => process.kill(pid, 'SIGABRT'));
  });

  test('V8 out of memory (its own heap, not an isolate’s) mid-request: that request is 400 MEMORY_LIMIT_EXCEEDED, the queued one is served', async () => {
    await failWhileRunning(() => svc.service.slots.fault('oom'), {
      status: 400,
      code: 'MEMORY_LIMIT_EXCEEDED',
      error: new RegExp(`host side of the request \\(its slot process\\) used more than its ${SLOT_HEAP_MB} MiB heap`),
    });
    // V8's own report, on the dead slot process's stderr, read and logged by the front.
    const report = log.lines.find((l) => l.msg === 'slot process output' && /heap out of memory/.test(String(l.line)));
    assert.ok(report, 'V8 reported the heap exhausted');
  });

  test('an exception nobody catches is logged with its stack, and the slot process is replaced', async () => {
    await failWhileRunning(() => svc.service.slots.fault('throw'));
    // A slot process's fatal line is written as an error marked fatal (pino writes fatal lines synchronously).
    const fatal = log.lines.find((l) => l.level === 50 && l.fatal === true && /uncaught exception/.test(String(l.msg)));
    assert.ok(fatal, 'the fatal line is logged');
    assert.match(String((fatal.err as { stack?: string } | undefined)?.stack), /a fault the test asked for\n\s+at /);
  });

  test('a rejection nobody handles is logged with its stack, and the slot process is replaced', async () => {
    await failWhileRunning(() => svc.service.slots.fault('reject'));
    const fatal = log.lines.find(
      (l) => l.level === 50 && l.fatal === true && /unhandled rejection/.test(String(l.msg)),
    );
    assert.ok(fatal, 'the fatal line is logged');
    assert.match(String((fatal.err as { stack?: string } | undefined)?.stack), /a fault the test asked for\n\s+at /);
  });

  test('a request that arrives just after the slot process died is served by its replacement', async () => {
    const [pid] = svc.service.slots.pids;
    const restarts = svc.service.slots.restarts;
    assert.ok(pid);
    process.kill(pid, 'SIGKILL');
    await until(() => svc.service.slots.restarts === restarts + 1, 'the slot process to be gone');
    const r = await run('return await page.title()');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data, 'Example Domain');
  });
});
