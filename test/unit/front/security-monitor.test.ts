// Security events per request and per key: the classes the egress policy gives
// refused addresses, the score over a sliding window, the block and its
// cool-off, and what one key can do to another's score (nothing).
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mock, test } from 'node:test';
import {
  FileSecurityStore,
  securityStatePath,
  STATE_WRITE_MS,
  type SecurityStateFile,
} from '../../../src/front/security/file-security-store.js';
import { until } from '../../helpers/wait.js';
import { capturingLogger } from '../../helpers/service.js';
import type { Logger } from '../../../src/common/log.js';
import type { SecuritySettings } from '../../../src/common/config.js';
import { ApiError } from '../../../src/common/errors.js';
import { silentLogger } from '../../../src/common/log.js';
import { EgressChecker } from '../../../src/egress/checker.js';
import { judgeAddress } from '../../../src/egress/policy.js';
import { securityThreshold } from '../../../src/front/tenancy/key-policy.js';
import { SecurityMonitor } from '../../../src/front/security/security-monitor.js';
import { FallbackSecurityStore } from '../../../src/front/security/fallback-security-store.js';
import type { RedisStore } from '../../../src/front/tenancy/redis-store.js';
import { coolOffMs, MemorySecurityStore, type SecurityStore } from '../../../src/front/security/security-store.js';
import { loadConfig } from '../../../src/common/config.js';
import { isSecurityReport, MAX_SECURITY_DETAILS, SecurityRecord } from '../../../src/protocol/security.js';

const SETTINGS: SecuritySettings = {
  blocking: true,
  windowMs: 600_000,
  threshold: 200,
  weights: { navigation: 10, page: 1, method: 5, slot: 20 },
  coolOffMs: 900_000,
  coolOffMaxMs: 86_400_000,
};

function setup(settings: SecuritySettings = SETTINGS, logger: Logger = silentLogger()) {
  let t = 1_700_000_000_000;
  const now = () => t;
  const blocks: string[] = [];
  const events: [string, Record<string, number | undefined>][] = [];
  const monitor = new SecurityMonitor({
    settings,
    store: new MemorySecurityStore(now),
    logger,
    now,
    metrics: {
      countKeyBlock: (k) => blocks.push(k),
      countSecurityEvents: (k, c) => events.push([k, c]),
    },
  });
  return { monitor, blocks, events, advance: (ms: number) => (t += ms) };
}

async function blockedCode(monitor: SecurityMonitor, key: string): Promise<string | undefined> {
  try {
    await monitor.check(key);
    return undefined;
  } catch (e) {
    return (e as ApiError).code;
  }
}

/** One request of `key` whose slot reports one refused navigation (its url, or a goto) to an internal address. */
async function probeByUrl(monitor: SecurityMonitor, key: string, id: string): Promise<void> {
  const entry = monitor.begin(id, key);
  const r = new SecurityRecord();
  r.add('link-local', 'navigation', 'http://169.254.169.254/: address not allowed');
  await monitor.finish(id, entry, { report: r.report(), threshold: SETTINGS.threshold });
}

test('refused addresses are classed by kind: loopback, private, link-local (metadata), reserved', () => {
  const kind = (ip: string) => {
    const v = judgeAddress(ip);
    return v.ok ? 'ok' : v.kind;
  };
  assert.equal(kind('127.0.0.1'), 'loopback');
  assert.equal(kind('::1'), 'loopback');
  assert.equal(kind('0.0.0.0'), 'loopback');
  assert.equal(kind('10.1.2.3'), 'private');
  assert.equal(kind('192.168.1.1'), 'private');
  assert.equal(kind('fd00::1'), 'private');
  assert.equal(kind('::ffff:10.0.0.1'), 'private');
  assert.equal(kind('169.254.169.254'), 'link-local');
  assert.equal(kind('fe80::1'), 'link-local');
  assert.equal(kind('192.0.2.1'), 'reserved');
  assert.equal(kind('93.184.216.34'), 'ok');
});

