// The users the front's children run as when the front runs as root: looked up
// in /etc/passwd (scripts/bootstrap.mjs creates them). Each request slot has a
// user of its own (slotUsers), so that code that escaped into one slot's
// process or Chromium cannot ptrace, signal or read the memory of another's.
import { readFileSync } from 'node:fs';
import type { Config } from '../../common/config.js';
import { hasCap, privileges, type Privileges } from './privileges.js';

/** The unprivileged user a child runs as, when the front runs as root. */
export interface RunAs {
  readonly user: string;
  readonly uid: number;
  readonly gid: number;
}

/**
 * The first slot user's uid: slot i's user has SLOT_UID_BASE + i (scripts/bootstrap.mjs
 * gives them so; test/unit/front/slot-users.test.ts holds the two to the same numbers).
 * At the top of Debian's range for normal users (1000-59999), below the ranges it reserves.
 */
export const SLOT_UID_BASE = 59_000;
/** How many slot users scripts/bootstrap.mjs creates unless told (SLOT_USERS=N when it runs). */
export const DEFAULT_SLOT_USERS = 64;

/** Looks a user up in /etc/passwd (no shell-out, no NSS): name:x:uid:gid:… */
export function lookupUser(name: string, passwd = '/etc/passwd'): RunAs | undefined {
  for (const line of readFileSync(passwd, 'utf8').split('\n')) {
    const f = line.split(':');
    if (f[0] === name && f.length >= 4) return { user: name, uid: Number(f[2]), gid: Number(f[3]) };
  }
  return undefined;
}

/**
 * Why the front cannot give its children users of their own here, or undefined
 * when it can: root (of the machine, or of a container's own user namespace)
 * with CAP_SETUID and CAP_SETGID.
 */
export function whyNoUsers(p: Pick<Privileges, 'root' | 'effective'> = privileges()): string | undefined {
  if (!p.root) return 'not root';
  const lacks = (['SETUID', 'SETGID'] as const).filter((c) => !hasCap(p.effective, c));
  return lacks.length > 0 ? `no ${lacks.join(', ')}` : undefined;
}

/** Slot i's user name. */
export function slotUserName(config: Pick<Config, 'slotUserPrefix'>, slot: number): string {
  return `${config.slotUserPrefix}${slot}`;
}

/**
 * As root, the user of each request slot (MAX_CONCURRENCY of them), slot i's at
 * index i; otherwise undefined (every child keeps the front's user). The one
 * list of "this instance's slot users": whatever must match them (the egress
 * process's peer check, a firewall rule) takes it from here.
 * SECURITY: each must exist, be unprivileged and be no other slot's; the service
 * refuses to start otherwise, naming how many slots were asked and how many users exist.
 */
export function slotUsers(
  config: Pick<Config, 'slotUserPrefix' | 'maxConcurrency'>,
  passwd = '/etc/passwd',
): RunAs[] | undefined {
  if (whyNoUsers() !== undefined) return undefined;
  const users: RunAs[] = [];
  const uids = new Set<number>();
  for (let i = 0; i < config.maxConcurrency; i++) {
    const name = slotUserName(config, i);
    const found = lookupUser(name, passwd);
    if (found === undefined) {
      const last = slotUserName(config, i - 1);
      throw new Error(
        `running as root, each of the MAX_CONCURRENCY=${config.maxConcurrency} request slots needs an unprivileged ` +
          `user of its own, but only ${i} exist (${i > 0 ? `${slotUserName(config, 0)}..${last}` : 'none'}; ` +
          `"${name}" is missing): run \`SLOT_USERS=${config.maxConcurrency} node scripts/bootstrap.mjs build\` as root, ` +
          `which creates them (${DEFAULT_SLOT_USERS} unless told, uids from ${SLOT_UID_BASE}), or lower MAX_CONCURRENCY`,
      );
    }
    if (found.uid === 0 || !Number.isSafeInteger(found.uid) || uids.has(found.uid))
      throw new Error(`the slot user "${name}" must be unprivileged and of no other slot (uid ${found.uid})`);
    uids.add(found.uid);
    users.push(found);
  }
  return users;
}
