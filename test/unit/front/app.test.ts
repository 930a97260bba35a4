// The request handler built with substitute parts (no Chromium): the paths that
// need a failing or not-yet-ready browser.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, test } from 'node:test';
import { request } from 'undici';
import { buildApp } from '../../../src/front/app.js';
import { loadConfig } from '../../../src/common/config.js';
import { createLogger, silentLogger } from '../../../src/common/log.js';
import { until } from '../../helpers/wait.js';

const KEY = 'unit-key-0123456789abcdef';
const browser = { ready: false, pid: undefined, pids: [], restarts: 0, recycles: 0, contextsReady: 0 };
/** Whether a slot process serves, as the front sees it. */
const frontView = { serving: false };
/**
 * Slot processes that serve as `frontView` says, whose Chromium is as `browser` (the slots' word) says, and
 * whose jobs fail with a detail no caller may see.
 */
const slots = {
  get browser() {
    return { ...browser };
  },
  get serving() {
    return frontView.serving;
  },
  restarts: 0,
  chromiumSandbox: true,
  egress: { ready: true, restarts: 0 },
  run: async (): Promise<never> => {
    throw new Error('secret internal detail /srv/app/src/browser.ts:42');
  },
  memory: { slotBytes: 0, chromiumBytes: 0, pageBytes: 0, pageLimitKills: 0 },
  slotCgroups: 'off: SLOT_CGROUPS=off',
  slotNonDumpable: 'off: the service is not root',
  slotPrivateTmp: 'off: the service is not root',
  users: undefined,
};
let server: Server;
let base = '';

before(async () => {
  const app = buildApp({
    config: loadConfig({ API_KEYS: KEY, LOG_LEVEL: 'silent' }),
    slots,
    logger: silentLogger(),
    kernelLock: { on: false, why: 'not root' },
  });
  server = createServer((req, res) => app.handle(req, res));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
after(async () => {
  // Idle keep-alive connections would hold close() for the server's keep-alive timeout.
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

test('GET /health is 503 until a slot process serves, then 200', async () => {
  frontView.serving = false;
  browser.ready = true;
  const starting = await request(`${base}/health`);
  assert.equal(starting.statusCode, 503);
  assert.equal(((await starting.body.json()) as { status: string }).status, 'starting');
  frontView.serving = true;
  const ready = await request(`${base}/health`);
  assert.equal(ready.statusCode, 200);
  await ready.body.dump();
});

test('a slot that says its Chromium is not ready decides neither /ready nor /health: the front’s own view does', async () => {
  frontView.serving = true;
  browser.ready = false;
  const health = await request(`${base}/health`);
  assert.equal(health.statusCode, 200);
  const body = (await health.body.json()) as { status: string; browser: string };
  assert.equal(body.status, 'ok');
  // Shown as the slots say it.
  assert.equal(body.browser, 'not ready');
  const ready = await request(`${base}/ready`);
  assert.equal(ready.statusCode, 200);
  assert.deepEqual(await ready.body.json(), { status: 'ready' });
  browser.ready = true;
});

test('an unexpected failure is 500 INTERNAL_SERVER_ERROR with no detail, path or stack in the body', async () => {
  const r = await request(`${base}/api/scrape`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-key': KEY },
    body: JSON.stringify({ url: 'https://public.example/', script: 'return 1' }),
  });
  assert.equal(r.statusCode, 500);
  assert.match(String(r.headers['content-type']), /^application\/json/);
  const text = await r.body.text();
  assert.deepEqual(JSON.parse(text), {
    error: 'Internal server error',
    code: 'INTERNAL_SERVER_ERROR',
    statusCode: 500,
  });
  assert.ok(!text.includes('/srv/') && !text.includes('secret'));
});

test('GET /ready says starting, ready, then draining at once when the drain begins; GET /live stays 200 throughout', async () => {
  const app = buildApp({
    config: loadConfig({ API_KEYS: KEY, LOG_LEVEL: 'silent' }),
    slots,
    logger: silentLogger(),
    kernelLock: { on: false, why: 'not root' },
  });
  const own = createServer((req, res) => app.handle(req, res));
  await new Promise<void>((r) => own.listen(0, '127.0.0.1', r));
  const at = `http://127.0.0.1:${(own.address() as { port: number }).port}`;
  const probe = async (path: string): Promise<[number, unknown]> => {
    const r = await request(`${at}${path}`);
    return [r.statusCode, await r.body.json()];
  };
  try {
    frontView.serving = false;
    assert.deepEqual(await probe('/ready'), [503, { status: 'starting' }]);
    assert.deepEqual(await probe('/live'), [200, { status: 'alive' }]);
    frontView.serving = true;
    assert.deepEqual(await probe('/ready'), [200, { status: 'ready' }]);
    app.drain();
    assert.deepEqual(await probe('/ready'), [503, { status: 'draining' }]);
    assert.deepEqual(await probe('/live'), [200, { status: 'alive' }]);
    // A scrape arriving after the drain began is refused, and its connection closed after the reply.
    const r = await request(`${at}/api/scrape`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-key': KEY },
      body: JSON.stringify({ url: 'https://public.example/', script: 'return 1' }),
    });
    assert.equal(r.statusCode, 503);
    assert.equal(r.headers.connection, 'close');
    assert.equal(((await r.body.json()) as { code: string }).code, 'SERVICE_UNAVAILABLE');
    // Counted until its reply is done: a drain would wait for nothing more.
    await until(() => app.inFlight === 0, 'the refused request to leave the count');
  } finally {
    own.closeAllConnections();
    await new Promise<void>((r) => own.close(() => r()));
  }
});

test('a defect in /health or /metrics is 500, one error line and a count: the front keeps serving', async () => {
  const raw: string[] = [];
  const broken = {
    ...slots,
    get slotCgroups(): string {
      throw new Error('health defect');
    },
    get memory(): never {
      throw new Error('metrics defect');
    },
  };
  const app = buildApp({
    config: loadConfig({ API_KEYS: KEY, LOG_LEVEL: 'silent' }),
    slots: broken,
    logger: createLogger('info', { write: (line: string) => void raw.push(line) }),
    kernelLock: { on: false, why: 'not root' },
  });
  const own = createServer((req, res) => app.handle(req, res));
  await new Promise<void>((r) => own.listen(0, '127.0.0.1', r));
  const at = `http://127.0.0.1:${(own.address() as { port: number }).port}`;
  try {
    for (const path of ['/health', '/metrics']) {
      const r = await request(`${at}${path}`, { headers: { 'x-request-id': `defect${path.replace('/', '-')}` } });
      assert.equal(r.statusCode, 500, path);
      const text = await r.body.text();
      assert.equal(JSON.parse(text).code, 'INTERNAL_SERVER_ERROR');
      assert.ok(!text.includes('defect'), 'the cause stays in the log');
    }
    const lines = raw.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'request failed');
    assert.deepEqual(
      lines.map((l) => [l.level, l.requestId, l.path, l.cause]),
      [
        [50, 'defect-health', '/health', 'unexpected'],
        [50, 'defect-metrics', '/metrics', 'unexpected'],
      ],
    );
    assert.match(String(lines[0]?.err), /health defect/);
    assert.match(String(lines[1]?.err), /metrics defect/);
    const counted = (await app.metrics.internalErrors.get()).values.find((v) => v.labels.cause === 'unexpected');
    assert.equal(counted?.value, 2);
    const live = await request(`${at}/live`);
    assert.equal(live.statusCode, 200);
    await live.body.dump();
  } finally {
    own.closeAllConnections();
    await new Promise<void>((r) => own.close(() => r()));
  }
});
