// POST /api/scrape ends every request in one place (scrapeRoute's finish): its
// reply, usage headers, log line and metrics are made from the job's outcome,
// the error's and the telemetry's fields each where they belong. Substitute
// slots (no Chromium) answer with the outcome each test names.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { test } from 'node:test';
import { request } from 'undici';
import { buildApp } from '../../../src/front/app.js';
import { ApiError, internalFailure } from '../../../src/common/errors.js';
import { loadConfig } from '../../../src/common/config.js';
import { createLogger } from '../../../src/common/log.js';
import { failedJob, RUNNER_STOPPED, type JobOutcome } from '../../../src/protocol/jobs.js';
import { SecurityRecord } from '../../../src/protocol/security.js';
import { until } from '../../helpers/wait.js';

const KEY = 'unit-key-0123456789abcdef';

async function withApp(
  outcome: JobOutcome,
  body: Record<string, unknown>,
  check: (r: {
    status: number;
    headers: Record<string, unknown>;
    json: unknown;
    log: Record<string, unknown>[];
    /** Every line of the request (its `security events` line too). */
    all: Record<string, unknown>[];
  }) => void,
  /** The client goes away while the job runs; the job answers `outcome` once cancelled. */
  abandon = false,
): Promise<void> {
  const raw: string[] = [];
  let started = (): void => undefined;
  const running = new Promise<void>((r) => (started = r));
  const slots = {
    browser: { ready: true, pid: undefined, pids: [], restarts: 0, recycles: 0, contextsReady: 1 },
    serving: true,
    restarts: 0,
    chromiumSandbox: true,
    egress: { ready: true, restarts: 0 },
    run: async (_job: unknown, signal: AbortSignal): Promise<JobOutcome> => {
      started();
      if (abandon) await new Promise((r) => signal.addEventListener('abort', r, { once: true }));
      return outcome;
    },
    memory: { slotBytes: 0, chromiumBytes: 0, pageBytes: 0, pageLimitKills: 0 },
    slotCgroups: 'off: SLOT_CGROUPS=off',
    slotNonDumpable: 'off: the service is not root',
    slotPrivateTmp: 'off: the service is not root',
    users: undefined,
  };
  const app = buildApp({
    config: loadConfig({ API_KEYS: KEY, LOG_LEVEL: 'info' }),
    slots,
    logger: createLogger('info', { write: (line: string) => void raw.push(line) }),
    kernelLock: { on: false, why: 'not root' },
  });
  const server = createServer((req, res) => app.handle(req, res));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const lines = (): Record<string, unknown>[] =>
    raw.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.requestId === 'finish-1');
  const scrapeLines = (): Record<string, unknown>[] => lines().filter((l) => String(l.msg).startsWith('scrape'));
  const gone = new AbortController();
  try {
    const sent = request(`http://127.0.0.1:${(server.address() as { port: number }).port}/api/scrape`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-key': KEY, 'x-request-id': 'finish-1' },
      body: JSON.stringify({ url: 'https://public.example/', ...body }),
      signal: gone.signal,
    });
    if (abandon) {
      await running;
      gone.abort();
      await sent.catch(() => undefined);
      await until(() => scrapeLines().length > 0, 'the abandoned request to be logged');
      check({ status: 0, headers: {}, json: undefined, log: scrapeLines(), all: lines() });
      return;
    }
    const r = await sent;
    const json = await r.body.json();
    check({ status: r.statusCode, headers: r.headers, json, log: scrapeLines(), all: lines() });
  } finally {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
}

test("a success's reply is its result; its telemetry goes to the headers and the one log line", async () => {
  const outcome: JobOutcome = {
    ok: true,
    result: { json: '"Example"', logs: ['hi'], executionTimeMs: 42 },
    telemetry: {
      timings: { lease: 3.2, navigation: 20.4, script: 8.6 },
      egress: { bytesReceived: 1200, bytesSent: 300, connections: 2 },
      usage: { cpuMs: 17 },
      slot: 0,
    },
  };
  await withApp(outcome, { script: 'return 1' }, ({ status, headers, json, log }) => {
    assert.equal(status, 200);
    assert.deepEqual(json, {
      message: 'Script executed successfully',
      data: 'Example',
      executionTime: 42,
      logs: ['hi'],
    });
    assert.equal(headers['x-usage-cpu-ms'], '17');
    assert.equal(headers['x-usage-bytes-received'], '1200');
    assert.match(String(headers['server-timing']), /lease;dur=3\.2, navigation;dur=20\.4, script;dur=8\.6/);
    assert.equal(log.length, 1);
    const [line] = log;
    assert.deepEqual(
      [line?.msg, line?.code, line?.status, line?.leaseMs, line?.navigationMs, line?.scriptMs, line?.executionMs],
      ['scrape done', 'OK', 200, 3, 20, 9, 42],
    );
    assert.deepEqual(line?.egress, { bytesReceived: 1200, bytesSent: 300, connections: 2 });
  });
});

test("a failure's body is its error's; where it failed and what it cost are the telemetry's", async () => {
  const error = new ApiError('SCRAPING_FAILED', 'Script execution failed: boom', {
    logs: ['before'],
    failure: { phase: 'script', line: 2 },
    timeout: 'script',
  });
  const outcome = failedJob(error, {
    timings: { lease: 1, script: 5000 },
    usage: { cpuMs: 900, isolateHeapPeakMb: 4 },
    egress: { bytesReceived: 10 },
    phase: 'script',
    slot: 1,
  });
  await withApp(outcome, { script: 'throw 1' }, ({ status, headers, json, log }) => {
    assert.equal(status, 400);
    assert.deepEqual(json, {
      error: 'Script execution failed: boom',
      code: 'SCRAPING_FAILED',
      statusCode: 400,
      logs: ['before'],
      phase: 'script',
      line: 2,
    });
    assert.equal(headers['x-usage-cpu-ms'], '900');
    assert.equal(headers['x-usage-bytes-received'], '10');
    assert.equal(log.length, 1);
    const [line] = log;
    assert.deepEqual(
      [line?.msg, line?.level, line?.code, line?.slot, line?.phase, line?.scriptMs, line?.cause, line?.err],
      ['scrape failed', 30, 'SCRAPING_FAILED', 1, 'script', 5000, undefined, undefined],
    );
  });
});

