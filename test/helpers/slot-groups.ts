// What the tests of the slots' cgroups share: whether this machine gives the
// service its per-slot groups (root, a CPU cgroup hierarchy), the service they
// run against, a slot's groups and weights, and a process of a slot's user
// placed in its slot's groups (what code that escaped a slot process can be).
import assert from 'node:assert/strict';
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { findCpuCgroup } from '../../src/front/cgroups/slot-groups.js';
import { startTestService, type TestService } from './service.js';
import { until } from './wait.js';

/** The CPU cgroup this process runs in (the service makes its slots' groups below it), if any. */
export const CPU_CGROUP = findCpuCgroup(
  readFileSync('/proc/self/cgroup', 'utf8'),
  readFileSync('/proc/self/mountinfo', 'utf8'),
);

/**
 * node:test's `skip` for these files: why the slots have no groups here, or
 * false. Detected as the service detects it: a cgroup hierarchy this process
 * can make a group in (root in a user namespace without delegation, a
 * read-only cgroup file system and a non-root user all fail here).
 */
export const SLOT_GROUPS_SKIP: string | false =
  CPU_CGROUP === undefined ? 'no cgroup hierarchy' : canMakeGroup(CPU_CGROUP.dir) ? false : 'cannot make cgroups here';

function canMakeGroup(dir: string): boolean {
  const probe = join(dir, `pagescript-probe-${process.pid}`);
  try {
    mkdirSync(probe);
    rmdirSync(probe);
    return true;
  } catch {
    return false;
  }
}

/** Two slots whose processes stay up (a test asks for slot 1 when it likes), with `env` on top. */
export function startSlotsService(env: Record<string, string>): Promise<TestService> {
  return startTestService({ MAX_CONCURRENCY: '2', IDLE_SLOT_CLOSE_MS: '0', ...env });
}

/** Slot `slot`'s groups: CPU, cpuacct, memory and pids (one directory where the controllers are mounted together). */
export function slotGroups(svc: TestService, slot: number): string[] {
  const x = svc.service.slots;
  return [
    ...new Set(
      [x.cpuGroupDir(slot), x.cpuAcctGroupDir(slot), x.memoryGroupDir(slot), x.tasksGroupDir(slot)].filter(
        (d) => d !== undefined,
      ),
    ),
  ];
}

/**
 * Starts `script` (sh) as slot `slot`'s user, in the slot's groups, where the
 * kernel puts what a slot process forks: it is stopped until it is placed, so
 * that all it does and forks happens there. It is added to `started` at once:
 * the caller's `after` kills what is there (with its process group when `detached`).
 */
export async function spawnInSlot(
  svc: TestService,
  slot: number,
  script: string,
  started: ChildProcess[],
  opts: { stdio?: StdioOptions; detached?: boolean } = {},
): Promise<ChildProcess> {
  const user = svc.service.slots.users?.[slot];
  assert.ok(user, 'as root, each slot has a user');
  const child = spawn('sh', ['-c', `kill -STOP $$; ${script}`], {
    uid: user.uid,
    gid: user.gid,
    stdio: opts.stdio ?? 'ignore',
    detached: opts.detached ?? false,
  });
  started.push(child);
  const pid = child.pid;
  assert.ok(pid !== undefined);
  await until(() => / T /.test(readFileSync(`/proc/${pid}/stat`, 'utf8')), 'the process to wait for its groups');
  for (const dir of slotGroups(svc, slot)) writeFileSync(join(dir, 'cgroup.procs'), String(pid));
  process.kill(pid, 'SIGCONT');
  return child;
}
