// Signs of an escape into a slot (issues 47 and 48): what code that escaped
// Chromium's sandbox into a slot's user would leave — a packet the kernel lock
// refused, a process outside the slot's tree — is a security event of the
// request it happened in, and the slot's process and Chromium are replaced
// before the next request. The test acts as the slot's user while a request
// holds the slot (its page is held by the fixture until the test has acted).
// Slot users of this file's own (ESCAPE_USER_PREFIX), so that no other test's
// traffic moves their counts.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import type { ServerResponse } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { findNft } from '../../../src/front/host/kernel-lock.js';
import type { RunAs } from '../../../src/front/host/users.js';
import { FixtureServer, html } from '../../helpers/fixtures.js';
import { ensureLockUsers, ESCAPE_USER_PREFIX } from '../../helpers/lock-users.js';
import { startTestService, type Reply, type TestService } from '../../helpers/service.js';
import { SLOT_GROUPS_SKIP, spawnInSlot } from '../../helpers/slot-groups.js';
import { until } from '../../helpers/wait.js';

const ROOT = process.getuid?.() === 0;
const skip = !ROOT ? 'not root: slots share the service’s user' : !findNft() ? 'nft is not installed' : false;
const TOKEN = 'metrics-token-escape-0123456789';
/** How long a slot process's start (its Chromium's launch) is waited for: long on a loaded machine. */
const START_WAIT_MS = 120_000;

/** Requests held at their navigation until the test releases them. */
const held: ServerResponse[] = [];
const fixtures = new FixtureServer({
  '/ok': html('<title>ok</title>'),
  '/hold': (_req, res) => void held.push(res),
});
/** A loopback TCP server no slot may reach. */
let canary: Server;
let canaryPort = 0;
/** Every process a test made as a slot's user: killed after the tests whatever they showed. */
const started: ChildProcess[] = [];

const env = (more: Record<string, string> = {}): Record<string, string> => ({
  SLOT_USER_PREFIX: ESCAPE_USER_PREFIX,
  MAX_CONCURRENCY: '1',
  EGRESS_KERNEL_LOCK: 'on',
  EGRESS_ALLOWLIST: fixtures.allowEntry,
  METRICS_TOKEN: TOKEN,
  NAVIGATION_TIMEOUT_MS: '30000',
  SCRIPT_TIMEOUT_MS: '30000',
  ...more,
});

before(async () => {
  if (skip) return;
  ensureLockUsers(1, ESCAPE_USER_PREFIX);
  await fixtures.start();
  canary = createServer((s) => s.destroy());
  await new Promise<void>((r) => canary.listen(0, '127.0.0.1', r));
  canaryPort = (canary.address() as { port: number }).port;
});
after(async () => {
  for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  canary?.close();
  await fixtures.close();
});

/** The key's security events of class `cls`, as /metrics counts them. */
async function events(svc: TestService, cls: string): Promise<number> {
  const metrics = await svc.raw('GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
  const line = metrics.text
    .split('\n')
    .find((l) => l.startsWith(`pagescript_security_events_total{key="env-1",class="${cls}"} `));
  return Number(line?.split(' ').pop() ?? 0);
}

/**
 * Runs a request whose page is held while `act` runs (the slot is the request's then), and returns
 * its reply and the pid of the slot process that served it.
 */
async function whileHeld(svc: TestService, act: (user: RunAs) => Promise<void>): Promise<{ r: Reply; pid: number }> {
  await until(() => svc.service.slots.readyPids.length === 1, 'the slot process to be ready', {
    timeoutMs: START_WAIT_MS,
  });
  const pid = svc.service.slots.slotPids[0] as number;
  const n = held.length;
  const reply = svc.post({ url: fixtures.url('/hold'), script: 'return await page.title()' });
  await until(() => held.length > n, 'the request’s page to reach the fixture');
  const user = svc.service.slots.users?.[0];
  assert.ok(user, 'as root, the slot has a user');
  try {
    await act(user);
  } finally {
    held[n]?.writeHead(200, { 'content-type': 'text/html' }).end('<title>held</title>');
  }
  const r = await reply;
  return { r, pid };
}

/** As `user`, a TCP connection to 127.0.0.1:port: what it got. */
async function connectAs(user: RunAs, port: number): Promise<string> {
  const code = `const s = require('node:net').connect(Number(process.argv[1]), '127.0.0.1');
s.on('connect', () => { console.log('connected'); s.destroy(); });
s.on('error', (e) => console.log(e.code));`;
  const child = spawn(process.execPath, ['-e', code, String(port)], {
    stdio: ['ignore', 'pipe', 'inherit'],
    uid: user.uid,
    gid: user.gid,
  });
  started.push(child);
  let text = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (text += c));
  await once(child, 'exit');
  return text.trim();
}

/** Waits until slot 0 has a ready process other than `pid`. */
async function replaced(svc: TestService, pid: number): Promise<void> {
  await until(
    () => {
      const now = svc.service.slots.slotPids[0];
      return now !== undefined && now !== pid && svc.service.slots.readyPids.includes(now);
    },
    'slot 0 to have a new process',
    { timeoutMs: START_WAIT_MS },
  );
}

