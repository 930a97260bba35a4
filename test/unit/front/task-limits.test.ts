// Each slot's cap on tasks (src/front/cgroups/task-limits.ts) on both cgroup
// versions, against directories that stand in for the hierarchies: this
// machine has cgroup v1 only, so the v2 path is checked here by the files it
// writes; test/e2e/front/slot-task-limit.test.ts runs a fork bomb against v1's.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { silentLogger } from '../../../src/common/log.js';
import { TaskLimits, slotTaskCap, taskSpace } from '../../../src/front/cgroups/task-limits.js';
import { capturingLogger } from '../../helpers/service.js';

const root = mkdtempSync(join(tmpdir(), 'pagescript-task-limits-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const fresh = (): string => {
  const dir = join(root, String(++n));
  mkdirSync(dir);
  return dir;
};

test('cgroup v2: the pids controller is enabled for the slots’ groups, and each gets the cap', () => {
  const cpuBase = fresh();
  for (const i of [0, 1]) mkdirSync(join(cpuBase, `slot-${i}`));
  const limits = TaskLimits.open(2, 300, 2, cpuBase, undefined, silentLogger());
  assert.ok(limits);
  assert.equal(readFileSync(join(cpuBase, 'cgroup.subtree_control'), 'utf8'), '+pids');
  for (const i of [0, 1]) {
    assert.equal(limits.dir(i), join(cpuBase, `slot-${i}`), 'the slot’s CPU group itself');
    assert.equal(readFileSync(join(cpuBase, `slot-${i}`, 'pids.max'), 'utf8'), '300');
  }
  // Nothing to place or remove: the slot process is placed in its CPU group, which is this one.
  limits.place(0, process.pid);
  assert.equal(existsSync(join(cpuBase, 'slot-0', 'cgroup.procs')), false);
});

test('cgroup v1: a parallel tree in the pids hierarchy, named as the CPU groups, with what gone services left removed', () => {
  const pidsDir = fresh();
  // A service that is gone (its pid is not running) left its tree.
  const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  mkdirSync(join(pidsDir, `pagescript-${gone.stdout}-1`, 'slot-0'), { recursive: true });
  // A live service's tree stays (this process stands for it).
  mkdirSync(join(pidsDir, `pagescript-${process.pid}-9`, 'slot-0'), { recursive: true });
  const cpuBase = join(fresh(), `pagescript-${process.pid}-3`);
  const limits = TaskLimits.open(2, 512, 1, cpuBase, pidsDir, silentLogger());
  assert.ok(limits);
  assert.equal(existsSync(join(pidsDir, `pagescript-${gone.stdout}-1`)), false);
  assert.equal(existsSync(join(pidsDir, `pagescript-${process.pid}-9`)), true);
  for (const i of [0, 1]) {
    assert.equal(limits.dir(i), join(pidsDir, `pagescript-${process.pid}-3`, `slot-${i}`));
    assert.equal(readFileSync(join(limits.dir(i), 'pids.max'), 'utf8'), '512');
  }
  limits.place(1, 4242);
  assert.equal(readFileSync(join(limits.dir(1), 'cgroup.procs'), 'utf8'), '4242');
  // The kernel's count of refusals at the cap.
  assert.equal(limits.refusals(0), 0);
  writeFileSync(join(limits.dir(0), 'pids.events'), 'max 17\n');
  assert.equal(limits.refusals(0), 17);
});

test('cgroup v1 without the pids hierarchy: no cap, and the log says what that means', () => {
  const { logger, text } = capturingLogger();
  const limits = TaskLimits.open(1, 512, 1, join(fresh(), 'pagescript-1-1'), undefined, logger);
  assert.equal(limits, undefined);
  assert.match(text(), /cannot cap the tasks of each slot: a slot may fork until the machine has no pids left/);
});

test('many slots at SLOT_MAX_TASKS each could take the machine’s pid space: the cap leaves it half free', () => {
  // 16 slots × the default 2048 = 32,768, a default Debian's pid_max: escaped code in every slot, each forking
  // to its cap, would leave the front no pid to restart a slot, nor another tenant's Chromium a renderer.
  const pidsDir = fresh();
  const { logger, text } = capturingLogger();
  const limits = TaskLimits.open(16, 2048, 1, join(fresh(), `pagescript-${process.pid}-5`), pidsDir, logger, 32_768);
  assert.ok(limits);
  for (let i = 0; i < 16; i++) assert.equal(readFileSync(join(limits.dir(i), 'pids.max'), 'utf8'), '1024');
  assert.match(text(), /SLOT_MAX_TASKS lowered/);
  // A cap above the machine's pid space, for one slot.
  assert.equal(slotTaskCap(65_536, 1, 32_768), 16_384);
  // A unit's TasksMax (systemd's default, 15% of pid_max) with three slots.
  assert.equal(slotTaskCap(2048, 3, 4915), 819);
  // Where the slots fit, the cap is the operator's.
  assert.equal(slotTaskCap(2048, 2, 32_768), 2048);
  assert.equal(slotTaskCap(2048, 256, 32_768), 128, 'never below what a slot needs at rest');
});

test('the machine’s task space: pid_max, threads-max and the pids.max of every group above the slots’', () => {
  const top = fresh();
  // A stand-in hierarchy: the front's group (a unit with TasksMax) above the service's, the root without pids.max.
  const unit = join(top, 'system.slice', 'pagescript.service');
  mkdirSync(unit, { recursive: true });
  writeFileSync(join(top, 'system.slice', 'pids.max'), 'max');
  writeFileSync(join(unit, 'pids.max'), '4915');
  assert.equal(taskSpace(unit), 4915);
  writeFileSync(join(unit, 'pids.max'), 'max');
  const kernel = Math.min(
    Number(readFileSync('/proc/sys/kernel/pid_max', 'utf8')),
    Number(readFileSync('/proc/sys/kernel/threads-max', 'utf8')),
  );
  assert.equal(taskSpace(unit), kernel);
  assert.equal(taskSpace(undefined), kernel);
});
