// A fork bomb from a slot. Code that escaped into a slot process (or its
// Chromium) runs as the slot's user and can fork or start threads; unchecked,
// it takes the machine's pid space (32,768 pids on a default Debian) and then
// nothing can start, not another tenant's renderer nor the service's next slot
// process. Each slot's tasks are capped by the kernel (SLOT_MAX_TASKS, the pids
// controller). The bomb is made here as escaped code would make it: a process
// of the slot's user, in the slot's groups, forking as fast as it can.
import assert from 'node:assert/strict';
import { spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../../helpers/fixtures.js';
import { inItsOwnSlot, type TestService } from '../../helpers/service.js';
import { SLOT_GROUPS_SKIP as skip, spawnInSlot, startSlotsService } from '../../helpers/slot-groups.js';
import { until } from '../../helpers/wait.js';

const fixtures = new FixtureServer({ '/example': html(EXAMPLE_DOMAIN_HTML) });
/** Low enough for a quick bomb, well above a slot's own ~64 tasks at rest. */
const CAP = 256;
/** How many forks the bomb tries: bounded, in case the cap is not there. */
const TRIES = 1000;

let svc: TestService;
const bombs: ChildProcess[] = [];

before(async () => {
  if (skip) return;
  await fixtures.start();
  svc = await startSlotsService({ EGRESS_ALLOWLIST: fixtures.allowEntry, SLOT_MAX_TASKS: String(CAP) });
});

after(async () => {
  if (skip) return;
  // SECURITY (of the machine): whatever a bomb started is gone after the tests, whatever they showed.
  for (const b of bombs)
    try {
      if (b.pid !== undefined) process.kill(-b.pid, 'SIGKILL');
    } catch {
      // Its group is gone.
    }
  await svc?.close();
  await fixtures.close();
});

const tasksGroup = (slot: number): string => svc.service.slots.tasksGroupDir(slot) as string;
const read = (slot: number, file: string): string => readFileSync(join(tasksGroup(slot), file), 'utf8');
const refusals = (slot: number): number => Number(/^max (\d+)$/m.exec(read(slot, 'pids.events'))?.[1] ?? 0);

/** A process of slot `slot`'s user in the slot's groups that forks sleepers TRIES times, as fast as it can. */
const bombIn = (slot: number): Promise<ChildProcess> =>
  spawnInSlot(
    svc,
    slot,
    `i=0; while [ $i -lt ${TRIES} ]; do sleep 60 & i=$((i+1)); done 2>/dev/null; wait`,
    bombs,
    // Its own process group: after() kills all it forked at once.
    { detached: true },
  );

describe('a fork bomb in a slot', { skip }, () => {
  test('each slot’s tasks are capped, and its user cannot raise the cap', () => {
    for (const slot of [0, 1]) {
      assert.equal(read(slot, 'pids.max').trim(), String(CAP));
      const user = svc.service.slots.users?.[slot];
      assert.ok(user);
      const raise = spawnSync('sh', ['-c', `echo max > ${join(tasksGroup(slot), 'pids.max')}`], {
        uid: user.uid,
        gid: user.gid,
      });
      assert.notEqual(raise.status, 0, 'a slot user may not write its cap');
      assert.equal(read(slot, 'pids.max').trim(), String(CAP));
    }
  });

  test('a fork bomb beside its slot’s job stops at the cap; the other slot serves; what it left goes with the job', async () => {
    const { reply: long, slot } = await inItsOwnSlot(svc, {
      url: fixtures.url('/example'),
      script: 'await page.evaluate(() => new Promise((r) => setTimeout(r, 3000))); return 1',
    });
    const before = refusals(slot);
    await bombIn(slot);
    await until(() => refusals(slot) > before, 'the bomb to meet the cap');
    const current = Number(read(slot, 'pids.current'));
    assert.ok(current <= CAP, `${current} tasks in a slot capped at ${CAP}`);
    // The other slot starts pages, processes and threads as usual.
    const other = await svc.post({ url: fixtures.url('/example'), script: 'return await page.title()' });
    assert.equal(other.status, 200, `the other slot's request: ${other.text}`);
    // The bomb's own slot answers its request, whatever the bomb did to its Chromium (which may have
    // needed a thread it could not have): the request is the attacker's own.
    const r = await long;
    assert.ok([200, 400, 500].includes(r.status), `${r.status} ${r.text}`);
    // At its job's end, the slot's group keeps only its slot process's tree.
    await until(() => Number(read(slot, 'pids.current')) < CAP / 2, 'what the bomb forked to be killed');
    const next = await svc.post({ url: fixtures.url('/example'), script: 'return await page.title()' });
    assert.equal(next.status, 200, next.text);
  });
});
