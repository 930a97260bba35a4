// A service's slot groups in a cgroup v1 hierarchy other than `cpu` (cpuacct,
// pids): `<the front's cgroup there>/pagescript-<pid>-<n>/slot-<i>`, named as
// the CPU groups are, made at start, removed at close, and what a service that
// is gone left removed at the next start.
import { existsSync, mkdirSync, readdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A service's directory under a hierarchy: `pagescript-<front's pid>-<n>`; m[1] is the pid. */
export const SERVICE_DIR = /^pagescript-(\d+)(-\d+)?$/;

/** The directories under `dir` of services whose front is gone (killed before it could remove them). */
export function staleServices(dir: string): string[] {
  return readdirSync(dir).filter((name) => {
    const m = SERVICE_DIR.exec(name);
    return m !== null && !existsSync(`/proc/${m[1]}`);
  });
}

/**
 * Makes `<dir>/<name>/slot-<i>` for `slots` slots, after removing what gone
 * services left under `dir` (their CPU groups' sweep killed what was in them).
 * Returns the service's directory; throws (having removed what it made) when it cannot.
 */
export function makeParallel(dir: string, name: string, slots: number): string {
  for (const stale of staleServices(dir)) removeTree(join(dir, stale));
  const base = join(dir, name);
  try {
    mkdirSync(base);
    for (let i = 0; i < slots; i++) mkdirSync(join(base, `slot-${i}`));
  } catch (e) {
    removeTree(base);
    throw e;
  }
  return base;
}

/** Places process `pid` in the group `dir`; false when it could not. */
export function placeIn(dir: string, pid: number): boolean {
  try {
    writeFileSync(join(dir, 'cgroup.procs'), String(pid));
    return true;
  } catch {
    return false;
  }
}

/** Removes `base` and its slot groups; false when one still has processes (or cannot be removed). */
export function removeTree(base: string): boolean {
  if (!existsSync(base)) return true;
  try {
    for (const name of readdirSync(base, { withFileTypes: true }))
      if (name.isDirectory()) rmdirSync(join(base, name.name));
    rmdirSync(base);
    return true;
  } catch {
    return false;
  }
}
