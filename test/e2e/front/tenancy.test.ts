// Tenancy on one instance: keys from the key file, per-key rate limits, slow
// key guessing, fair turns under a burst, the queue's 429s, and what is logged.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { hashKey, writeKeyFile, type KeyRecord } from '../../../src/front/tenancy/keyfile.js';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../../helpers/fixtures.js';
import { TEST_KEY, capturingLogger, startTestService, type Reply, type TestService } from '../../helpers/service.js';
import { until } from '../../helpers/wait.js';

const fixtures = new FixtureServer({ '/example': html(EXAMPLE_DOMAIN_HTML) });
const dir = mkdtempSync(join(tmpdir(), 'pagescript-tenancy-'));
const keyFile = join(dir, 'keys.json');
const ACME = 'ps_acme_0123456789abcdefghijklmnopqrstuv';
const BETA = 'ps_beta_0123456789abcdefghijklmnopqrstuv';
const LIMITED = 'ps_limited_0123456789abcdefghijklmnopqr';
const log = capturingLogger();
let svc: TestService;

const writeKeys = (keys: KeyRecord[]): void => writeKeyFile(keyFile, { version: 1, keys });
const keyRecords = (acmeActive: boolean): KeyRecord[] => [
  { name: 'acme', sha256: hashKey(ACME), active: acmeActive },
  { name: 'beta', sha256: hashKey(BETA), active: true },
  { name: 'limited', sha256: hashKey(LIMITED), active: true, rateLimit: 2, rateLimitWindowMs: 60_000 },
];

before(async () => {
  await fixtures.start();
  writeKeys(keyRecords(true));
  svc = await startTestService(
    {
      EGRESS_ALLOWLIST: fixtures.allowEntry,
      API_KEYS_FILE: keyFile,
      MAX_CONCURRENCY: '1',
      QUEUE_LIMIT: '6',
      AUTH_FAILURE_LIMIT: '20',
      // The tests pose as different client addresses through X-Forwarded-For.
      TRUST_PROXY: '1',
    },
    {},
    log.logger,
  );
});
after(async () => {
  await svc.close();
  await fixtures.close();
  rmSync(dir, { recursive: true, force: true });
});

const titleOf = (key: string, headers: Record<string, string> = {}): Promise<Reply> =>
  svc.post(
    { url: fixtures.url('/example'), script: 'return await page.title()' },
    { 'x-gateway-key': key, ...headers },
  );

/** A script that returns when it started, after holding its slot for a while. */
const SLOW = 'const started = Date.now(); await new Promise((r) => setTimeout(r, 300)); return started;';
const slow = (key: string): Promise<Reply> =>
  svc.post({ url: fixtures.url('/example'), script: SLOW }, { 'x-gateway-key': key });

// Read from the scheduler itself: /health shows these counts only with METRICS_TOKEN.
const running = (): number => svc.service.app.scheduler.running;
const queued = (): number => svc.service.app.scheduler.queued;
/** No script running or waiting (a slot is held until the request's context is closed, just after its reply). */
const idle = (): Promise<void> => until(() => running() === 0 && queued() === 0, 'the service to be idle');

test('a key from API_KEYS_FILE is accepted; revoked in the file it is 401 INVALID_API_KEY, without a restart', async () => {
  // From an address of its own, whose few 401s stay far from AUTH_FAILURE_LIMIT.
  const from = { 'x-forwarded-for': '203.0.113.10' };
  assert.equal((await titleOf(ACME, from)).status, 200);
  writeKeys(keyRecords(false));
  await until(async () => (await titleOf(ACME, from)).status === 401, 'the revocation to take effect', {
    everyMs: 200,
  });
  const r = await titleOf(ACME, from);
  assert.equal(r.body.code, 'INVALID_API_KEY');
  // The other keys of the file still work, and API_KEYS is not in the file at all.
  assert.equal((await titleOf(BETA, from)).status, 200);
  writeKeys(keyRecords(true));
  await until(async () => (await titleOf(ACME, from)).status === 200, 'the key to be active again', { everyMs: 200 });
});

test("a key's own rate limit: RateLimit-* count down, then 429 RATE_LIMIT_EXCEEDED with Retry-After; other keys unaffected", async () => {
  const first = await titleOf(LIMITED);
  assert.equal(first.status, 200);
  assert.equal(first.headers['ratelimit-limit'], '2');
  assert.equal(first.headers['ratelimit-remaining'], '1');
  assert.ok(Number(first.headers['ratelimit-reset']) > 0);
  assert.equal((await titleOf(LIMITED)).headers['ratelimit-remaining'], '0');
  const refused = await titleOf(LIMITED);
  assert.equal(refused.status, 429);
  assert.deepEqual(refused.body, { error: 'Rate limit exceeded', code: 'RATE_LIMIT_EXCEEDED', statusCode: 429 });
  assert.equal(refused.headers['ratelimit-remaining'], '0');
  assert.ok(Number(refused.headers['retry-after']) >= 1);
  const other = await titleOf(BETA);
  assert.equal(other.status, 200);
  assert.equal(other.headers['ratelimit-limit'], '100000');
});

