// The slots' state as one, for /health and /metrics: their Chromium (ready when
// one is), their memory, and counts (Chromium restarts and recycles, page
// memory kills) that go on including those of slot processes that are gone.
// It reads the supervisor's live processes and keeps the tally of the gone.
import type { BrowserStatus, ExecutorMemory } from '../../protocol/executor-messages.js';
import type { SlotProcess } from './slot-process.js';

export class SlotStatus {
  readonly #procs: ReadonlySet<SlotProcess>;
  /** Chromium restarts and recycles, and page memory kills, counted by slot processes that are gone. */
  readonly #past = { restarts: 0, recycles: 0, pageLimitKills: 0 };

  /** `procs`: the supervisor's slot processes (those that exited are taken out). */
  constructor(procs: ReadonlySet<SlotProcess>) {
    this.#procs = procs;
  }

  /** Keeps the counts of slot process `e`, which exited. */
  gone(e: SlotProcess): void {
    this.#past.restarts += e.browser.restarts;
    this.#past.recycles += e.browser.recycles;
    this.#past.pageLimitKills += e.memory.pageLimitKills;
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
   * What the slots hold now, summed: each slot process's own memory as the
   * front reads it from /proc (SECURITY: not as the process says), its
   * Chromium's as the process reports it every second; page limit kills include
   * those of processes that are gone.
   */
  get memory(): ExecutorMemory {
    const live = [...this.#procs].filter((e) => !e.gone);
    let executorBytes = 0;
    let chromiumBytes = 0;
    let pageBytes = 0;
    let pageLimitKills = this.#past.pageLimitKills;
    for (const e of live) {
      executorBytes += e.residentBytes;
      chromiumBytes += e.memory.chromiumBytes;
      pageBytes += e.memory.pageBytes;
      pageLimitKills += e.memory.pageLimitKills;
    }
    return { executorBytes, chromiumBytes, pageBytes, pageLimitKills };
  }
}
