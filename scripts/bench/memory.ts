// The memory of the service's process tree: its Node processes (the front and
// its slot processes) and every Chromium under them, RSS and PSS.
import { DEFAULT_IDLE_SLOT_CLOSE_MS } from '../../src/common/config.js';
import { round } from './measure.js';
import { chromiumPids, descendants, slotPids, pssKib, readOr, rssKib } from './proc.js';

/**
 * Chromium's memory both ways: the sum of its processes' RSS (what the issue
 * asks for; it counts pages the processes share once per process) and of their
 * PSS (shared pages split between the processes that share them: what the
 * machine actually gives Chromium).
 */
export function memory(servicePid: number): {
  serviceRssMb: number;
  frontPssMb: number;
  slotsPssMb: number;
  totalPssMb: number;
  /** The service's Node processes (front and slot processes), PSS. */
  servicePssMb: number;
  chromiumRssMb: number;
  chromiumPssMb: number;
  chromiumProcesses: number;
  /** The whole process tree (the service and Chromium), PSS. */
  treePssMb: number;
} {
  const pids = chromiumPids(servicePid);
  const slots = slotPids(servicePid);
  const frontPss = pssKib(servicePid);
  const slotsPss = slots.reduce((a, p) => a + pssKib(p), 0);
  const chromiumPss = pids.reduce((a, p) => a + pssKib(p), 0);
  return {
    // The service's Node processes: the front and its slot processes.
    serviceRssMb: round((rssKib(servicePid) + slots.reduce((a, p) => a + rssKib(p), 0)) / 1024),
    frontPssMb: round(frontPss / 1024),
    slotsPssMb: round(slotsPss / 1024),
    totalPssMb: round((frontPss + slotsPss + chromiumPss) / 1024),
    servicePssMb: round((frontPss + slotsPss) / 1024),
    chromiumRssMb: round(pids.reduce((a, p) => a + rssKib(p), 0) / 1024),
    chromiumPssMb: round(chromiumPss / 1024),
    chromiumProcesses: pids.length,
    treePssMb: round((frontPss + slotsPss + chromiumPss) / 1024),
  };
}

/**
 * Memory once the service is idle and settled: spares remade and closed
 * contexts' renderers gone. Sampled every second until the Chromium process
 * count has not changed for 5 s, at most 30 s; the same rule before and after a
 * soak, so that the two are compared alike.
 */
export async function settledMemory(servicePid: number): Promise<Memory> {
  // At rest: after the service's idle collection (5 s without work, src/front/service.ts) and after the
  // slot processes past the first are closed with their Chromium (IDLE_SLOT_CLOSE_MS, the default: the bench sets none).
  await new Promise((r) => setTimeout(r, Math.max(6000, DEFAULT_IDLE_SLOT_CLOSE_MS + 2000)));
  let m = memory(servicePid);
  for (let waited = 0, still = 0; waited < 30 && still < 5; waited++) {
    await new Promise((r) => setTimeout(r, 1000));
    const next = memory(servicePid);
    still = next.chromiumProcesses === m.chromiumProcesses ? still + 1 : 0;
    m = next;
  }
  return m;
}

export type Memory = ReturnType<typeof memory>;

/**
 * The whole tree's memory, MiB: the sum of anonymous + shared resident memory
 * (the service's own measure, src/common/service-memory.ts; shared memory counted in
 * each process that maps it) and of PSS (shared pages split).
 */
export function treeMemory(root: number): { residentMb: number; pssMb: number } {
  let resident = 0;
  let pss = 0;
  for (const p of [root, ...descendants(root)]) {
    const status = readOr(`/proc/${p}/status`);
    const kb = (f: string): number => Number(new RegExp(`^${f}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
    resident += kb('RssAnon') + kb('RssShmem');
    pss += Number(/^Pss:\s+(\d+) kB/m.exec(readOr(`/proc/${p}/smaps_rollup`))?.[1] ?? 0);
  }
  return { residentMb: Math.round(resident / 1024), pssMb: Math.round(pss / 1024) };
}