/** Sends limit + 1 wrong keys with these headers; the last must be 429. */
async function guessPastTheLimit(headersFor: (i: number) => Record<string, string>): Promise<Reply> {
  for (let i = 0; i < 20; i++) {
    const r = await titleOf(`ps_guess_${i}_0123456789abcdef`, headersFor(i));
    assert.equal(r.status, 401, `guess ${i}: ${r.text}`);
  }
  return await titleOf('ps_guess_20_0123456789abcdef', headersFor(20));
}

test('guessing keys is slow: past AUTH_FAILURE_LIMIT wrong keys, each further wrong key from the address gets 429 with Retry-After', async () => {
  const from = { 'x-forwarded-for': '203.0.113.50' };
  const refused = await guessPastTheLimit(() => from);
  assert.equal(refused.status, 429);
  assert.equal(refused.body.code, 'RATE_LIMIT_EXCEEDED');
  assert.match(String(refused.body.error), /wrong API keys from this address/);
  assert.ok(Number(refused.headers['retry-after']) >= 1);
});

test("a NAT neighbour cannot lock a tenant out: after someone else's wrong keys from the same address, a valid key is served", async () => {
  // Both come through the balancer from one office address.
  const office = { 'x-forwarded-for': '198.51.100.20' };
  assert.equal((await guessPastTheLimit(() => office)).status, 429);
  const r = await titleOf(BETA, office);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.data, 'Example Domain');
});

test("with TRUST_PROXY, a client reaching the instance directly and naming a tenant's address in X-Forwarded-For cannot lock that tenant out", async () => {
  // Past the balancer, the whole header is the attacker's: the instance believes its last entry.
  const victim = { 'x-forwarded-for': '192.0.2.77' };
  assert.equal((await guessPastTheLimit(() => victim)).status, 429);
  const r = await titleOf(BETA, victim);
  assert.equal(r.status, 200, r.text);
});

test('an IPv6 client rotating through its /64 is counted as one address', async () => {
  const refused = await guessPastTheLimit((i) => ({ 'x-forwarded-for': `2001:db8:77:1::${(i + 1).toString(16)}` }));
  assert.equal(refused.status, 429);
  // The next /64 is someone else.
  assert.equal((await titleOf('ps_guess_x_0123456789abcdef', { 'x-forwarded-for': '2001:db8:77:2::1' })).status, 401);
});

test('an IPv4 client is one address whether written a.b.c.d or ::ffff:a.b.c.d', async () => {
  const refused = await guessPastTheLimit((i) => ({
    'x-forwarded-for': i % 2 === 0 ? '198.51.100.33' : '::ffff:198.51.100.33',
  }));
  assert.equal(refused.status, 429);
});

test('a missing key is 401 MISSING_API_KEY however often, and is not counted as a guess', async () => {
  const from = { 'x-forwarded-for': '198.51.100.44' };
  for (let i = 0; i < 25; i++) {
    const r = await svc.raw('POST', '/api/scrape', {
      body: '{}',
      headers: { 'content-type': 'application/json', ...from },
    });
    assert.equal(r.body.code, 'MISSING_API_KEY');
  }
  assert.equal((await titleOf('ps_typo_0123456789abcdef', from)).status, 401);
});

test('a burst from one key does not starve another: the other key runs as soon as the running script ends', async () => {
  await idle();
  const burst = [slow(TEST_KEY)];
  await until(() => running() === 1, 'the first script to run');
  for (let i = 0; i < 4; i++) burst.push(slow(TEST_KEY));
  await until(() => queued() === 4, 'the burst to queue');
  const other = await slow(BETA);
  const mine = await Promise.all(burst);
  for (const r of [other, ...mine]) assert.equal(r.status, 200, r.text);
  const starts = mine.map((r) => r.body.data as number).sort((a, b) => a - b);
  const otherStart = other.body.data as number;
  // Only the script that was already running started before it.
  assert.ok(
    otherStart > starts[0]! && starts.slice(1).every((s) => s > otherStart),
    JSON.stringify({ otherStart, starts }),
  );
});

test("fairness with the default queue timeout: one key's scripts that run to their limit fill every slot, and another key's short script still runs", async () => {
  await idle();
  // QUEUE_TIMEOUT_MS is not set: its default follows this file's 5 s navigation and script limits.
  assert.ok(svc.service.config.queueTimeoutMs > svc.service.config.scriptTimeoutMs);
  const LONG = 'await new Promise((r) => setTimeout(r, 600000)); return 1';
  const long = [1, 2].map(() => svc.post({ url: fixtures.url('/example'), script: LONG }));
  await until(() => running() === 1 && queued() === 1, 'the long scripts to fill the slot and the queue');
  const short = await titleOf(BETA);
  assert.equal(short.status, 200, short.text);
  assert.ok(Number(short.headers['x-queue-time-ms']) > 0, 'it waited for the long script');
  // How the long scripts end (at their limit) is not what this test is about.
  await Promise.all(long);
});

