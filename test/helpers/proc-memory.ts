// Reads another process's memory (/proc/<pid>/maps and /proc/<pid>/mem) to
// find whether it holds a string: what a process that shares its user (ptrace,
// /proc/<pid>/mem) could read of it. Needs root, or the same user and ptrace
// permission; undefined when the memory cannot be read.
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';

const CHUNK_BYTES = 8 * 1024 * 1024;

/** Whether process `pid` holds `text` (as one-byte Latin-1 or UTF-16, V8's two string forms); undefined if unreadable. */
export function memoryHolds(pid: number, text: string): boolean | undefined {
  const needles = [Buffer.from(text, 'latin1'), Buffer.from(text, 'utf16le')];
  const overlap = Math.max(...needles.map((n) => n.length)) - 1;
  let maps: string;
  let fd: number;
  try {
    maps = readFileSync(`/proc/${pid}/maps`, 'utf8');
    fd = openSync(`/proc/${pid}/mem`, 'r');
  } catch {
    return undefined;
  }
  let readAny = false;
  try {
    const buffer = Buffer.alloc(CHUNK_BYTES + overlap);
    for (const line of maps.split('\n')) {
      const m = /^([0-9a-f]+)-([0-9a-f]+) r/.exec(line);
      if (!m || line.endsWith('[vvar]') || line.endsWith('[vsyscall]')) continue;
      const start = BigInt(`0x${m[1]}`);
      const end = BigInt(`0x${m[2]}`);
      for (let at = start; at < end; at += BigInt(CHUNK_BYTES)) {
        const want = Number(end - at < BigInt(CHUNK_BYTES + overlap) ? end - at : BigInt(CHUNK_BYTES + overlap));
        let n: number;
        try {
          n = readSync(fd, buffer, 0, want, at);
        } catch {
          break; // a region that cannot be read (guard pages, device memory)
        }
        readAny ||= n > 0;
        const view = buffer.subarray(0, n);
        if (needles.some((needle) => view.includes(needle))) return true;
      }
    }
  } finally {
    closeSync(fd);
  }
  return readAny ? false : undefined;
}
