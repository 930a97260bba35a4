// The kernel backs the egress guard (issue 33, point 6): as root, a slot's user
// (its process and its Chromium) may open connections only to the guard's ports
// on 127.0.0.1; anything else is refused by the kernel (nftables, a table of the
// instance's own), not by our code. Several instances lock the same users side
// by side, and no table is left after a stop.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type Server } from 'node:net';
import { after, before, test } from 'node:test';
import { lookupUser, type RunAs } from '../../../src/front/host/users.js';
import { findNft, lockScript } from '../../../src/front/host/kernel-lock.js';
import { FixtureServer, html } from '../../helpers/fixtures.js';
import { ensureLockUsers, LOCK_USER_PREFIX } from '../../helpers/lock-users.js';
import { startTestService, type TestService } from '../../helpers/service.js';

const ROOT = process.getuid?.() === 0;
const skip = !ROOT
  ? 'not root: the kernel lock is off (docs/container.md)'
  : !findNft()
    ? 'nft is not installed'
    : false;
const fixtures = new FixtureServer({ '/': html('<title>locked</title>') });
/** A loopback TCP server no slot should reach, counting who reached it. */
let canary: Server;
let canaryPort = 0;
let canaryHits = 0;
let slotUser: RunAs;
const services: TestService[] = [];

/** The service's settings: slot users no other service on this machine runs as (test/helpers/lock-users.ts). */
const LOCKED = (): Record<string, string> => ({
  SLOT_USER_PREFIX: LOCK_USER_PREFIX,
  MAX_CONCURRENCY: '1',
  EGRESS_KERNEL_LOCK: 'on',
  EGRESS_ALLOWLIST: fixtures.allowEntry,
});

async function start(env: Record<string, string> = {}): Promise<TestService> {
  const svc = await startTestService({ ...LOCKED(), ...env }, { egressSeam: { loopbackOnly: true } });
  services.push(svc);
  return svc;
}

/** The tables of the services of a process (this test's by default) now in the kernel. */
function ourTables(pid = process.pid): string[] {
  const out = spawnSync(findNft() ?? 'nft', ['-j', 'list', 'tables'], { encoding: 'utf8' });
  assert.equal(out.status, 0, out.stderr);
  const listed = JSON.parse(out.stdout) as { nftables: { table?: { name: string } }[] };
  return listed.nftables.flatMap((i) => (i.table?.name.startsWith(`pagescript_${pid}_`) ? [i.table.name] : []));
}

/** The service as a process of its own (src/front/server.ts, as npm start runs it), once it listens. */
async function startProcess(): Promise<{ child: ChildProcess; exit: Promise<number | null> }> {
  const child = spawn(process.execPath, ['--no-node-snapshot', '--import', 'tsx', 'src/front/server.ts'], {
    env: { ...process.env, ...LOCKED(), PORT: '0', API_KEYS: 'test-key-0123456789abcdef', LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('listening on http://')) resolve();
    });
    exit.then(() => reject(new Error(`the service exited before listening: ${out}`)), reject);
  });
  return { child, exit };
}

/** What the kernel counted as refused in a table (both reject rules together). */
function refusedPackets(table: string): number {
  const out = spawnSync(findNft() ?? 'nft', ['-j', 'list', 'table', 'inet', table], { encoding: 'utf8' });
  assert.equal(out.status, 0, out.stderr);
  const listed = JSON.parse(out.stdout) as { nftables: { rule?: { expr: Record<string, unknown>[] } }[] };
  let n = 0;
  for (const item of listed.nftables)
    for (const e of item.rule?.expr ?? []) n += (e.counter as { packets?: number } | undefined)?.packets ?? 0;
  return n;
}

