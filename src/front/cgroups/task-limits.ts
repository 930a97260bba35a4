// A cap on each slot's tasks (processes and threads: its host side, its
// Chromium, every renderer), kept by the kernel's pids controller: code that
// escaped into a slot process or a renderer can fork or start threads only up
// to SLOT_MAX_TASKS, not until the machine's pid space is gone (32,768 pids on
// a default Debian) and nothing else can start. With cgroup v1, a group per
// slot in the `pids` hierarchy, parallel to the CPU groups
// (`<pids cgroup>/pagescript-<pid>-<n>/slot-<i>`); with cgroup v2, `pids.max`
// in the slot's own CPU group.
//
// SECURITY: the groups' files belong to the front's user (root); a slot's user
// can neither raise its cap nor leave its group.
import { existsSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Logger } from '../../common/log.js';
import { readOr } from '../../common/proc.js';
import { makeParallel, placeIn, removeTree } from './parallel-groups.js';

/**
 * The share of the machine's task space (taskSpace below) the slots may hold
 * together: the rest is for the front, the egress process and the machine.
 */
export const SLOTS_SHARE_OF_TASKS = 0.5;
/** The least a slot is capped at, whatever the space: a slot at rest has ~64 tasks. */
export const MIN_SLOT_TASKS = 128;

/**
 * Each of `slots` slots' cap: SLOT_MAX_TASKS, lowered so that the slots
 * together hold at most SLOTS_SHARE_OF_TASKS of `space` (never below MIN_SLOT_TASKS).
 */
export function slotTaskCap(maxTasks: number, slots: number, space: number): number {
  return Math.max(MIN_SLOT_TASKS, Math.min(maxTasks, Math.floor((space * SLOTS_SHARE_OF_TASKS) / slots)));
}

/**
 * How many tasks the slots' groups under `dir` may have at most, as the kernel
 * counts them: the lowest of kernel.pid_max, kernel.threads-max and the pids.max
 * of `dir` and every group above it (a systemd unit's TasksMax, a container's
 * pids limit). Infinity when none can be read.
 */
export function taskSpace(dir: string | undefined): number {
  const limits = ['/proc/sys/kernel/pid_max', '/proc/sys/kernel/threads-max'].map((f) => Number(readOr(f)?.trim()));
  // The root group has no pids.max: the walk stops there.
  for (let d = dir; d !== undefined && existsSync(join(d, 'pids.max')); d = d === dirname(d) ? undefined : dirname(d))
    limits.push(Number(readOr(join(d, 'pids.max'))?.trim()));
  return Math.min(Infinity, ...limits.filter((n) => Number.isFinite(n) && n > 0));
}

export class TaskLimits {
  /** Slot i's group: `<base>/slot-<i>`. */
  readonly #base: string;
  /** The front made `#base` (v1's parallel tree): it places each slot process there and removes it. */
  readonly #own: boolean;
  readonly #logger: Logger;

  private constructor(base: string, own: boolean, logger: Logger) {
    this.#base = base;
    this.#own = own;
    this.#logger = logger;
  }

  /**
   * Caps each of `slots` slots at `maxTasks` tasks. With v1, `pidsDir` is the
   * front's cgroup in the pids hierarchy (undefined: not mounted); with v2 the
   * slots' CPU groups under `cpuBase` get the cap themselves, once the pids
   * controller is enabled for them. undefined, and a line in the log, when
   * the front may not. `space`: the machine's task space (taskSpace()).
   */
  static open(
    slots: number,
    maxTasks: number,
    version: 1 | 2,
    cpuBase: string,
    pidsDir: string | undefined,
    logger: Logger,
    space: number = taskSpace(version === 2 ? dirname(cpuBase) : pidsDir),
  ): TaskLimits | undefined {
    // SECURITY: every slot's code may have escaped and forked to its cap at once; together they must leave the
    // machine (the front, the other slots' renderers) tasks to start: SLOT_MAX_TASKS × slots may exceed pid_max.
    const cap = slotTaskCap(maxTasks, slots, space);
    if (cap < maxTasks)
      logger.warn(
        { maxTasks, cap, slots, space },
        "SLOT_MAX_TASKS lowered: the slots together may hold at most half of the machine's tasks",
      );
    let limits: TaskLimits;
    try {
      if (version === 2) {
        // The pids controller for the slots' groups: enabled in the service's group (the CPU groups' parent).
        writeFileSync(join(cpuBase, 'cgroup.subtree_control'), '+pids');
        limits = new TaskLimits(cpuBase, false, logger);
      } else {
        if (pidsDir === undefined) throw new Error('the pids controller is not mounted');
        limits = new TaskLimits(makeParallel(pidsDir, basename(cpuBase), slots), true, logger);
      }
      for (let i = 0; i < slots; i++) writeFileSync(join(limits.dir(i), 'pids.max'), String(cap));
    } catch (e) {
      if (version === 1 && pidsDir !== undefined) removeTree(join(pidsDir, basename(cpuBase)));
      logger.warn({ err: e }, 'cannot cap the tasks of each slot: a slot may fork until the machine has no pids left');
      return undefined;
    }
    logger.info({ maxTasks: cap }, 'each slot may have at most this many tasks (processes and threads)');
    return limits;
  }

  /** Slot `index`'s group. */
  dir(index: number): string {
    return join(this.#base, `slot-${index}`);
  }

  /** Places slot process `pid`, just forked, in slot `index`'s group (v1; v2's is its CPU group). */
  place(index: number, pid: number): void {
    if (this.#own && !placeIn(this.dir(index), pid))
      this.#logger.warn({ pid, slot: index }, 'a slot process could not be placed in its pids cgroup');
  }

  /** How many times slot `index`'s tree was refused a task at its cap so far (pids.events' `max`). */
  refusals(index: number): number {
    const text = readOr(join(this.dir(index), 'pids.events')) ?? '';
    return Number(/^max (\d+)$/m.exec(text)?.[1] ?? 0);
  }

  /** Removes the groups the front made (their processes are gone: SlotGroups.close killed what was left). */
  close(): void {
    if (this.#own && !removeTree(this.#base))
      this.#logger.warn({ cgroup: this.#base }, 'a slot pids cgroup still has processes; the next start removes it');
  }
}
