// Operations: metrics, request ids in logs, the browser killed mid-request,
// recycling, and the OpenAPI document with its page for people.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { BrowserHost } from '../../../src/slot/browser/browser-host.js';
import { EgressSession } from '../../../src/egress/session.js';
import { ERRORS } from '../../../src/common/errors.js';
import { createLogger, silentLogger } from '../../../src/common/log.js';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../../helpers/fixtures.js';
import { assertMatchesOpenApi } from '../../helpers/openapi.js';
import { TEST_KEY, capturingLogger, serviceFor, startTestService } from '../../helpers/service.js';
import { alive } from '../../helpers/system.js';
import { until } from '../../helpers/wait.js';

const fixtures = new FixtureServer({ '/example': html(EXAMPLE_DOMAIN_HTML) });
const TOKEN = 'metrics-token-0123456789';
const svc = serviceFor(fixtures, { METRICS_TOKEN: TOKEN, SCRIPT_MEMORY_MB: '32', SCRIPT_TIMEOUT_MS: '4000' });

const run = (script: string, headers: Record<string, string> = {}) =>
  svc.post({ url: fixtures.url('/example'), script }, headers);
const metrics = async (): Promise<string> => {
  const r = await svc.raw('GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal(r.status, 200);
  assert.match(String(r.headers['content-type']), /^text\/plain; version=0\.0\.4/);
  return r.text;
};

/** /health as the operator sees it (with the metrics token, it shows how busy the service is). */
const health = async (): Promise<Record<string, unknown>> =>
  (await svc.raw('GET', '/health', { headers: { authorization: `Bearer ${TOKEN}` } })).body;

/** The value of one sample in Prometheus text format, 0 when absent. */
function sample(text: string, name: string, labels = ''): number {
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`${name}${labels} `) || (labels === '' && l.startsWith(`${name} `)));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}

describe('metrics', () => {
  test('GET /metrics counts outcomes, timeouts, memory kills and egress refusals, with duration histograms and gauges', async () => {
    const before = await metrics();
    assert.equal((await run('return await page.title()')).status, 200);
    assert.equal((await run('throw new Error("no")')).body.code, 'SCRAPING_FAILED');
    assert.equal((await run('while (true) {}')).body.code, 'SCRAPING_FAILED');
    assert.equal(
      // Big steps (8 MB each) so the 32 MB cap is reached well inside the file's 4000 ms script limit on a busy machine.
      (await run('const a = []; while (true) a.push(new Array(1 << 20).fill(a.length));')).body.code,
      'MEMORY_LIMIT_EXCEEDED',
    );
    assert.equal(
      (await svc.post({ url: 'http://169.254.169.254/latest/meta-data/', script: 'return 1' })).body.code,
      'SCRAPING_FAILED',
    );
    const after = await metrics();
    const grew = (name: string, labels = ''): number => sample(after, name, labels) - sample(before, name, labels);
    assert.equal(grew('pagescript_requests_total', '{code="OK"}'), 1);
    assert.equal(grew('pagescript_requests_total', '{code="SCRAPING_FAILED"}'), 3);
    assert.equal(grew('pagescript_requests_total', '{code="MEMORY_LIMIT_EXCEEDED"}'), 1);
    assert.equal(grew('pagescript_timeouts_total', '{phase="script"}'), 1);
    assert.equal(grew('pagescript_memory_limit_kills_total'), 1);
    assert.ok(grew('pagescript_egress_refusals_total') >= 1);
    assert.ok(grew('pagescript_script_seconds_count') >= 4);
    assert.ok(grew('pagescript_navigation_seconds_count') >= 4);
    assert.ok(grew('pagescript_queue_wait_seconds_count') >= 4);
    for (const gauge of [
      'pagescript_jobs_running',
      'pagescript_jobs_queued',
      'pagescript_slots',
      'pagescript_browser_contexts_ready',
      'pagescript_browser_restarts_total',
    ]) {
      assert.match(after, new RegExp(`^${gauge} \\d+$`, 'm'), gauge);
    }
    assert.equal(sample(after, 'pagescript_slots'), svc.service.config.maxConcurrency);
  });

  test('with METRICS_TOKEN set, /metrics without the token or with a wrong one is 401 INVALID_METRICS_TOKEN', async () => {
    const attempts: Array<Record<string, string>> = [{}, { authorization: 'Bearer wrong' }, { authorization: TOKEN }];
    for (const headers of attempts) {
      const r = await svc.raw('GET', '/metrics', { headers });
      assert.equal(r.status, 401);
      assert.equal(r.body.code, 'INVALID_METRICS_TOKEN');
      assert.ok(!r.text.includes('pagescript_requests_total'));
    }
  });
});

