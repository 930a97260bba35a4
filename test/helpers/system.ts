// What tests and the bench ask of the machine: a free loopback port, and processes read from /proc.
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** A loopback port nothing listens on (free when asked). */
export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/**
 * The fields of /proc/<pid>/stat after the command name, or undefined when the
 * process is gone: [0] state, [1] parent pid, [11..14] utime, stime, cutime,
 * cstime in clock ticks.
 */
export function statFields(pid: number): string[] | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return text.slice(text.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** The state letter and parent pid of a process, or undefined when it is gone. */
function stat(pid: number): { state: string; ppid: number } | undefined {
  const fields = statFields(pid);
  return fields && { state: fields[0] ?? '', ppid: Number(fields[1]) };
}

/** Every process descended from pid (Chromium and its helpers). */
export function descendants(pid: number): number[] {
  const parent = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const s = stat(Number(name));
    if (s) parent.set(Number(name), s.ppid);
  }
  const out: number[] = [];
  const walk = (p: number): void => {
    for (const [child, pp] of parent) {
      if (pp === p) {
        out.push(child);
        walk(child);
      }
    }
  };
  walk(pid);
  return out;
}

/** Alive and not a zombie waiting to be reaped. */
export function alive(pid: number): boolean {
  const s = stat(pid);
  return s !== undefined && s.state !== 'Z';
}