/** As `user` (undefined: this process's), a TCP connection and a UDP datagram to 127.0.0.1:port: what each got. */
async function probe(user: RunAs | undefined, port: number): Promise<{ tcp: string; udp: string }> {
  const code = `
const net = require('node:net'), dgram = require('node:dgram');
const port = Number(process.argv[1]);
const out = {};
const udp = () => { const u = dgram.createSocket('udp4'); u.send('x', port, '127.0.0.1', (e) => { out.udp = e ? e.code : 'sent'; u.close(); console.log(JSON.stringify(out)); }); };
const s = net.connect(port, '127.0.0.1');
s.on('connect', () => { out.tcp = 'connected'; s.destroy(); udp(); });
s.on('error', (e) => { out.tcp = e.code; udp(); });`;
  const child = spawn(process.execPath, ['-e', code, String(port)], {
    stdio: ['ignore', 'pipe', 'inherit'],
    ...(user ? { uid: user.uid, gid: user.gid } : {}),
  });
  let text = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (text += c));
  await once(child, 'exit');
  return JSON.parse(text) as { tcp: string; udp: string };
}

before(async () => {
  if (skip) return;
  ensureLockUsers(1);
  const u = lookupUser(`${LOCK_USER_PREFIX}0`);
  assert.ok(u);
  slotUser = u;
  await fixtures.start();
  canary = createServer((s) => {
    canaryHits++;
    s.destroy();
  });
  await new Promise<void>((r) => canary.listen(0, '127.0.0.1', r));
  canaryPort = (canary.address() as { port: number }).port;
});
after(async () => {
  for (const s of services) await s.close();
  canary?.close();
  await fixtures.close();
});

test('/health says the kernel lock is on, and a request through Chromium works under it', { skip }, async () => {
  const svc = await start();
  const health = await svc.raw('GET', '/health');
  assert.equal(health.body.kernelLock, 'on');
  assert.ok(svc.service.kernelLock.on);
  const table = svc.service.kernelLock.table;
  const refusedBefore = refusedPackets(table);
  const r = await svc.post({ url: fixtures.url('/'), script: 'return await page.title()' });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.data, 'locked');
  // What Chromium needs locally beyond the guard: nothing (docs/network.md lists it).
  assert.equal(refusedPackets(table), refusedBefore);
});

test(
  "a slot user connecting to a loopback port that is not the guard's is refused by the kernel",
  { skip },
  async () => {
    const svc = services[0] ?? (await start());
    assert.ok(svc.service.kernelLock.on);
    const refused = refusedPackets(svc.service.kernelLock.table);
    const hits = canaryHits;
    assert.deepEqual(await probe(slotUser, canaryPort), { tcp: 'ECONNREFUSED', udp: 'EPERM' });
    assert.equal(canaryHits, hits, 'the canary saw no connection');
    // The SYN and the datagram, each refused by this service's table.
    assert.equal(refusedPackets(svc.service.kernelLock.table), refused + 2);
    // Control: the same port is reached by another user (root), so the refusal is the lock's.
    assert.deepEqual(await probe(undefined, canaryPort), { tcp: 'connected', udp: 'sent' });
    assert.equal(canaryHits, hits + 1);
  },
);

test("a slot user connecting to the service's own port is refused by the kernel", { skip }, async () => {
  const svc = services[0] ?? (await start());
  assert.equal((await probe(slotUser, svc.service.port)).tcp, 'ECONNREFUSED');
});

test("a slot user connecting to the guard's port is let through", { skip }, async () => {
  const svc = services[0] ?? (await start());
  const port = svc.service.egress.guardPort;
  assert.ok(port >= 28000 && port <= 28999, `the guard listens in EGRESS_PORTS (${port})`);
  assert.equal((await probe(slotUser, port)).tcp, 'connected');
});