test('a full queue answers 429 RATE_LIMIT_EXCEEDED with Retry-After at once', async () => {
  await idle();
  const all = Array.from({ length: 8 }, () => slow(TEST_KEY));
  const replies = await Promise.all(all);
  const refused = replies.filter((r) => r.status === 429);
  assert.equal(replies.filter((r) => r.status === 200).length, 7, '1 running + QUEUE_LIMIT 6 waiting');
  assert.equal(refused.length, 1);
  assert.equal(refused[0]?.body.code, 'RATE_LIMIT_EXCEEDED');
  assert.match(String(refused[0]?.body.error), /queue is full/);
  assert.ok(Number(refused[0]?.headers['retry-after']) >= 1);
});

test('time spent queued is reported apart from executionTime (X-Queue-Time-Ms, Server-Timing)', async () => {
  await idle();
  // The running script waits on a page request the test holds open: the test decides when the slot frees.
  let open = (): void => undefined;
  const arrived = new Promise<void>((resolve) =>
    fixtures.route('/gate', (_req, res) => {
      open = () => res.end('open');
      resolve();
    }),
  );
  const held = svc.post(
    { url: fixtures.url('/example'), script: "return await page.evaluate(() => fetch('/gate').then((r) => r.text()))" },
    { 'x-gateway-key': TEST_KEY },
  );
  await arrived;
  const pending = titleOf(BETA);
  await until(() => queued() === 1, 'the second request to queue');
  const seenQueued = performance.now();
  await new Promise((r) => setTimeout(r, 200)); // a wait long enough to tell from the rest of the job
  const heldMs = performance.now() - seenQueued;
  open();
  assert.equal((await held).status, 200);
  const waited = await pending;
  assert.equal(waited.status, 200, waited.text);
  const queueMs = Number(waited.headers['x-queue-time-ms']);
  // Causal, not a speed limit: it was queued at least from when the test saw it queued until the slot was freed.
  assert.ok(queueMs >= Math.floor(heldMs), `queued ${queueMs} ms; the test held the slot ${heldMs} ms`);
  const parts = Object.fromEntries(
    String(waited.headers['server-timing'])
      .split(', ')
      .map((p) => /^(\w+);dur=([\d.]+)$/.exec(p)!.slice(1))
      .map(([name, ms]) => [name, Number(ms)]),
  ) as Record<string, number>;
  // The same wait in both (one header rounds to 1 ms, the other to 0.1 ms).
  assert.ok(Math.abs((parts.queue ?? -1) - queueMs) <= 1, JSON.stringify({ queueMs, parts }));
  // executionTime is the parts after the queue (lease, isolate, navigation, script), not the wait.
  const afterQueue = Object.entries(parts)
    .filter(([n]) => n !== 'queue' && n !== 'serialize')
    .reduce((sum, [, ms]) => sum + ms, 0);
  assert.ok(
    Math.abs((waited.body.executionTime as number) - afterQueue) < queueMs / 2,
    JSON.stringify({ executionTime: waited.body.executionTime, parts }),
  );
});

test('a key file change that fails to load is reported: /health "keys":"stale" and degraded, pagescript_key_file_stale 1; a revocation in it holds', async () => {
  const from = { 'x-forwarded-for': '203.0.113.60' };
  assert.equal((await svc.raw('GET', '/health')).body.keys, 'ok');
  // The operator revokes acme, and breaks the file while at it (a name with a space).
  writeFileSync(
    keyFile,
    JSON.stringify({
      version: 1,
      keys: [...keyRecords(false), { name: 'new key', sha256: hashKey('x'), active: true }],
    }),
  );
  await until(async () => (await svc.raw('GET', '/health')).body.keys === 'stale', 'the failed reload to show');
  const h = await svc.raw('GET', '/health');
  assert.equal(h.status, 200);
  assert.equal(h.body.status, 'degraded');
  assert.match(await svc.service.app.metrics.text(), /^pagescript_key_file_stale 1$/m);
  assert.match(await svc.service.app.metrics.text(), /^pagescript_key_file_reload_failures_total 1$/m);
  assert.equal((await titleOf(ACME, from)).status, 401, 'the revocation holds although the file is broken');
  assert.equal((await titleOf(BETA, from)).status, 200);
  writeKeys(keyRecords(true));
  await until(async () => (await svc.raw('GET', '/health')).body.keys === 'ok', 'the good file to be read');
  assert.match(await svc.service.app.metrics.text(), /^pagescript_key_file_stale 0$/m);
  assert.equal((await titleOf(ACME, from)).status, 200);
});

test('logs name the key and the url host, never the key itself or the script', () => {
  const done = log.lines.filter((l) => l.msg === 'scrape done');
  assert.ok(done.some((l) => l.keyName === 'beta' && l.host === new URL(fixtures.url('/')).host && l.status === 200));
  assert.ok(done.some((l) => l.keyName === 'env-1'));
  const text = log.text();
  for (const secret of [ACME, BETA, LIMITED, TEST_KEY, 'setTimeout(r, 300)'])
    assert.ok(!text.includes(secret), `the log holds ${secret}`);
});
