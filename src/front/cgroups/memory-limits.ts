// A memory limit on each slot's whole tree (its host side, its Chromium, every
// renderer, what they keep in shared memory), held by the kernel's memory
// controller: past it the kernel kills a process of that slot and no other.
// With cgroup v1, a group per slot in the `memory` hierarchy, parallel to the
// CPU groups (`<memory cgroup>/pagescript-<pid>-<n>/slot-<i>`), and within it
// a group for the slot's Chromium alone (`slot-<i>/chromium`), which the slot
// process puts its Chromium in as it starts it: the page's limit
// (PAGE_MEMORY_MB) is then the kernel's too. With cgroup v2, `memory.max` in
// the slot's own group (v2 keeps no process beside a group that has children),
// and the page's limit stays the slot's watchdog's. The front sets each job's
// limits as the job starts (the slot's at rest and the Chromium group's level then, plus the request's share)
// and the limits at rest after it, and reads the OOM kill counts when it ends.
//
// SECURITY: the groups' files belong to the front's user (root), but for the
// Chromium group's cgroup.procs and tasks, which belong to the slot's user so
// that it can put its own processes there: that group is within the slot's,
// so what is moved there is held by both limits. Nothing of a slot's user
// can raise a limit, leave its slot's group or enter another slot's.
import { chownSync, existsSync, mkdirSync, readdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Logger } from '../../common/log.js';
import { readOr } from '../../common/proc.js';
import { makeParallel, placeIn, removeTree, staleServices } from './parallel-groups.js';
import type { RunAs } from '../host/users.js';

/** Each version's files: the limit, the limit with swap, the level now, the peak, the OOM kill count. */
const FILES = {
  1: {
    limit: 'memory.limit_in_bytes',
    swap: 'memory.memsw.limit_in_bytes',
    usage: 'memory.usage_in_bytes',
    peak: 'memory.max_usage_in_bytes',
    events: 'memory.oom_control',
  },
  2: {
    limit: 'memory.max',
    swap: 'memory.swap.max',
    usage: 'memory.current',
    peak: undefined,
    events: 'memory.events',
  },
} as const;

/** The group of a slot's Chromium within the slot's (v1). */
export const CHROMIUM_GROUP = 'chromium';

/** A slot's group, or its Chromium's within it (v1 only). */
export type Part = 'slot' | 'chromium';

/** The OOM kill count in memory.oom_control (v1) or memory.events (v2); 0 when unread. */
export function parseOomKills(text: string | undefined): number {
  return Number(/^oom_kill (\d+)$/m.exec(text ?? '')?.[1] ?? 0);
}

/** The limits of a slot's groups at rest, in bytes: the slot's whole tree, and its Chromium's (v1). */
export interface RestLimits {
  readonly slotBytes: number;
  readonly chromiumBytes: number;
}

export class MemoryLimits {
  /** Slot i's group: `<base>/slot-<i>`. */
  readonly #base: string;
  /** The front made `#base` (v1's parallel tree): it places each slot process there and removes it. */
  readonly #own: boolean;
  readonly #version: 1 | 2;
  readonly #logger: Logger;
  /** Each slot's limits at rest, as opened. */
  readonly rest: RestLimits;

  private constructor(base: string, own: boolean, version: 1 | 2, logger: Logger, rest: RestLimits) {
    this.#base = base;
    this.#own = own;
    this.#version = version;
    this.#logger = logger;
    this.rest = rest;
  }

  /**
   * Memory groups for `slots` slots (slot i's user `users[i]`, when slots have
   * users), each limited to `rest` until its first job. With v1, `memoryDir`
   * is the front's cgroup in the memory hierarchy (undefined: not mounted);
   * with v2 the slots' CPU groups under `cpuBase` get the limit themselves,
   * once the controller is enabled for them. Throws (having removed what it
   * made) when the front may not.
   */
  static open(
    slots: number,
    rest: RestLimits,
    users: readonly RunAs[] | undefined,
    version: 1 | 2,
    cpuBase: string,
    memoryDir: string | undefined,
    logger: Logger,
  ): MemoryLimits {
    let limits: MemoryLimits | undefined;
    try {
      if (version === 2) {
        // Enabled at each level down to the slots' groups (the service's cgroup, then its own directory).
        for (const dir of [dirname(cpuBase), cpuBase]) {
          if (!(readOr(join(dir, 'cgroup.controllers')) ?? '').split(/\s+/).includes('memory'))
            throw new Error(`the memory controller is not available in ${dir}`);
          writeFileSync(join(dir, 'cgroup.subtree_control'), '+memory');
        }
        limits = new MemoryLimits(cpuBase, false, 2, logger, rest);
      } else {
        if (memoryDir === undefined) throw new Error('the memory controller is not mounted');
        // What gone services left: their Chromium groups first, then makeParallel removes the rest.
        for (const stale of staleServices(memoryDir)) removeChromiumGroups(join(memoryDir, stale));
        limits = new MemoryLimits(makeParallel(memoryDir, basename(cpuBase), slots), true, 1, logger, rest);
        for (let i = 0; i < slots; i++) {
          const dir = limits.dir(i, 'chromium');
          mkdirSync(dir);
          const user = users?.[i];
          if (user) for (const f of ['cgroup.procs', 'tasks']) chownSync(join(dir, f), user.uid, user.gid);
        }
      }
      for (let i = 0; i < slots; i++) limits.setRest(i, rest);
    } catch (e) {
      if (limits) limits.close();
      else if (version === 1 && memoryDir !== undefined) removeTree(join(memoryDir, basename(cpuBase)));
      throw e;
    }
    return limits;
  }

