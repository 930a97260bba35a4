// The cgroups of each request slot: the kernel holds every slot's budgets over
// its whole process tree (its host side, its Chromium and every renderer),
// however many threads and processes a hostile page makes: the CPU by equal
// weights (work-conserving: an idle slot's share goes to the busy ones),
// memory by a limit (memory-limits.ts), tasks by a cap (task-limits.ts), and
// the CPU each used by the kernel's count (cpu-accounting.ts). The front makes
// them under its own cgroups when it may (root, a writable cgroup v1 hierarchy
// or a cgroup v2 tree with the controllers delegated), places each slot
// process in its groups as it is spawned (Chromium and its children inherit
// them), and removes them when it closes. Where it may not (the container's
// non-root user), the watchdogs hold memory and admission alone divides the
// CPU (docs/budgets.md).
//
// SECURITY: the groups' files belong to the front's user (root); a slot
// process, which runs as a slot user, cannot move itself or its Chromium out
// of its groups nor change their limits.
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Logger } from '../../common/log.js';
import { parseStat, readOr, dying } from '../../common/proc.js';
import { CpuAccounting } from './cpu-accounting.js';
import { MemoryLimits, type RestLimits } from './memory-limits.js';
import { removeTree, staleServices } from './parallel-groups.js';
import { TaskLimits } from './task-limits.js';
import type { RunAs } from '../host/users.js';

/** How the front's own CPU cgroup was found: the hierarchy's version and its directory. */
export interface CpuCgroup {
  readonly version: 1 | 2;
  readonly dir: string;
}

/**
 * The front's CPU cgroup from /proc/self/cgroup and /proc/self/mountinfo's
 * texts: cgroup v1's `cpu` controller when it is mounted (a hybrid machine's
 * v2 tree then has no cpu controller), else cgroup v2's tree. undefined when
 * neither is mounted where this process can see it.
 */
export function findCpuCgroup(cgroupText: string, mountinfoText: string): CpuCgroup | undefined {
  const v1 = findV1Cgroup('cpu', cgroupText, mountinfoText);
  if (v1) return { version: 1, dir: v1 };
  const mounts = parseMounts(mountinfoText);
  for (const line of cgroupText.split('\n')) {
    const m = /^0::(.*)$/.exec(line);
    if (!m) continue;
    const mount = mounts.find((x) => x.fstype === 'cgroup2');
    const dir = mount && within(mount, m[1] ?? '');
    if (dir) return { version: 2, dir };
  }
  return undefined;
}

/** The directory of the front's cgroup in cgroup v1's hierarchy of `controller` (`cpu`, `cpuacct`), when it is mounted. */
export function findV1Cgroup(controller: string, cgroupText: string, mountinfoText: string): string | undefined {
  const mounts = parseMounts(mountinfoText);
  for (const line of cgroupText.split('\n')) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line);
    if (!m) continue;
    const [, , controllers = '', path = ''] = m;
    if (!controllers.split(',').includes(controller)) continue;
    const mount = mounts.find((x) => x.fstype === 'cgroup' && x.superOptions.includes(controller));
    const dir = mount && within(mount, path);
    if (dir) return dir;
  }
  return undefined;
}

function parseMounts(mountinfoText: string): { root: string; point: string; fstype: string; superOptions: string[] }[] {
  return mountinfoText
    .split('\n')
    .filter((l) => l.includes(' - '))
    .map((l) => {
      const [left = '', right = ''] = l.split(' - ');
      const f = left.split(' ');
      const [fstype = '', , superOptions = ''] = right.split(' ');
      return { root: unescape(f[3] ?? ''), point: unescape(f[4] ?? ''), fstype, superOptions: superOptions.split(',') };
    });
}

