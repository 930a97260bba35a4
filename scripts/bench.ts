// npm run bench [-- out.json] [--chromium shell|full] [--soak N | --soak-minutes M] [--prewarm-sweep 0,1,2,3] [--neighbour [--attacks REGEX] [--parades N]]
//                [--real-pages [--rounds N]]
//
// Starts a fixture page and, for each Chromium (the headless shell and the full
// browser, or the one --chromium names), the service (dist/server.js, as `npm
// start` runs it) on loopback and, in the same run, raw-Puppeteer baselines on
// the same binary and page, and raw Puppeteer with stock flags on the full
// browser. Figures are reported as ratios against those baselines, because
// these machines are noisy. --prewarm-sweep measures the service with each
// PREWARM_CONTEXTS given; --neighbour runs the noisy-neighbour bench
// (scripts/neighbour.ts, docs/performance.md); --real-pages the saved real pages
// with and without options.blockResourceTypes (scripts/real-pages-bench.ts).
// See docs/performance.md.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import puppeteer, { type Browser, type BrowserContext, type Page } from 'puppeteer';
import { Agent, request } from 'undici';
import { PER_CONTEXT_FEATURES_OFF } from '../src/slot/browser/browser-host.js';
import { CHROMIUM_PATHS, DEFAULT_IDLE_SLOT_CLOSE_MS, type ChromiumMode } from '../src/common/config.js';
import { descendants, freePort, statFields } from '../test/helpers/system.js';
import { neighbour } from './neighbour.js';
import { realPagesBench, realPagesReport } from './real-pages-bench.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const KEY = 'bench-key-0123456789abcdef';
const SCRIPT = 'return await page.title()';
const SEQUENTIAL_N = 60;
const CONCURRENCY = [1, 2, 4, 8];
const PER_CLIENT = 12;
/**
 * Pause between sequential requests, the same for every variant and not counted:
 * "not saturated" means the service has had time to prepare the next context and
 * isolate, as it has between a real caller's requests.
 */
const THINK_MS = 300;
/**
 * Pause between back-to-back sequential requests: a client that sends the next
 * request as soon as it has the answer (issue 20 allows up to 30 ms; 0 is the
 * hardest case, the next request meets the previous one's clean-up).
 */
const BACK_TO_BACK_MS = 0;
const PAGE = `<!doctype html><html><head><title>Bench Page</title></head><body><h1>Bench</h1>${'<p>lorem ipsum dolor sit amet</p>'.repeat(50)}</body></html>`;

// ------------------------------------------------------------------ helpers
function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] as number;
}

function round(n: number, d = 1): number {
  return Number.isFinite(n) ? Math.round(n * 10 ** d) / 10 ** d : n;
}

