// What a slot process says cannot end the front. A slot process runs hostile scripts
// and pages; one that escaped its isolate could send the front any message. The
// front reads each against its shape: one it cannot read kills that slot process
// (its requests fail, a fresh one serves the next), and the front goes on. The
// forged messages are sent through the test seam (a fault that sends a given
// message as it is), from the real slot process over the real channel.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../../helpers/fixtures.js';
import { maxSlotMessageBytes } from '../../../src/protocol/slot-wire.js';
import { capturingLogger, serviceFor } from '../../helpers/service.js';
import { until, within } from '../../helpers/wait.js';

const fixtures = new FixtureServer({ '/example': html(EXAMPLE_DOMAIN_HTML) });
const log = capturingLogger();
// faults: the slot processes send what the test gives them, as a compromised one would.
const svc = serviceFor(fixtures, {}, { egressSeam: { faults: true } }, log.logger);

/** Whether there is a slot process and every one there is is ready (an idle slot may have none). */
function allSlotsReady(): boolean {
  const { pids, readyPids } = svc.service.slots;
  return pids.length > 0 && pids.every((pid) => readyPids.includes(pid));
}

/**
 * The slot process sends `message` (`raw`: writes bytes to its wire's descriptor past its framing, RawFault); it is killed
 * for it, replaced, and the front serves the next request. Resolves with the kills' log lines.
 */
async function forged(message: unknown, kind: 'send' | 'raw' = 'send'): Promise<Array<Record<string, unknown>>> {
  // Every slot's process ready first: the fault goes to each process there is, and one
  // still starting could read it late and be killed while it serves the request below.
  await until(() => svc.service.browser.ready && allSlotsReady(), 'every slot process to be ready', {
    timeoutMs: 60_000,
  });
  // Each sends it and is killed for it: wait for all of them, or the next request may meet one being killed.
  const pids = svc.service.slots.readyPids;
  svc.service.slots.fault(kind, message);
  // Up to two minutes: a message cut at its bound (69.5 MiB at the defaults) is read whole first, on a loaded machine.
  await until(
    () => !svc.service.slots.pids.some((pid) => pids.includes(pid)),
    'every slot process that sent it to be killed',
    { timeoutMs: 120_000 },
  );
  const killed = log.lines.filter(
    (l) => l.msg === 'bad message from a slot process; killing it' && pids.includes(l.pid as number),
  );
  assert.equal(new Set(killed.map((l) => l.pid)).size, pids.length, 'each kill is logged');
  await until(() => svc.service.browser.ready, 'its replacement to be ready', { timeoutMs: 60_000 });
  // The replacement may still be starting: healthy again once it is.
  await until(async () => (await svc.raw('GET', '/health')).status === 200, '/health to be 200 again', {
    timeoutMs: 60_000,
  });
  const r = await svc.post({ url: fixtures.url('/example'), script: 'return await page.title()' });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.data, 'Example Domain');
  return killed;
}

