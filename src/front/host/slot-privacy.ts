// What keeps one tenant of a slot from the next, where the front runs as root:
//
// - Nothing of a slot is readable by its user's other processes. The kernel
//   makes a process non-dumpable (no /proc/<pid>/mem or environ, no ptrace by
//   the same uid) when it drops from root to a user itself, and when it execs
//   a file its user cannot read; each exec of a readable one makes it dumpable
//   again. So a slot process starts as root and drops to its slot's user first
//   thing (src/slot/drop-user.ts), and its Chromium (and the shell that puts
//   Chromium in its cgroup) is exec'd from execute-only copies (root's, mode
//   0711). Chromium's own user-namespace sandbox cannot start non-dumpable (a
//   child must write its own /proc/self/uid_map, which is then root's):
//   Chromium takes its SUID sandbox helper instead (chrome-sandbox, Debian's
//   chromium-sandbox), found next to the copy, whose processes are non-dumpable too.
//   The helper costs the browser a fork per renderer it starts, so SLOT_NON_DUMPABLE=off
//   lets an operator keep the readable binary instead (docs/performance.md).
// - A slot's writable places are its own and bounded: each slot process starts
//   in a mount namespace of its own (unshare), where a tmpfs of
//   slotTmpMb(PAGE_MEMORY_MB) replaces /tmp, /var/tmp, /dev/shm and /run/lock.
//   Its pages are charged to the memory cgroup of the process that writes them
//   (the slot's); the slot empties it after each job but for its live
//   Chromium's profile (src/slot/tmp-empty.ts), and it is gone with the slot
//   process's namespace.
//
// Where either cannot be had, /health and the start's log say why, and the slot runs without it.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Logger } from '../../common/log.js';
import { lacking, privileges, type Privileges } from './privileges.js';

/** Where the execute-only copies are kept, one directory per Chromium build (copied once, at the first start). */
export const EXEC_ONLY_DIR = '/var/lib/pagescript/exec-only';
/** Chromium's SUID sandbox helper, looked for next to the Chromium it serves. */
const SUID_HELPER = 'chrome-sandbox';
/** What a slot's tmpfs holds beyond Chromium's shared memory: its profile, what its own files need. */
export const SLOT_TMP_EXTRA_MB = 64;
/** The most files and directories in a slot's tmpfs (Chromium's profile and its open shared memory: hundreds). */
export const SLOT_TMP_INODES = 16_384;

/**
 * A slot's tmpfs, in MiB: Chromium runs with --disable-dev-shm-usage, so a
 * page's shared memory (up to PAGE_MEMORY_MB) is there, with its profile.
 */
export function slotTmpMb(pageMemoryMb: number): number {
  return pageMemoryMb + SLOT_TMP_EXTRA_MB;
}

/** Execute-only copies for a slot's Chromium: the browser and the shell that puts it in its cgroup. */
export interface ExecOnly {
  readonly chromium: string;
  readonly shell: string;
}

/** How a slot process is started in its mount namespace: the commands, found at the front's start. */
export interface PrivateTmp {
  readonly unshare: string;
  readonly mount: string;
  readonly sizeMb: number;
}

export interface SlotPrivacy {
  /** Each slot process starts as root and drops to its user itself (non-dumpable). */
  readonly dropInProcess: boolean;
  readonly execOnly: ExecOnly | undefined;
  readonly tmp: PrivateTmp | undefined;
  /** /health's slotNonDumpable and slotPrivateTmp: `on`, or `off: <why>`. */
  readonly nonDumpable: string;
  readonly privateTmp: string;
}

/** The places a slot's tmpfs replaces in its mount namespace. */
const SLOT_TMP_PLACES = ['/tmp', '/var/tmp', '/dev/shm', '/run/lock'] as const;

/** Whether `path` (resolved, where it exists) is `dir` or under it. */
function isUnder(path: string, dir: string): boolean {
  const real = existsSync(path) ? realpathSync(path) : path;
  return [path, real].some((p) => p === dir || p.startsWith(`${dir}/`));
}

/** The first of `names` that exists, with its full path. */
function which(names: readonly string[]): string | undefined {
  return names.find((p) => existsSync(p));
}

/**
 * The shell script a slot process's start passes through, as root in its new
 * mount namespace: one tmpfs over /tmp, bound over the other shared writable
 * places, then the slot process itself ("$@").
 */
