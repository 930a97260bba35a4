// Several instances sharing one real redis-server: one limit for a key across
// instances, one concurrency cap across instances, and what happens while
// Redis is away and once it is back.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { hashKey, writeKeyFile } from '../../../src/front/tenancy/keyfile.js';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../../helpers/fixtures.js';
import { RedisServer } from '../../helpers/redis.js';
import { capturingLogger, startTestService, type Reply, type TestService } from '../../helpers/service.js';
import { until } from '../../helpers/wait.js';

const fixtures = new FixtureServer({ '/example': html(EXAMPLE_DOMAIN_HTML) });
const dir = mkdtempSync(join(tmpdir(), 'pagescript-redis-'));
const SHARED = 'ps_shared_0123456789abcdefghijklmnopqr';
const AFTER_OUTAGE = 'ps_after_outage_0123456789abcdefghijkl';
const DURING_OUTAGE = 'ps_during_outage_0123456789abcdefghijk';
const CAPPED = 'ps_capped_0123456789abcdefghijklmnopqr';
const PROBER = 'ps_prober_0123456789abcdefghijklmnopqr';
const logA = capturingLogger();
let redis: RedisServer;
let a: TestService;
let b: TestService;

before(async () => {
  redis = await RedisServer.start();
  await fixtures.start();
  const keyFile = join(dir, 'keys.json');
  writeKeyFile(keyFile, {
    version: 1,
    keys: [
      { name: 'capped', sha256: hashKey(CAPPED), active: true, maxConcurrency: 1 },
      // One refused navigation (10 points) blocks it.
      { name: 'prober', sha256: hashKey(PROBER), active: true, policy: { securityThreshold: 10 } },
    ],
  });
  const env = {
    EGRESS_ALLOWLIST: fixtures.allowEntry,
    REDIS_URL: redis.url,
    API_KEYS: [SHARED, AFTER_OUTAGE, DURING_OUTAGE].join(','),
    API_KEYS_FILE: keyFile,
    RATE_LIMIT: '4',
    RATE_LIMIT_WINDOW_MS: '600000',
    SECURITY_BLOCKING: 'on',
  };
  a = await startTestService(env, {}, logA.logger);
  b = await startTestService(env);
});
after(async () => {
  await a?.close();
  await b?.close();
  await fixtures.close();
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const title = (svc: TestService, key: string): Promise<Reply> =>
  svc.post({ url: fixtures.url('/example'), script: 'return await page.title()' }, { 'x-gateway-key': key });

const health = async (svc: TestService): Promise<Record<string, unknown>> => (await svc.raw('GET', '/health')).body;

test('both instances report shared limits in /health', async () => {
  for (const svc of [a, b]) {
    const h = await health(svc);
    assert.equal(h.status, 'ok');
    assert.equal(h.limits, 'redis');
  }
});

test("two instances behind a balancer enforce one key's limit together", async () => {
  const replies: Reply[] = [];
  for (const svc of [a, b, a, b, a, b]) replies.push(await title(svc, SHARED));
  assert.deepEqual(
    replies.map((r) => r.status),
    [200, 200, 200, 200, 429, 429],
  );
  assert.deepEqual(
    replies.map((r) => r.headers['ratelimit-remaining']),
    ['3', '2', '1', '0', '0', '0'],
  );
  for (const r of replies.slice(4)) {
    assert.equal(r.body.code, 'RATE_LIMIT_EXCEEDED');
    assert.ok(Number(r.headers['retry-after']) >= 1);
  }
});

test("a key's concurrency cap holds across instances: its scripts never overlap", async () => {
  const script = 'const s = Date.now(); await new Promise((r) => setTimeout(r, 400)); return [s, Date.now()];';
  const run = (svc: TestService): Promise<Reply> =>
    svc.post({ url: fixtures.url('/example'), script }, { 'x-gateway-key': CAPPED });
  const replies = await Promise.all([run(a), run(b), run(a), run(b)]);
  for (const r of replies) assert.equal(r.status, 200, r.text);
  const spans = replies.map((r) => r.body.data as [number, number]).sort((x, y) => x[0] - y[0]);
  for (let i = 1; i < spans.length; i++) {
    assert.ok(spans[i]![0] >= spans[i - 1]![1], `scripts overlapped: ${JSON.stringify(spans)}`);
  }
});

test('a key blocked on one instance is blocked on the other; npm run key reads and ends the block in Redis', async () => {
  const probe = await a.post(
    { url: 'http://169.254.169.254/latest/meta-data/', script: 'return 1' },
    { 'x-gateway-key': PROBER },
  );
  assert.equal(probe.status, 400, probe.text.slice(0, 300));
  const onB = await b.post({ url: fixtures.url('/example'), script: 'return 1' }, { 'x-gateway-key': PROBER });
  assert.equal(onB.status, 403, onB.text.slice(0, 300));
  assert.equal(onB.body.code, 'KEY_BLOCKED');
  const key = (...args: string[]) =>
    promisify(execFile)(process.execPath, ['--import', 'tsx', 'scripts/key.ts', ...args], {
      env: { ...process.env, REDIS_URL: redis.url },
    });
  const events = JSON.parse((await key('events', '--name', 'prober')).stdout) as {
    blockedUntil?: string;
    requests: { requestId: string }[];
  };
  assert.match(String(events.blockedUntil), /^\d{4}-/);
  assert.equal(events.requests.length, 1);
  assert.match((await key('unblock', '--name', 'prober')).stdout, /prober: block ended/);
  const served = await b.post({ url: fixtures.url('/example'), script: 'return 1' }, { 'x-gateway-key': PROBER });
  assert.equal(served.status, 200, served.text.slice(0, 300));
});

test('Redis stopped mid-run: requests are still served on local limits, the log and /health say so; back on Redis once it returns', async () => {
  await redis.stop();
  await until(async () => (await health(a)).limits === 'local-fallback', 'instance A to notice', { timeoutMs: 15_000 });
  const h = await health(a);
  assert.equal(h.status, 'degraded');
  const during = await title(a, DURING_OUTAGE);
  assert.equal(during.status, 200, during.text);
  assert.equal(during.headers['ratelimit-remaining'], '3');
  // Limits still hold, per instance: B counts on its own.
  assert.equal((await title(b, DURING_OUTAGE)).headers['ratelimit-remaining'], '3');
  assert.ok(
    logA.lines.some((l) => l.level === 40 && /Redis unavailable/.test(String(l.msg))),
    'a warning is logged',
  );

  await redis.restart();
  await until(
    async () => (await health(a)).limits === 'redis' && (await health(b)).limits === 'redis',
    'both instances to return to Redis',
    { timeoutMs: 15_000 },
  );
  assert.equal((await health(a)).status, 'ok');
  assert.ok(logA.lines.some((l) => /Redis is back/.test(String(l.msg))));
  // Shared again: one count across the two instances.
  assert.equal((await title(a, AFTER_OUTAGE)).headers['ratelimit-remaining'], '3');
  assert.equal((await title(b, AFTER_OUTAGE)).headers['ratelimit-remaining'], '2');
});