describe('a message the front cannot read', () => {
  test('a browser status that is not one (read again when the slot process exits): the front goes on', async () => {
    await forged({ type: 'status', browser: null });
  });

  test('a message of no known type, or no message at all: the front goes on', async () => {
    await forged({ type: 'constructor' });
    await forged(42);
  });

  test('a metric that is not a number of seconds, or not one of ours: the front goes on', async () => {
    await forged({ type: 'observe', metric: 'script', seconds: Number.NaN });
    await forged({ type: 'observe', metric: '__proto__', seconds: 1 });
  });

  test('a failure with an error code the front does not have: the front goes on', async () => {
    await forged({ type: 'failed', id: 1, error: { code: 'toString', message: 'x' } });
  });

  test('a failure whose timeout phase would be a new metric label, or whose egress is not counts: the front goes on', async () => {
    await forged({ type: 'failed', id: 1, error: { code: 'SCRAPING_FAILED', message: 'x', timeout: 'phase-0001' } });
    await forged({ type: 'failed', id: 1, error: { code: 'SCRAPING_FAILED', message: 'x', egress: null } });
    const metrics = await svc.raw('GET', '/metrics');
    assert.ok(!metrics.text.includes('phase-0001'), 'no such label value');
  });

  // Past the wire's framing: what code that escaped into a slot process could write to the wire's descriptor.
  test('a line of bytes that are not JSON (nine of them, V8 deserializing them, ended the front once): the front goes on', async () => {
    const killed = await forged({ bytes: Buffer.from('00000005ff0f9999990a', 'hex').toString('base64') }, 'raw');
    for (const line of killed) assert.match(String(line.reason), /JSON/);
  });

  test("Node's own acknowledgement of a descriptor the front never sent (an assertion of Node's, uncaught, on Node's IPC): the front goes on", async () => {
    const killed = await forged({ cmd: 'NODE_HANDLE_ACK' });
    for (const line of killed) assert.match(String(line.reason), /no known type/);
  });

  test('a message without end (a line begun, then 96 MiB of it): cut at the bound, the front goes on', async () => {
    const bytes = Buffer.from('{"type":"log","line":"').toString('base64');
    const killed = await forged({ bytes, thenMiB: 96 }, 'raw');
    // MAX_RESULT_BYTES and MAX_LOG_BYTES at their defaults: 10 MiB and 256 KiB.
    const bound = maxSlotMessageBytes(10 * 2 ** 20, 256 * 1024);
    for (const line of killed) {
      const held = Number(/\((\d+) held when it was cut/.exec(String(line.reason))?.[1]);
      assert.ok(held > bound && held <= bound + 2 ** 20, String(line.reason));
    }
  });

  test('a message with a field of its own (10 million empty objects cost the front 833 MB): the front goes on', async () => {
    const killed = await forged({ type: 'egress-refused', extra: Array.from({ length: 1000 }, () => ({})) });
    for (const line of killed) assert.match(String((line.err as { message?: string }).message), /fields of its own/);
  });

  test('an answer whose page value nests one array by reference (a reply of 528 million characters on the old wire): the front goes on', async () => {
    // JSON has no references: written out, 2^14 copies are a 16 MB line (a larger one is cut at the bound, above).
    let value: unknown = ['x'.repeat(1000)];
    for (let i = 0; i < 14; i++) value = [value, value];
    const outcome = { value, logs: [], executionTimeMs: 1, timings: {} };
    await forged({ type: 'done', id: 1, outcome });
  });

  test('a failure listing 200,000 page calls, one object by reference (a reply of 793 MB): the front goes on', async () => {
    const call = { method: 'page.click', durationMs: 1, outcome: 'ok' };
    const failure = { phase: 'script', pageCalls: Array.from({ length: 200_000 }, () => call) };
    await forged({ type: 'failed', id: 1, error: { code: 'SCRAPING_FAILED', message: 'x', failure } });
  });

  test('a log line of 1 MiB: the front goes on', async () => {
    await forged({ type: 'log', line: JSON.stringify({ level: 30, msg: 'x'.repeat(1024 * 1024) }) });
  });
});

test('the largest answer a slot process may send (a result of MAX_RESULT_BYTES, V8 keeping it at two bytes a character, and logs) is within the bound', async () => {
  await until(() => svc.service.browser.ready, 'a slot process to be ready', { timeoutMs: 60_000 });
  const linesBefore = log.lines.length;
  // MAX_RESULT_BYTES at its default, 10 MiB of JSON text; one '€' makes V8 keep the whole string at two bytes a character.
  const chars = 10 * 2 ** 20 - 2 - 3 - 64;
  const r = await svc.post({
    url: fixtures.url('/example'),
    script: `for (let i = 0; i < 15; i++) console.log('€'.repeat(16 * 1024)); return 'a'.repeat(${chars}) + '€';`,
  });
  assert.equal(r.status, 200, r.text.slice(0, 300));
  assert.equal((r.body.data as string).length, chars + 1);
  assert.equal((r.body.logs as string[]).length, 15);
  const cut = log.lines.slice(linesBefore).filter((l) => /longer than/.test(String(l.reason)));
  assert.deepEqual(cut, [], 'no slot process was cut for it');
});

test('a slot process’s log line cannot pass for another process’s: the front writes which slot process it came from', async () => {
  await until(() => svc.service.browser.ready, 'a slot process to be ready', { timeoutMs: 60_000 });
  const pids = svc.service.slots.pids;
  svc.service.slots.fault('send', {
    type: 'log',
    line: JSON.stringify({ level: 30, msg: 'scrape done', requestId: 'forged-request', slotPid: 1, executor: 1 }),
  });
  await until(() => log.lines.some((l) => l.requestId === 'forged-request'), 'the line to be logged');
  // Each slot process up sent it; each line names the process it came from, never the forged 1.
  const lines = log.lines.filter((l) => l.requestId === 'forged-request');
  for (const line of lines) {
    assert.ok(pids.includes(line.slotPid as number), String(line.slotPid));
    assert.equal(line.executor, line.slotPid, 'executor: the deprecated name of slotPid, for one release');
  }
});

test("a slot process that forges what a request cost does not change the CPU the front reports: the kernel's count stands", async () => {
  await until(() => svc.service.browser.ready, 'a slot process to be ready', { timeoutMs: 60_000 });
  // The request waits on a page request the test holds open, so it is running when the claim is sent.
  let open = (): void => undefined;
  const arrived = new Promise<void>((resolve) =>
    fixtures.route('/gate', (_req, res) => {
      open = () => res.end('open');
      resolve();
    }),
  );
  const pending = svc.post({
    url: fixtures.url('/example'),
    script: "return await page.evaluate(() => fetch('/gate').then((r) => r.text()))",
  });
  await arrived;
  const HOUR_MS = 3_600_000;
  // Sent by the slot that runs the job, for its job (a message about any other id kills the process).
  const slot = svc.service.slots.jobIds.findIndex((id) => id !== undefined);
  svc.service.slots.fault(
    'send',
    {
      type: 'done',
      id: svc.service.slots.jobIds[slot],
      outcome: { json: '"forged"', logs: [], executionTimeMs: 1, timings: {}, usage: { cpuMs: HOUR_MS } },
    },
    slot,
  );
  const r = await pending;
  open();
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.data, 'forged', 'the forged answer was taken for the request');
  const cpu = Number(r.headers['x-usage-cpu-ms']);
  assert.ok(Number.isFinite(cpu) && cpu < HOUR_MS, `X-Usage-Cpu-Ms ${String(r.headers['x-usage-cpu-ms'])}`);
});

