// How much memory the service may use, when SERVICE_MEMORY_MB does not say:
// the container's limit (cgroup v2 memory.max, cgroup v1 memory.limit_in_bytes,
// or Node's process.constrainedMemory()), else the machine's memory. Read once,
// by loadConfig.
import { readFileSync } from 'node:fs';
import { totalmem } from 'node:os';

/** A cgroup with no limit reports about 2^63; anything above a pebibyte is "no limit". */
const NO_LIMIT_BYTES = 2 ** 50;

export interface MemorySources {
  readFile(path: string): string | undefined;
  constrainedMemory(): number | undefined;
  totalMemory(): number;
}

export const systemMemorySources: MemorySources = {
  readFile(path) {
    try {
      return readFileSync(path, 'utf8');
    } catch {
      return undefined;
    }
  },
  constrainedMemory: () => process.constrainedMemory(),
  totalMemory: () => totalmem(),
};

function limitIn(text: string | undefined): number | undefined {
  const v = text?.trim();
  if (v === undefined || v === '' || v === 'max') return undefined;
  const n = Number(v);
  return Number.isFinite(n) && n > 0 && n < NO_LIMIT_BYTES ? n : undefined;
}

/** Our cgroup's memory limit in bytes, from /proc/self/cgroup: v2 first, then v1's memory controller. */
export function cgroupMemoryLimit(src: MemorySources): number | undefined {
  const own = src.readFile('/proc/self/cgroup') ?? '';
  let found: number | undefined;
  for (const line of own.split('\n')) {
    const [, controllers, path] = /^\d+:([^:]*):(.*)$/.exec(line.trim()) ?? [];
    if (path === undefined) continue;
    const rel = path === '/' ? '' : path;
    const limit =
      controllers === ''
        ? limitIn(src.readFile(`/sys/fs/cgroup${rel}/memory.max`))
        : controllers?.split(',').includes('memory')
          ? limitIn(src.readFile(`/sys/fs/cgroup/memory${rel}/memory.limit_in_bytes`))
          : undefined;
    if (limit !== undefined) found = Math.min(found ?? limit, limit);
  }
  return found;
}

/** The service's memory in MiB: the container's limit, else the machine's memory. */
export function detectServiceMemoryMb(src: MemorySources = systemMemorySources): number {
  const machine = src.totalMemory();
  const candidates = [cgroupMemoryLimit(src), limitIn(String(src.constrainedMemory() ?? '')), machine].filter(
    (n): n is number => n !== undefined && n > 0,
  );
  return Math.floor(Math.min(...candidates) / 2 ** 20);
}

/**
 * A process's anonymous and shared resident memory (RssAnon + RssShmem of
 * /proc/<pid>/status), in bytes: what it holds that the kernel cannot drop as
 * page cache. The same measure as a Chromium process's (src/slot/browser/page-memory.ts).
 * 0 when the process is gone.
 */
export function residentBytes(pid: number | 'self'): number {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return 0;
  }
  const kb = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
  return (kb('RssAnon') + kb('RssShmem')) * 1024;
}
