// Cgroups per slot (src/front/cgroups/slot-groups.ts): each slot's whole tree
// — its process, its Chromium, every renderer — is in its slot's groups, so
// the kernel weighs a slot as one and holds its memory however many processes
// its page makes; a slot user cannot leave its group or change its weight or
// limit; a page past its request's share is killed by the kernel, its request
// alone failing; nothing is left behind. Where the front may not make groups
// the tests are skipped (by what they detect), as the service then runs without them.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import type { ServerResponse } from 'node:http';
import { existsSync, mkdirSync, readFileSync, rmdirSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../../helpers/fixtures.js';
import { inItsOwnSlot, startTestService, type TestService } from '../../helpers/service.js';
import { descendants } from '../../helpers/system.js';
import { until } from '../../helpers/wait.js';
import { CPU_CGROUP as found, SLOT_GROUPS_SKIP as skip, startSlotsService } from '../../helpers/slot-groups.js';
import { findV1Cgroup } from '../../../src/front/cgroups/slot-groups.js';
import { dying } from '../../../src/common/proc.js';

const MB = 2 ** 20;
/** Replies to /hold, held until the test ends them. */
const holding: ServerResponse[] = [];
const fixtures = new FixtureServer({
  '/example': html(EXAMPLE_DOMAIN_HTML),
  '/hold': (_req, res) => void holding.push(res),
  '/bomb': html('<title>bomb</title>'),
});

/** A group a dead service left: made before the service starts, removed by it. */
let stale: string | undefined;
let svc: TestService;
let closed = false;

before(async () => {
  if (skip) return;
  await fixtures.start();
  // A pid that is no process: one that has exited.
  const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  stale = join(found?.dir ?? '', `pagescript-${gone.stdout}`);
  mkdirSync(stale);
  mkdirSync(join(stale, 'slot-0'));
  svc = await startSlotsService({ EGRESS_ALLOWLIST: fixtures.allowEntry });
});

after(async () => {
  if (skip) return;
  for (const res of holding.splice(0)) res.end('');
  if (!closed) await svc?.close();
  // SECURITY (of the machine): whatever a failed test left is removed.
  for (const dir of [join(stale ?? '', 'slot-0'), stale ?? '']) if (existsSync(dir)) rmdirSync(dir);
  await fixtures.close();
});

/** The service's cpuacct groups' directory, where v1 mounts cpuacct apart from cpu. */
function acctDir(): string | undefined {
  const cpu = svc.service.slots.cpuGroupDir(0) as string;
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
    const pids = svc.service.slots.slotPids;
    assert.equal(pids.length, 2);
    const dirs = [0, 1].map((i) => svc.service.slots.cpuGroupDir(i) as string);
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
        // A process exiting by now (a renderer of the closed context) has
        // left its group while it is still in /proc as a zombie; one alive
        // now was alive when the group was read, so it must be there.
        if (dying(p)) continue;
        assert.ok(mine.has(p), `process ${p} of slot ${i} is in its group`);
        assert.ok(!other.has(p), `process ${p} of slot ${i} is not in the other slot's group`);
      }
    }
  });

  test('a slot user cannot move a process or thread out of its group, into the other slot’s, change a weight or quota, or make a group', () => {
    const [pid] = svc.service.slots.slotPids;
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const uid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]);
    const gid = Number(/^Gid:\s+(\d+)/m.exec(status)?.[1]);
    assert.notEqual(uid, 0, 'as root, a slot runs as a slot user');
    const dir0 = svc.service.slots.cpuGroupDir(0) as string;
    const dir1 = svc.service.slots.cpuGroupDir(1) as string;
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
      // Its memory limit, and the one of the slots together.
      [
        join(
          svc.service.slots.memoryGroupDir(0) as string,
          found?.version === 1 ? 'memory.limit_in_bytes' : 'memory.max',
        ),
        '-1',
      ],
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

  test("each slot's memory group holds its tree: its share of the plan at rest, its level and the request's share during a job", async () => {
    const x = svc.service.slots;
    const { config } = svc.service;
    const plan = config.memory;
    const rest = (plan.slotBaseMb + plan.chromiumBaseMb + plan.perRequestMb) * MB;
    const file = found?.version === 1 ? 'memory.limit_in_bytes' : 'memory.max';
    const limit = (slot: number, sub = ''): number =>
      Number(readFileSync(join(x.memoryGroupDir(slot) as string, sub, file), 'utf8'));
    await until(() => !x.busySlots.some(Boolean), 'the slots to be free (a context is closed after its reply)');
    for (const [i, pid] of x.slotPids.entries()) {
      assert.ok(pid !== undefined);
      assert.ok(members(x.memoryGroupDir(i) as string).has(pid), `slot ${i}'s process is in its memory group`);
      assert.equal(limit(i), rest, `slot ${i} at rest`);
      if (found?.version !== 1) continue;
      // Its Chromium in a group of its own within the slot's: the page's limit is the kernel's.
      const chromium = members(join(x.memoryGroupDir(i) as string, 'chromium'));
      // A renderer exiting (a zombie in /proc) has already left its group.
      const tree = descendants(pid).filter((p) => !dying(p));
      assert.ok(tree.length > 3 && tree.every((p) => chromium.has(p)), `slot ${i}'s Chromium is in its Chromium group`);
      assert.ok(!chromium.has(pid), 'the slot process is not');
      assert.equal(limit(i, 'chromium'), (plan.chromiumBaseMb + config.pageMemoryMb) * MB);
    }
    const held = fixtures.hits.get('/hold') ?? 0;
    const { reply, slot } = await inItsOwnSlot(svc, {
      url: fixtures.url('/example'),
      script: "return await page.evaluate(() => fetch('/hold').then((r) => r.text()))",
    });
    await until(() => (fixtures.hits.get('/hold') ?? 0) > held, 'the request to wait on its page');
    // The slot's level when the job began is somewhere under its limit at rest; above it, the request's share.
    const above = limit(slot) - plan.perRequestMb * MB;
    assert.ok(above > 0 && above <= rest, `the job's limit is its slot's level (${above} bytes) and its share`);
    if (found?.version === 1) {
      const page = limit(slot, 'chromium') - config.pageMemoryMb * MB;
      assert.ok(page > 0 && page < above, `its Chromium's limit is its level (${page} bytes) and the page memory`);
    }
    assert.equal(limit(1 - slot), rest, 'the other slot is at rest');
    for (const res of holding.splice(0)) res.end('done');
    assert.equal((await reply).status, 200);
    await until(() => limit(slot) === rest, "the slot's limit at rest once its job ended");
  });

  test('a second service in the same process has groups of its own, and closing it leaves the first’s', async () => {
    const second = await startTestService({ EGRESS_ALLOWLIST: fixtures.allowEntry, MAX_CONCURRENCY: '1' });
    const mine = dirname(svc.service.slots.cpuGroupDir(0) as string);
    const its = dirname(second.service.slots.cpuGroupDir(0) as string);
    assert.notEqual(its, mine);
    await second.close();
    assert.equal(existsSync(its), false);
    assert.ok(existsSync(join(mine, 'slot-0')) && existsSync(join(mine, 'slot-1')));
    const pid = svc.service.slots.slotPids[0] as number;
    assert.ok(members(join(mine, 'slot-0')).has(pid), 'the first service’s slot is still in its group');
  });

  test('each slot process is in its slot’s cpuacct group, whose count weighs its jobs (cgroup v1 with cpuacct apart)', (t) => {
    const acct = acctDir();
    if (acct === undefined) return t.skip('cpuacct is mounted with cpu, or not at all');
    for (const [i, pid] of svc.service.slots.slotPids.entries()) {
      assert.ok(pid !== undefined);
      assert.ok(members(join(acct, `slot-${i}`)).has(pid), `slot ${i}'s process is in its cpuacct group`);
      assert.ok(Number(readFileSync(join(acct, `slot-${i}`, 'cpuacct.usage'), 'utf8')) > 0);
    }
  });

  test('the groups are gone when the service is closed', async () => {
    const base = dirname(svc.service.slots.cpuGroupDir(0) as string);
    const memory = dirname(svc.service.slots.memoryGroupDir(0) as string);
    const acct = acctDir();
    assert.ok(existsSync(base));
    closed = true;
    await svc.close();
    assert.equal(existsSync(base), false);
    assert.equal(existsSync(memory), false, 'the memory groups too');
    if (acct !== undefined) assert.equal(existsSync(acct), false, 'the cpuacct groups too');
  });
});