test('a name that answers a public and a private address is refused as rebinding; own addresses and bad ports by kind', async () => {
  const checker = new EgressChecker({
    allowlist: [],
    protectedPorts: () => [3000],
    localAddresses: () => ['203.0.114.7'],
    resolve: (host) =>
      Promise.resolve(
        host === 'rebind.example'
          ? [
              { address: '93.184.216.34', family: 4 as const },
              { address: '10.0.0.5', family: 4 as const },
            ]
          : [{ address: '203.0.114.7', family: 4 as const }],
      ),
  });
  const kindOf = async (host: string, port: number) => {
    const d = await checker.check(host, port);
    return d.ok ? 'ok' : d.kind;
  };
  assert.equal(await kindOf('rebind.example', 80), 'rebinding');
  assert.equal(await kindOf('self.example', 80), 'own-address');
  assert.equal(await kindOf('127.0.0.1', 3000), 'own-address');
  assert.equal(await kindOf('localhost', 80), 'loopback');
  assert.equal(await kindOf('example.com', 0), 'scheme-or-port');
});

test('a key probing internal addresses by url is blocked after threshold / navigation weight requests; another key is served throughout', async () => {
  const { monitor, blocks } = setup();
  const needed = SETTINGS.threshold / SETTINGS.weights.navigation; // 20
  for (let i = 1; i <= needed; i++) {
    assert.equal(await blockedCode(monitor, 'prober'), undefined, `request ${i} is served`);
    assert.equal(await blockedCode(monitor, 'honest'), undefined);
    await probeByUrl(monitor, 'prober', `p-${i}`);
  }
  assert.equal(await blockedCode(monitor, 'prober'), 'KEY_BLOCKED');
  assert.equal(await blockedCode(monitor, 'honest'), undefined);
  assert.deepEqual(blocks, ['prober']);
  await assert.rejects(monitor.check('prober'), (e: ApiError) => {
    assert.equal(e.status, 403);
    assert.match(e.message, /^Key blocked until \d{4}-\d\d-\d\dT/);
    assert.equal(e.headers['Retry-After'], String(SETTINGS.coolOffMs / 1000));
    return true;
  });
});

test('a page fetching internal addresses is blocked by the count of distinct targets, not one refusal repeated', async () => {
  const { monitor } = setup();
  // The same target refused a thousand times a request, a hundred requests: never blocked.
  for (let r = 0; r < 100; r++) {
    const e = monitor.begin(`same-${r}`, 'repeater');
    for (let i = 0; i < 1000; i++) monitor.egressRefused(`same-${r}`, 'link-local', '169.254.169.254', 80);
    await monitor.finish(`same-${r}`, e, { threshold: SETTINGS.threshold });
  }
  assert.equal(await blockedCode(monitor, 'repeater'), undefined);
  // Walking ports: each distinct host:port counts once.
  const e = monitor.begin('scan', 'scanner');
  for (let port = 1; port < SETTINGS.threshold; port++) monitor.egressRefused('scan', 'private', '10.0.0.1', port);
  await monitor.finish('scan', e, { threshold: SETTINGS.threshold });
  assert.equal(await blockedCode(monitor, 'scanner'), undefined);
  const e2 = monitor.begin('scan-2', 'scanner');
  monitor.egressRefused('scan-2', 'private', '10.0.0.1', SETTINGS.threshold);
  await monitor.finish('scan-2', e2, { threshold: SETTINGS.threshold });
  assert.equal(await blockedCode(monitor, 'scanner'), 'KEY_BLOCKED');
});

