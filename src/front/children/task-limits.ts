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
import { writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Logger } from '../../common/log.js';
import { readOr } from '../../common/proc.js';
import { makeParallel, placeIn, removeTree } from './parallel-groups.js';

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
   * the front may not.
   */
  static open(
    slots: number,
    maxTasks: number,
    version: 1 | 2,
    cpuBase: string,
    pidsDir: string | undefined,
    logger: Logger,
  ): TaskLimits | undefined {
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
      for (let i = 0; i < slots; i++) writeFileSync(join(limits.dir(i), 'pids.max'), String(maxTasks));
    } catch (e) {
      if (version === 1 && pidsDir !== undefined) removeTree(join(pidsDir, basename(cpuBase)));
      logger.warn({ err: e }, 'cannot cap the tasks of each slot: a slot may fork until the machine has no pids left');
      return undefined;
    }
    logger.info({ maxTasks }, 'each slot may have at most this many tasks (processes and threads)');
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

  /** Removes the groups the front made (their processes are gone: CpuGroups.close killed what was left). */
  close(): void {
    if (this.#own && !removeTree(this.#base))
      this.#logger.warn({ cgroup: this.#base }, 'a slot pids cgroup still has processes; the next start removes it');
  }
}
