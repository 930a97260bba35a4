// Slot users of the kernel lock's own tests: a lock on the usual slot users
// would refuse the traffic of another checkout's service running side by side
// on this machine (an older one whose guard listens outside EGRESS_PORTS), so
// these tests lock users no other service runs as (SLOT_USER_PREFIX).
import { spawnSync } from 'node:child_process';
import { lookupUser } from '../../src/front/host/users.js';

export const LOCK_USER_PREFIX = 'pagescript-lock-';
/** Above the slot users' 59000-59255 (scripts/bootstrap.mjs). */
const LOCK_UID_BASE = 59_900;
/** The slot users of test/e2e/front/slot-escape.test.ts, whose counts of refused packets no other test moves. */
export const ESCAPE_USER_PREFIX = 'pagescript-esc-';
const ESCAPE_UID_BASE = 59_950;

/** Creates the lock tests' users as scripts/bootstrap.mjs creates the slot users (once; they stay). */
export function ensureLockUsers(count: number, prefix = LOCK_USER_PREFIX): void {
  const base = prefix === ESCAPE_USER_PREFIX ? ESCAPE_UID_BASE : LOCK_UID_BASE;
  for (let i = 0; i < count; i++) {
    const user = `${prefix}${i}`;
    if (lookupUser(user)) continue;
    const r = spawnSync(
      'useradd',
      ['--system', '--no-create-home', '--home-dir', '/nonexistent', '--shell', '/usr/sbin/nologin'].concat([
        '--uid',
        String(base + i),
        '--user-group',
        user,
      ]),
      { stdio: 'inherit' },
    );
    if (r.status !== 0) throw new Error(`useradd ${user} failed (${r.status})`);
  }
}