test('refused methods reported by the isolate raise only their own key: blocked after threshold / method weight', async () => {
  const { monitor } = setup();
  const needed = SETTINGS.threshold / SETTINGS.weights.method; // 40
  for (let i = 1; i <= needed; i++) {
    assert.equal(await blockedCode(monitor, 'caller'), undefined);
    const e = monitor.begin(`m-${i}`, 'caller');
    const r = new SecurityRecord();
    r.add('refused-method', 'script', 'page.browser()');
    await monitor.finish(`m-${i}`, e, { report: r.report(), threshold: SETTINGS.threshold });
  }
  assert.equal(await blockedCode(monitor, 'caller'), 'KEY_BLOCKED');
  assert.equal(await blockedCode(monitor, 'other'), undefined);
});

test("an egress refusal under a request id two keys share counts for neither (X-Request-Id is the caller's)", async () => {
  const { monitor, events } = setup();
  const a = monitor.begin('shared-id', 'a');
  const b = monitor.begin('shared-id', 'b');
  monitor.egressRefused('shared-id', 'private', '10.0.0.1', 80);
  await monitor.finish('shared-id', a, { threshold: SETTINGS.threshold });
  await monitor.finish('shared-id', b, { threshold: SETTINGS.threshold });
  assert.deepEqual(events, []);
});

test('a slot process that died under its request is a slot-died event, weighed by SECURITY_WEIGHT_SLOT', async () => {
  const { monitor, events } = setup();
  const e = monitor.begin('d', 'k');
  const out = await monitor.finish('d', e, { slotDied: 'slot process 1 exited (SIGSEGV)', threshold: 20 });
  assert.deepEqual(out.security, { 'slot-died': 1 });
  assert.deepEqual(events, [['k', { 'slot-died': 1 }]]);
  assert.equal(await blockedCode(monitor, 'k'), 'KEY_BLOCKED');
});

test("a request's events are one `security events` warn line: its counts by class, 20 details, the rest counted as omitted", async () => {
  const log = capturingLogger();
  const { monitor } = setup(SETTINGS, log.logger);
  const e = monitor.begin('req-1', 'k');
  // The guard's refusals of the page's connections, while it runs.
  for (let port = 1; port <= 3; port++) monitor.egressRefused('req-1', 'loopback', '127.0.0.1', port);
  // The slot's report: 25 refused navigations, of which it describes its first 20.
  const slot = new SecurityRecord();
  for (let i = 0; i < 25; i++) slot.add('private', 'navigation', `http://10.0.0.${i}/`);
  const out = await monitor.finish('req-1', e, { report: slot.report(), threshold: SETTINGS.threshold });
  assert.deepEqual(out.security, { loopback: 3, private: 25 });
  const lines = log.lines.filter((l) => l.msg === 'security events');
  assert.equal(lines.length, 1, 'one line per request');
  const [line] = lines;
  assert.deepEqual(
    [line?.level, line?.requestId, line?.keyName, line?.security],
    [40, 'req-1', 'k', { loopback: 3, private: 25 }],
  );
  const details = line?.details as string[];
  assert.equal(details.length, MAX_SECURITY_DETAILS);
  assert.deepEqual(details.slice(0, 4), [
    'loopback (page): 127.0.0.1:1',
    'loopback (page): 127.0.0.1:2',
    'loopback (page): 127.0.0.1:3',
    'private (navigation): http://10.0.0.0/',
  ]);
  // 28 events, 20 described: the slot's 5 it did not describe and the 3 of its 20 past the bound.
  assert.equal(line?.omitted, 28 - MAX_SECURITY_DETAILS);
  // A request without events logs none.
  const quiet = monitor.begin('req-2', 'k');
  assert.deepEqual(await monitor.finish('req-2', quiet, { threshold: SETTINGS.threshold }), {});
  assert.equal(log.lines.filter((l) => l.msg === 'security events').length, 1);
});

