// Imported first by the front's entry point (server.ts). The image starts as
// root so that, as root of a user namespace of its own (podman --userns, a pod
// with hostUsers: false), it runs each slot as a user of its own as on a host.
// Started as root of the host's own user namespace (Docker's default), that
// root is the machine's: the front drops to the image's one unprivileged user
// (DROP_HOST_ROOT_TO, which the Dockerfile sets) before anything else runs, and
// runs as any non-root service does. On a host nothing sets it: root stays root.
import { dropToUser } from '../../common/drop-user.js';
import { lookupUser, type RunAs } from './users.js';
import { privileges, type Privileges } from './privileges.js';

/**
 * The user to drop to: DROP_HOST_ROOT_TO when it is set and the process is the
 * machine's root; undefined otherwise. Throws when that user does not exist or is root.
 */
export function hostRootDropTarget(
  env: NodeJS.ProcessEnv,
  p: Pick<Privileges, 'hostRoot'>,
  passwd = '/etc/passwd',
): RunAs | undefined {
  const name = (env.DROP_HOST_ROOT_TO ?? '').trim();
  if (name === '' || !p.hostRoot) return undefined;
  const user = lookupUser(name, passwd);
  if (user === undefined || user.uid === 0 || user.gid === 0)
    throw new Error(`DROP_HOST_ROOT_TO: "${name}" is not an unprivileged user of /etc/passwd`);
  return user;
}

/** The user the front dropped to from the machine's root (for the start's log), if it did. */
export let droppedFromHostRoot: RunAs | undefined;

function dropHostRoot(): void {
  const target = hostRootDropTarget(process.env, privileges());
  if (target === undefined) return;
  // SECURITY: every uid changed and no capability kept, or the front does not start.
  if (!dropToUser(target.uid, target.gid)) {
    process.stderr.write(
      `pagescript: started as the machine's root (no user namespace) and could not drop to ${target.user} ` +
        `(uid ${target.uid}): give the container CAP_SETUID and CAP_SETGID, or run it as ${target.uid} ` +
        `or in a user namespace of its own (docs/container.md)\n`,
    );
    process.exit(77);
  }
  droppedFromHostRoot = target;
}

dropHostRoot();
