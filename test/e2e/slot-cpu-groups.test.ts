// A CPU cgroup per slot (src/front/children/cpu-groups.ts): each slot's whole
// tree — its process, its Chromium, every renderer — is in its slot's group,
// so the kernel weighs a slot as one however many processes its page makes;
// a slot user cannot leave its group or change its weight; nothing is left
// behind. Where the front may not make groups (not root, no writable cpu
// hierarchy) the tests are skipped, as the service then runs without them.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../helpers/fixtures.js';
import { inItsOwnSlot, startTestService, TEST_KEY, type TestService } from '../helpers/service.js';
import { descendants } from '../helpers/system.js';
import { until } from '../helpers/wait.js';
import {
  CPU_CGROUP as found,
  FULL_WEIGHT as one,
  LOW_WEIGHT as low,
  SLOT_GROUPS_SKIP as skip,
  slotWeight,
  startSlotsService,
} from '../helpers/slot-groups.js';
import { findV1Cgroup } from '../../src/front/children/cpu-groups.js';

const fixtures = new FixtureServer({ '/example': html(EXAMPLE_DOMAIN_HTML) });

/** A group a dead service left: made before the service starts, removed by it. */
let stale: string | undefined;
let svc: TestService;
/** A second tenant: a key's jobs beside its own job at the low weight start low (cpu-share.ts). */
const OTHER_KEY = 'other-tenant-key-0123456789';
let closed = false;

before(async () => {
  if (skip) return;
  await fixtures.start();
  // A pid that is no process: one that has exited.
  const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  stale = join(found?.dir ?? '', `pagescript-${gone.stdout}`);
  mkdirSync(stale);
  mkdirSync(join(stale, 'slot-0'));
  svc = await startSlotsService({ EGRESS_ALLOWLIST: fixtures.allowEntry, API_KEYS: `${TEST_KEY},${OTHER_KEY}` });
});

after(async () => {
  if (skip) return;
  if (!closed) await svc?.close();
  // SECURITY (of the machine): whatever a failed test left is removed.
  for (const dir of [join(stale ?? '', 'slot-0'), stale ?? '']) if (existsSync(dir)) rmdirSync(dir);
  await fixtures.close();
});

/** The service's cpuacct groups' directory, where v1 mounts cpuacct apart from cpu. */
function acctDir(): string | undefined {
  const cpu = svc.service.executors.cpuGroupDir(0) as string;
  if (found?.version !== 1 || existsSync(join(cpu, 'cpuacct.usage'))) return undefined;
  const dir = findV1Cgroup(
    'cpuacct',
    readFileSync('/proc/self/cgroup', 'utf8'),
    readFileSync('/proc/self/mountinfo', 'utf8'),
  );
  return dir === undefined ? undefined : join(dir, basename(dirname(cpu)));
}

/** The pids a group holds (its cgroup.procs). */
const members = (dir: string): Set<number> =>
  new Set(readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number));