test("a block is one `key blocked` warn line: the key, the window's counts by class, and its last 20 requests as evidence", async () => {
  const log = capturingLogger();
  const { monitor } = setup(SETTINGS, log.logger);
  // 19 refused navigations (190 points) and a page target (1), then refused methods: 5 each.
  for (let i = 1; i <= 19; i++) await probeByUrl(monitor, 'prober', `p-${i}`);
  const page = monitor.begin('p-page', 'prober');
  monitor.egressRefused('p-page', 'private', '10.0.0.1', 22);
  await monitor.finish('p-page', page, { threshold: SETTINGS.threshold });
  assert.equal(log.lines.filter((l) => l.msg === 'key blocked').length, 0, 'no block below the threshold');
  for (const id of ['m-1', 'm-2']) {
    const e = monitor.begin(id, 'prober');
    const r = new SecurityRecord();
    r.add('refused-method', 'script', 'page.browser()');
    await monitor.finish(id, e, { report: r.report(), threshold: SETTINGS.threshold });
  }
  // Another key's events are not in the line.
  await probeByUrl(monitor, 'other', 'o-1');
  const lines = log.lines.filter((l) => l.msg === 'key blocked');
  assert.equal(lines.length, 1, 'one line per block');
  const [line] = lines;
  assert.equal(line?.level, 40);
  assert.equal(line?.keyName, 'prober');
  assert.deepEqual(line?.counts, { 'link-local': 19, private: 1, 'refused-method': 2 });
  assert.deepEqual([line?.score, line?.threshold, line?.block], [201, SETTINGS.threshold, 1]);
  assert.match(String(line?.until), /^\d{4}-\d\d-\d\dT/);
  // The evidence: the ids of the window's requests with points, the last 20 of its 22.
  const ids = [...Array.from({ length: 19 }, (_, i) => `p-${i + 1}`), 'p-page', 'm-1', 'm-2'];
  assert.deepEqual(line?.requestIds, ids.slice(-20));
  assert.ok(!JSON.stringify(line).includes('o-1'));
});

test('the cool-off doubles with each repeat block, up to its cap; the window slides', async () => {
  assert.equal(coolOffMs(1, SETTINGS), 900_000);
  assert.equal(coolOffMs(2, SETTINGS), 1_800_000);
  assert.equal(coolOffMs(20, SETTINGS), SETTINGS.coolOffMaxMs);
  const { monitor, advance } = setup();
  for (let i = 0; i < 20; i++) await probeByUrl(monitor, 'k', `a-${i}`);
  assert.equal(await blockedCode(monitor, 'k'), 'KEY_BLOCKED');
  advance(SETTINGS.coolOffMs);
  assert.equal(await blockedCode(monitor, 'k'), undefined);
  for (let i = 0; i < 20; i++) await probeByUrl(monitor, 'k', `b-${i}`);
  await assert.rejects(monitor.check('k'), (e: ApiError) => e.headers['Retry-After'] === String(1_800));
  advance(1_800_000);
  // Points older than the window are forgotten: 19 now, 1 after the window, no block.
  for (let i = 0; i < 19; i++) await probeByUrl(monitor, 'k', `c-${i}`);
  advance(SETTINGS.windowMs);
  await probeByUrl(monitor, 'k', 'c-last');
  assert.equal(await blockedCode(monitor, 'k'), undefined);
});

test("a key's policy may lower the threshold, never raise it; the defaults are documented ones", () => {
  const config = loadConfig({}, () => 8192);
  assert.deepEqual(config.security, SETTINGS);
  assert.equal(securityThreshold(undefined, config), 200);
  assert.equal(securityThreshold({ securityThreshold: 50 }, config), 50);
  assert.equal(securityThreshold({ securityThreshold: 5000 }, config), 200);
});

test("a slot's report is read as data: a closed set of classes, bounded details", () => {
  const r = new SecurityRecord();
  for (let i = 0; i < 100; i++) r.add('private', 'navigation', `http://10.0.0.${i}/`);
  assert.equal(isSecurityReport(r.report()), true);
  assert.equal(r.report().details.length, MAX_SECURITY_DETAILS);
  assert.deepEqual(r.byClass(), { private: 100 });
  assert.equal(isSecurityReport({ tallies: [{ class: 'anything', via: 'page', n: 1 }], details: [] }), false);
  assert.equal(isSecurityReport({ tallies: [], details: Array<string>(21).fill('x') }), false);
  assert.equal(isSecurityReport({ tallies: [{ class: 'private', via: 'page', n: -1 }], details: [] }), false);
});

