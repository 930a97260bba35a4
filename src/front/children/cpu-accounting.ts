// The kernel's count of the CPU each slot's group has used, for weighing its
// job (cpu-share.ts): cgroup v2's cpu.stat in the slot's own CPU group; with
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
import { existsSync, mkdirSync, readdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Logger } from '../../common/log.js';
import { readOr } from '../../common/proc.js';

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
    const base = join(acctDir, basename(cpuBase));
    try {
      removeStale(acctDir);
      mkdirSync(base);
      for (let i = 0; i < slots; i++) mkdirSync(join(base, `slot-${i}`));
    } catch (e) {
      removeTree(base);
      logger.info({ err: e, cgroup: acctDir }, 'cannot make cpuacct cgroups: a slot job is weighed by its tree’s CPU');
      return undefined;
    }
    return new CpuAccounting(base, true, 'cpuacct.usage', logger);
  }

  /** Places slot process `pid`, just forked, in slot `index`'s group (when the count has groups of its own). */
  place(index: number, pid: number): void {
    if (!this.#own) return;
    try {
      writeFileSync(join(this.#base, `slot-${index}`, 'cgroup.procs'), String(pid));
    } catch (e) {
      this.#logger.warn({ err: e, pid, slot: index }, 'a slot process could not be placed in its cpuacct cgroup');
    }
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

  /** Removes the groups the front made (their processes are gone: CpuGroups.close killed what was left). */
  close(): void {
    if (this.#own && !removeTree(this.#base))
      this.#logger.warn({ cgroup: this.#base }, 'a slot cpuacct cgroup still has processes; the next start removes it');
  }
}

/** Removes `base` and its slot groups; false when one still has processes (or cannot be removed). */
export function removeTree(base: string): boolean {
  if (!existsSync(base)) return true;
  try {
    for (const name of readdirSync(base, { withFileTypes: true }))
      if (name.isDirectory()) rmdirSync(join(base, name.name));
    rmdirSync(base);
    return true;
  } catch {
    return false;
  }
}

/** Removes the groups of services that are gone (their CPU groups' sweep killed what was in them). */
function removeStale(dir: string): void {
  for (const name of readdirSync(dir)) {
    const m = /^pagescript-(\d+)(-\d+)?$/.exec(name);
    if (m && !existsSync(`/proc/${m[1]}`)) removeTree(join(dir, name));
  }
}