describe("a page past its request's share of memory, with slot cgroups", { skip }, () => {
  // The smallest shares the settings allow: a page bomb passes its slot's limit within ~200 MB.
  let small: TestService;
  before(async () => {
    if (skip) return;
    small = await startSlotsService({
      EGRESS_ALLOWLIST: fixtures.allowEntry,
      PAGE_MEMORY_MB: '64',
      SCRIPT_MEMORY_MB: '16',
      METRICS_TOKEN: 'metrics-token-0123456789abcdef',
    });
  });
  after(async () => {
    if (!skip) await small?.close();
  });

  test('is killed by the kernel: 400 MEMORY_LIMIT_EXCEEDED for its request alone; the other slot and the next request are served', async () => {
    const x = small.service.slots;
    const file = found?.version === 1 ? 'memory.oom_control' : 'memory.events';
    // The slot's group and, on v1, its Chromium's within it (v1 counts a kill where the limit was passed).
    const kills = (slot: number): number =>
      ['', found?.version === 1 ? 'chromium' : undefined]
        .filter((sub) => sub !== undefined)
        .map((sub) => readFileSync(join(x.memoryGroupDir(slot) as string, sub, file), 'utf8'))
        .reduce((n, text) => n + Number(/^oom_kill (\d+)$/m.exec(text)?.[1] ?? 0), 0);
    const held = fixtures.hits.get('/hold') ?? 0;
    const { reply: other, slot: otherSlot } = await inItsOwnSlot(small, {
      url: fixtures.url('/example'),
      script: "return await page.evaluate(() => fetch('/hold').then((r) => r.text()))",
    });
    await until(() => (fixtures.hits.get('/hold') ?? 0) > held, 'the other request to wait on its page');
    const before = kills(1 - otherSlot);
    const r = await small.post({
      url: fixtures.url('/bomb'),
      script:
        'await page.evaluate(() => { const a = []; for (;;) a.push(new Uint8Array(16 << 20).fill(1)) }); return 1',
    });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.code, 'MEMORY_LIMIT_EXCEEDED', r.text);
    assert.match(String(r.body.error), /the page used more than 64 MiB \(PAGE_MEMORY_MB\)/);
    assert.ok(kills(1 - otherSlot) > before, "the kernel killed a process of the bomb's slot");
    assert.equal(kills(otherSlot), 0, "and none of the other slot's");
    for (const res of holding.splice(0)) res.end('served');
    const answered = await other;
    assert.equal(answered.status, 200, answered.text);
    assert.equal(answered.body.data, 'served');
    const metrics = await small.raw('GET', '/metrics', {
      headers: { authorization: 'Bearer metrics-token-0123456789abcdef' },
    });
    assert.match(metrics.text, /^pagescript_page_memory_kills_total [1-9]/m, 'counted as a page memory kill');
    for (let i = 0; i < 2; i++) {
      const next = await small.post({ url: fixtures.url('/example'), script: 'return await page.title()' });
      assert.equal(next.status, 200, next.text);
    }
  });
});