test('with SECURITY_BLOCKING=off events are recorded and logged, and no key is blocked', async () => {
  const { monitor, events } = setup({ ...SETTINGS, blocking: false });
  for (let i = 0; i < 50; i++) await probeByUrl(monitor, 'k', `x-${i}`);
  assert.equal(events.length, 50);
  assert.equal(await blockedCode(monitor, 'k'), undefined);
  assert.ok(new ApiError('KEY_BLOCKED').status === 403);
});

test('an egress refusal that arrives after its request ended still counts for its key, and for no other', async () => {
  const { monitor, events } = setup();
  const e = monitor.begin('late', 'k');
  await monitor.finish('late', e, { threshold: 1 });
  monitor.egressRefused('late', 'private', '10.0.0.1', 80);
  monitor.egressRefused('never-seen', 'private', '10.0.0.2', 80);
  await monitor.settled();
  assert.deepEqual(events, [['k', { private: 1 }]]);
  assert.equal(await blockedCode(monitor, 'k'), 'KEY_BLOCKED');
});

test('without Redis a block lives in the state file: a restart keeps it, and the key tool ends it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'pagescript-security-'));
  try {
    const path = securityStatePath(join(dir, 'keys.json'));
    const first = new FileSecurityStore(path);
    const input = (id: string) => ({
      request: { requestId: id, at: Date.now(), points: 100, counts: { private: 10 } },
      pageTargets: [],
      threshold: 200,
    });
    await first.add('k', input('r1'), SETTINGS);
    const blocked = await first.add('k', input('r2'), SETTINGS);
    assert.deepEqual(
      blocked.block?.requests.map((r) => r.requestId),
      ['r1', 'r2'],
    );
    // A restart: a new store reads the block from the file.
    const restarted = new FileSecurityStore(path);
    assert.ok((await restarted.blockedUntil('k')) !== undefined);
    assert.equal(await restarted.blockedUntil('other'), undefined);
    // The key tool (another store of the same file) ends it; the service sees it once it reads the file again.
    const tool = new FileSecurityStore(path);
    assert.equal((await tool.events('k', SETTINGS)).requests.length, 2);
    assert.equal(await tool.unblock('k'), true);
    await until(async () => (await restarted.blockedUntil('k')) === undefined, 'the service to read the unblock', {
      timeoutMs: 5_000,
      everyMs: 100,
    });
    // Its count of blocks stays: the next block is a repeat, twice as long.
    const again = await restarted.add(
      'k',
      { ...input('r3'), request: { ...input('r3').request, points: 200 } },
      SETTINGS,
    );
    assert.equal(again.block?.blocks, 2);
    assert.equal(JSON.parse(readFileSync(path, 'utf8')).keys.k.blocks, 2);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('scored requests without a block are written together, once, without reading the file back; a block at once', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'pagescript-security-'));
  mock.timers.enable({ apis: ['setTimeout'] });
  try {
    const path = securityStatePath(join(dir, 'keys.json'));
    const store = new FileSecurityStore(path);
    const file = (): SecurityStateFile | undefined => {
      try {
        return JSON.parse(readFileSync(path, 'utf8')) as SecurityStateFile;
      } catch {
        return undefined;
      }
    };
    const input = (id: string, points: number) => ({
      request: { requestId: id, at: Date.now(), points, counts: { private: 1 } },
      pageTargets: [],
      threshold: 200,
    });
    for (let i = 0; i < 5; i++) await store.add(`k${i % 2}`, input(`r${i}`, 1), SETTINGS);
    assert.equal(file(), undefined, 'nothing written before STATE_WRITE_MS');
    mock.timers.tick(STATE_WRITE_MS);
    assert.deepEqual(
      [file()?.keys.k0?.requests.length, file()?.keys.k1?.requests.length],
      [3, 2],
      'one write holds all five',
    );
    // A block is written at once, with what was scored since.
    await store.add('k1', input('r5', 1), SETTINGS);
    await store.add('k0', input('r6', 200), SETTINGS);
    const now = file();
    assert.ok((now?.keys.k0?.until ?? 0) > Date.now());
    assert.equal(now?.keys.k1?.requests.length, 3);
  } finally {
    mock.timers.reset();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the key tool’s unblock and requests scored but not yet written both reach the file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'pagescript-security-'));
  try {
    const path = securityStatePath(join(dir, 'keys.json'));
    const service = new FileSecurityStore(path);
    const input = (id: string, points: number) => ({
      request: { requestId: id, at: Date.now(), points, counts: { private: 1 } },
      pageTargets: [],
      threshold: 200,
    });
    await service.add('k', input('r1', 200), SETTINGS);
    assert.ok((await service.blockedUntil('k')) !== undefined);
    // Scored after the block; not written yet when the tool ends the block.
    await service.add('j', input('r2', 1), SETTINGS);
    assert.equal(await new FileSecurityStore(path).unblock('k'), true);
    await until(async () => (await service.blockedUntil('k')) === undefined, 'the service to read the unblock', {
      timeoutMs: 5_000,
      everyMs: 100,
    });
    await until(
      () => (JSON.parse(readFileSync(path, 'utf8')) as SecurityStateFile).keys.j?.requests.length === 1,
      'the unwritten request to be written',
      { timeoutMs: 5_000, everyMs: 100 },
    );
    const tool = new FileSecurityStore(path);
    assert.equal(await tool.blockedUntil('k'), undefined);
    assert.deepEqual(
      (await tool.events('j', SETTINGS)).requests.map((r) => r.requestId),
      ['r2'],
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the state file keeps at most its cap of keys: the never-blocked scored longest ago go first', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'pagescript-security-'));
  try {
    const path = securityStatePath(join(dir, 'keys.json'));
    const store = new FileSecurityStore(path, Date.now, undefined, 3);
    const input = (id: string, points: number, at: number) => ({
      request: { requestId: id, at, points, counts: { private: 1 } },
      pageTargets: [],
      threshold: 200,
    });
    const t = Date.now();
    await store.add('blocked', input('b', 200, t), SETTINGS);
    for (let i = 0; i < 5; i++) await store.add(`k${i}`, input(`r${i}`, 1, t + 10 + i), SETTINGS);
    // The next block writes at once, bounded.
    await store.add('blocked2', input('b2', 200, t + 100), SETTINGS);
    const keys = Object.keys((JSON.parse(readFileSync(path, 'utf8')) as SecurityStateFile).keys).sort();
    assert.deepEqual(keys, ['blocked', 'blocked2', 'k4']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a state file that cannot be written is told once; blocks are kept in memory', async () => {
  const errors: unknown[] = [];
  const store = new FileSecurityStore('/nonexistent-pagescript-dir/keys.json.security.json', Date.now, (e) =>
    errors.push(e),
  );
  const input = (id: string) => ({
    request: { requestId: id, at: Date.now(), points: 150, counts: { private: 15 } },
    pageTargets: [],
    threshold: 200,
  });
  await store.add('k', input('a'), SETTINGS);
  const r = await store.add('k', input('b'), SETTINGS);
  assert.ok(r.block !== undefined);
  assert.ok((await store.blockedUntil('k')) !== undefined);
  assert.equal(errors.length, 1);
});

/**
 * Redis as the fallback store sees it: whether it is up, and its scores (a memory store standing for
 * the Lua scripts, shared by the "instances" given it) whose named commands throw, as a command that
 * times out does.
 */
function fakeRedis(shared: SecurityStore = new MemorySecurityStore()) {
  const failing = new Set<keyof SecurityStore>();
  const calls: string[] = [];
  const status = { up: true, client: {} as RedisStore['client'] };
  const store: SecurityStore = {
    add: (...a) => run('add', () => shared.add(...a)),
    blockedUntil: (...a) => run('blockedUntil', () => shared.blockedUntil(...a)),
    unblock: (...a) => run('unblock', () => shared.unblock(...a)),
    events: (...a) => run('events', () => shared.events(...a)),
  };
  function run<T>(op: keyof SecurityStore, fn: () => Promise<T>): Promise<T> {
    calls.push(op);
    if (!status.up) throw new Error(`Redis is down, yet ${op} was sent to it`);
    return failing.has(op) ? Promise.reject(new Error('Command timed out')) : fn();
  }
  return { status, store, failing, calls, shared };
}

function monitorOn(store: SecurityStore): SecurityMonitor {
  return new SecurityMonitor({ settings: SETTINGS, store, logger: silentLogger() });
}

test('Redis away: each instance scores and blocks in memory, and sends Redis nothing', async () => {
  const redis = fakeRedis();
  redis.status.up = false;
  const monitor = monitorOn(new FallbackSecurityStore(redis.status, new MemorySecurityStore(), redis.store));
  const needed = SETTINGS.threshold / SETTINGS.weights.navigation;
  for (let i = 1; i <= needed; i++) {
    assert.equal(await blockedCode(monitor, 'prober'), undefined, `request ${i} is served`);
    await probeByUrl(monitor, 'prober', `p-${i}`);
  }
  assert.equal(await blockedCode(monitor, 'prober'), 'KEY_BLOCKED');
  assert.equal(await blockedCode(monitor, 'honest'), undefined);
  assert.equal((await monitor.store.events('prober', SETTINGS)).requests.length, needed, 'every request scored');
  assert.deepEqual(redis.calls, []);
});

test('a Redis command that fails: its request is scored in memory, not lost, and the block it makes holds', async () => {
  const redis = fakeRedis();
  const store = new FallbackSecurityStore(redis.status, new MemorySecurityStore(), redis.store);
  const monitor = monitorOn(store);
  // Redis answers whether a key is blocked, but every score it is sent fails (a command that times out).
  redis.failing.add('add');
  const needed = SETTINGS.threshold / SETTINGS.weights.navigation;
  for (let i = 1; i <= needed; i++) await probeByUrl(monitor, 'prober', `p-${i}`);
  assert.equal((await redis.shared.events('prober', SETTINGS)).requests.length, 0, 'Redis holds none of them');
  assert.equal(await blockedCode(monitor, 'prober'), 'KEY_BLOCKED', 'blocked though Redis says it is not');
  assert.equal(await blockedCode(monitor, 'honest'), undefined);
  // Redis back whole: the block made here still holds, and so does one made on Redis by another instance.
  redis.failing.clear();
  assert.equal(await blockedCode(monitor, 'prober'), 'KEY_BLOCKED');
  const other = monitorOn(new FallbackSecurityStore(redis.status, new MemorySecurityStore(), redis.store));
  for (let i = 1; i <= needed; i++) await probeByUrl(other, 'elsewhere', `e-${i}`);
  assert.equal(await blockedCode(monitor, 'elsewhere'), 'KEY_BLOCKED', "another instance's block, through Redis");
  // Every command failing: the memory store answers them all.
  redis.failing.add('add').add('blockedUntil').add('unblock').add('events');
  assert.equal(await blockedCode(monitor, 'prober'), 'KEY_BLOCKED');
  assert.equal(await blockedCode(monitor, 'honest'), undefined);
  assert.equal((await store.events('prober', SETTINGS)).blocks, 1);
  // An unblock ends the block wherever it is.
  redis.failing.clear();
  assert.equal(await store.unblock('prober'), true);
  assert.equal(await blockedCode(monitor, 'prober'), undefined);
});