describe('signs of an escape into a slot', { skip }, () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService(env());
  });
  after(async () => {
    await svc?.close();
  });

  test('a request with no sign of an escape keeps its slot process for the next', async () => {
    const { r, pid } = await whileHeld(svc, async () => undefined);
    assert.equal(r.status, 200, r.text);
    const next = await svc.post({ url: fixtures.url('/ok'), script: 'return await page.title()' });
    assert.equal(next.status, 200, next.text);
    assert.equal(svc.service.slots.slotPids[0], pid, 'the same process served both');
    assert.equal(await events(svc, 'kernel-lock'), 0);
    assert.equal(await events(svc, 'stray-process'), 0);
  });

  test('a packet of the slot’s user refused by the kernel lock during a request is a kernel-lock event of its key, and the slot is replaced', async () => {
    assert.ok(svc.service.kernelLock.on);
    const { r, pid } = await whileHeld(svc, async (user) => {
      assert.equal(await connectAs(user, canaryPort), 'ECONNREFUSED');
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(await events(svc, 'kernel-lock'), 1);
    await replaced(svc, pid);
    const next = await svc.post({ url: fixtures.url('/ok'), script: 'return await page.title()' });
    assert.equal(next.status, 200, next.text);
    // Read once, at its job's end: the next request is not charged with it.
    assert.equal(await events(svc, 'kernel-lock'), 1);
  });

  test(
    'a process left in the slot’s group outside its tree is killed, is a stray-process event, and the slot is replaced',
    { skip: SLOT_GROUPS_SKIP },
    async () => {
      let stray: ChildProcess | undefined;
      const { r, pid } = await whileHeld(svc, async () => {
        stray = await spawnInSlot(svc, 0, 'sleep 600', started);
      });
      assert.equal(r.status, 200, r.text);
      assert.ok(stray);
      const gone = stray.exitCode !== null || stray.signalCode !== null ? undefined : once(stray, 'exit');
      await gone;
      assert.equal(stray.signalCode, 'SIGKILL');
      assert.equal(await events(svc, 'stray-process'), 1);
      await replaced(svc, pid);
    },
  );

  test(
    'a process put in the slot’s group between requests is no key’s: the slot is replaced before the next, which is served',
    { skip: SLOT_GROUPS_SKIP },
    async () => {
      await until(() => svc.service.slots.readyPids.length === 1, 'the slot process to be ready', {
        timeoutMs: START_WAIT_MS,
      });
      const pid = svc.service.slots.slotPids[0] as number;
      const before = await events(svc, 'stray-process');
      const stray = await spawnInSlot(svc, 0, 'sleep 600', started);
      const next = await svc.post({ url: fixtures.url('/ok'), script: 'return await page.title()' });
      assert.equal(next.status, 200, next.text);
      if (stray.exitCode === null && stray.signalCode === null) await once(stray, 'exit');
      assert.equal(stray.signalCode, 'SIGKILL');
      assert.equal(await events(svc, 'stray-process'), before, 'the next request’s key is not charged with it');
      assert.notEqual(svc.service.slots.slotPids[0], pid, 'the next request met a new slot process');
    },
  );
});

describe('signs of an escape into a slot without slot cgroups', { skip }, () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService(env({ SLOT_CGROUPS: 'off' }));
  });
  after(async () => {
    await svc?.close();
  });

  test('an orphan of the slot’s user left after a request is killed, is a stray-process event, and the slot is replaced', async () => {
    let orphan = 0;
    const { r, pid } = await whileHeld(svc, async (user) => {
      orphan = await plantOrphan(user);
    });
    assert.equal(r.status, 200, r.text);
    try {
      await until(() => !alive(orphan), 'the orphan to be killed');
      assert.equal(await events(svc, 'stray-process'), 1);
      await replaced(svc, pid);
    } finally {
      if (alive(orphan)) process.kill(orphan, 'SIGKILL');
    }
  });

  test('an orphan of the slot’s user that appears between requests is no key’s: the slot is replaced before the next, which is served', async () => {
    await until(() => svc.service.slots.readyPids.length === 1, 'the slot process to be ready', {
      timeoutMs: START_WAIT_MS,
    });
    const pid = svc.service.slots.slotPids[0] as number;
    const before = await events(svc, 'stray-process');
    const user = svc.service.slots.users?.[0];
    assert.ok(user, 'as root, the slot has a user');
    // As a process left in the slot's Chromium would fork after its request's end was looked at.
    const orphan = await plantOrphan(user);
    try {
      const next = await svc.post({ url: fixtures.url('/ok'), script: 'return await page.title()' });
      assert.equal(next.status, 200, next.text);
      assert.equal(alive(orphan), false, 'killed before the next request ran');
      assert.equal(await events(svc, 'stray-process'), before, 'the next request’s key is not charged with it');
      assert.notEqual(svc.service.slots.slotPids[0], pid, 'the next request met a new slot process');
    } finally {
      if (alive(orphan)) process.kill(orphan, 'SIGKILL');
    }
  });

  test('a process of the slot’s user that is another’s child (not an orphan) is left alone', async () => {
    const { r } = await whileHeld(svc, async (user) => {
      const child = spawn('sleep', ['600'], { uid: user.uid, gid: user.gid, stdio: 'ignore' });
      started.push(child);
    });
    assert.equal(r.status, 200, r.text);
    const last = started.at(-1) as ChildProcess;
    assert.equal(last.exitCode, null);
    assert.equal(last.signalCode, null);
    assert.equal(await events(svc, 'stray-process'), 1, 'no new event');
    last.kill('SIGKILL');
  });
});

/** What a double fork leaves: a process of `user` whose parent is init (its pid). */
async function plantOrphan(user: RunAs): Promise<number> {
  const child = spawn('sh', ['-c', 'sleep 600 & echo $!'], {
    uid: user.uid,
    gid: user.gid,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  started.push(child);
  let text = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (text += c));
  await once(child, 'exit');
  const orphan = Number(text.trim());
  assert.ok(orphan > 1);
  return orphan;
}

/** Whether process `pid` runs (a zombie counts as gone). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}
