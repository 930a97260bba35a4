// Dropping a process from root to one unprivileged user, in-process: the front
// from the machine's root (src/front/host/host-root-drop.ts) and each slot process
// to its slot's user (src/slot/drop-user.ts).
import { readFileSync } from 'node:fs';

/**
 * Drops to `uid`:`gid` with no supplementary groups. SECURITY: judged by what
 * the kernel says afterwards, not by whether the calls threw: true only when
 * every uid and gid is the target's, no group is kept, and no capability is
 * effective or permitted.
 */
export function dropToUser(uid: number, gid: number): boolean {
  if (uid === 0 || gid === 0) return false;
  try {
    process.setgroups?.([]);
    process.setgid?.(gid);
    process.setuid?.(uid);
  } catch {
    // Judged below.
  }
  const status = readFileSync('/proc/self/status', 'utf8');
  const field = (f: string): string => new RegExp(`^${f}:[ \\t]*(.*)$`, 'm').exec(status)?.[1]?.trim() ?? '';
  const all = (f: string, id: number): boolean =>
    field(f)
      .split(/\s+/)
      .every((x) => Number(x) === id);
  return (
    all('Uid', uid) &&
    all('Gid', gid) &&
    field('Groups') === '' &&
    /^0+$/.test(field('CapEff')) &&
    /^0+$/.test(field('CapPrm'))
  );
}
