// The front's side of the CPU pause (src/slot/browser/page-memory.ts): an executor
// stops the lane of a request past its CPU budget (browser and all) for a
// moment while other requests run, and continues it when that ends. An
// executor that is killed (SIGKILL, a crash) cannot, and a stopped browser
// cannot see that its pipe closed: the lane would stay stopped for ever,
// holding its memory (seen: a test fails without this). So when an executor
// exits, the front continues what that executor left stopped; its Chromium
// then sees the closed pipe and exits as usual.
import { readdirSync } from 'node:fs';
import { parseStat, readOr } from '../../common/proc.js';

/**
 * SIGCONT to every stopped process in the given process groups (each lane's
 * Chromium leads one) whose real uid is `uid`; returns how many were continued.
 * SECURITY: the groups come from the executor's own status reports, which a
 * compromised executor could forge; only stopped processes of the executor's
 * own user are touched, one by one (never kill(-pgid), never a group of 0 or 1),
 * and a continue is all that is sent.
 */
export function continueStopped(groups: readonly number[], uid: number, proc = '/proc'): number {
  const wanted = new Set(groups.filter((g) => Number.isSafeInteger(g) && g > 1));
  if (wanted.size === 0) return 0;
  let continued = 0;
  let entries: string[];
  try {
    entries = readdirSync(proc);
  } catch {
    return 0;
  }
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    const stat = readOr(`${proc}/${name}/stat`);
    if (stat === undefined) continue;
    const { state, pgrp } = parseStat(stat);
    if (state !== 'T' || !wanted.has(pgrp)) continue;
    const realUid = /^Uid:\s+(\d+)/m.exec(readOr(`${proc}/${name}/status`) ?? '')?.[1];
    if (realUid === undefined || Number(realUid) !== uid) continue;
    try {
      process.kill(Number(name), 'SIGCONT');
      continued++;
    } catch {
      // gone meanwhile
    }
  }
  return continued;
}