/** mountinfo escapes spaces, tabs, newlines and backslashes in paths as octal. */
function unescape(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

/** The directory of cgroup `path` under a mount of its hierarchy, or undefined when the mount does not hold it. */
function within(mount: { root: string; point: string }, path: string): string | undefined {
  let rest: string;
  if (mount.root === '/') rest = path;
  else if (path === mount.root || path.startsWith(`${mount.root}/`)) rest = path.slice(mount.root.length);
  else return undefined;
  return join(mount.point, rest).replace(/(.)\/+$/, '$1');
}

/** The prefix of the directory each service makes under its own cgroup: `pagescript-<front's pid>-<n>`. */
const PREFIX = 'pagescript-';
/** How many generations of parents a group member's is followed up to its slot process (Chromium's are 4 below it). */
const MAX_TREE_DEPTH = 32;
/** Services made by this process so far (tests run several in one): n of the directory's name. */
let made = 0;
/** How long close waits for a slot group's last processes (a killed slot's Chromium) to exit before leaving it. */
const REMOVE_WAIT_MS = 5000;

/** Each version's weight file and its default (one busy thread's weight). */
const WEIGHTS = {
  1: { file: 'cpu.shares', one: 1024 },
  2: { file: 'cpu.weight', one: 100 },
} as const;

/** Slot groups made, or why there are none (/health's slotCgroups). */
export type SlotGroupsOpened = { readonly groups: SlotGroups } | { readonly off: string };

export class SlotGroups {
  readonly #base: string;
  readonly #logger: Logger;
  /** Each slot's memory limit. */
  readonly memory: MemoryLimits;
  /** The kernel's count of each slot group's CPU, when it can be read. */
  readonly #acct: CpuAccounting | undefined;
  /** Each slot's cap on tasks, when it could be set. */
  readonly #tasks: TaskLimits | undefined;
  /** Each slot's refusals at its cap already logged. */
  readonly #refusalsSeen: number[] = [];

  private constructor(
    base: string,
    logger: Logger,
    memory: MemoryLimits,
    acct: CpuAccounting | undefined,
    tasks: TaskLimits | undefined,
  ) {
    this.#base = base;
    this.#logger = logger;
    this.memory = memory;
    this.#acct = acct;
    this.#tasks = tasks;
  }

  /**
   * Makes `slots` groups of equal weight under the front's own CPU cgroup
   * (`<its cgroup>/pagescript-<pid>-<n>/slot-<i>`), after removing what a service
   * that is gone left there, each slot's memory limited to `rest` and its
   * tasks capped at `maxTasks` (slot i's user `users[i]`, when slots have
   * users). `off` says why, and a line in the log, when the front may not.
   */
  static open(
    slots: number,
    maxTasks: number,
    rest: RestLimits,
    users: readonly RunAs[] | undefined,
    logger: Logger,
  ): SlotGroupsOpened {
    // The front's own cgroups and mounts, read once: the CPU hierarchy's, and v1's cpuacct, memory and pids.
    const self = [readOr('/proc/self/cgroup') ?? '', readOr('/proc/self/mountinfo') ?? ''] as const;
    const found = findCpuCgroup(...self);
    if (!found) {
      logger.info('no cgroup hierarchy to divide between slots: the watchdogs hold memory');
      return { off: 'no cgroup hierarchy is mounted where the service can see it' };
    }
    const base = join(found.dir, `${PREFIX}${process.pid}-${++made}`);
    const weight = WEIGHTS[found.version];
    let ours = false;
    let memory: MemoryLimits;
    try {
      removeStale(found.dir, logger);
      if (found.version === 2) {
        // cgroup v2: the cpu controller must be enabled for the children of every
        // level; this fails (EBUSY) where the front's cgroup holds processes and is not
        // the root, and (EACCES, EROFS) where it is not delegated.
        if (!(readOr(join(found.dir, 'cgroup.controllers')) ?? '').split(/\s+/).includes('cpu')) {
          throw new Error('the cpu controller is not available in the service cgroup');
        }
        writeFileSync(join(found.dir, 'cgroup.subtree_control'), '+cpu');
        // For the slots' caps on tasks (task-limits.ts), when the controller is there.
        if ((readOr(join(found.dir, 'cgroup.controllers')) ?? '').split(/\s+/).includes('pids'))
          writeFileSync(join(found.dir, 'cgroup.subtree_control'), '+pids');
      }
      mkdirSync(base);
      ours = true;
      if (found.version === 2) writeFileSync(join(base, 'cgroup.subtree_control'), '+cpu');
      // The slots together weigh one busy thread against the rest of the parent:
      // the front and the egress process are on every request's path, and must
      // be served first whatever the slots do (a weight per slot made the
      // innocent's /health and page loads wait on an attacker's slot).
      // Uncontended, the slots still have every core.
      writeFileSync(join(base, weight.file), String(weight.one));
      for (let i = 0; i < slots; i++) {
        const dir = join(base, `slot-${i}`);
        mkdirSync(dir);
        // Equal weights (the defaults, written so that a changed default cannot skew them).
        writeFileSync(join(dir, weight.file), String(weight.one));
      }
      const memoryDir = found.version === 1 ? findV1Cgroup('memory', ...self) : undefined;
      memory = MemoryLimits.open(slots, rest, users, found.version, base, memoryDir, logger);
    } catch (e) {
      if (ours) removeTree(base);
      const why = e instanceof Error ? e.message : String(e);
      logger.info({ err: e, cgroup: found.dir }, 'cannot make cgroups for the slots here: the watchdogs hold memory');
      return { off: why };
    }
    logger.info({ cgroup: base, version: found.version }, 'each slot has cgroups of its own (CPU, memory, tasks)');
    const acctDir = found.version === 1 ? findV1Cgroup('cpuacct', ...self) : undefined;
    const pidsDir = found.version === 1 ? findV1Cgroup('pids', ...self) : undefined;
    return {
      groups: new SlotGroups(
        base,
        logger,
        memory,
        CpuAccounting.open(slots, found.version, base, acctDir, logger),
        TaskLimits.open(slots, maxTasks, found.version, base, pidsDir, logger),
      ),
    };
  }

  /** The directory of slot `index`'s group. */
  dir(index: number): string {
    return join(this.#base, `slot-${index}`);
  }

  /**
   * Moves process `pid` (a slot process just spawned, before it has started
   * anything) into slot `index`'s group; what it starts later is born there.
   * A failure is logged: the slot still runs, without its weight.
   */
  place(index: number, pid: number): void {
    try {
      writeFileSync(join(this.dir(index), 'cgroup.procs'), String(pid));
    } catch (e) {
      this.#logger.warn({ err: e, pid, slot: index }, 'a slot process could not be placed in its CPU cgroup');
    }
    this.memory.place(index, pid);
    this.#acct?.place(index, pid);
    this.#tasks?.place(index, pid);
  }

  /** Slot `index`'s group holding its CPU count, when there is one (tests). */
  acctDir(index: number): string | undefined {
    return this.#acct?.dir(index);
  }

  /** Slot `index`'s group that caps its tasks, when there is one (tests). */
  tasksDir(index: number): string | undefined {
    return this.#tasks?.dir(index);
  }

  /** How many times slot `index`'s tree was refused a task at its cap so far; 0 when uncapped. */
  taskRefusals(index: number): number {
    return this.#tasks?.refusals(index) ?? 0;
  }

  /** The kernel's count of the CPU slot `index`'s group has used (ms), every process in it counted; undefined when unread. */
  usageMs(index: number): number | undefined {
    return this.#acct?.usageMs(index);
  }

  /**
   * Kills every process in slot `index`'s group that is in none of the trees
   * of `roots` (the slot's live processes; none: nothing there is kept).
   * Returns how many. SECURITY: a process of the slot's user that left the
   * tree (a double fork reparents it) is still in the group, but the front's
   * count of the job's CPU (treeCpuMs) no longer sees it; what a dead slot
   * process left is in no job at all. Neither may run on there.
   */
  sweep(index: number, roots: readonly number[]): number {
    const killed = killOutside(this.dir(index), `/${basename(this.#base)}/slot-${index}`, roots);
    if (killed > 0)
      this.#logger.warn(
        { slot: index, killed },
        "killed processes in a slot's CPU cgroup outside its slot process's tree",
      );
    const refusals = this.taskRefusals(index);
    if (refusals > (this.#refusalsSeen[index] ?? 0)) {
      this.#refusalsSeen[index] = refusals;
      this.#logger.warn({ slot: index, refusals }, 'a slot was refused new tasks at its cap (SLOT_MAX_TASKS)');
    }
    return killed;
  }

  /**
   * Removes the groups once their processes are gone, killing what is left in
   * them (tries for up to REMOVE_WAIT_MS).
   */
  async close(): Promise<void> {
    const until = Date.now() + REMOVE_WAIT_MS;
    for (;;) {
      if (removeTree(this.#base)) {
        this.memory.close();
        this.#acct?.close();
        this.#tasks?.close();
        return;
      }
      // SECURITY: the slot processes are gone by now (their Chromium exiting); what stays in their groups escaped them.
      for (const name of existsSync(this.#base) ? readdirSync(this.#base) : []) {
        const m = /^slot-(\d+)$/.exec(name);
        if (m) this.sweep(Number(m[1]), []);
      }
      if (Date.now() > until) {
        this.#logger.warn({ cgroup: this.#base }, 'a slot CPU cgroup still has processes; the next start removes it');
        return;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/**
 * Kills every process in group `dir` (whose path in /proc/<pid>/cgroup ends
 * with `rel`) that is in none of the trees of `roots`. Returns how many.
 */
function killOutside(dir: string, rel: string, roots: readonly number[]): number {
  const members = (readOr(join(dir, 'cgroup.procs')) ?? '').split('\n').filter(Boolean).map(Number);
  // Whether each pid met so far is in a root's tree: a group's members share their ancestors.
  const known = new Map<number, boolean>(roots.map((r) => [r, true]));
  let killed = 0;
  for (const pid of members) {
    if (inTree(pid, known)) continue;
    // SECURITY: killed only while still in this group: a pid that exited
    // since the list was read, and was reused outside it, is left alone. One
    // already dying (a dead Chromium's helpers its slot killed) is no stray.
    if (!inGroup(pid, rel) || dying(pid)) continue;
    try {
      process.kill(pid, 'SIGKILL');
      killed++;
    } catch {
      // Gone meanwhile.
    }
  }
  return killed;
}

/** Whether `pid`'s chain of parents reaches a pid `known` says is in a tree (within MAX_TREE_DEPTH generations). */
export function inTree(pid: number, known: Map<number, boolean>): boolean {
  const chain: number[] = [];
  let found = false;
  for (let p = pid; chain.length < MAX_TREE_DEPTH;) {
    const k = known.get(p);
    if (k !== undefined) {
      found = k;
      break;
    }
    chain.push(p);
    const stat = p <= 1 ? undefined : readOr(`/proc/${p}/stat`);
    if (stat === undefined) break;
    p = parseStat(stat).ppid;
  }
  for (const p of chain) known.set(p, found);
  return found;
}

/** Whether `pid` is in the cpu cgroup whose path ends with `rel` now (/proc/<pid>/cgroup: `n:controllers:path`). */
function inGroup(pid: number, rel: string): boolean {
  const text = readOr(`/proc/${pid}/cgroup`) ?? '';
  return text.split('\n').some((l) => {
    const m = /^\d+:([^:]*):(.*)$/.exec(l);
    if (!m) return false;
    const [, controllers = '', path = ''] = m;
    const cpu = controllers === '' || controllers.split(',').includes('cpu');
    return cpu && (path === rel || path.endsWith(rel));
  });
}

/** Removes the groups of services that are gone (killed before they could remove their own). */
function removeStale(dir: string, logger: Logger): void {
  for (const name of staleServices(dir)) {
    // SECURITY: what its slots left (escaped processes outlive a killed service) is killed; its group goes at the next start.
    for (const slot of readdirSync(join(dir, name), { withFileTypes: true }))
      if (slot.isDirectory()) killOutside(join(dir, name, slot.name), `/${name}/${slot.name}`, []);
    if (!removeTree(join(dir, name)))
      logger.warn({ cgroup: join(dir, name) }, 'a stale slot CPU cgroup still has processes');
  }
}
