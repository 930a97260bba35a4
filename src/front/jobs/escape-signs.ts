// Signs that code escaped into a request's slot, looked for once as its job is
// answered and put in the request's own security record, the one its key is
// scored by (docs/security.md "Monitoring and blocking"), so that the score and
// the slot's replacement read the same record:
// - stray-process: a process of the slot outside its slot process's tree (a
//   double fork reparents it): in the slot's cgroup where slots have groups,
//   else an orphan of the slot's user. It is killed on the spot.
// - kernel-lock: packets of the slot's user the kernel lock refused since the
//   slot's last job (Chromium itself sends none: docs/network.md).
// A slot process whose job shows a sign is replaced, its Chromium with it,
// before another request meets it (supervisor.ts #jobEnded).
import { readdirSync } from 'node:fs';
import type { Logger } from '../../common/log.js';
import { dying, parseStat, readOr } from '../../common/proc.js';
import type { SecurityRecord } from '../../protocol/security.js';
import type { KernelLock } from '../host/kernel-lock.js';
import { inTree, type SlotGroups } from '../cgroups/slot-groups.js';
import type { SlotProcess } from '../slots/slot-process.js';

/** At most this many of a slot user's processes outside its tree are walked up per look (the rest wait for the next). */
const MAX_STRAYS_PER_LOOK = 4096;
/** How many generations of a slot user's parents are followed to find whose it is. */
const MAX_CHAIN = 64;

export interface EscapeWatch {
  readonly logger: Logger;
  /** The slots' cgroups, when the front could make them. */
  readonly groups: SlotGroups | undefined;
  /** The kernel lock's count of each slot user's refused packets, when the lock is on. */
  readonly kernelLock: Pick<KernelLock, 'drops'> | undefined;
  /** The pids of slot `index`'s live processes (their trees are the slot's). */
  readonly rootsOf: (index: number) => number[];
}

/**
 * Looks once for signs of an escape into `proc`'s slot as its job ends, adds what
 * it finds to `record`, kills the strays, and marks `proc` to be replaced when
 * there is a sign. Never throws.
 */
export async function lookForEscape(
  w: EscapeWatch,
  proc: SlotProcess,
  record: SecurityRecord,
  requestId: string,
): Promise<void> {
  const slot = proc.slot;
  const uid = slot.runAs?.uid;
  const strays = killStrays(w, proc);
  if (strays > 0) record.add('stray-process', 'process', `${strays} process(es) of the slot outside its tree, killed`);
  const drops = uid === undefined ? undefined : await w.kernelLock?.drops(uid);
  if (drops !== undefined && drops > 0)
    record.add('kernel-lock', 'process', `${drops} packet(s) of the slot's user refused by the kernel lock`);
  if (strays > 0 || (drops ?? 0) > 0) {
    proc.escaped = true;
    w.logger.warn(
      { requestId, slot: slot.index, pid: proc.child.pid, strays, kernelLockDrops: drops ?? 0 },
      'signs of an escape into a slot; its process and Chromium are replaced before its next request',
    );
  }
}

/**
 * Kills the processes of `proc`'s slot outside its tree (its group's, or its user's orphans where there are
 * no groups) and returns how many: as a job ends, and before the next is given to the slot (what a process
 * left in its Chromium forked in between is no key's). Nothing for a slot process that is gone: what it left
 * is killed as it exits (supervisor.ts #onExit), and it is replaced anyway.
 */
export function killStrays(w: Pick<EscapeWatch, 'groups' | 'rootsOf'>, proc: SlotProcess): number {
  const slot = proc.slot;
  const uid = slot.runAs?.uid;
  if (proc.gone) return 0;
  const roots = w.rootsOf(slot.index);
  if (w.groups) return w.groups.sweep(slot.index, roots);
  return uid === undefined ? 0 : killOrphansOf(uid, roots);
}

/** The real uid of process `pid` from its status (undefined: gone). */
function uidOf(pid: number): number | undefined {
  const m = /^Uid:\s+(\d+)/m.exec(readOr(`/proc/${pid}/status`) ?? '');
  return m ? Number(m[1]) : undefined;
}

/**
 * Where a slot has no cgroup: kills every process of user `uid` outside the
 * trees of `roots` whose chain of parents of that user ends at init (an
 * orphan: what a double fork leaves). A chain that ends at a process of
 * another user is not this instance's to judge (another instance's slot
 * process of the same user, whose parent is its front; an operator's shell).
 * Returns how many. One walk of /proc, only where slots run as users of their
 * own and have no groups.
 */
export function killOrphansOf(uid: number, roots: readonly number[]): number {
  const known = new Map<number, boolean>(roots.map((r) => [r, true]));
  let walked = 0;
  let killed = 0;
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isSafeInteger(pid) || pid <= 1 || uidOf(pid) !== uid) continue;
    if (inTree(pid, known)) continue;
    if (++walked > MAX_STRAYS_PER_LOOK) break;
    if (!orphaned(pid, uid)) continue;
    // SECURITY: killed only while still of the slot's user: a pid reused since is left alone. One already dying
    // (a dead Chromium's helpers its slot killed) is no stray.
    if (uidOf(pid) !== uid || dying(pid)) continue;
    try {
      process.kill(pid, 'SIGKILL');
      killed++;
    } catch {
      // Gone meanwhile.
    }
  }
  return killed;
}

/** Whether `pid`'s chain of parents of user `uid` ends at init (pid 1). */
function orphaned(pid: number, uid: number): boolean {
  let p = pid;
  for (let i = 0; i < MAX_CHAIN; i++) {
    const stat = readOr(`/proc/${p}/stat`);
    if (stat === undefined) return false;
    const ppid = parseStat(stat).ppid;
    if (ppid === 1) return true;
    if (ppid <= 0 || uidOf(ppid) !== uid) return false;
    p = ppid;
  }
  return false;
}
