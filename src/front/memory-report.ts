// The service's memory budget (SERVICE_MEMORY_MB and how it is shared out) and
// what is in use now, for /health and /metrics. The front reads its own memory;
// each slot process reports its own and its Chromium's every second while a job runs (without slot
// cgroups; with them the front reads the groups), over its wire.
import type { Config } from '../common/config.js';
import type { SlotMemory } from '../protocol/slot-wire.js';
import { residentBytes } from '../common/service-memory.js';

const MB = 2 ** 20;

export interface MemoryReport {
  /** SERVICE_MEMORY_MB. */
  readonly serviceMb: number;
  /** What the service may use with every slot busy (FRONT + slot processes + their Chromiums at rest + perRequestMb per slot). */
  readonly plannedMb: number;
  /** What one running request may add: PAGE_MEMORY_MB + SCRIPT_MEMORY_MB + its host-side queues. */
  readonly perRequestMb: number;
  readonly pageLimitMb: number;
  readonly scriptLimitMb: number;
  /** What the plan holds now: the base, the slots at rest, and perRequestMb per running request. */
  readonly reservedMb: number;
  /** Resident now (anonymous + shared): the front, the slot processes and every Chromium. */
  readonly inUseMb: number;
  readonly frontMb: number;
  readonly slotsMb: number;
  readonly chromiumMb: number;
  /** What the running requests' pages hold, as counted against PAGE_MEMORY_MB. */
  readonly pagesMb: number;
}

export interface MemorySource {
  readonly memory: SlotMemory;
}

const NOTHING_READ = { slotBytes: 0, chromiumBytes: 0, pageBytes: 0, pageLimitKills: 0 };

/**
 * The budget and what is in use now, in MiB. `inUse` false (a caller who may
 * not see it) reads nothing: the in-use figures are 0, and no /proc is walked.
 */
export function memoryReport(config: Config, running: number, slots: MemorySource, inUse = true): MemoryReport {
  const plan = config.memory;
  const m = inUse ? slots.memory : NOTHING_READ;
  const front = inUse ? residentBytes('self') : 0;
  return {
    serviceMb: config.serviceMemoryMb,
    plannedMb: plan.plannedMb,
    perRequestMb: plan.perRequestMb,
    pageLimitMb: config.pageMemoryMb,
    scriptLimitMb: config.scriptMemoryMb,
    reservedMb: plan.plannedMb - (config.maxConcurrency - running) * plan.perRequestMb,
    inUseMb: Math.round((front + m.slotBytes + m.chromiumBytes) / MB),
    frontMb: Math.round(front / MB),
    slotsMb: Math.round(m.slotBytes / MB),
    chromiumMb: Math.round(m.chromiumBytes / MB),
    pagesMb: Math.round(m.pageBytes / MB),
  };
}
