// The service on one Chromium against its raw-Puppeteer baselines: sequential
// latency, throughput and CPU at each concurrency, the time split, memory.
import { type Browser } from 'puppeteer';
import { PER_CONTEXT_FEATURES_OFF } from '../../src/slot/browser/chromium-flags.js';
import { type ChromiumMode } from '../../src/common/config.js';
import { QUICK } from './args.js';
import { launchRaw, MACHINE_ARGS, rawFresh, rawPrepared } from './baselines.js';
import {
  BACK_TO_BACK_MS,
  concurrent,
  type CpuSplit,
  type Measured,
  meanCpu,
  meanIdle,
  ourCpuOverRawClient,
  p50p95,
  pct,
  pool,
  round,
  sequential,
  withCpu,
} from './measure.js';
import { type Memory, memory, settledMemory } from './memory.js';
import { chromiumPids, descendants } from './proc.js';
import { callService, SCRIPT, type ServiceSample, startService } from './service.js';

/** Sequential requests per variant, over all rounds. */
export const SEQUENTIAL_N = QUICK ? 6 : 60;
const CONCURRENCY = QUICK ? [1, 4] : [1, 2, 4, 8];
/** Requests each client sends in a throughput run. */
export const PER_CLIENT = QUICK ? 3 : 12;

/** One variant at one client count: the two halves pooled; idlePct is the machine's idle CPU over them (percent). */
type Level = { rps: number; p95: number; p50: number; cpu: CpuSplit; idlePct: number };

/** Everything measured for the service on one Chromium. */
export interface ModeResult {
  mode: ChromiumMode;
  version: string;
  sequential: Record<string, { p50: number; p95: number }>;
  split: Record<string, number>;
  concurrency: {
    clients: number;
    service: Level;
    raw: Level;
    stockFull: Level;
    /** Our CPU per request (front, slots, egress) over raw Puppeteer's client CPU per request. */
    ourCpuOverRawClient: number;
  }[];
  memory: { rest: Memory; load: Memory };
  ratios: Record<string, number>;
  targets: Record<string, boolean>;
}

/** The parts of a request the service reports in Server-Timing. */
export const PARTS = ['queue', 'lease', 'isolate', 'navigation', 'script', 'serialize'];

/**
 * The service on one Chromium against raw Puppeteer on the same binary (the
 * service's per-context flags too, so that the ratio measures the service, not
 * a flag) and raw Puppeteer with its stock flags on the full browser (as most
 * users run it).
 */
