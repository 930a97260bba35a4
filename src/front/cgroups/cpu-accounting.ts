// The kernel's count of the CPU each slot's group has used, for billing its
// job (slot-job.ts): cgroup v2's cpu.stat in the slot's own CPU group; with
// cgroup v1, cpuacct.usage in the slot's group of the `cpuacct` hierarchy (the
// CPU group's own when both controllers are mounted together, else a parallel
// `<cpuacct cgroup>/pagescript-<pid>-<n>/slot-<i>` the slot process is placed in
// too).
//
// SECURITY: a process tree's count (treeCpuMs) misses the CPU of children
// reaped by nobody in the tree: a process that ignores SIGCHLD has its
// children reaped by the kernel, their times never added to its cutime, and a
// double fork's orphan is reaped by init. The group's count has every
// process's CPU, whatever its parent.
import { existsSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Logger } from '../../common/log.js';
import { readOr } from '../../common/proc.js';
import { makeParallel, placeIn, removeTree } from './parallel-groups.js';

export class CpuAccounting {
  /** Slot i's group holding its count: `<base>/slot-<i>`. */
  readonly #base: string;
  /** The front made `#base` (a parallel cpuacct tree): it places each slot process there and removes it. */
  readonly #own: boolean;
  readonly #file: 'cpuacct.usage' | 'cpu.stat';
  readonly #logger: Logger;

  private constructor(base: string, own: boolean, file: 'cpuacct.usage' | 'cpu.stat', logger: Logger) {
    this.#base = base;
    this.#own = own;
    this.#file = file;
    this.#logger = logger;
  }

  /**
   * The count for the slots of CPU groups `cpuBase` (`version` their hierarchy's);
   * `acctDir` is the front's cgroup in v1's cpuacct hierarchy, when mounted.
   * undefined (logged) when there is none: jobs are then weighed by their tree's count.
   */
  static open(
    slots: number,
    version: 1 | 2,
    cpuBase: string,
    acctDir: string | undefined,
    logger: Logger,
  ): CpuAccounting | undefined {
    if (version === 2) return new CpuAccounting(cpuBase, false, 'cpu.stat', logger);
    if (existsSync(join(cpuBase, 'cpuacct.usage'))) return new CpuAccounting(cpuBase, false, 'cpuacct.usage', logger);
    if (acctDir === undefined) {
      logger.info('no cpuacct cgroup: a slot job is weighed by its process tree’s CPU');
      return undefined;
    }
    let base: string;
    try {
      base = makeParallel(acctDir, basename(cpuBase), slots);
    } catch (e) {
      logger.info({ err: e, cgroup: acctDir }, 'cannot make cpuacct cgroups: a slot job is weighed by its tree’s CPU');
      return undefined;
    }
    return new CpuAccounting(base, true, 'cpuacct.usage', logger);
  }

  /** Places slot process `pid`, just forked, in slot `index`'s group (when the count has groups of its own). */
  place(index: number, pid: number): void {
    if (this.#own && !placeIn(join(this.#base, `slot-${index}`), pid))
      this.#logger.warn({ pid, slot: index }, 'a slot process could not be placed in its cpuacct cgroup');
  }

  /** Slot `index`'s group holding its count. */
  dir(index: number): string {
    return join(this.#base, `slot-${index}`);
  }

  /** The CPU slot `index`'s group has used, ms; undefined when it cannot be read. */
  usageMs(index: number): number | undefined {
    const text = readOr(join(this.#base, `slot-${index}`, this.#file));
    if (text === undefined) return undefined;
    if (this.#file === 'cpuacct.usage') {
      const ns = Number(text.trim());
      return Number.isFinite(ns) ? ns / 1e6 : undefined;
    }
    const us = Number(/^usage_usec (\d+)$/m.exec(text)?.[1]);
    return Number.isFinite(us) ? us / 1000 : undefined;
  }

  /** Removes the groups the front made (their processes are gone: SlotGroups.close killed what was left). */
  close(): void {
    if (this.#own && !removeTree(this.#base))
      this.#logger.warn({ cgroup: this.#base }, 'a slot cpuacct cgroup still has processes; the next start removes it');
  }
}
