// Imported first by the slot process's entry point (main.ts). Where the front
// runs as root it starts each slot process as root (in the slot's own mount
// namespace, src/front/host/slot-privacy.ts) with `--run-as=<uid>:<gid>`,
// and the process drops to its slot's user here, before it reads any message.
// SECURITY: the kernel makes a process that changes its user itself
// non-dumpable: no process of the slot's user (code a tenant left behind) can
// read its memory or environment, or ptrace it, as it serves later tenants. A
// process spawned straight as its user (spawn's uid option) execs node after the
// change, and is dumpable.
import { dropToUser } from '../common/drop-user.js';

const RUN_AS = '--run-as=';

/** The uid and gid in a `--run-as=<uid>:<gid>` argument, when the process was given one. */
export function runAsArgument(argv: readonly string[]): { uid: number; gid: number } | undefined {
  const arg = argv.find((a) => a.startsWith(RUN_AS));
  const m = arg === undefined ? null : /^(\d+):(\d+)$/.exec(arg.slice(RUN_AS.length));
  return m ? { uid: Number(m[1]), gid: Number(m[2]) } : undefined;
}

const runAs = runAsArgument(process.argv);
// SECURITY: every uid and gid changed and no capability kept; otherwise the process ends here.
if (runAs !== undefined && !dropToUser(runAs.uid, runAs.gid)) {
  process.stderr.write(`pagescript slot process ${process.pid}: could not drop to user ${runAs.uid}\n`);
  process.exit(70);
}