describe('health', () => {
  test("/health shows how busy the service is (other tenants' work) only with the METRICS_TOKEN", async () => {
    const pending = run('await new Promise((r) => setTimeout(r, 600)); return 1');
    await until(async () => (await health()).running === 1, 'the job to start');
    const anyone = await svc.raw('GET', '/health');
    assert.equal(anyone.status, 200);
    // chromium, chromiumSandbox, kernelLock and the slots' cgroups and privacy are how the service is set up: shown to all.
    assert.deepEqual(Object.keys(anyone.body).sort(), [
      'browser',
      'chromium',
      'chromiumSandbox',
      'kernelLock',
      'keys',
      'limits',
      'memory',
      'slotCgroups',
      'slotNonDumpable',
      'slotPrivateTmp',
      'slotUsers',
      'status',
    ]);
    // The memory budget is how the service is set up; what is in use is other tenants' work.
    const memory = anyone.body.memory as Record<string, unknown>;
    assert.equal(memory.serviceMb, svc.service.config.serviceMemoryMb);
    assert.equal(memory.inUseMb, undefined);
    assert.equal(memory.reservedMb, undefined);
    const wrong = await svc.raw('GET', '/health', { headers: { authorization: 'Bearer not-the-token' } });
    assert.equal(wrong.body.running, undefined);
    const operator = await health();
    assert.equal(operator.running, 1);
    assert.equal(operator.queued, 0);
    assert.equal(typeof operator.browserRestarts, 'number');
    assert.equal(typeof operator.slotRestarts, 'number');
    assert.equal(operator.executorRestarts, operator.slotRestarts, 'the deprecated name, for one release');
    const use = operator.memory as Record<string, number | undefined>;
    assert.equal(
      use.reservedMb,
      (use.plannedMb ?? 0) - (svc.service.config.maxConcurrency - 1) * (use.perRequestMb ?? 0),
    );
    assert.ok((use.inUseMb ?? 0) > 0);
    assert.equal((await pending).status, 200);
  });
});

describe('logs', () => {
  test('the X-Request-Id sent is echoed and logged with the key name, outcome and durations; no script at info', async () => {
    const log = capturingLogger();
    const own = await startTestService({ EGRESS_ALLOWLIST: fixtures.allowEntry }, {}, log.logger);
    try {
      const r = await own.post(
        { url: fixtures.url('/example'), script: 'return "secret-" + (await page.title())' },
        { 'x-request-id': 'req-42.a:b' },
      );
      assert.equal(r.headers['x-request-id'], 'req-42.a:b');
      const line = log.lines.find((l) => l.requestId === 'req-42.a:b');
      assert.ok(line, 'a line with the request id');
      assert.equal(line.msg, 'scrape done');
      assert.equal(line.code, 'OK');
      assert.equal(typeof line.keyName, 'string');
      for (const f of ['ms', 'queueMs', 'navigationMs', 'scriptMs']) assert.equal(typeof line[f], 'number', f);
      assert.ok(!log.text().includes('secret-'), 'neither the script nor its result is logged');
      assert.ok(!log.text().includes(TEST_KEY));
      // A failed request's line says as much of where its time went.
      const failed = await own.post(
        { url: fixtures.url('/example'), script: 'await page.title(); throw new Error("no")' },
        { 'x-request-id': 'req-43' },
      );
      assert.equal(failed.status, 400, failed.text);
      const failedLine = log.lines.find((l) => l.requestId === 'req-43');
      assert.equal(failedLine?.msg, 'scrape failed');
      for (const f of ['ms', 'queueMs', 'leaseMs', 'isolateMs', 'navigationMs', 'scriptMs'])
        assert.equal(typeof failedLine[f], 'number', f);
      const generated = await own.post({ url: fixtures.url('/example') }, { 'x-request-id': 'bad id with spaces' });
      assert.match(String(generated.headers['x-request-id']), /^[0-9a-f-]{36}$/);
    } finally {
      await own.close();
    }
  });

  test('LOG_LEVEL is honoured: at warn, nothing of info is written', () => {
    const lines: string[] = [];
    const logger = createLogger('warn', { write: (l: string) => void lines.push(l) });
    logger.info({ requestId: 'x' }, 'scrape done');
    logger.warn({ requestId: 'y' }, 'egress refused');
    assert.equal(lines.length, 1);
    assert.match(lines[0] ?? '', /egress refused/);
  });
});