function kib(pid: number, field: 'VmRSS'): number {
  try {
    const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

function pssKib(pid: number): number {
  try {
    const m = /Pss:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/** Descendant processes of pid whose executable is Chromium. */
function chromiumPids(root: number): number[] {
  return descendants(root).filter((p) => {
    try {
      return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('chromium');
    } catch {
      return false; // gone
    }
  });
}

/** The service's slot processes: its Node children that run dist/executor.js (see docs/architecture.md). */
function executorPids(root: number): number[] {
  return descendants(root).filter((p) => {
    try {
      return /executor\.js|slot\/main\.ts/.test(readFileSync(`/proc/${p}/cmdline`, 'utf8'));
    } catch {
      return false; // gone
    }
  });
}

/**
 * Chromium's memory both ways: the sum of its processes' RSS (what the issue
 * asks for; it counts pages the processes share once per process) and of their
 * PSS (shared pages split between the processes that share them: what the
 * machine actually gives Chromium).
 */
function memory(servicePid: number): {
  serviceRssMb: number;
  frontPssMb: number;
  executorsPssMb: number;
  totalPssMb: number;
  /** The service's Node processes (front and executors), PSS. */
  servicePssMb: number;
  chromiumRssMb: number;
  chromiumPssMb: number;
  chromiumProcesses: number;
  /** The whole process tree (the service and Chromium), PSS. */
  treePssMb: number;
} {
  const pids = chromiumPids(servicePid);
  const executors = executorPids(servicePid);
  const frontPss = pssKib(servicePid);
  const executorsPss = executors.reduce((a, p) => a + pssKib(p), 0);
  const chromiumPss = pids.reduce((a, p) => a + pssKib(p), 0);
  return {
    // The service's Node processes: the front and its executors.
    serviceRssMb: round((kib(servicePid, 'VmRSS') + executors.reduce((a, p) => a + kib(p, 'VmRSS'), 0)) / 1024),
    frontPssMb: round(frontPss / 1024),
    executorsPssMb: round(executorsPss / 1024),
    totalPssMb: round((frontPss + executorsPss + chromiumPss) / 1024),
    servicePssMb: round((frontPss + executorsPss) / 1024),
    chromiumRssMb: round(pids.reduce((a, p) => a + kib(p, 'VmRSS'), 0) / 1024),
    chromiumPssMb: round(chromiumPss / 1024),
    chromiumProcesses: pids.length,
    treePssMb: round((frontPss + executorsPss + chromiumPss) / 1024),
  };
}

/**
 * Memory once the service is idle and settled: spares remade and closed
 * contexts' renderers gone. Sampled every second until the Chromium process
 * count has not changed for 5 s, at most 30 s; the same rule before and after a
 * soak, so that the two are compared alike.
 */
async function settledMemory(servicePid: number): Promise<ReturnType<typeof memory>> {
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

async function listen(server: Server): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as { port: number }).port;
}

// ------------------------------------------------------------------ the service
interface ServiceHandle {
  child: ChildProcess;
  base: string;
  stop(): Promise<void>;
}

async function startService(mode: ChromiumMode, env: Record<string, string>): Promise<ServiceHandle> {
  const port = await freePort();
  // As `npm start` runs it (scripts/bootstrap.mjs).
  const child = spawn(process.execPath, ['--no-node-snapshot', '--expose-gc', join(ROOT, 'dist', 'server.js')], {
    env: {
      ...process.env,
      PORT: String(port),
      API_KEYS: KEY,
      LOG_LEVEL: 'warn',
      CHROMIUM: mode,
      PUPPETEER_EXECUTABLE_PATH: CHROMIUM_PATHS[mode],
      RATE_LIMIT: '1000000',
      QUEUE_LIMIT: '1000',
      MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? '2',
      ...env,
    },
    // stdout is not read here: a pipe nobody drains would stall the service's logging.
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  // Never leave the service behind, whatever happens to the bench.
  process.once('exit', () => child.kill('SIGKILL'));
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (Date.now() > deadline) throw new Error('the service did not become healthy');
    try {
      const r = await request(`${base}/health`);
      await r.body.dump();
      if (r.statusCode === 200) break;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    child,
    base,
    stop: async () => {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

const agent = new Agent({ keepAliveTimeout: 60_000, connections: 64 });

interface ServiceSample {
  ms: number;
  status: number;
  timing: Record<string, number>;
  /** For a status other than 200: the error code and message. */
  error?: string;
}

/** Where the service's memory is, from its /metrics (MB): V8 heap used and total, memory outside the heap. */
async function heap(base: string): Promise<Record<string, number>> {
  const r = await request(`${base}/metrics`, { dispatcher: agent });
  const text = await r.body.text();
  const read = (name: string): number => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? NaN) / 2 ** 20;
  return {
    heapUsedMb: round(read('pagescript_nodejs_heap_size_used_bytes')),
    heapTotalMb: round(read('pagescript_nodejs_heap_size_total_bytes')),
    externalMb: round(read('pagescript_nodejs_external_memory_bytes')),
    // Committed size of each V8 space: which one holds memory after load.
    ...Object.fromEntries(
      [...text.matchAll(/^pagescript_nodejs_heap_space_size_total_bytes\{space="(\w+)"\} (\S+)/gm)].map((m) => [
        `${m[1]}Mb`,
        round(Number(m[2]) / 2 ** 20),
      ]),
    ),
  };
}

async function callService(base: string, body: unknown, key = KEY): Promise<ServiceSample> {
  const t0 = performance.now();
  const r = await request(`${base}/api/scrape`, {
    method: 'POST',
    dispatcher: agent,
    headers: { 'content-type': 'application/json', 'x-gateway-key': key },
    body: JSON.stringify(body),
  });
  const text = await r.body.text();
  const ms = performance.now() - t0;
  let error: string | undefined;
  if (r.statusCode !== 200) {
    try {
      const e = JSON.parse(text) as { code?: string; error?: string };
      // Digits out, so that messages differing only in numbers count together.
      error = `${e.code ?? '?'}: ${(e.error ?? '').slice(0, 100).replace(/\d+/g, 'N')}`;
    } catch {
      error = text.slice(0, 100);
    }
  }
  const timing: Record<string, number> = {};
  for (const part of String(r.headers['server-timing'] ?? '').split(',')) {
    const m = /^\s*(\w+);dur=([\d.]+)/.exec(part);
    if (m) timing[m[1] as string] = Number(m[2]);
  }
  return { ms, status: r.statusCode, timing, ...(error === undefined ? {} : { error }) };
}

// ------------------------------------------------------------------ measuring
async function sequential(fn: () => Promise<unknown>, n: number, gapMs = THINK_MS): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
    const t0 = performance.now();
    await fn();
    out.push(performance.now() - t0);
  }
  return out;
}

interface Throughput {
  rps: number;
  p95: number;
  p50: number;
  /** The samples, kept to pool two runs. */
  lat: number[];
  secs: number;
}

/** Two runs as one: all their requests over all their time. */
function pool(a: Throughput, b: Throughput): { rps: number; p95: number; p50: number } {
  const lat = [...a.lat, ...b.lat];
  return { rps: round(lat.length / (a.secs + b.secs), 2), p95: round(pct(lat, 95)), p50: round(pct(lat, 50)) };
}

/** CPU time of processes in ms, reaped children included (renderers are reaped by Chromium's zygote). */
function cpuMs(pids: number[]): number {
  let ticks = 0;
  for (const p of pids) {
    const f = statFields(p) ?? [];
    // utime, stime, cutime, cstime; clock ticks of 10 ms on Linux.
    ticks += Number(f[11] ?? 0) + Number(f[12] ?? 0) + Number(f[13] ?? 0) + Number(f[14] ?? 0);
  }
  return ticks * 10;
}

/** Where a load phase's CPU went, in ms per request: the serving Node process, Chromium, and this process as the client. */
interface CpuSplit {
  node: number;
  chromium: number;
  client: number;
}

async function withCpu(
  t: () => Promise<Throughput>,
  nodePid: number | undefined,
  chromium: () => number[],
): Promise<Throughput & { cpu: CpuSplit }> {
  // The service's Node: the front and its executors (alive through the phase).
  const nodePids = nodePid === undefined ? [] : [nodePid, ...executorPids(nodePid)];
  const node = (): number => nodePids.reduce((a, p) => a + cpuOwn(p), 0);
  const c0 = process.cpuUsage();
  const [n0, b0] = [node(), cpuMs(chromium())];
  const r = await t();
  const [n1, b1] = [node(), cpuMs(chromium())];
  const c1 = process.cpuUsage(c0);
  const per = (ms: number): number => round(ms / r.lat.length, 1);
  return { ...r, cpu: { node: per(n1 - n0), chromium: per(b1 - b0), client: per((c1.user + c1.system) / 1000) } };
}

/** A process's own CPU in ms (not its children: the service's Chromium is counted apart). */
function cpuOwn(pid: number): number {
  const f = statFields(pid) ?? [];
  return (Number(f[11] ?? 0) + Number(f[12] ?? 0)) * 10;
}

function meanCpu(a: CpuSplit, b: CpuSplit): CpuSplit {
  return {
    node: round((a.node + b.node) / 2, 1),
    chromium: round((a.chromium + b.chromium) / 2, 1),
    client: round((a.client + b.client) / 2, 1),
  };
}

async function concurrent(fn: () => Promise<unknown>, clients: number, perClient: number): Promise<Throughput> {
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

async function rawFresh(browser: Browser, url: string): Promise<string> {
  const ctx = await browser.createBrowserContext();
  try {
    const page = await ctx.newPage();
    await page.goto(url, { waitUntil: 'load' });
    return await page.title();
  } finally {
    await ctx.close();
  }
}

/**
 * Raw Puppeteer doing a request's work as the service does it: contexts and
 * pages made ahead (PREWARM_CONTEXTS' default of spares; the newest ready one
 * taken, one made inline when none is left), goto+title, and the context closed
 * after without waiting, its replacement made once it is closed (between
 * requests, as browser-host.ts does). What a fresh context costs even when it
 * is made ahead: the baseline for the service's own overhead, beside the
 * floor's reused page.
 */
function rawPrepared(
  browser: Browser,
  url: string,
  spares = 2,
): { call: () => Promise<string>; close: () => Promise<void> } {
  type Spare = { made: Promise<{ ctx: BrowserContext; page: Page }>; ready: boolean };
  const pool: Spare[] = [];
  const closing = new Set<Promise<void>>();
  let closed = false;
  const make = (): Spare => {
    const made = (async () => {
      const ctx = await browser.createBrowserContext();
      return { ctx, page: await ctx.newPage() };
    })();
    const spare: Spare = { made, ready: false };
    // Its failure is the call's that takes it (awaited there), not an unhandled rejection meanwhile.
    made.then(
      () => void (spare.ready = true),
      () => undefined,
    );
    return spare;
  };
  for (let i = 0; i < spares; i++) pool.push(make());
  return {
    call: async () => {
      const at = pool.findLastIndex((s) => s.ready);
      const spare = pool.splice(at >= 0 ? at : 0, 1)[0] ?? make();
      const { ctx, page } = await spare.made;
      try {
        await page.goto(url, { waitUntil: 'load' });
        return await page.title();
      } finally {
        const c: Promise<void> = ctx
          .close()
          .catch(() => undefined)
          .then(() => {
            closing.delete(c);
            if (!closed) pool.push(make());
          });
        closing.add(c);
      }
    },
    close: async () => {
      closed = true;
      await Promise.all(closing);
      await Promise.all(pool.splice(0).map(async (s) => (await s.made).ctx.close()));
    },
  };
}

/** The flags this machine needs (root, a closed network), given to every raw-Puppeteer baseline. */
const MACHINE_ARGS = [
  '--no-sandbox',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];

/** Raw Puppeteer on a Debian Chromium, in the headless mode the service gives that binary. */
async function launchRaw(mode: ChromiumMode, args: string[]): Promise<Browser> {
  return await puppeteer.launch({
    executablePath: CHROMIUM_PATHS[mode],
    pipe: true,
    headless: mode === 'shell' ? 'shell' : true,
    args,
  });
}

type Level = { rps: number; p95: number; p50: number; cpu: CpuSplit };
type Memory = ReturnType<typeof memory>;
const p50p95 = (xs: number[]): { p50: number; p95: number } => ({ p50: round(pct(xs, 50)), p95: round(pct(xs, 95)) });

/** Everything measured for the service on one Chromium. */
interface ModeResult {
  mode: ChromiumMode;
  version: string;
  sequential: Record<string, { p50: number; p95: number }>;
  split: Record<string, number>;
  concurrency: { clients: number; service: Level; raw: Level; stockFull: Level }[];
  memory: { rest: Memory; load: Memory };
  ratios: Record<string, number>;
  targets: Record<string, boolean>;
}

const PARTS = ['queue', 'lease', 'isolate', 'navigation', 'script', 'serialize'];

/**
 * The service on one Chromium against raw Puppeteer on the same binary (the
 * service's per-context flags too, so that the ratio measures the service, not
 * a flag) and raw Puppeteer with its stock flags on the full browser (as most
 * users run it).
 */
async function benchMode(
  mode: ChromiumMode,
  pageUrl: string,
  fixturePort: number,
  /** The stock full-browser reference, when an earlier mode of this run measured it (it is the slowest part). */
  stockDone?: ModeResult,
): Promise<ModeResult> {
  const svc = await startService(mode, { EGRESS_ALLOWLIST: `127.0.0.1:${fixturePort}` });
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
  const level = (a: Throughput & { cpu: CpuSplit }, b: Throughput & { cpu: CpuSplit }): Level => ({
    ...pool(a, b),
    cpu: meanCpu(a.cpu, b.cpu),
  });
  for (const c of CONCURRENCY) {
    const svcRun = (): Promise<Throughput & { cpu: CpuSplit }> =>
      withCpu(() => concurrent(() => callService(svc.base, body), c, PER_CLIENT), servicePid, serviceChromium);
    const rawRun = (): Promise<Throughput & { cpu: CpuSplit }> =>
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
    conc.push({
      clients: c,
      service: level(s1, s2),
      raw: level(r1, r2),
      stockFull: { rps: k.rps, p95: k.p95, p50: k.p50, cpu: k.cpu },
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
    'whole tree at rest ≤ 300 MB PSS': rest.treePssMb <= 300,
  };
  return { mode, version, sequential: sq, split, concurrency: conc, memory: { rest, load }, ratios, targets };
}

function report(r: ModeResult): string {
  const sq = r.sequential;
  const row = (label: string, k: string): string => `| ${label} | ${sq[k]?.p50} | ${sq[k]?.p95} |`;
  const lines = [
    `### CHROMIUM=${r.mode} (${r.version})`,
    '',
    `| sequential, \`return await page.title()\` (n=${SEQUENTIAL_N} each) | p50 ms | p95 ms |`,
    '|---|---|---|',
    row(`floor: goto+title on an open page, ${THINK_MS} ms apart`, 'floor'),
    row(`the same back to back (${BACK_TO_BACK_MS} ms apart)`, 'floorBackToBack'),
    row('raw Puppeteer, same binary, fresh context+page per request', 'rawFreshContext'),
    row(`raw Puppeteer, same binary, context+page made ahead, ${THINK_MS} ms apart`, 'rawPrepared'),
    row(`the same back to back (${BACK_TO_BACK_MS} ms apart)`, 'rawPreparedBackToBack'),
    row('raw Puppeteer with stock flags on full Chromium, fresh context+page (reference)', 'rawStockFullFreshContext'),
    row(`pagescript (HTTP, fresh context + isolate), ${THINK_MS} ms apart`, 'service'),
    row(`pagescript back to back (${BACK_TO_BACK_MS} ms apart)`, 'serviceBackToBack'),
    '',
    `pagescript/floor p50: **${r.ratios.sequentialP50ServiceOverFloor}** ${THINK_MS} ms apart, **${r.ratios.backToBackP50ServiceOverFloor}** back to back`,
    '',
    `raw Puppeteer with a context made ahead/floor p50: ${r.ratios.sequentialP50RawPreparedOverFloor} ${THINK_MS} ms apart, ${r.ratios.backToBackP50RawPreparedOverFloor} back to back; pagescript/that: ${r.ratios.sequentialP50ServiceOverRawPrepared} and ${r.ratios.backToBackP50ServiceOverRawPrepared}`,
    '',
    '| clients | pagescript req/s | p95 ms | raw same binary req/s | p95 ms | raw stock full req/s | p95 ms | /raw | /stock full |',
    '|---|---|---|---|---|---|---|---|---|',
    ...r.concurrency.map(
      (x) =>
        `| ${x.clients} | ${x.service.rps} | ${x.service.p95} | ${x.raw.rps} | ${x.raw.p95} | ${x.stockFull.rps} | ${x.stockFull.p95} | ${round(x.service.rps / x.raw.rps, 2)} | ${round(x.service.rps / x.stockFull.rps, 2)} |`,
    ),
    '',
    '| CPU per request, ms (every level at full load) | service: Node | service: Chromium | client | raw: Chromium | raw: client | stock full: Chromium |',
    '|---|---|---|---|---|---|---|',
    ...r.concurrency.map(
      (x) =>
        `| ${x.clients} clients | ${x.service.cpu.node} | ${x.service.cpu.chromium} | ${x.service.cpu.client} | ${x.raw.cpu.chromium} | ${x.raw.cpu.client} | ${x.stockFull.cpu.chromium} |`,
    ),
    '',
    '| service time split (p50 ms) | ' + PARTS.join(' | ') + ' |',
    '|---|' + PARTS.map(() => '---').join('|') + '|',
    '| | ' + PARTS.map((k) => r.split[k]).join(' | ') + ' |',
    '',
    '| memory | service RSS MB | service PSS MB | Chromium RSS MB (sum) | Chromium PSS MB | Chromium processes | whole tree PSS MB |',
    '|---|---|---|---|---|---|---|',
    ...(['rest', 'load'] as const).map((k) => {
      const m = r.memory[k];
      return `| ${k === 'rest' ? 'at rest' : 'under load (peak, 8 clients)'} | ${m.serviceRssMb} | ${m.servicePssMb} | ${m.chromiumRssMb} | ${m.chromiumPssMb} | ${m.chromiumProcesses} | ${m.treePssMb} |`;
    }),
    '',
    'targets: ' +
      Object.entries(r.targets)
        .map(([k, v]) => `${k}: ${v ? 'met' : 'NOT met'}`)
        .join('; '),
    '',
  ];
  return lines.join('\n');
}

/**
 * The service with each PREWARM_CONTEXTS given: back-to-back and 300 ms-apart
 * p50 against the floor, 4-client throughput, memory at rest. For tuning the
 * default; the floor is measured beside each.
 */
async function prewarmSweep(
  mode: ChromiumMode,
  counts: number[],
  pageUrl: string,
  fixturePort: number,
): Promise<Record<string, unknown>[]> {
  const browser = await launchRaw(mode, MACHINE_ARGS);
  const openPage = await browser.newPage();
  const floorFn = async (): Promise<string> => {
    await openPage.goto(pageUrl, { waitUntil: 'load' });
    return await openPage.title();
  };
  const out: Record<string, unknown>[] = [];
  console.log(
    `| PREWARM_CONTEXTS (${mode}) | floor p50 | back-to-back p50 | ×floor | 300 ms apart p50 | ×floor | 4 clients req/s | tree PSS at rest MB |\n|---|---|---|---|---|---|---|---|`,
  );
  for (const n of counts) {
    const svc = await startService(mode, {
      EGRESS_ALLOWLIST: `127.0.0.1:${fixturePort}`,
      PREWARM_CONTEXTS: String(n),
    });
    const body = { url: pageUrl, script: SCRIPT };
    const call = (): Promise<ServiceSample> => callService(svc.base, body);
    for (let i = 0; i < 10; i++) await call();
    const rest = await settledMemory(svc.child.pid as number);
    const floor: number[] = [];
    const b2b: number[] = [];
    const apart: number[] = [];
    for (let r = 0; r < 3; r++) {
      floor.push(...(await sequential(floorFn, 20, BACK_TO_BACK_MS)));
      await call();
      b2b.push(...(await sequential(call, 20, BACK_TO_BACK_MS)));
      apart.push(...(await sequential(call, 10)));
    }
    const t = pool(await concurrent(call, 4, PER_CLIENT), await concurrent(call, 4, PER_CLIENT));
    await svc.stop();
    const f = pct(floor, 50);
    const row = {
      prewarmContexts: n,
      floorP50: round(f),
      backToBackP50: round(pct(b2b, 50)),
      backToBackOverFloor: round(pct(b2b, 50) / f, 2),
      apartP50: round(pct(apart, 50)),
      apartOverFloor: round(pct(apart, 50) / f, 2),
      rpsAt4: t.rps,
      treePssAtRestMb: rest.treePssMb,
    };
    console.log(`| ${Object.values(row).join(' | ')} |`);
    out.push(row);
  }
  await browser.close();
  return out;
}

// ------------------------------------------------------------------ main
async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const valueOf = (flag: string): string | undefined => {
    const at = args.indexOf(flag);
    return at >= 0 ? args[at + 1] : undefined;
  };
  const soakN = Number(valueOf('--soak') ?? 0);
  const soakMinutes = Number(valueOf('--soak-minutes') ?? 0);
  if (!Number.isFinite(soakN) || soakN < 0 || !Number.isFinite(soakMinutes) || soakMinutes < 0)
    throw new Error('--soak takes a count of requests, --soak-minutes a number of minutes');
  const sweep = valueOf('--prewarm-sweep');
  const only = valueOf('--chromium');
  if (only !== undefined && only !== 'shell' && only !== 'full') throw new Error('--chromium must be shell or full');
  const modes: ChromiumMode[] = only ? [only] : ['shell', 'full'];
  // The one argument that is neither a flag nor a flag's value (--neighbour and --real-pages take none).
  const valued = new Set([
    '--chromium',
    '--soak',
    '--soak-minutes',
    '--prewarm-sweep',
    '--rounds',
    '--attacks',
    '--parades',
    '--executors',
  ]);
  const outFile = args.find((a, i) => !a.startsWith('--') && !valued.has(args[i - 1] ?? ''));

  const fixture = createServer({ keepAlive: true }, (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(PAGE);
  });
  const fixturePort = await listen(fixture);
  const pageUrl = `http://127.0.0.1:${fixturePort}/`;
  const machine = {
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memoryGiB: round(totalmem() / 2 ** 30),
    node: process.version,
    chromium: modes.map((m) => CHROMIUM_PATHS[m]),
    date: new Date().toISOString(),
    loadAverage: loadavg().map((x) => round(x, 2)),
  };
  console.log(
    `pagescript bench — ${machine.date}\n${machine.cpu}, ${machine.cores} cores, ${machine.memoryGiB} GiB, Node ${machine.node}, load average ${machine.loadAverage.join(' ')}\n`,
  );
  const finish = async (result: Record<string, unknown>): Promise<void> => {
    fixture.close();
    await agent.close();
    if (outFile) {
      writeFileSync(outFile, JSON.stringify({ machine, ...result, loadAverageAfter: loadavg() }, null, 2));
      console.log(`\nfigures written to ${outFile}`);
    }
    console.log(
      `load average at the end: ${loadavg()
        .map((x) => round(x, 2))
        .join(' ')}`,
    );
  };

  if (args.includes('--neighbour')) {
    const mode = modes[0] as ChromiumMode;
    const result = await neighbour({
      mode,
      startService: (env) => startService(mode, env),
      call: callService,
      health: async (base) => {
        const t0 = performance.now();
        const r = await request(`${base}/health`, { dispatcher: agent });
        await r.body.dump();
        return performance.now() - t0;
      },
      pageUrl,
      fixturePort,
      ...(valueOf('--attacks') !== undefined ? { attacks: new RegExp(valueOf('--attacks') as string) } : {}),
      parades: Number(valueOf('--parades') ?? 1),
    });
    console.log(JSON.stringify(result, null, 2));
    await finish({ neighbour: result });
    return;
  }
  if (args.includes('--real-pages')) {
    const mode = modes[0] as ChromiumMode;
    const rounds = valueOf('--rounds');
    const result = await realPagesBench(
      {
        mode,
        startService: (env) => startService(mode, env),
        call: (base, body) => callService(base, body),
        cpu: (pid) => ({
          node: [pid, ...executorPids(pid)].reduce((a, p) => a + cpuOwn(p), 0),
          chromium: cpuMs(chromiumPids(pid)),
        }),
      },
      ...(rounds === undefined ? [] : [Number(rounds)]),
    );
    console.log(realPagesReport(result));
    await finish({ realPages: result });
    return;
  }
  if (soakN > 0 || soakMinutes > 0) {
    const result = await soak(
      modes[0] as ChromiumMode,
      pageUrl,
      fixturePort,
      soakMinutes > 0 ? { minutes: soakMinutes } : { requests: soakN },
    );
    await finish({ soak: result });
    process.exit(result.pass ? 0 : 1);
  }
  if (sweep !== undefined) {
    const counts = sweep.split(',').map(Number);
    const rows = await prewarmSweep(modes[0] as ChromiumMode, counts, pageUrl, fixturePort);
    await finish({ prewarmSweep: rows });
    return;
  }
  const results: ModeResult[] = [];
  for (const mode of modes) {
    const r = await benchMode(mode, pageUrl, fixturePort, results[0]);
    console.log(report(r));
    results.push(r);
  }
  await finish({ modes: results });
}

// ------------------------------------------------------------------ soak
/** The PSS of a process and all its descendants (front, egress, slot processes, Chromium), in MB. */
function wholeTreePssMb(root: number): number {
  return round([root, ...descendants(root)].reduce((a, p) => a + pssKib(p), 0) / 1024);
}

/**
 * A mixed workload of honest and hostile requests at 4 clients: a number of
 * requests, or a duration. With a duration the whole tree's PSS is sampled
 * every 30 s; it passes when every sample after the first sixth of the run
 * (10 minutes of an hour) stays within ±10 % of the level then.
 */
async function soak(
  mode: ChromiumMode,
  pageUrl: string,
  fixturePort: number,
  length: { requests: number } | { minutes: number },
): Promise<Record<string, unknown> & { pass: boolean }> {
  const n = 'requests' in length ? length.requests : Number.POSITIVE_INFINITY;
  const endAt = 'minutes' in length ? performance.now() + length.minutes * 60_000 : Number.POSITIVE_INFINITY;
  const svc = await startService(mode, {
    EGRESS_ALLOWLIST: `127.0.0.1:${fixturePort}`,
    // Long enough that a cheerio script on a loaded 2-core machine is not a timeout.
    SCRIPT_TIMEOUT_MS: '2000',
    SCRIPT_MEMORY_MB: '32',
    RATE_LIMIT: '1000000',
  });
  const pid = svc.child.pid as number;
  const kinds: [string, string, number][] = [
    ['success', SCRIPT, 200],
    ['script error', 'throw new Error("soak")', 400],
    ['timeout', 'while (true) {}', 400],
    ['memory kill', 'const a = []; while (true) a.push(new Array(1e5).fill(1))', 400],
    ['cheerio', 'const $ = cheerio.load(await page.content()); return $("p").length', 200],
  ];
  for (let i = 0; i < 20; i++) await callService(svc.base, { url: pageUrl, script: SCRIPT });
  // After the service's idle collection (5 s without work, src/front/service.ts), as after the soak.
  const before = await settledMemory(pid);
  const heapBefore = await heap(svc.base);
  const what = 'minutes' in length ? `${length.minutes} minutes of` : `${n}`;
  console.log(`soak: ${what} mixed requests at 4 clients; before:`, before, heapBefore);
  const counts: Record<string, number> = {};
  let unexpected = 0;
  const unexpectedByKind: Record<string, number> = {};
  let next = 0;
  const t0 = performance.now();
  const samples: { minute: number; treePssMb: number; requests: number }[] = [];
  const sample = (): void => {
    const s = { minute: round((performance.now() - t0) / 60_000, 2), treePssMb: wholeTreePssMb(pid), requests: next };
    samples.push(s);
    if ('minutes' in length) console.log(`  minute ${s.minute}: tree ${s.treePssMb} MB PSS, ${s.requests} requests`);
  };
  const sampler = setInterval(sample, 30_000);
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < n && performance.now() < endAt) {
        const i = next++;
        const [name, script, want] = kinds[i % kinds.length] as [string, string, number];
        const s = await callService(svc.base, { url: pageUrl, script });
        counts[name] = (counts[name] ?? 0) + 1;
        if (s.status !== want) {
          unexpected++;
          const k = `${name} → ${s.status} ${s.error ?? ''}`;
          unexpectedByKind[k] = (unexpectedByKind[k] ?? 0) + 1;
        }
        if (i % 500 === 499) console.log(`  ${i + 1} done, ${JSON.stringify(memory(pid))}`);
      }
    }),
  );
  clearInterval(sampler);
  sample();
  const secs = (performance.now() - t0) / 1000;
  // Flat after the warm-up: each sample past the first sixth of the run within ±10 % of the level then.
  const warm = secs / 6 / 60;
  const level = samples.find((x) => x.minute >= warm)?.treePssMb;
  const later = samples.filter((x) => x.minute >= warm);
  const flat =
    'minutes' in length
      ? {
          warmUpMinutes: round(warm, 1),
          levelMb: level,
          peakMb: Math.max(...samples.map((x) => x.treePssMb)),
          minAfterMb: Math.min(...later.map((x) => x.treePssMb)),
          maxAfterMb: Math.max(...later.map((x) => x.treePssMb)),
          within10Percent: level !== undefined && later.every((x) => Math.abs(x.treePssMb - level) <= level * 0.1),
        }
      : undefined;
  const treeBeforeStop = [pid, ...descendants(pid)];
  // The service collects its heap after 5 s without work (src/front/service.ts): sampled after that.
  const after = await settledMemory(pid);
  const heapAfter = await heap(svc.base);
  await svc.stop();
  const leftAfterStop = treeBeforeStop.filter((p) => {
    try {
      return !readFileSync(`/proc/${p}/stat`, 'utf8').includes(') Z ');
    } catch {
      return false; // gone
    }
  }).length;
  const growth = {
    serviceRssMb: round(after.serviceRssMb - before.serviceRssMb),
    chromiumRssMb: round(after.chromiumRssMb - before.chromiumRssMb),
    chromiumPssMb: round(after.chromiumPssMb - before.chromiumPssMb),
  };
  const pass =
    growth.serviceRssMb < 50 &&
    growth.chromiumRssMb < 50 &&
    growth.chromiumPssMb < 50 &&
    after.chromiumProcesses <= before.chromiumProcesses &&
    unexpected === 0 &&
    leftAfterStop === 0 &&
    (flat === undefined || flat.within10Percent);
  const result = {
    requests: next,
    ...('minutes' in length ? { minutes: length.minutes, samples, flat } : {}),
    leftAfterStop,
    seconds: round(secs),
    counts,
    unexpectedStatus: unexpected,
    unexpectedByKind,
    before,
    after,
    growth,
    heapBefore,
    heapAfter,
    pass,
  };
  console.log(
    'after:',
    after,
    heapAfter,
    '\ngrowth:',
    growth,
    flat === undefined ? '' : `\nflat: ${JSON.stringify(flat)}`,
    `\nprocesses left after stop: ${leftAfterStop}`,
    `\nunexpected statuses: ${unexpected} ${JSON.stringify(unexpectedByKind)}\n${pass ? 'PASS' : 'FAIL'}: growth under 50 MB, the Chromium process count back where it was, nothing left after stop${flat ? ', the tree flat after the warm-up' : ''}`,
  );
  return result;
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