export function privateTmpScript(tmp: PrivateTmp): string {
  const opts = `size=${tmp.sizeMb}m,nr_inodes=${SLOT_TMP_INODES},mode=1777,nosuid,nodev`;
  return [
    `${tmp.mount} -t tmpfs -o ${opts} pagescript-slot /tmp || exit 111`,
    `for d in ${SLOT_TMP_PLACES.slice(1).join(' ')}; do if [ -d "$d" ]; then ${tmp.mount} --bind /tmp "$d" || exit 111; fi; done`,
    'exec "$@"',
  ].join('\n');
}

/** The command a slot process is spawned through (the executable and the arguments before node's own). */
export function privateTmpCommand(tmp: PrivateTmp): { execPath: string; prefix: string[] } {
  return {
    execPath: tmp.unshare,
    // SECURITY: private propagation: nothing mounted here reaches the host's namespace, nor the host's here.
    prefix: ['--mount', '--propagation', 'private', '--', '/bin/sh', '-c', privateTmpScript(tmp), 'pagescript-slot'],
  };
}

/** Whether a slot's mount namespace can be made here (a tmpfs mounted in one made for the check). */
function checkPrivateTmp(tmp: PrivateTmp): string | undefined {
  const r = spawnSync(tmp.unshare, [...privateTmpCommand({ ...tmp, sizeMb: 1 }).prefix, '/bin/true'], {
    encoding: 'utf8',
    timeout: 10_000,
  });
  if (r.status === 0) return undefined;
  return `a mount namespace with a tmpfs could not be made (${(r.stderr || String(r.error ?? r.status)).trim().split('\n')[0]})`;
}

/**
 * The execute-only copy of `chromiumPath` (and of the shell), made once per
 * Chromium build under EXEC_ONLY_DIR: the binary copied with mode 0711, every
 * other file of its directory (resources, libraries, the SUID helper) linked
 * to. SECURITY: every directory of it is root's and writable by root alone;
 * a copy found there is taken as it is, since only root could have made it.
 */
