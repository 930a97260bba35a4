// How the bench times work: percentiles, requests one after another or from
// several clients at once, and the CPU a load phase cost each process.
import { cpuMs, cpuOwn, descendants, egressPids, slotPids, idlePercent, machineCpu } from './proc.js';

/**
 * Pause between sequential requests, the same for every variant and not counted:
 * "not saturated" means the service has had time to prepare the next context and
 * isolate, as it has between a real caller's requests.
 */
export const THINK_MS = 300;
/**
 * Pause between back-to-back sequential requests: a client that sends the next
 * request as soon as it has the answer (issue 20 allows up to 30 ms; 0 is the
 * hardest case, the next request meets the previous one's clean-up).
 */
export const BACK_TO_BACK_MS = 0;

export function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] as number;
}

export function round(n: number, d = 1): number {
  return Number.isFinite(n) ? Math.round(n * 10 ** d) / 10 ** d : n;
}

/** p50 and p95 of the samples, rounded. */
export const p50p95 = (xs: number[]): { p50: number; p95: number } => ({
  p50: round(pct(xs, 50)),
  p95: round(pct(xs, 95)),
});

export async function sequential(fn: () => Promise<unknown>, n: number, gapMs = THINK_MS): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
    const t0 = performance.now();
    await fn();
    out.push(performance.now() - t0);
  }
  return out;
}

export interface Throughput {
  rps: number;
  p95: number;
  p50: number;
  /** The samples, kept to pool two runs. */
  lat: number[];
  secs: number;
}

/** Two runs as one: all their requests over all their time. */
export function pool(a: Throughput, b: Throughput): { rps: number; p95: number; p50: number } {
  const lat = [...a.lat, ...b.lat];
  return { rps: round(lat.length / (a.secs + b.secs), 2), p95: round(pct(lat, 95)), p50: round(pct(lat, 50)) };
}

/**
 * Where a load phase's CPU went, in ms per request: the service's front and
 * slot processes (`node`), its egress process, Chromium, and this process as
 * the client.
 */
export interface CpuSplit {
  node: number;
  egress: number;
  chromium: number;
  client: number;
}

/** A load phase with its CPU per request and the machine's idle share over it (percent of all cores). */
export type Measured = Throughput & { cpu: CpuSplit; idlePct: number };

export async function withCpu(
  t: () => Promise<Throughput>,
  nodePid: number | undefined,
  chromium: () => number[],
): Promise<Measured> {
  const m0 = machineCpu();
  const c0 = process.cpuUsage();
  const before = nodePid === undefined ? undefined : serviceCpu(nodePid);
  const b0 = nodePid === undefined ? cpuMs(chromium()) : 0;
  const r = await t();
  const after = nodePid === undefined ? undefined : serviceCpu(nodePid);
  const b1 = nodePid === undefined ? cpuMs(chromium()) : 0;
  const c1 = process.cpuUsage(c0);
  const m1 = machineCpu();
  const per = (ms: number): number => round(ms / r.lat.length, 1);
  let node = 0;
  let egress = 0;
  let browser = b1 - b0;
  if (before && after) {
    // Each process's own CPU since the start (a process started meanwhile: all of its own).
    for (const [pid, ms] of after.own) node += ms - (before.own.get(pid) ?? 0);
    for (const [pid, ms] of after.egress) egress += ms - (before.egress.get(pid) ?? 0);
    // Chromium: the rest of the tree's count. A Chromium replaced during the phase (BROWSER_RECYCLE_CONTEXTS, SLOT_RECYCLE_REQUESTS)
    // took its CPU out of the live processes' sum, which made this negative; the
    // tree's count keeps it, in the cutime of the process that reaped it.
    browser = after.total - before.total - node - egress;
  }
  return {
    ...r,
    cpu: { node: per(node), egress: per(egress), chromium: per(browser), client: per((c1.user + c1.system) / 1000) },
    idlePct: round(idlePercent(m0, m1), 1),
  };
}

/**
 * The service's CPU now: its whole tree's (live processes with the children
 * they reaped), each Node process's own: the front and its slot processes, and
 * apart from them the egress process.
 */
function serviceCpu(root: number): { total: number; own: Map<number, number>; egress: Map<number, number> } {
  const tree = [root, ...descendants(root)];
  const own = new Map([root, ...slotPids(root)].map((p) => [p, cpuOwn(p)]));
  return { total: cpuMs(tree), own, egress: new Map(egressPids(root).map((p) => [p, cpuMs([p])])) };
}

export function meanCpu(a: CpuSplit, b: CpuSplit): CpuSplit {
  const mean = (k: keyof CpuSplit): number => round((a[k] + b[k]) / 2, 1);
  return { node: mean('node'), egress: mean('egress'), chromium: mean('chromium'), client: mean('client') };
}

/** The idle share of two phases as one: each weighted by its length. */
export function meanIdle(a: { idlePct: number; secs: number }, b: { idlePct: number; secs: number }): number {
  return round((a.idlePct * a.secs + b.idlePct * b.secs) / (a.secs + b.secs), 1);
}

/** The service's own CPU per request: its front, slot processes and egress process (Chromium and the client apart). */
export const ourCpu = (c: CpuSplit): number => round(c.node + c.egress, 1);

/**
 * Our CPU per request over raw Puppeteer's client CPU per request (what the
 * service's Node processes do in place of the Puppeteer client; issue 45's target ≤ 2).
 */
export function ourCpuOverRawClient(service: CpuSplit, raw: CpuSplit): number {
  return round(ourCpu(service) / raw.client, 2);
}

export async function concurrent(fn: () => Promise<unknown>, clients: number, perClient: number): Promise<Throughput> {
  const lat: number[] = [];
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      for (let i = 0; i < perClient; i++) {
        const s = performance.now();
        await fn();
        lat.push(performance.now() - s);
      }
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  return { rps: round(lat.length / secs, 2), p95: round(pct(lat, 95)), p50: round(pct(lat, 50)), lat, secs };
}
