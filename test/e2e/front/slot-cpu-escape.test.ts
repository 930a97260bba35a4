// Attacks on the slot's budgets by processes that left their slot's tree. Code that
// escaped into a slot process (or its Chromium) runs as the slot's user and can
// double-fork: the orphan is reparented out of the slot process's tree, so the
// front's count of the job's CPU (treeCpuMs) no longer sees it, but the kernel
// keeps it in the slot's cgroups. Unchecked, it competes with the next tenant
// of the slot in the same group, outlives the service and keeps its group from
// being removed. The
// orphan is made here as a double fork leaves it: a process of the slot's
// user, in the slot's group, whose parent is not in the slot's tree.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../../helpers/fixtures.js';
import { inItsOwnSlot, startTestService, type TestService } from '../../helpers/service.js';
import {
  CPU_CGROUP as found,
  SLOT_GROUPS_SKIP as skip,
  spawnInSlot,
  startSlotsService,
} from '../../helpers/slot-groups.js';
import { until } from '../../helpers/wait.js';

const fixtures = new FixtureServer({ '/example': html(EXAMPLE_DOMAIN_HTML) });

let svc: TestService;
let closed = false;
/** Every orphan a test made: killed after the tests whatever they showed. */
const orphans: ChildProcess[] = [];

before(async () => {
  if (skip) return;
  await fixtures.start();
  svc = await startSlotsService({ EGRESS_ALLOWLIST: fixtures.allowEntry });
});

after(async () => {
  if (skip) return;
  // SECURITY (of the machine): no spinning process outlives the tests.
  for (const o of orphans) if (o.exitCode === null && o.signalCode === null) o.kill('SIGKILL');
  if (!closed) await svc?.close();
  await fixtures.close();
});

const group = (slot: number): string => svc.service.slots.cpuGroupDir(slot) as string;

/**
 * A CPU-bound process of slot `slot`'s user in the slot's group, outside its
 * slot process's tree: what a double fork from escaped code leaves. Its 'exit'
 * says when the front killed it.
 */
async function orphanIn(slot: number): Promise<{ child: ChildProcess; gone: () => boolean }> {
  const child = await spawnInSlot(svc, slot, 'while :; do :; done', orphans);
  return { child, gone: () => child.exitCode !== null || child.signalCode !== null };
}

describe('a process that left its slot’s tree', { skip }, () => {
  test('a process that left the tree is billed to its job: X-Usage-Cpu-Ms is the slot group’s count', async () => {
    const { reply: long, slot } = await inItsOwnSlot(svc, {
      url: fixtures.url('/example'),
      script: 'await page.evaluate(() => new Promise((r) => setTimeout(r, 2500))); return 1',
    });
    // The group is swept as a job starts and ends: the spinner is killed at its job's end, and spins until then.
    const orphan = await orphanIn(slot);
    const r = await long;
    assert.equal(r.status, 200, r.text);
    await until(orphan.gone, 'the orphan to be killed at its job’s end');
    // The tree's count for a page that waits is tens of ms; the spinner had a core for about two seconds.
    const billed = Number(r.headers['x-usage-cpu-ms']);
    assert.ok(billed >= 500, `billed ${billed} ms of CPU for a job whose escaped process spun ~2 s`);
  });

  test('a spinner left in an idle slot’s group is killed before the slot’s next job, which is not charged for it', async () => {
    const left = [await orphanIn(0), await orphanIn(1)];
    const r = await svc.post({
      url: fixtures.url('/example'),
      // Long enough for a check of its CPU while the spinner would be charged to it.
      script: 'await page.evaluate(() => new Promise((r) => setTimeout(r, 1500))); return 1',
    });
    assert.equal(r.status, 200, r.text);
    assert.ok(
      left.some((o) => o.gone()),
      'the spinner in the slot the request took is killed by the time it is answered',
    );
    // Two spinners had ~1.5 s of a core each during the job; a page that waits uses tens of ms.
    const billed = Number(r.headers['x-usage-cpu-ms']);
    assert.ok(billed < 500, `billed ${billed} ms: the job is not charged for what its slot's group held before it`);
  });

  test('a slot process SIGKILLed during its job leaves neither an escaped process nor its Chromium to the next', async () => {
    const { reply: long, slot } = await inItsOwnSlot(svc, {
      url: fixtures.url('/example'),
      script: 'await page.evaluate(() => new Promise((r) => setTimeout(r, 4000))); return 1',
    });
    const pid = svc.service.slots.slotPids[slot] as number;
    const orphan = await orphanIn(slot);
    const other = svc.post({ url: fixtures.url('/example'), script: 'return await page.title()' });
    // Its Chromium, orphaned by the kill, is still in the slot's group for a moment.
    const before = readFileSync(join(group(slot), 'cgroup.procs'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map(Number);
    process.kill(pid, 'SIGKILL');
    assert.equal((await long).status, 500);
    assert.equal((await other).status, 200);
    await until(orphan.gone, 'the orphan to be killed with its slot process');
    await until(
      () => before.every((p) => p === pid || !existsSync(`/proc/${p}`)),
      'what the killed process left in its group to be gone',
    );
    const r = await svc.post({ url: fixtures.url('/example'), script: 'return await page.title()' });
    assert.equal(r.status, 200, r.text);
  });

  test('a spinner left in a slot’s group does not outlive the service, nor keep its group', async () => {
    const left = await orphanIn(1);
    const base = dirname(group(1));
    closed = true;
    await svc.close();
    await until(left.gone, 'the spinner to be killed at close');
    assert.equal(existsSync(base), false, 'the groups are removed');
  });

  test('a spinner left in the group of a service that was killed is killed by the next service, which removes the group', async () => {
    const user = svc.service.slots.users?.[0];
    assert.ok(user);
    // The group a service killed before its close left, with what escaped its slot still spinning there.
    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    const stale = join(found?.dir ?? '', `pagescript-${gone.stdout}-1`);
    mkdirSync(join(stale, 'slot-0'), { recursive: true });
    const child = spawn('sh', ['-c', 'while :; do :; done'], { uid: user.uid, gid: user.gid, stdio: 'ignore' });
    orphans.push(child);
    let exited = false;
    child.on('exit', () => (exited = true));
    writeFileSync(join(stale, 'slot-0', 'cgroup.procs'), String(child.pid));
    const next = await startTestService({ EGRESS_ALLOWLIST: fixtures.allowEntry, MAX_CONCURRENCY: '1' });
    try {
      await until(() => exited, 'the spinner to be killed at the next start');
    } finally {
      await next.close();
      // SECURITY (of the machine): whatever a failed test left is removed.
      for (const dir of [join(stale, 'slot-0'), stale]) if (existsSync(dir)) rmdirSync(dir);
    }
  });
});
