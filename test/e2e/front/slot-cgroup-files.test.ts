// Forging a slot's counts and caps from inside it. Code that escaped into a
// slot process (or its Chromium) runs as the slot's user, in the slot's groups:
// the CPU group (its weight), the cpuacct group (the count its jobs are billed
// by: X-Usage-Cpu-Ms), the memory group (its limit) and the pids group
// (SLOT_MAX_TASKS). Were any of their files its to write, it could reset its
// count before its job's end (billed nothing), raise its cap, limit or weight,
// or move itself out of its groups (uncounted, uncapped).
// Each attempt is made here as escaped code would make it: a process of the
// slot's user, in the slot's groups.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { EXAMPLE_DOMAIN_HTML, FixtureServer, html } from '../../helpers/fixtures.js';
import type { TestService } from '../../helpers/service.js';
import { SLOT_GROUPS_SKIP as skip, slotGroups, spawnInSlot, startSlotsService } from '../../helpers/slot-groups.js';
import { until } from '../../helpers/wait.js';

const fixtures = new FixtureServer({ '/example': html(EXAMPLE_DOMAIN_HTML) });

let svc: TestService;
const started: ChildProcess[] = [];

before(async () => {
  if (skip) return;
  await fixtures.start();
  svc = await startSlotsService({ EGRESS_ALLOWLIST: fixtures.allowEntry });
});

after(async () => {
  if (skip) return;
  for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  // A group the slot user could have made (it must not): removed, with nothing in it.
  for (const dir of [0, 1].flatMap((slot) => slotGroups(svc, slot)))
    if (existsSync(join(dir, 'sub'))) rmdirSync(join(dir, 'sub'));
  await svc?.close();
  await fixtures.close();
});

/** Runs `script` (sh) as slot `slot`'s user, from within the slot's groups, and returns its output. */
async function asSlot(slot: number, script: string): Promise<string> {
  const child = await spawnInSlot(svc, slot, script, started, { stdio: ['ignore', 'pipe', 'ignore'] });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  // Its output is all read once its pipes close (no event has fired yet: spawnInSlot resumed it just now).
  await new Promise((r) => child.once('close', r));
  return out;
}

/** A line `ok <path>` for each of `paths` the script could write `value` to, `no <path>` otherwise. */
const tryWrites = (paths: string[], value: string): string =>
  paths
    .map((p) => `if printf '%s' "${value}" > '${p}' 2>/dev/null; then echo "ok ${p}"; else echo "no ${p}"; fi`)
    .join('; ');

const files = (dir: string): string[] =>
  readdirSync(dir)
    .map((f) => join(dir, f))
    .filter((p) => statSync(p).isFile());

describe('a slot user and its own groups’ files', { skip }, () => {
  test('it cannot reset its cpuacct.usage: its jobs stay billed by what they used', async () => {
    const acct = svc.service.slots.cpuAcctGroupDir(0);
    assert.ok(acct !== undefined, 'slot 0 has a cpuacct count');
    const usage = join(acct, 'cpuacct.usage');
    // The slot process and its Chromium have used CPU by now (their start).
    const before = Number(readFileSync(usage, 'utf8'));
    assert.ok(before > 0);
    const out = await asSlot(0, tryWrites([usage], '0'));
    assert.equal(out.trim(), `no ${usage}`);
    assert.ok(Number(readFileSync(usage, 'utf8')) >= before, 'the count was not reset');
    // The count goes on with the slot's work.
    const r = await svc.post({ url: fixtures.url('/example'), script: 'return await page.title()' });
    assert.equal(r.status, 200, r.text);
    assert.ok(Number(r.headers['x-usage-cpu-ms']) > 0);
  });

  test('it can write no file of its groups nor of the service’s groups above them (caps, weights, counts)', async () => {
    // A job's limits are written back at rest once its context is closed, after its reply.
    await until(() => !svc.service.slots.busySlots.some(Boolean), 'the slots to be free');
    for (const slot of [0, 1]) {
      const dirs = slotGroups(svc, slot);
      // Its Chromium's memory group within its slot's: only cgroup.procs and tasks are the slot user's (to join it).
      const chromium = dirs.map((d) => join(d, 'chromium')).filter((d) => existsSync(d));
      const paths = [
        ...[...dirs, ...dirs.map((d) => dirname(d))].flatMap(files),
        ...chromium.flatMap(files).filter((p) => !/\/(cgroup\.procs|tasks)$/.test(p)),
      ];
      const caps = paths
        .filter((p) => /pids\.max$|cpu\.shares$|cpu\.weight$|memory\.limit_in_bytes$|memory\.max$/.test(p))
        .map((p) => [p, readFileSync(p, 'utf8')]);
      // "0" in cgroup.procs or tasks moves the writer itself; in a count, resets it.
      const out = await asSlot(slot, tryWrites(paths, '0'));
      const written = out.split('\n').filter((l) => l.startsWith('ok '));
      assert.deepEqual(written, [], `slot ${slot}'s user wrote ${written.join(', ')}`);
      assert.equal(out.split('\n').filter((l) => l.startsWith('no ')).length, paths.length, 'every file was tried');
      assert.ok(paths.some((p) => p.endsWith('cpuacct.usage')) && paths.some((p) => p.endsWith('pids.max')));
      assert.ok(
        paths.some((p) => /memory\.(limit_in_bytes|max)$/.test(p)),
        'its memory limit was tried',
      );
      for (const [p, v] of caps) assert.equal(readFileSync(p as string, 'utf8'), v);
    }
  });

  test('it cannot move itself out of its groups: to the groups above, the other slot’s or the hierarchy’s root', async () => {
    // Its own Chromium's memory group is its to join (within its slot's); the other slot's is not.
    const targets = [
      ...[0, 1].flatMap((slot) => slotGroups(svc, slot)),
      ...slotGroups(svc, 1)
        .map((d) => join(d, 'chromium'))
        .filter((d) => existsSync(d)),
    ];
    const above = slotGroups(svc, 0).flatMap((d) => {
      const up: string[] = [];
      for (let p = dirname(d); p !== dirname(p) && readdirSync(p).includes('cgroup.procs'); p = dirname(p)) up.push(p);
      return up;
    });
    const procs = [...new Set([...targets, ...above])].flatMap((d) => [join(d, 'cgroup.procs'), join(d, 'tasks')]);
    // Its own pid ($$): were a write to let it, it would leave its slot's groups.
    const out = await asSlot(
      0,
      `${tryWrites(procs, '$$')}; mkdir '${slotGroups(svc, 0)[0]}/sub' 2>/dev/null && echo "ok mkdir"; cat /proc/self/cgroup`,
    );
    const written = out.split('\n').filter((l) => l.startsWith('ok '));
    assert.deepEqual(written, [], `slot 0's user moved itself with ${written.join(', ')}`);
    assert.equal(out.split('\n').filter((l) => l.startsWith('no ')).length, procs.length, 'every group was tried');
    for (const dir of slotGroups(svc, 0)) {
      const rel = dir.split('/').slice(-2).join('/');
      assert.ok(out.includes(rel), `still in ${rel}: ${out}`);
    }
  });
});