describe('a CPU cgroup per slot', { skip }, () => {
  test('a group a service that is gone left behind is removed at start', () => {
    assert.equal(existsSync(stale ?? ''), false);
  });

  test('each slot process and its whole Chromium are in their slot’s group, and only there', async () => {
    const r = await svc.post({ url: fixtures.url('/example'), script: 'return await page.title()' });
    assert.equal(r.status, 200, r.text);
    const pids = svc.service.executors.slotPids;
    assert.equal(pids.length, 2);
    const dirs = [0, 1].map((i) => svc.service.executors.cpuGroupDir(i) as string);
    assert.notEqual(dirs[0], dirs[1]);
    // Equal weights; the slots together weigh one busy thread against the front and the egress process.
    const weight = (dir: string): number =>
      Number(readFileSync(join(dir, found?.version === 1 ? 'cpu.shares' : 'cpu.weight'), 'utf8'));
    assert.equal(weight(dirs[0] as string), weight(dirs[1] as string));
    assert.equal(weight(dirname(dirs[0] as string)), found?.version === 1 ? 1024 : 100);
    for (const [i, pid] of pids.entries()) {
      assert.ok(pid !== undefined);
      const tree = [pid, ...descendants(pid)];
      assert.ok(tree.length > 3, `slot ${i} has its Chromium (${tree.length} processes)`);
      const mine = members(dirs[i] as string);
      const other = members(dirs[1 - i] as string);
      for (const p of tree) {
        // A process that exited between the two reads is in neither.
        if (!existsSync(`/proc/${p}`)) continue;
        assert.ok(mine.has(p), `process ${p} of slot ${i} is in its group`);
        assert.ok(!other.has(p), `process ${p} of slot ${i} is not in the other slot's group`);
      }
    }
  });

  test('a slot user cannot move a process or thread out of its group, into the other slot’s, change a weight or quota, or make a group', () => {
    const [pid] = svc.service.executors.slotPids;
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const uid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]);
    const gid = Number(/^Gid:\s+(\d+)/m.exec(status)?.[1]);
    assert.notEqual(uid, 0, 'as root, a slot runs as a slot user');
    const dir0 = svc.service.executors.cpuGroupDir(0) as string;
    const dir1 = svc.service.executors.cpuGroupDir(1) as string;
    const weight = found?.version === 1 ? 'cpu.shares' : 'cpu.weight';
    for (const [file, text] of [
      [join(dirname(dirname(dir0)), 'cgroup.procs'), 'self'],
      [join(dir1, 'cgroup.procs'), 'self'],
      [join(dir0, weight), '100000'],
      // Threads one by one (v1's tasks), the slots' weight together against the front, a quota.
      ...(found?.version === 1
        ? ([
            [join(dir1, 'tasks'), 'self'],
            [join(dirname(dirname(dir0)), 'tasks'), 'self'],
            [join(dir0, 'cpu.cfs_quota_us'), '-1'],
          ] as const)
        : ([[join(dir0, 'cpu.max'), 'max']] as const)),
      [join(dirname(dir0), weight), '262144'],
    ] as const) {
      // As the slot's own user, as code that escaped into the slot process would be.
      const r = spawnSync(
        process.execPath,
        [
          '-e',
          `try { require('fs').writeFileSync(${JSON.stringify(file)}, ${text === 'self' ? 'String(process.pid)' : JSON.stringify(text)}); console.log('written') } catch (e) { console.log(e.code) }`,
        ],
        { uid, gid, encoding: 'utf8' },
      );
      assert.match(r.stdout.trim(), /^E(ACCES|PERM)$/, `${file}: ${r.stdout}${r.stderr}`);
    }
    // Nor make a group of its own under its slot's, to weigh or move its processes there.
    const sub = join(dir0, 'mine');
    const r = spawnSync(
      process.execPath,
      [
        '-e',
        `try { require('fs').mkdirSync(${JSON.stringify(sub)}); console.log('made') } catch (e) { console.log(e.code) }`,
      ],
      { uid, gid, encoding: 'utf8' },
    );
    if (existsSync(sub)) rmdirSync(sub);
    assert.match(r.stdout.trim(), /^E(ACCES|PERM)$/, `${sub}: ${r.stdout}${r.stderr}`);
  });

  test('a request past its share of CPU has the low weight beside a fresh one, and its slot gets its weight back', async () => {
    const weight = (i: number): number => slotWeight(svc, i);
    const { reply: busy, slot: heavy } = await inItsOwnSlot(svc, {
      url: fixtures.url('/example'),
      script: 'await page.evaluate(() => { const t = Date.now(); while (Date.now() - t < 4000) {} }); return 1',
    });
    // Past its share of CPU (LOW_WEIGHT_AFTER_CPU_MS: its renderer's loop), then a fresh request beside it.
    await new Promise((r) => setTimeout(r, 1500));
    const fresh = svc.post(
      {
        url: fixtures.url('/example'),
        script: 'await page.evaluate(() => new Promise((r) => setTimeout(r, 1500))); return 2',
      },
      { 'x-gateway-key': OTHER_KEY },
    );
    await until(() => weight(heavy) === low, 'the heavy slot to have the low weight');
    assert.equal(weight(1 - heavy), one, 'the fresh request (another key) keeps its weight');
    assert.equal((await busy).status, 200);
    // The job ends once its context is closed, after the answer: its clean-up still runs at the low weight.
    await until(() => weight(heavy) === one, 'its weight back when its job ended');
    assert.equal((await fresh).status, 200);
  });

  test('a key whose request just used its share starts its next one at the low weight; another key does not', async () => {
    const weight = (i: number): number => slotWeight(svc, i);
    // A short heavy request (LOW_WEIGHT_AFTER_CPU_MS of its renderer's loop), then, back to back, one that only waits.
    const heavy = await svc.post({
      url: fixtures.url('/example'),
      script: 'await page.evaluate(() => { const t = Date.now(); while (Date.now() - t < 800) {} }); return 1',
    });
    assert.equal(heavy.status, 200, heavy.text);
    const { reply: next, slot } = await inItsOwnSlot(svc, {
      url: fixtures.url('/example'),
      script: 'await page.evaluate(() => new Promise((r) => setTimeout(r, 1500))); return 2',
    });
    // It uses next to no CPU: only its key's last request can have lowered it.
    assert.equal(weight(slot), low, 'the same key, back to back: low from its start (LOW_WEIGHT_CARRY_MS)');
    const other = svc.post(
      {
        url: fixtures.url('/example'),
        script: 'await page.evaluate(() => new Promise((r) => setTimeout(r, 500))); return 3',
      },
      { 'x-gateway-key': OTHER_KEY },
    );
    await until(() => svc.service.executors.busySlots.every(Boolean), 'the other key’s request to have the other slot');
    assert.equal(weight(1 - slot), one, 'another key keeps its own weight');
    assert.equal((await next).status, 200);
    assert.equal((await other).status, 200);
    await until(() => weight(slot) === one && weight(1 - slot) === one, 'both weights back once the jobs ended');
  });

  test('a second service in the same process has groups of its own, and closing it leaves the first’s', async () => {
    const second = await startTestService({ EGRESS_ALLOWLIST: fixtures.allowEntry, MAX_CONCURRENCY: '1' });
    const mine = dirname(svc.service.executors.cpuGroupDir(0) as string);
    const its = dirname(second.service.executors.cpuGroupDir(0) as string);
    assert.notEqual(its, mine);
    await second.close();
    assert.equal(existsSync(its), false);
    assert.ok(existsSync(join(mine, 'slot-0')) && existsSync(join(mine, 'slot-1')));
    const pid = svc.service.executors.slotPids[0] as number;
    assert.ok(members(join(mine, 'slot-0')).has(pid), 'the first service’s slot is still in its group');
  });

  test('each slot process is in its slot’s cpuacct group, whose count weighs its jobs (cgroup v1 with cpuacct apart)', (t) => {
    const acct = acctDir();
    if (acct === undefined) return t.skip('cpuacct is mounted with cpu, or not at all');
    for (const [i, pid] of svc.service.executors.slotPids.entries()) {
      assert.ok(pid !== undefined);
      assert.ok(members(join(acct, `slot-${i}`)).has(pid), `slot ${i}'s process is in its cpuacct group`);
      assert.ok(Number(readFileSync(join(acct, `slot-${i}`, 'cpuacct.usage'), 'utf8')) > 0);
    }
  });

  test('the groups are gone when the service is closed', async () => {
    const base = dirname(svc.service.executors.cpuGroupDir(0) as string);
    const acct = acctDir();
    assert.ok(existsSync(base));
    closed = true;
    await svc.close();
    assert.equal(existsSync(base), false);
    if (acct !== undefined) assert.equal(existsSync(acct), false, 'the cpuacct groups too');
  });
});