test(
  'two instances lock the same slot users at once, and each one’s guard traffic passes the other’s table',
  { skip },
  async () => {
    const a = services[0] ?? (await start());
    const b = await start();
    assert.ok(a.service.kernelLock.on && b.service.kernelLock.on);
    assert.notEqual(a.service.kernelLock.table, b.service.kernelLock.table);
    assert.deepEqual(ourTables().sort(), [a.service.kernelLock.table, b.service.kernelLock.table].sort());
    for (const svc of [a, b]) {
      const r = await svc.post({ url: fixtures.url('/'), script: 'return await page.title()' });
      assert.equal(r.status, 200, r.text);
    }
    assert.equal((await probe(slotUser, canaryPort)).tcp, 'ECONNREFUSED');
    // One stops: its table goes, the other's stays and still serves.
    await b.close();
    assert.deepEqual(ourTables(), [a.service.kernelLock.table]);
    assert.equal((await a.post({ url: fixtures.url('/'), script: 'return 1' })).status, 200);
  },
);

test(
  'a table a crashed instance left is removed at the next start, not left to refuse its traffic',
  { skip },
  async () => {
    // A gone process's table, locking the same users to other ports than the guard's.
    const gone = spawnSync(process.execPath, ['-e', 'console.log(process.pid)'], { encoding: 'utf8' });
    const stale = `pagescript_${gone.stdout.trim()}_1_1`;
    const made = spawnSync(findNft() ?? 'nft', ['-f', '-'], {
      input: lockScript(stale, [slotUser.uid], { first: 40000, last: 40063 }),
      encoding: 'utf8',
    });
    assert.equal(made.status, 0, made.stderr);
    try {
      const svc = await start();
      const listed = spawnSync(findNft() ?? 'nft', ['list', 'tables'], { encoding: 'utf8' }).stdout;
      assert.ok(!listed.includes(stale), listed);
      const r = await svc.post({ url: fixtures.url('/'), script: 'return await page.title()' });
      assert.equal(r.status, 200, r.text);
    } finally {
      spawnSync(findNft() ?? 'nft', ['delete', 'table', 'inet', stale]);
    }
  },
);

for (const signal of ['SIGTERM', 'SIGINT'] as const)
  test(`${signal}: the service's process removes its table before it exits`, { skip }, async () => {
    const svc = await startProcess();
    const pid = svc.child.pid ?? 0;
    assert.equal(ourTables(pid).length, 1);
    svc.child.kill(signal);
    assert.equal(await svc.exit, 0);
    assert.deepEqual(ourTables(pid), []);
  });

test('a front killed outright leaves its table, and the next start removes it', { skip }, async () => {
  const svc = await startProcess();
  const pid = svc.child.pid ?? 0;
  svc.child.kill('SIGKILL');
  await svc.exit;
  const left = ourTables(pid);
  assert.equal(left.length, 1, 'SIGKILL runs no code of the front');
  try {
    const next = await start();
    assert.deepEqual(ourTables(pid), []);
    assert.equal((await next.post({ url: fixtures.url('/'), script: 'return 1' })).status, 200);
  } finally {
    for (const t of ourTables(pid)) spawnSync(findNft() ?? 'nft', ['delete', 'table', 'inet', t]);
  }
});

test('as root with the lock on and no nft, the service refuses to start, saying why', { skip }, async () => {
  await assert.rejects(
    startTestService(LOCKED(), { nftPaths: ['/nonexistent/nft'] }),
    /EGRESS_KERNEL_LOCK is on and the service runs as root, but nft is not installed/,
  );
});

test('EGRESS_KERNEL_LOCK=off: /health says so, and no table is made', { skip }, async () => {
  const before = ourTables();
  const svc = await start({ EGRESS_KERNEL_LOCK: 'off' });
  assert.equal((await svc.raw('GET', '/health')).body.kernelLock, 'off: EGRESS_KERNEL_LOCK=off');
  assert.deepEqual(ourTables(), before);
});

test('after every service stopped, no table of theirs is left', { skip }, async () => {
  assert.ok(ourTables().length > 0);
  while (services.length > 0) await services.pop()?.close();
  assert.deepEqual(ourTables(), []);
});