  /** Whether each slot's Chromium has a group of its own (v1): its page's limit is the kernel's. */
  get chromiumGroups(): boolean {
    return this.#version === 1;
  }

  /** Slot `index`'s group, or its Chromium's within it. */
  dir(index: number, part: Part = 'slot'): string {
    const slot = join(this.#base, `slot-${index}`);
    return part === 'chromium' ? join(slot, CHROMIUM_GROUP) : slot;
  }

  /** Places slot process `pid`, just forked, in slot `index`'s group (v1; v2's is its CPU group). */
  place(index: number, pid: number): void {
    if (this.#own && !placeIn(this.dir(index), pid))
      this.#logger.warn({ pid, slot: index }, 'a slot process could not be placed in its memory cgroup');
  }

  /** What a group holds now, in bytes; undefined when unread. */
  usageBytes(index: number, part: Part = 'slot'): number | undefined {
    const n = Number(readOr(join(this.dir(index, part), FILES[this.#version].usage))?.trim());
    return Number.isFinite(n) ? n : undefined;
  }

  /** The most a group held since the last resetPeak(), in bytes; undefined where the kernel keeps none (v2). */
  peakBytes(index: number, part: Part = 'slot'): number | undefined {
    const file = FILES[this.#version].peak;
    const n = file === undefined ? NaN : Number(readOr(join(this.dir(index, part), file))?.trim());
    return Number.isFinite(n) ? n : undefined;
  }

  /** Starts a group's peak again from its level now (v1). */
  resetPeak(index: number, part: Part = 'slot'): void {
    const file = FILES[this.#version].peak;
    if (file === undefined) return;
    try {
      writeFileSync(join(this.dir(index, part), file), '0');
    } catch {
      // The peak then spans more than the job: never less than its own.
    }
  }

  /** How many processes of a group the kernel killed for memory so far. */
  oomKills(index: number, part: Part = 'slot'): number {
    return parseOomKills(readOr(join(this.dir(index, part), FILES[this.#version].events)));
  }

  /**
   * Limits a group to `bytes`; false when the kernel refused (it holds more now
   * than it can give back), and the old limit stands.
   */
  limit(index: number, bytes: number, part: Part = 'slot'): boolean {
    try {
      this.#write(this.dir(index, part), bytes);
      return true;
    } catch (e) {
      this.#logger.debug({ err: e, slot: index, part, bytes }, 'a slot memory limit could not be set');
      return false;
    }
  }

  /** Slot `index`'s limits at rest; false when the kernel refused one. */
  setRest(index: number, rest: RestLimits): boolean {
    // The slot's first when it grows (the Chromium group's may not pass it), its Chromium's first when it shrinks.
    const slotNow = Number(readOr(join(this.dir(index), FILES[this.#version].limit))?.trim());
    const order: [Part, number][] = [
      ['slot', rest.slotBytes],
      ['chromium', rest.chromiumBytes],
    ];
    if (Number.isFinite(slotNow) && rest.slotBytes < slotNow) order.reverse();
    let ok = true;
    for (const [part, bytes] of order)
      if (part === 'slot' || this.chromiumGroups) ok = this.limit(index, bytes, part) && ok;
    return ok;
  }

  /**
   * Writes a limit, and no swap beyond it: v1's limit with swap must stay at
   * least the limit, so it is written first when raising and last when lowering.
   */
  #write(dir: string, bytes: number): void {
    const files = FILES[this.#version];
    const value = String(Math.floor(bytes));
    if (this.#version === 2) {
      writeFileSync(join(dir, files.limit), value);
      if (existsSync(join(dir, files.swap))) writeFileSync(join(dir, files.swap), '0');
      return;
    }
    const swap = existsSync(join(dir, files.swap)) ? join(dir, files.swap) : undefined;
    const now = Number(readOr(join(dir, files.limit))?.trim());
    const raising = !Number.isFinite(now) || bytes >= now;
    if (swap && raising) writeFileSync(swap, value);
    writeFileSync(join(dir, files.limit), value);
    if (swap && !raising) writeFileSync(swap, value);
  }

  /** Removes the groups the front made (their processes are gone: the CPU groups' close killed what was left). */
  close(): void {
    if (!this.#own) return;
    removeChromiumGroups(this.#base);
    if (!removeTree(this.#base))
      this.#logger.warn({ cgroup: this.#base }, 'a slot memory cgroup still has processes; the next start removes it');
  }
}

/** Removes the Chromium groups within a service's slot groups (`<base>/slot-<i>/chromium`), where they are empty. */
function removeChromiumGroups(base: string): void {
  if (!existsSync(base)) return;
  for (const slot of readdirSync(base, { withFileTypes: true })) {
    const dir = join(base, slot.name, CHROMIUM_GROUP);
    if (!slot.isDirectory() || !existsSync(dir)) continue;
    try {
      rmdirSync(dir);
    } catch {
      // Processes are still there: the slot group's removal reports it.
    }
  }
}
