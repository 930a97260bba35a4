// The slots' state as one, for /health and /metrics: their Chromium (ready when
// one is), their memory, and counts (Chromium restarts and recycles, page
// memory kills) that go on including those of slot processes that are gone.
// It reads the supervisor's live processes and keeps the tally of the gone.
import { treeResidentBytes } from '../../common/proc.js';
import { residentBytes } from '../../common/service-memory.js';
import type { BrowserStatus, SlotMemory } from '../../protocol/slot-wire.js';
import type { SlotGroups } from '../cgroups/slot-groups.js';
import type { SlotProcess } from './slot-process.js';

/** How long what the slots hold, once read, answers again (/metrics asks for it several times per scrape). */
export const MEMORY_READ_REUSE_MS = 500;

export class SlotStatus {
  readonly #procs: ReadonlySet<SlotProcess>;
  readonly #groups: () => SlotGroups | undefined;
  /** Chromium restarts and recycles, and page memory kills, counted by slot processes that are gone. */
  readonly #past = { restarts: 0, recycles: 0, pageLimitKills: 0 };
  /** The last read of what the slots hold, and when (performance.now()). */
  #read: { at: number; memory: SlotMemory } | undefined;

  /** `procs`: the supervisor's slot processes (those that exited are taken out); `groups`: their cgroups, if any. */
  constructor(procs: ReadonlySet<SlotProcess>, groups: () => SlotGroups | undefined) {
    this.#procs = procs;
    this.#groups = groups;
  }

  /** Keeps the counts of slot process `e`, which exited. */
  gone(e: SlotProcess): void {
    this.#past.restarts += e.browser.restarts;
    this.#past.recycles += e.browser.recycles;
    this.#past.pageLimitKills += e.memory.pageLimitKills + e.memoryKills;
  }

  /** Chromium runs in its own sandbox in every slot (undefined until one is ready). */
  get chromiumSandbox(): boolean | undefined {
    let all: boolean | undefined;
    for (const e of this.#procs) if (e.chromiumSandbox !== undefined) all = (all ?? true) && e.chromiumSandbox;
    return all;
  }

  /** The slots' Chromium, as one: ready when one is; counts summed, those of replaced processes included. */
  get browser(): BrowserStatus {
    const live = [...this.#procs].filter((e) => e.ready && !e.gone);
    return {
      ready: live.some((e) => e.browser.ready),
      pid: live.find((e) => e.browser.pid !== undefined)?.browser.pid,
      pids: live.flatMap((e) => e.browser.pids),
      restarts: this.#past.restarts + live.reduce((n, e) => n + e.browser.restarts, 0),
      recycles: this.#past.recycles + live.reduce((n, e) => n + e.browser.recycles, 0),
      contextsReady: live.reduce((n, e) => n + e.browser.contextsReady, 0),
    };
  }

  /**
   * What the slots hold now, summed, read from /proc (and the slots' memory
   * groups) as it is asked, never as a slot says: each slot process's own
   * memory and its Chromium's; the running requests' pages (their slot's
   * Chromium group's growth since the job began, where it has one; else as the slot's
   * watchdog last read it). Page limit kills include those of processes that are gone.
   * SECURITY: a read is reused for MEMORY_READ_REUSE_MS, so that however often it is asked
   * (/metrics scraped in a loop), walking /proc costs the front a bounded share of its CPU.
   */
  get memory(): SlotMemory {
    const now = performance.now();
    if (this.#read && now - this.#read.at < MEMORY_READ_REUSE_MS) return this.#read.memory;
    const memory = this.#readMemory();
    this.#read = { at: now, memory };
    return memory;
  }

  #readMemory(): SlotMemory {
    const live = [...this.#procs].filter((e) => !e.gone);
    const groups = this.#groups();
    let slotBytes = 0;
    let chromiumBytes = 0;
    let pageBytes = 0;
    let pageLimitKills = this.#past.pageLimitKills;
    for (const e of live) {
      const pid = e.child.pid;
      if (pid !== undefined) {
        // The slot process's tree: itself and its Chromium (pids the slot names are not taken at its word).
        const own = residentBytes(pid);
        slotBytes += own;
        chromiumBytes += Math.max(0, treeResidentBytes(pid) - own);
      }
      const chromium = e.jobs.size > 0 ? e.jobMemory?.chromium : undefined;
      const now = chromium && groups?.memory.usageBytes(e.slot.index, 'chromium');
      pageBytes += chromium && now !== undefined ? Math.max(0, now - chromium.startBytes) : e.memory.pageBytes;
      pageLimitKills += e.memory.pageLimitKills + e.memoryKills;
    }
    return { slotBytes, chromiumBytes, pageBytes, pageLimitKills };
  }
}
