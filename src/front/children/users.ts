// The users the front's children run as when the front runs as root: looked up
// in /etc/passwd (scripts/bootstrap.mjs creates them).
import { readFileSync } from 'node:fs';
import type { Config } from '../../common/config.js';

/** The unprivileged user executors run as, when the front runs as root. */
export interface RunAs {
  readonly user: string;
  readonly uid: number;
  readonly gid: number;
}

/** Looks a user up in /etc/passwd (no shell-out, no NSS): name:x:uid:gid:… */
export function lookupUser(name: string, passwd = '/etc/passwd'): RunAs | undefined {
  for (const line of readFileSync(passwd, 'utf8').split('\n')) {
    const f = line.split(':');
    if (f[0] === name && f.length >= 4) return { user: name, uid: Number(f[2]), gid: Number(f[3]) };
  }
  return undefined;
}

/** As root, the executor user (it must exist: scripts/bootstrap.mjs creates it); otherwise the front's own user. */
export function executorUser(config: Pick<Config, 'executorUser'>): RunAs | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const found = lookupUser(config.executorUser);
  if (found === undefined || found.uid === 0)
    throw new Error(
      `running as root, script executors need the unprivileged user "${config.executorUser}" ` +
        `(EXECUTOR_USER): run \`node scripts/bootstrap.mjs build\` as root, which creates it, or ` +
        `\`useradd --system --no-create-home --shell /usr/sbin/nologin ${config.executorUser}\``,
    );
  return found;
}
