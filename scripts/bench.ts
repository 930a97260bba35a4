// npm run bench [-- out.json] [--soak N]
//
// Starts a fixture page and the service (dist/server.js, as `npm start` runs it)
// on loopback and, in the same run, a raw-Puppeteer baseline on the same
// Chromium binary and page. Figures are reported as ratios against that
// baseline, because these machines are noisy. See README "Performance".
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { cpus, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import puppeteer, { type Browser } from 'puppeteer';
import { Agent, request } from 'undici';
import { PER_CONTEXT_FEATURES_OFF } from '../src/browser/browser.js';
import { DEFAULT_EXECUTABLE_PATH } from '../src/config.js';
import { descendants, freePort, statFields } from '../test/helpers/system.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const KEY = 'bench-key-0123456789abcdef';
const CHROMIUM = process.env.PUPPETEER_EXECUTABLE_PATH ?? DEFAULT_EXECUTABLE_PATH;
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

/** The service's script executors: its Node children that run src/executor (see README, How it is built). */
function executorPids(root: number): number[] {
  return descendants(root).filter((p) => {
    try {
      return /executor\.(js|ts)/.test(readFileSync(`/proc/${p}/cmdline`, 'utf8'));
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
  chromiumRssMb: number;
  chromiumPssMb: number;
  chromiumProcesses: number;
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
    chromiumRssMb: round(pids.reduce((a, p) => a + kib(p, 'VmRSS'), 0) / 1024),
    chromiumPssMb: round(pids.reduce((a, p) => a + pssKib(p), 0) / 1024),
    chromiumProcesses: pids.length,
  };
}

/**
 * Memory once the service is idle and settled: spares remade and closed
 * contexts' renderers gone. Sampled every second until the Chromium process
 * count has not changed for 5 s, at most 30 s; the same rule before and after a
 * soak, so that the two are compared alike.
 */
async function settledMemory(servicePid: number): Promise<ReturnType<typeof memory>> {
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

async function startService(env: Record<string, string>): Promise<ServiceHandle> {
  const port = await freePort();
  // As `npm start` runs it (scripts/bootstrap.mjs).
  const child = spawn(process.execPath, ['--no-node-snapshot', '--expose-gc', join(ROOT, 'dist', 'server.js')], {
    env: {
      ...process.env,
      PORT: String(port),
      API_KEYS: KEY,
      LOG_LEVEL: 'warn',
      PUPPETEER_EXECUTABLE_PATH: CHROMIUM,
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

async function callService(base: string, body: unknown): Promise<ServiceSample> {
  const t0 = performance.now();
  const r = await request(`${base}/api/scrape`, {
    method: 'POST',
    dispatcher: agent,
    headers: { 'content-type': 'application/json', 'x-gateway-key': KEY },
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
async function sequential(fn: () => Promise<unknown>, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    await new Promise((r) => setTimeout(r, THINK_MS));
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

// ------------------------------------------------------------------ main
async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const soakAt = args.indexOf('--soak');
  const soakN = soakAt >= 0 ? Number(args[soakAt + 1]) : 0;
  const outFile = args.find((a, i) => !a.startsWith('--') && (soakAt < 0 || i !== soakAt + 1));

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
    chromium: CHROMIUM,
    date: new Date().toISOString(),
  };
  console.log(
    `pagescript bench — ${machine.date}\n${machine.cpu}, ${machine.cores} cores, ${machine.memoryGiB} GiB, Node ${machine.node}\n`,
  );

  if (soakN > 0) {
    const result = await soak(pageUrl, fixturePort, soakN);
    if (outFile) writeFileSync(outFile, JSON.stringify({ machine, soak: result }, null, 2));
    fixture.close();
    await agent.close();
    process.exit(result.pass ? 0 : 1);
  }

  const svc = await startService({ EGRESS_ALLOWLIST: `127.0.0.1:${fixturePort}` });
  const servicePid = svc.child.pid as number;
  const body = { url: pageUrl, script: SCRIPT };
  for (let i = 0; i < 10; i++) await callService(svc.base, body);
  const rest = memory(servicePid);

  // The baseline: raw Puppeteer on the same binary, with the flags this machine
  // needs and the service's flags that cut per-context cost (a raw Puppeteer user
  // can pass them too), so that the ratios measure the service, not a flag.
  const machineArgs = [
    '--no-sandbox',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run',
    '--disable-quic',
  ];
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    pipe: true,
    headless: true,
    args: [...machineArgs, `--disable-features=${PER_CONTEXT_FEATURES_OFF.join(',')}`],
  });
  // For reference only: Puppeteer's own defaults, as most users run it.
  const stock = await puppeteer.launch({ executablePath: CHROMIUM, pipe: true, headless: true, args: machineArgs });
  const openPage = await browser.newPage();
  const floorFn = async (): Promise<string> => {
    await openPage.goto(pageUrl, { waitUntil: 'load' });
    return await openPage.title();
  };
  for (let i = 0; i < 5; i++) {
    await floorFn();
    await rawFresh(browser, pageUrl);
    await rawFresh(stock, pageUrl);
  }

  // Sequential latency, interleaved in rounds so that drift hits all three alike.
  const seq = { floor: [] as number[], raw: [] as number[], stock: [] as number[], service: [] as number[] };
  const samples: ServiceSample[] = [];
  for (let round_ = 0; round_ < 3; round_++) {
    seq.floor.push(...(await sequential(floorFn, SEQUENTIAL_N / 3)));
    seq.raw.push(...(await sequential(() => rawFresh(browser, pageUrl), SEQUENTIAL_N / 3)));
    seq.stock.push(...(await sequential(() => rawFresh(stock, pageUrl), SEQUENTIAL_N / 3)));
    for (let i = 0; i < SEQUENTIAL_N / 3; i++) {
      await new Promise((r) => setTimeout(r, THINK_MS));
      const s = await callService(svc.base, body);
      if (s.status !== 200) throw new Error(`service answered ${s.status}`);
      samples.push(s);
      seq.service.push(s.ms);
    }
  }
  const p = (xs: number[]): { p50: number; p95: number } => ({ p50: round(pct(xs, 50)), p95: round(pct(xs, 95)) });
  await stock.close();
  const sequentialResult = {
    n: SEQUENTIAL_N,
    floor: p(seq.floor),
    rawFreshContext: p(seq.raw),
    rawStockFreshContext: p(seq.stock),
    service: p(seq.service),
  };
  const parts = ['queue', 'lease', 'isolate', 'navigation', 'script', 'serialize'];
  const split = Object.fromEntries(
    parts.map((k) => [
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
  const overheadP50 = round(sequentialResult.service.p50 - sequentialResult.floor.p50);

  // Throughput at 1, 2, 4, 8 clients.
  // Each level runs service, raw, raw, service (ABBA), so that drift of this
  // noisy machine falls on both alike; the halves are pooled.
  type Level = { rps: number; p95: number; p50: number; cpu: CpuSplit };
  const conc: { clients: number; service: Level; raw: Level }[] = [];
  const rawRoot = browser.process()?.pid as number;
  const serviceChromium = (): number[] => chromiumPids(servicePid);
  const rawChromium = (): number[] => [rawRoot, ...descendants(rawRoot)];
  for (const c of CONCURRENCY) {
    const s1 = await withCpu(
      () => concurrent(() => callService(svc.base, body), c, PER_CLIENT),
      servicePid,
      serviceChromium,
    );
    const r1 = await withCpu(() => concurrent(() => rawFresh(browser, pageUrl), c, PER_CLIENT), undefined, rawChromium);
    const r2 = await withCpu(() => concurrent(() => rawFresh(browser, pageUrl), c, PER_CLIENT), undefined, rawChromium);
    const s2 = await withCpu(
      () => concurrent(() => callService(svc.base, body), c, PER_CLIENT),
      servicePid,
      serviceChromium,
    );
    conc.push({
      clients: c,
      service: { ...pool(s1, s2), cpu: meanCpu(s1.cpu, s2.cpu) },
      raw: { ...pool(r1, r2), cpu: meanCpu(r1.cpu, r2.cpu) },
    });
  }
  // Memory under load is sampled in a load phase of its own: reading every
  // Chromium process's smaps_rollup is itself work that would skew the timings.
  let load: typeof rest | undefined;
  let loading = true;
  const loadPhase = concurrent(() => callService(svc.base, body), 8, PER_CLIENT).finally(() => {
    loading = false;
  });
  while (loading) {
    await new Promise((r) => setTimeout(r, 1000));
    const m = memory(servicePid);
    if (!load || m.serviceRssMb + m.chromiumPssMb > load.serviceRssMb + load.chromiumPssMb) load = m;
  }
  await loadPhase;
  load ??= memory(servicePid);
  await browser.close();
  await svc.stop();
  fixture.close();
  await agent.close();

  const at4 = conc.find((x) => x.clients === 4);
  const ratios = {
    sequentialP50ServiceOverFloor: round(sequentialResult.service.p50 / sequentialResult.floor.p50, 2),
    sequentialP50ServiceOverRaw: round(sequentialResult.service.p50 / sequentialResult.rawFreshContext.p50, 2),
    throughputAt4ServiceOverRaw: at4 ? round(at4.service.rps / at4.raw.rps, 2) : NaN,
  };
  const targets = {
    'sequential p50 ≤ 1.3 × floor': ratios.sequentialP50ServiceOverFloor <= 1.3,
    'throughput at 4 clients ≥ 0.9 × raw fresh context': ratios.throughputAt4ServiceOverRaw >= 0.9,
    'service overhead ≤ 10 ms at p50': overheadP50 <= 10,
  };

  const lines: string[] = [];
  lines.push(
    `| sequential, \`return await page.title()\` (n=${SEQUENTIAL_N}, ${THINK_MS} ms between requests) | p50 ms | p95 ms |`,
    '|---|---|---|',
  );
  lines.push(`| floor: goto+title on an open page | ${sequentialResult.floor.p50} | ${sequentialResult.floor.p95} |`);
  lines.push(
    `| raw Puppeteer, fresh context+page per request (the baseline) | ${sequentialResult.rawFreshContext.p50} | ${sequentialResult.rawFreshContext.p95} |`,
  );
  lines.push(
    `| the same with Puppeteer's stock flags (reference) | ${sequentialResult.rawStockFreshContext.p50} | ${sequentialResult.rawStockFreshContext.p95} |`,
  );
  lines.push(
    `| pagescript (HTTP, fresh context + isolate) | ${sequentialResult.service.p50} | ${sequentialResult.service.p95} |`,
  );
  lines.push(
    '',
    `service/floor p50: **${ratios.sequentialP50ServiceOverFloor}**; service/raw p50: **${ratios.sequentialP50ServiceOverRaw}**; service − floor at p50: **${overheadP50} ms**`,
    '',
  );
  lines.push(
    '| clients | pagescript req/s | p95 ms | raw fresh-context req/s | p95 ms | service/raw |',
    '|---|---|---|---|---|---|',
  );
  for (const x of conc)
    lines.push(
      `| ${x.clients} | ${x.service.rps} | ${x.service.p95} | ${x.raw.rps} | ${x.raw.p95} | ${round(x.service.rps / x.raw.rps, 2)} |`,
    );
  lines.push(
    '',
    '| CPU per request, ms (all levels run at full load) | service: Node | service: Chromium | client | raw: Chromium | raw: Puppeteer client |',
    '|---|---|---|---|---|---|',
  );
  for (const x of conc)
    lines.push(
      `| ${x.clients} clients | ${x.service.cpu.node} | ${x.service.cpu.chromium} | ${x.service.cpu.client} | ${x.raw.cpu.chromium} | ${x.raw.cpu.client} |`,
    );
  lines.push(
    '',
    '| service time split (p50 ms) | ' + parts.join(' | ') + ' |',
    '|---|' + parts.map(() => '---').join('|') + '|',
  );
  lines.push('| | ' + parts.map((k) => split[k]).join(' | ') + ' |');
  lines.push(
    '',
    '| memory | service Node RSS MB (front + executors) | front PSS MB | executors PSS MB | Chromium RSS MB (sum) | Chromium PSS MB | total PSS MB | Chromium processes |',
    '|---|---|---|---|---|---|---|---|',
  );
  const row = (m: typeof rest): string =>
    `${m.serviceRssMb} | ${m.frontPssMb} | ${m.executorsPssMb} | ${m.chromiumRssMb} | ${m.chromiumPssMb} | ${m.totalPssMb} | ${m.chromiumProcesses} |`;
  lines.push(`| at rest | ${row(rest)}`);
  lines.push(`| under load (peak) | ${row(load)}`);
  lines.push(
    '',
    'targets: ' +
      Object.entries(targets)
        .map(([k, v]) => `${k}: ${v ? 'met' : 'NOT met'}`)
        .join('; '),
  );
  console.log(lines.join('\n'));

  if (outFile) {
    writeFileSync(
      outFile,
      JSON.stringify(
        {
          machine,
          sequential: sequentialResult,
          concurrency: conc,
          split,
          overheadP50Ms: overheadP50,
          memory: { rest, load },
          ratios,
          targets,
        },
        null,
        2,
      ),
    );
    console.log(`\nfigures written to ${outFile}`);
  }
}

// ------------------------------------------------------------------ soak
async function soak(
  pageUrl: string,
  fixturePort: number,
  n: number,
): Promise<Record<string, unknown> & { pass: boolean }> {
  const svc = await startService({
    EGRESS_ALLOWLIST: `127.0.0.1:${fixturePort}`,
    // Long enough that a cheerio script on a loaded 2-core machine is not a timeout.
    SCRIPT_TIMEOUT_MS: '1000',
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
  // After the service's idle collection (5 s without work, src/service.ts), as after the soak.
  await new Promise((r) => setTimeout(r, 8000));
  const before = await settledMemory(pid);
  const heapBefore = await heap(svc.base);
  console.log(`soak: ${n} mixed requests at 4 clients; before:`, before, heapBefore);
  const counts: Record<string, number> = {};
  let unexpected = 0;
  const unexpectedByKind: Record<string, number> = {};
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < n) {
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
  const secs = (performance.now() - t0) / 1000;
  // The service collects its heap after 5 s without work (src/service.ts): sampled after that.
  await new Promise((r) => setTimeout(r, 8000));
  const after = await settledMemory(pid);
  const heapAfter = await heap(svc.base);
  await svc.stop();
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
    unexpected === 0;
  const result = {
    requests: n,
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
    `\nunexpected statuses: ${unexpected} ${JSON.stringify(unexpectedByKind)}\n${pass ? 'PASS' : 'FAIL'}: growth under 50 MB and the Chromium process count back where it was`,
  );
  return result;
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