export async function benchMode(
  mode: ChromiumMode,
  pageUrl: string,
  fixturePort: number,
  /** The stock full-browser reference, when an earlier mode of this run measured it (it is the slowest part). */
  stockDone?: ModeResult,
  /** --profile: where the service's processes write their CPU profiles (profile.ts). */
  profileDir?: string,
): Promise<ModeResult> {
  const svc = await startService(mode, { EGRESS_ALLOWLIST: `127.0.0.1:${fixturePort}` }, profileDir);
  const servicePid = svc.child.pid as number;
  const body = { url: pageUrl, script: SCRIPT };
  for (let i = 0; i < 10; i++) await callService(svc.base, body);
  const rest = await settledMemory(servicePid);

  const browser = await launchRaw(mode, [...MACHINE_ARGS, `--disable-features=${PER_CONTEXT_FEATURES_OFF.join(',')}`]);
  const stock = stockDone ? undefined : await launchRaw('full', MACHINE_ARGS);
  const version = await browser.version();
  const openPage = await browser.newPage();
  const floorFn = async (): Promise<string> => {
    await openPage.goto(pageUrl, { waitUntil: 'load' });
    return await openPage.title();
  };
  const prepared = rawPrepared(browser, pageUrl);
  for (let i = 0; i < 5; i++) {
    await prepared.call();
    await floorFn();
    await rawFresh(browser, pageUrl);
    if (stock) await rawFresh(stock, pageUrl);
  }

  // Sequential latency, interleaved in rounds so that drift hits every variant alike.
  const seq: Record<string, number[]> = {
    floor: [],
    floorBackToBack: [],
    rawFreshContext: [],
    rawPrepared: [],
    rawPreparedBackToBack: [],
    rawStockFullFreshContext: [],
    service: [],
    serviceBackToBack: [],
  };
  const push = (k: string, xs: number[]): void => void (seq[k] as number[]).push(...xs);
  const samples: ServiceSample[] = [];
  const serviceCall = async (): Promise<void> => {
    const s = await callService(svc.base, body);
    if (s.status !== 200) throw new Error(`service answered ${s.status}: ${s.error}`);
    samples.push(s);
  };
  const ROUNDS = 3;
  for (let r = 0; r < ROUNDS; r++) {
    const n = SEQUENTIAL_N / ROUNDS;
    push('floor', await sequential(floorFn, n));
    push('rawFreshContext', await sequential(() => rawFresh(browser, pageUrl), n));
    push('rawPrepared', await sequential(prepared.call, n));
    push('rawPreparedBackToBack', await sequential(prepared.call, n, BACK_TO_BACK_MS));
    if (stock) push('rawStockFullFreshContext', await sequential(() => rawFresh(stock, pageUrl), n));
    push('service', await sequential(serviceCall, n));
    push('floorBackToBack', await sequential(floorFn, n, BACK_TO_BACK_MS));
    // One request first, so that the back-to-back run starts as a busy client's would: not on a rested service.
    await serviceCall();
    push('serviceBackToBack', await sequential(serviceCall, n, BACK_TO_BACK_MS));
  }
  await prepared.close();
  const sequentialResult = Object.fromEntries(Object.entries(seq).map(([k, v]) => [k, p50p95(v)]));
  if (stockDone?.sequential.rawStockFullFreshContext)
    sequentialResult.rawStockFullFreshContext = stockDone.sequential.rawStockFullFreshContext;
  const split = Object.fromEntries(
    PARTS.map((k) => [
      k,
      round(
        pct(
          samples.map((s) => s.timing[k] ?? 0),
          50,
        ),
        2,
      ),
    ]),
  );

  // Throughput at 1, 2, 4, 8 clients: service, raw, stock, raw, service, so that
  // drift of this noisy machine falls on the service and its baseline alike; the
  // halves are pooled.
  const conc: ModeResult['concurrency'] = [];
  const rawRoot = browser.process()?.pid as number;
  const stockRoot = stock?.process()?.pid as number;
  const serviceChromium = (): number[] => chromiumPids(servicePid);
  const tree = (root: number) => (): number[] => [root, ...descendants(root)];
  const level = (a: Measured, b: Measured): Level => ({
    ...pool(a, b),
    cpu: meanCpu(a.cpu, b.cpu),
    idlePct: meanIdle(a, b),
  });
  for (const c of CONCURRENCY) {
    const svcRun = (): Promise<Measured> =>
      withCpu(() => concurrent(() => callService(svc.base, body), c, PER_CLIENT), servicePid, serviceChromium);
    const rawRun = (): Promise<Measured> =>
      withCpu(() => concurrent(() => rawFresh(browser, pageUrl), c, PER_CLIENT), undefined, tree(rawRoot));
    const s1 = await svcRun();
    const r1 = await rawRun();
    const earlier = stockDone?.concurrency.find((x) => x.clients === c)?.stockFull;
    const k =
      earlier ??
      (await withCpu(
        () => concurrent(() => rawFresh(stock as Browser, pageUrl), c, PER_CLIENT),
        undefined,
        tree(stockRoot),
      ));
    const r2 = await rawRun();
    const s2 = await svcRun();
    const service = level(s1, s2);
    const raw = level(r1, r2);
    conc.push({
      clients: c,
      service,
      raw,
      stockFull: { rps: k.rps, p95: k.p95, p50: k.p50, cpu: k.cpu, idlePct: k.idlePct },
      ourCpuOverRawClient: ourCpuOverRawClient(service.cpu, raw.cpu),
    });
  }
  await stock?.close();
  await browser.close();
  // Memory under load is sampled in a load phase of its own: reading every
  // Chromium process's smaps_rollup is itself work that would skew the timings.
  let load: Memory | undefined;
  let loading = true;
  const loadPhase = concurrent(() => callService(svc.base, body), 8, PER_CLIENT).finally(() => {
    loading = false;
  });
  while (loading) {
    await new Promise((r) => setTimeout(r, 1000));
    const m = memory(servicePid);
    if (!load || m.treePssMb > load.treePssMb) load = m;
  }
  await loadPhase;
  load ??= memory(servicePid);
  await svc.stop();

  const sq = sequentialResult as Record<string, { p50: number; p95: number }>;
  const at4 = conc.find((x) => x.clients === 4);
  const ratios = {
    sequentialP50ServiceOverFloor: round((sq.service?.p50 ?? NaN) / (sq.floor?.p50 ?? NaN), 2),
    backToBackP50ServiceOverFloor: round((sq.serviceBackToBack?.p50 ?? NaN) / (sq.floorBackToBack?.p50 ?? NaN), 2),
    // Not targets: the same work done by raw Puppeteer with a context made ahead, against the floor and against the service.
    sequentialP50RawPreparedOverFloor: round((sq.rawPrepared?.p50 ?? NaN) / (sq.floor?.p50 ?? NaN), 2),
    backToBackP50RawPreparedOverFloor: round(
      (sq.rawPreparedBackToBack?.p50 ?? NaN) / (sq.floorBackToBack?.p50 ?? NaN),
      2,
    ),
    sequentialP50ServiceOverRawPrepared: round((sq.service?.p50 ?? NaN) / (sq.rawPrepared?.p50 ?? NaN), 2),
    backToBackP50ServiceOverRawPrepared: round(
      (sq.serviceBackToBack?.p50 ?? NaN) / (sq.rawPreparedBackToBack?.p50 ?? NaN),
      2,
    ),
    throughputAt4ServiceOverRaw: at4 ? round(at4.service.rps / at4.raw.rps, 2) : NaN,
    throughputAt4ServiceOverStockFull: at4 ? round(at4.service.rps / at4.stockFull.rps, 2) : NaN,
  };
  const targets = {
    'back-to-back p50 ≤ 1.5 × floor': ratios.backToBackP50ServiceOverFloor <= 1.5,
    '300 ms apart p50 ≤ 1.1 × floor': ratios.sequentialP50ServiceOverFloor <= 1.1,
    '4 clients ≥ 0.95 × raw Puppeteer, same binary': ratios.throughputAt4ServiceOverRaw >= 0.95,
    '4 clients ≥ 3 × raw stock Puppeteer, full Chromium': ratios.throughputAt4ServiceOverStockFull >= 3,
    'whole tree at rest ≤ 230 MB PSS': rest.treePssMb <= 230,
    'our CPU per request ≤ 2 × raw Puppeteer client, every client count': conc.every((x) => x.ourCpuOverRawClient <= 2),
  };
  return { mode, version, sequential: sq, split, concurrency: conc, memory: { rest, load }, ratios, targets };
}