export function execOnlyCopy(chromiumPath: string, root = EXEC_ONLY_DIR): ExecOnly {
  const real = realpathSync(chromiumPath);
  const src = dirname(real);
  const helper = join(src, SUID_HELPER);
  const h = existsSync(helper) ? statSync(helper) : undefined;
  if (!h || h.uid !== 0 || (h.mode & 0o4000) === 0)
    throw new Error(
      `Chromium's SUID sandbox helper is not installed (${helper}, setuid root; Debian: chromium-sandbox): Chromium's own sandbox does not start non-dumpable without it`,
    );
  const st = statSync(real);
  const key = `${createHash('sha256').update(real).digest('hex').slice(0, 12)}-${st.size}-${Math.floor(st.mtimeMs)}`;
  for (const d of [dirname(root), root]) {
    mkdirSync(d, { recursive: true, mode: 0o711 });
    const s = lstatSync(d);
    if (!s.isDirectory() || s.uid !== 0 || (s.mode & 0o022) !== 0)
      throw new Error(`${d} must be a directory of root's that no one else may write`);
  }
  // An image ships its copy in root/image (the Dockerfile makes it: its root file system is read-only at run
  // time), laid out as below: taken as it is when it is of this build, nothing is copied.
  const shipped = { chromium: join(root, 'image', basename(real)), shell: join(root, 'image', 'sh') };
  if (
    existsSync(shipped.chromium) &&
    existsSync(shipped.shell) &&
    isExecOnly(shipped.chromium) &&
    isExecOnly(shipped.shell) &&
    statSync(shipped.chromium).size === st.size
  )
    return shipped;
  const dir = join(root, key);
  const copy = { chromium: join(dir, basename(real)), shell: join(dir, 'sh') };
  if (existsSync(copy.chromium) && statSync(copy.chromium).size === st.size && existsSync(copy.shell)) return copy;
  const tmp = join(root, `.making-${process.pid}-${Date.now()}`);
  mkdirSync(tmp, { mode: 0o711 });
  try {
    for (const name of readdirSync(src))
      if (name !== basename(real) && name !== 'chromium' && name !== 'chromium-headless-shell')
        symlinkSync(join(src, name), join(tmp, name));
    copyFileSync(real, join(tmp, basename(real)));
    copyFileSync(realpathSync('/bin/sh'), join(tmp, 'sh'));
    for (const f of [basename(real), 'sh']) chmodSync(join(tmp, f), 0o711);
    chmodSync(tmp, 0o711);
    try {
      renameSync(tmp, dir);
    } catch (e) {
      // Another start made it meanwhile: theirs is taken.
      if (!existsSync(copy.chromium)) throw e;
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  // Copies of other builds of the same Chromium are of no more use.
  const prefix = key.slice(0, 13);
  for (const name of readdirSync(root))
    if (name.startsWith(prefix) && name !== key) rmSync(join(root, name), { recursive: true, force: true });
  return copy;
}

/** Whether a file is root's, executable and neither readable nor writable by anyone else. */
function isExecOnly(path: string): boolean {
  const s = statSync(path);
  return s.isFile() && s.uid === 0 && (s.mode & 0o111) === 0o111 && (s.mode & 0o066) === 0;
}

/**
 * What the front can give its slots here, said once at start. Only as root:
 * otherwise every slot keeps the front's user and nothing of this applies.
 */
export function prepareSlotPrivacy(
  opts: {
    readonly executablePath: string;
    readonly pageMemoryMb: number;
    readonly asRoot: boolean;
    /** SLOT_NON_DUMPABLE: false keeps Chromium's readable binary and its user-namespace sandbox. */
    readonly nonDumpable?: boolean;
    readonly privileges?: Privileges;
  },
  logger: Logger,
): SlotPrivacy {
  if (!opts.asRoot) {
    const off = 'off: the service is not root';
    return { dropInProcess: false, execOnly: undefined, tmp: undefined, nonDumpable: off, privateTmp: off };
  }
  // Root of a container's own user namespace has what the runtime gave it: what is missing is named.
  const p = opts.privileges ?? privileges();
  const helperLacks = p.hostRoot ? [] : lacking(p, ['SYS_ADMIN', 'SYS_CHROOT'], 'bounding');
  const mountLacks = p.hostRoot ? [] : lacking(p, ['SYS_ADMIN']);
  let execOnly: ExecOnly | undefined;
  let nonDumpable = 'on';
  const suid = readFileSync('/proc/sys/fs/suid_dumpable', 'utf8').trim();
  if (opts.nonDumpable === false) nonDumpable = 'off: SLOT_NON_DUMPABLE=off';
  else if (suid === '1') nonDumpable = 'off: fs.suid_dumpable is 1 (every process may be dumped)';
  else if (!p.hostRoot && (p.noNewPrivs || helperLacks.length > 0))
    nonDumpable = `off: Chromium stays readable: its SUID sandbox helper cannot run here (${
      p.noNewPrivs ? 'no_new_privs is set' : `no ${helperLacks.join(', ')} in the bounding set`
    })`;
  else
    try {
      execOnly = execOnlyCopy(opts.executablePath);
    } catch (e) {
      nonDumpable = `off: Chromium stays readable: ${e instanceof Error ? e.message : String(e)}`;
    }
  let tmp: PrivateTmp | undefined;
  let privateTmp = 'on';
  const unshare = which(['/usr/bin/unshare', '/bin/unshare']);
  const mount = which(['/usr/bin/mount', '/bin/mount']);
  const hidden = SLOT_TMP_PLACES.find((p) => isUnder(opts.executablePath, p));
  if (mountLacks.length > 0) privateTmp = `off: no ${mountLacks.join(', ')} (a mount namespace per slot)`;
  else if (!unshare || !mount) privateTmp = 'off: unshare or mount (util-linux) is not installed';
  else if (hidden !== undefined)
    privateTmp = `off: Chromium (${opts.executablePath}) is under ${hidden}, which a slot's own tmpfs would hide`;
  else {
    tmp = { unshare, mount, sizeMb: slotTmpMb(opts.pageMemoryMb) };
    const why = checkPrivateTmp(tmp);
    if (why !== undefined) {
      tmp = undefined;
      privateTmp = `off: ${why}`;
    }
  }
  if (nonDumpable === 'on' && privateTmp === 'on')
    logger.info(
      { chromium: execOnly?.chromium, tmpMb: tmp?.sizeMb },
      "each slot's processes are non-dumpable and its /tmp, /var/tmp, /dev/shm are its own",
    );
  else logger.warn({ slotNonDumpable: nonDumpable, slotPrivateTmp: privateTmp }, 'slots run with less privacy here');
  // As root, always: the mount namespace is made as root, before the drop.
  return { dropInProcess: true, execOnly, tmp, nonDumpable, privateTmp };
}