test('a 500 says nothing of its cause to the caller; its log line names it, at error', async () => {
  const outcome = failedJob(internalFailure('browser-gone', undefined, 'Chromium exited'), { phase: 'navigation' });
  await withApp(outcome, { script: 'return 1' }, ({ status, json, log }) => {
    assert.equal(status, 500);
    assert.deepEqual(json, { error: 'Internal server error', code: 'INTERNAL_SERVER_ERROR', statusCode: 500 });
    assert.equal(log.length, 1);
    assert.deepEqual(
      [log[0]?.level, log[0]?.cause, log[0]?.phase, log[0]?.err],
      [50, 'browser-gone', 'navigation', 'Chromium exited'],
    );
  });
});

test("a result the front cannot reply with is the service's 500, still billed what the job measured", async () => {
  // SECURITY: a slot's `json` that does not parse (a hostile slot's own) costs its key what the job used.
  const outcome: JobOutcome = {
    ok: true,
    result: { json: '{not json', logs: [], executionTimeMs: 5 },
    telemetry: { usage: { cpuMs: 321 }, egress: { bytesReceived: 4096 }, phase: 'script', slot: 0 },
  };
  await withApp(outcome, { script: 'return 1' }, ({ status, headers, json, log }) => {
    assert.equal(status, 500);
    assert.deepEqual(json, { error: 'Internal server error', code: 'INTERNAL_SERVER_ERROR', statusCode: 500 });
    assert.equal(headers['x-usage-cpu-ms'], '321');
    assert.equal(headers['x-usage-bytes-received'], '4096');
    assert.equal(log.length, 1);
    assert.deepEqual([log[0]?.level, log[0]?.cause, log[0]?.slot], [50, 'unexpected', 0]);
  });
});

/** What a slot saw of its request: two refused navigations and a refused method. */
function slotReport(): SecurityRecord {
  const r = new SecurityRecord();
  r.add('private', 'navigation', 'http://10.0.0.1/');
  r.add('link-local', 'navigation', 'http://169.254.169.254/');
  r.add('refused-method', 'script', 'page.browser()');
  return r;
}

test("a request's log line carries its security events' counts by class; its `security events` line describes them", async () => {
  const outcome: JobOutcome = {
    ok: true,
    result: { json: '1', logs: [], executionTimeMs: 3 },
    telemetry: { security: slotReport().report(), slot: 0 },
  };
  await withApp(outcome, { script: 'return 1' }, ({ status, log, all }) => {
    assert.equal(status, 200);
    assert.equal(log.length, 1);
    assert.deepEqual(log[0]?.security, { private: 1, 'link-local': 1, 'refused-method': 1 });
    const events = all.filter((l) => l.msg === 'security events');
    assert.equal(events.length, 1);
    assert.equal(events[0]?.keyName, 'env-1');
    assert.deepEqual(events[0]?.details, slotReport().details().details);
  });
});

test('a slot process that died under its request (a forged message killed it) is a slot-died event in its log line', async () => {
  // What the supervisor answers the job of a slot process that exited under it (supervisor.ts #afterExit).
  const outcome = failedJob(internalFailure('runner-stopped', RUNNER_STOPPED, 'slot process 4242 exited (SIGKILL)'), {
    security: slotReport().report(),
    phase: 'script',
    slot: 0,
  });
  await withApp(outcome, { script: 'return 1' }, ({ status, log, all }) => {
    assert.equal(status, 500);
    assert.deepEqual([log[0]?.msg, log[0]?.cause], ['scrape failed', 'runner-stopped']);
    assert.deepEqual(log[0]?.security, { private: 1, 'link-local': 1, 'refused-method': 1, 'slot-died': 1 });
    const events = all.find((l) => l.msg === 'security events');
    assert.ok((events?.details as string[]).includes('slot-died (process): slot process 4242 exited (SIGKILL)'));
  });
});

test('Chromium gone, or a memory kill, is no slot-died event', async () => {
  for (const error of [
    internalFailure('browser-gone', undefined, 'Chromium exited'),
    new ApiError('MEMORY_LIMIT_EXCEEDED', 'Script execution failed: memory'),
  ]) {
    await withApp(failedJob(error, { phase: 'script', slot: 0 }), { script: 'return 1' }, ({ log, all }) => {
      assert.equal(log[0]?.security, undefined);
      assert.equal(all.filter((l) => l.msg === 'security events').length, 0);
    });
  }
});

test('a request whose client went away still logs its security counts', async () => {
  const outcome = failedJob(new ApiError('SCRAPING_FAILED', 'Script execution failed: cancelled'), {
    security: slotReport().report(),
    phase: 'script',
    slot: 0,
  });
  await withApp(
    outcome,
    { script: 'return 1' },
    ({ log }) => {
      assert.deepEqual([log[0]?.status, log[0]?.code], [499, 'CLIENT_CLOSED']);
      assert.deepEqual(log[0]?.security, { private: 1, 'link-local': 1, 'refused-method': 1 });
    },
    true,
  );
});