describe('the browser', () => {
  test('Chromium killed mid-request: that request gets a clean error, the next succeeds, /health and /metrics count the restart', async () => {
    // A service of its own, whose script limit cannot end the script before the kill does.
    // One slot: browser.pid is then the Chromium the request runs in (with two, choose() picks the slot).
    const own = await startTestService({
      EGRESS_ALLOWLIST: fixtures.allowEntry,
      MAX_CONCURRENCY: '1',
      SCRIPT_TIMEOUT_MS: '60000',
      METRICS_TOKEN: TOKEN,
    });
    try {
      const pid = own.service.browser.pid;
      assert.ok(pid);
      const restarts = own.service.browser.restarts;
      // The page tells the test when the script is running: it fetches /script-running, then waits forever.
      const running = new Promise<void>((resolve) =>
        fixtures.route('/script-running', (_req, res) => {
          res.end('');
          resolve();
        }),
      );
      const pending = own.post({
        url: fixtures.url('/example'),
        script: "return await page.evaluate(() => { fetch('/script-running'); return new Promise(() => {}); })",
      });
      await running;
      process.kill(pid, 'SIGKILL');
      const r = await pending;
      // As documented: the browser died under the script.
      assert.equal(r.status, 500, r.text);
      assert.equal(r.body.code, 'INTERNAL_SERVER_ERROR');
      assert.match(String(r.body.error), /browser/);
      // The status arrives from the slot process: wait for the new Chromium, not the old one's last report.
      // A launch on a loaded machine (the whole suite beside it) may pass the default ten seconds.
      await until(() => own.service.browser.ready && own.service.browser.pid !== pid, 'the relaunch', {
        timeoutMs: 60_000,
      });
      assert.notEqual(own.service.browser.pid, pid);
      const next = await own.post({ url: fixtures.url('/example'), script: 'return await page.title()' });
      assert.equal(next.status, 200, next.text);
      assert.equal(next.body.data, 'Example Domain');
      const auth = { headers: { authorization: `Bearer ${TOKEN}` } };
      const health = await own.raw('GET', '/health', auth);
      assert.equal(health.body.browserRestarts, restarts + 1);
      const text = (await own.raw('GET', '/metrics', auth)).text;
      assert.equal(sample(text, 'pagescript_browser_restarts_total'), restarts + 1);
    } finally {
      await own.close();
    }
  });

  test('Chromium killed while the script waits on a timer, with no page call to fail: the disconnect ends the script', async () => {
    // Only the request's watch on its Chromium (job.ts whenDisconnected) can end this script before its 60 s limit.
    const own = await startTestService({
      EGRESS_ALLOWLIST: fixtures.allowEntry,
      MAX_CONCURRENCY: '1',
      SCRIPT_TIMEOUT_MS: '60000',
    });
    try {
      const pid = own.service.browser.pid;
      assert.ok(pid);
      const waiting = new Promise<void>((resolve) =>
        fixtures.route('/script-waiting', (_req, res) => {
          res.end('');
          resolve();
        }),
      );
      const pending = own.post({
        url: fixtures.url('/example'),
        script:
          "await page.evaluate(() => { fetch('/script-waiting'); }); await new Promise((r) => setTimeout(r, 60000)); return 1",
      });
      await waiting;
      process.kill(pid, 'SIGKILL');
      const r = await pending;
      assert.equal(r.status, 500, r.text);
      assert.equal(r.body.code, 'INTERNAL_SERVER_ERROR');
      assert.match(String(r.body.error), /the browser closed unexpectedly/);
    } finally {
      await own.close();
    }
  });

  test('a fresh context opens no browser UI of its own (the omnibox popups cost a renderer and ~400 ms of CPU per context)', async () => {
    // The service's Chromium is in a slot process; this looks at one launched the same way, here.
    // Its contexts are pointed at a closed port (as when the guard is down): it loads nothing.
    const host = new BrowserHost({
      executablePath: svc.service.config.executablePath,
      chromium: svc.service.config.chromium,
      guardPort: 9,
      openEgress: () => Promise.resolve(new EgressSession(undefined, 9, () => undefined)),
      protocolTimeoutMs: 10_000,
      prewarmedContexts: 0,
      recycleAfterContexts: 0,
      logger: silentLogger(),
    });
    const lease = await host.lease('test-omnibox');
    try {
      const cdp = await lease.page.browser().target().createCDPSession();
      try {
        // The filter [{}] lists every type, browser_ui included (the default leaves some out).
        const { targetInfos } = await cdp.send('Target.getTargets', { filter: [{}] });
        const mine = targetInfos.filter((t) => t.browserContextId === lease.context.id);
        assert.ok(
          mine.some((t) => t.type === 'page'),
          'the context and its page are listed',
        );
        assert.deepEqual(
          mine.filter((t) => t.type === 'browser_ui').map((t) => t.url),
          [],
        );
      } finally {
        await cdp.detach();
      }
    } finally {
      await lease.close();
      await host.close();
    }
  });

  test('Chromium is recycled after BROWSER_RECYCLE_CONTEXTS contexts without failing requests in flight, and the old one exits', async () => {
    const own = await startTestService({
      EGRESS_ALLOWLIST: fixtures.allowEntry,
      BROWSER_RECYCLE_CONTEXTS: '4',
      MAX_CONCURRENCY: '3',
    });
    try {
      const pids = new Set<number>();
      const first = new Set(own.service.browser.pids);
      const script = 'await new Promise((r) => setTimeout(r, 150)); return await page.title()';
      for (let round = 0; round < 4; round++) {
        for (const p of own.service.browser.pids) pids.add(p);
        const replies = await Promise.all([1, 2, 3].map(() => own.post({ url: fixtures.url('/example'), script })));
        for (const r of replies) assert.equal(r.status, 200, r.text);
      }
      await until(() => own.service.browser.recycles >= 2, 'two recycles');
      for (const p of own.service.browser.pids) pids.add(p);
      // One Chromium per slot. The slot process reports their pids every 100 ms, so a generation that lived
      // less than that may never be seen here: the recycles count says how many there were; a pid at the end
      // must be one that was not there at the start.
      assert.ok(
        own.service.browser.pids.some((p) => !first.has(p)),
        `a successor serves: ${[...first].join(', ')} then ${own.service.browser.pids.join(', ')}`,
      );
      const current = own.service.browser.pids;
      await until(
        () => [...pids].filter((p) => !current.includes(p)).every((p) => !alive(p)),
        'the retired Chromium processes to exit',
      );
      assert.equal(own.service.browser.restarts, 0, 'a recycle is not a crash');
    } finally {
      await own.close();
    }
  });
});