/** A request held on its page (`/held-N`), running in its slot; `release` ends its page's request. */
async function held(
  name: string,
  headers: Record<string, string> = {},
): Promise<{ reply: ReturnType<typeof svc.post>; slot: number; id: number; release: () => void }> {
  await until(() => svc.service.browser.ready && allSlotsReady(), 'every slot process to be ready', {
    timeoutMs: 60_000,
  });
  let release = (): void => undefined;
  const arrived = new Promise<void>((resolve) =>
    fixtures.route(`/${name}`, (_req, res) => {
      release = () => res.end('open');
      resolve();
    }),
  );
  const reply = svc.post(
    {
      url: fixtures.url('/example'),
      script: `return await page.evaluate(() => fetch('/${name}').then((r) => r.text()))`,
    },
    headers,
  );
  await arrived;
  await until(() => svc.service.slots.jobPhases.includes('script'), 'the job to be in its script');
  const slot = svc.service.slots.jobPhases.indexOf('script');
  const id = svc.service.slots.jobIds[slot];
  assert.ok(id !== undefined);
  return { reply, slot, id, release: () => release() };
}

describe('a message out of its job’s order (phases forward, one answer, then closed)', () => {
  test('a job closed before it was answered (its deadline would be disarmed): the process is killed, its caller answered', async () => {
    const job = await held('closed-early');
    const pid = svc.service.slots.slotPids[job.slot];
    svc.service.slots.fault('send', { type: 'closed', id: job.id }, job.slot);
    // A job the front forgot is never answered: a minute is far past any answer.
    const r = await within(job.reply, 'the caller to be answered', 60_000).finally(job.release);
    assert.equal(r.status, 500, r.text);
    assert.equal(r.body.code, 'INTERNAL_SERVER_ERROR');
    const killed = log.lines.find((l) => l.msg === 'bad message from a slot process; killing it' && l.pid === pid);
    assert.match(String(killed?.reason), /before it answered/);
  });

  test('a phase stepped back to lease (its death would pass for the service’s own, retried and charged to no one): the process is killed, its own request fails', async () => {
    const job = await held('back-to-lease');
    const pid = svc.service.slots.slotPids[job.slot];
    svc.service.slots.fault('send', { type: 'phase', id: job.id, phase: 'lease' }, job.slot);
    // A job the front forgot is never answered: a minute is far past any answer.
    const r = await within(job.reply, 'the caller to be answered', 60_000).finally(job.release);
    // Not 503 (another slot's preparation), nor the page's 200: its own process ended under it.
    assert.equal(r.status, 500, r.text);
    const killed = log.lines.find((l) => l.msg === 'bad message from a slot process; killing it' && l.pid === pid);
    assert.match(String(killed?.reason), /back to lease/);
  });

  test('a failure claimed as the service’s own preparation once its script runs (its script run again, charged to no key): the process is killed, its own request fails', async () => {
    const job = await held('forged-housekeeping');
    const pid = svc.service.slots.slotPids[job.slot];
    svc.service.slots.fault(
      'send',
      { type: 'failed', id: job.id, error: { code: 'SERVICE_UNAVAILABLE', message: 'x', housekeeping: 'lease' } },
      job.slot,
    );
    const r = await within(job.reply, 'the caller to be answered', 60_000).finally(job.release);
    assert.equal(r.status, 500, r.text);
    const killed = log.lines.find((l) => l.msg === 'bad message from a slot process; killing it' && l.pid === pid);
    assert.match(String(killed?.reason), /own preparation/);
    assert.ok(
      !log.lines.some((l) => l.msg === 'a slot could not prepare for the request; it waits for another'),
      'it was not run again',
    );
  });

  test('a duration past its job’s deadline (the histogram made +Inf for good): the process is killed, the metric stays finite', async () => {
    const job = await held('forged-observe');
    svc.service.slots.fault('send', { type: 'observe', metric: 'script', seconds: 1e308 }, job.slot);
    const r = await within(job.reply, 'the caller to be answered', 60_000).finally(job.release);
    assert.equal(r.status, 500, r.text);
    const metrics = await svc.raw('GET', '/metrics');
    const sum = /^pagescript_script_seconds_sum(?:\{[^}]*\})? (\S+)$/m.exec(metrics.text)?.[1];
    assert.ok(Number.isFinite(Number(sum)), `pagescript_script_seconds_sum ${String(sum)}`);
  });

  test("a slot process killed for a forged message during a request is a slot-died security event for the request's key", async () => {
    const requestId = 'forged-slot-died';
    const job = await held('forged-slot-died', { 'x-request-id': requestId });
    const pid = svc.service.slots.slotPids[job.slot];
    svc.service.slots.fault('send', { type: 'constructor' }, job.slot);
    const r = await within(job.reply, 'the caller to be answered', 60_000).finally(job.release);
    assert.equal(r.status, 500, r.text);
    assert.ok(log.lines.some((l) => l.msg === 'bad message from a slot process; killing it' && l.pid === pid));
    const line = log.lines.find((l) => l.requestId === requestId && l.msg === 'scrape failed');
    assert.deepEqual([line?.cause, line?.security], ['runner-stopped', { 'slot-died': 1 }]);
    const events = log.lines.find((l) => l.requestId === requestId && l.msg === 'security events');
    assert.equal(events?.keyName, line?.keyName);
    assert.match(
      String((events?.details as string[] | undefined)?.[0]),
      new RegExp(`^slot-died \\(process\\): slot process ${String(pid)} exited`),
    );
    const metrics = await svc.raw('GET', '/metrics');
    assert.match(metrics.text, /^pagescript_security_events_total\{[^}]*class="slot-died"[^}]*\} [1-9]/m);
  });

  test('a duration with no job running: the front goes on', async () => {
    const killed = await forged({ type: 'observe', metric: 'navigation', seconds: 1 });
    for (const line of killed) assert.match(String(line.reason), /no job running/);
  });

  test('an answer for a job it was never given: the front goes on', async () => {
    const killed = await forged({ type: 'failed', id: 2 ** 40, error: { code: 'SCRAPING_FAILED', message: 'x' } });
    for (const line of killed) assert.match(String(line.reason), /does not run/);
  });
});

test('a slot process that closes its wire and lives on (the next job would wait its whole deadline): it is replaced, every request served', async () => {
  await until(() => svc.service.browser.ready && allSlotsReady(), 'every slot process to be ready', {
    timeoutMs: 60_000,
  });
  const pids = svc.service.slots.readyPids;
  svc.service.slots.fault('unwire');
  await until(
    () => !svc.service.slots.pids.some((pid) => pids.includes(pid)),
    'every slot process that closed its wire to be gone',
  );
  const killed = log.lines.filter((l) => /wire closed while it runs; killing it/.test(String(l.msg)));
  assert.deepEqual(new Set(killed.map((l) => l.pid)), new Set(pids), 'each one is killed for it');
  for (let i = 0; i < 3; i++) {
    const r = await within(
      svc.post({ url: fixtures.url('/example'), script: 'return await page.title()' }),
      'a request to be served',
      60_000,
    );
    assert.equal(r.status, 200, r.text);
  }
});
