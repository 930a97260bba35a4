// The code every isolate starts with: the runtime (sandbox/runtime.ts) and the
// cheerio bundle, both built by tsup into dist/sandbox/. Read once per process;
// V8's code cache, made by the first isolate, lets later isolates skip parsing.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type ivm from 'isolated-vm';

export interface SandboxSource {
  readonly filename: string;
  readonly code: string;
  cachedData?: ivm.ExternalCopy<ArrayBuffer>;
}

export interface SandboxBundle {
  readonly runtime: SandboxSource;
  readonly cheerio: SandboxSource;
}

/** Finds dist/sandbox from here, whether running from src/ (tests) or dist/ (service). */
function findSandboxDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const candidate = join(dir, 'dist', 'sandbox');
    if (existsSync(join(candidate, 'runtime.global.js'))) return candidate;
    if (existsSync(join(dir, 'sandbox', 'runtime.global.js'))) return join(dir, 'sandbox');
    dir = dirname(dir);
  }
  throw new Error('dist/sandbox/runtime.global.js is missing: run `npm run build` (npm start and npm test build it)');
}

/** What compileScript sets on the script it returns (isolated-vm's types omit it). */
interface CacheResult {
  cachedData?: ivm.ExternalCopy<ArrayBuffer>;
  cachedDataRejected?: boolean;
}

let loaded: SandboxBundle | undefined;

export function loadBundle(): SandboxBundle {
  if (loaded) return loaded;
  const dir = findSandboxDir();
  loaded = {
    runtime: { filename: 'pagescript-runtime.js', code: readFileSync(join(dir, 'runtime.global.js'), 'utf8') },
    cheerio: { filename: 'cheerio.js', code: readFileSync(join(dir, 'cheerio.global.js'), 'utf8') },
  };
  return loaded;
}

/**
 * Compiles a bundle file in the isolate once, using V8's code cache when there is
 * one and making it when there is none. A cache V8 rejects (another V8 build or
 * flags) still gives a compiled script, from the source: that script is used,
 * the rejected cache is released, and the next compile makes a new one.
 */
export async function compileCached(isolate: ivm.Isolate, src: SandboxSource): Promise<ivm.Script> {
  const cached = src.cachedData;
  const script = await isolate.compileScript(
    src.code,
    cached ? { filename: src.filename, cachedData: cached } : { filename: src.filename, produceCachedData: true },
  );
  keepCache(src, cached, script as CacheResult);
  return script;
}

/** compileCached for a caller inside a synchronous callback from the isolate (cheerio's first use). */
export function compileCachedSync(isolate: ivm.Isolate, src: SandboxSource): ivm.Script {
  const cached = src.cachedData;
  const script = isolate.compileScriptSync(
    src.code,
    cached ? { filename: src.filename, cachedData: cached } : { filename: src.filename, produceCachedData: true },
  );
  keepCache(src, cached, script as CacheResult);
  return script;
}

/** After a compile: keeps a cache just made; drops one V8 rejected. */
function keepCache(src: SandboxSource, used: SandboxSource['cachedData'], result: CacheResult): void {
  if (used === undefined) {
    if (result.cachedData && src.cachedData === undefined) src.cachedData = result.cachedData;
    else result.cachedData?.release();
    return;
  }
  if (result.cachedDataRejected && src.cachedData === used) {
    delete src.cachedData;
    used.release();
  }
}

/** Releases the code caches (at shutdown), so no isolated-vm handle outlives the service. */
export function releaseBundleCache(): void {
  if (!loaded) return;
  for (const src of [loaded.runtime, loaded.cheerio]) {
    src.cachedData?.release();
    delete src.cachedData;
  }
}