describe('the OpenAPI document', () => {
  test('GET /openapi.json is a valid OpenAPI 3.1 document listing every error code', async () => {
    const r = await svc.raw('GET', '/openapi.json');
    assert.equal(r.status, 200);
    const validator = new Validator();
    const result = await validator.validate(r.body as unknown as Parameters<Validator['validate']>[0]);
    assert.ok(result.valid, JSON.stringify(result.errors));
    assert.equal(validator.version, '3.1');
    const codes = (r.body.components as { schemas: { ErrorCode: { enum: string[] } } }).schemas.ErrorCode.enum;
    assert.deepEqual([...codes].sort(), Object.keys(ERRORS).sort());
  });

  test('the response check fails on a reply the document does not describe (it can fail)', () => {
    const json = { 'content-type': 'application/json; charset=utf-8', 'x-request-id': 'x' };
    assert.throws(
      () => assertMatchesOpenApi('POST', '/api/scrape', { status: 200, headers: json, text: '{"surprise":1}' }),
      /header|body/,
    );
    assert.throws(
      () => assertMatchesOpenApi('POST', '/api/scrape', { status: 418, headers: json, text: '{}' }),
      /not documented/,
    );
    assert.throws(
      () =>
        assertMatchesOpenApi('POST', '/api/scrape', {
          status: 400,
          headers: json,
          text: '{"error":"x","code":"RATE_LIMIT_EXCEEDED","statusCode":400}',
        }),
      /does not match/,
    );
  });

  test('GET /docs renders it for a person: every operation and error code, and nothing loaded from elsewhere', async () => {
    const r = await svc.raw('GET', '/docs');
    assert.equal(r.status, 200);
    assert.match(String(r.headers['content-type']), /^text\/html/);
    assert.match(String(r.headers['content-security-policy']), /default-src 'none'/);
    for (const code of Object.keys(ERRORS)) assert.ok(r.text.includes(code), code);
    for (const path of ['/api/scrape', '/health', '/metrics', '/openapi.json']) assert.ok(r.text.includes(path), path);
    assert.doesNotMatch(
      r.text,
      /<script|<link|src=|@import|url\(/i,
      'no script, stylesheet, image or font from anywhere',
    );
  });
});
