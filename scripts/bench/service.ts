// The service as the bench runs it: dist/server.js started as `npm start` runs
// it, on loopback, and called over HTTP with the bench's key.
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { CHROMIUM_PATHS, type ChromiumMode } from '../../src/common/config.js';
import { round } from './measure.js';
import { frontProfileArgs } from './profile.js';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const KEY = 'bench-key-0123456789abcdef';
/** The script every timed request runs. */
export const SCRIPT = 'return await page.title()';

/** A loopback port nothing listens on (free when asked). */
async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

export interface ServiceHandle {
  child: ChildProcess;
  base: string;
  stop(): Promise<void>;
}

/**
 * Starts the service on `mode`'s Chromium with `env` over the bench's own; with
 * `profileDir` (--profile), the front, slot 0 and the egress process write CPU profiles there (profile.ts).
 */
export async function startService(
  mode: ChromiumMode,
  env: Record<string, string>,
  profileDir?: string,
  /** Another build's dist/ (a copy under the repository, so that node_modules resolve), for A/B runs. */
  dist = join(ROOT, 'dist'),
): Promise<ServiceHandle> {
  const port = await freePort();
  // As `npm start` runs it (scripts/bootstrap.mjs).
  const profiling = profileDir === undefined ? [] : frontProfileArgs(profileDir);
  const argv = ['--no-node-snapshot', '--expose-gc', ...profiling, join(dist, 'server.js')];
  const child = spawn(process.execPath, argv, {
    env: {
      ...process.env,
      PORT: String(port),
      API_KEYS: KEY,
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
      CHROMIUM: mode,
      PUPPETEER_EXECUTABLE_PATH: CHROMIUM_PATHS[mode],
      RATE_LIMIT: '1000000',
      QUEUE_LIMIT: '1000',
      MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? '2',
      ...(profileDir === undefined ? {} : { CPU_PROFILE_DIR: profileDir }),
      ...env,
    },
    // stdout (the service's log) is not read here: a pipe nobody drains would stall its logging. BENCH_SERVICE_LOG
    // keeps it in that file (appended), to see afterwards what the service did during a run.
    stdio: [
      'ignore',
      process.env.BENCH_SERVICE_LOG ? openSync(process.env.BENCH_SERVICE_LOG, 'a') : 'ignore',
      'inherit',
    ],
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

export const agent = new Agent({ keepAliveTimeout: 60_000, connections: 64 });

export interface ServiceSample {
  ms: number;
  status: number;
  timing: Record<string, number>;
  /** For a status other than 200: the error code and message. */
  error?: string;
}

/** Where the service's memory is, from its /metrics (MB): V8 heap used and total, memory outside the heap. */
export async function heap(base: string): Promise<Record<string, number>> {
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

export async function callService(base: string, body: unknown, key = KEY): Promise<ServiceSample> {
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

/** One GET /health; its latency in ms. */
export async function health(base: string): Promise<number> {
  const t0 = performance.now();
  const r = await request(`${base}/health`, { dispatcher: agent });
  await r.body.dump();
  return performance.now() - t0;
}
