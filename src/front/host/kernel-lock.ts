// The kernel lock: below the egress guard, the kernel refuses every packet a
// slot's user (its process and its Chromium) sends, but TCP to the guard's ports
// on 127.0.0.1 (EGRESS_PORTS). Code that escaped the isolate or Chromium's
// renderer sandbox into a process of a slot's user can then reach nothing the
// guard did not check: not the cloud metadata, the intranet, nor this machine's
// own services. nftables, owner match on the socket (meta skuid), in a table of
// this instance's own made before any slot runs and removed after the last one
// stopped. docs/network.md ("The kernel lock") says why a port range and not a
// set updated at each bind.
import { execFile, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Config } from '../../common/config.js';
import type { Logger } from '../../common/log.js';
import { parseStat, readOr } from '../../common/proc.js';
import { hasCap, privileges, type Privileges } from './privileges.js';
import { NftReader } from './nft-reader.js';

/** Whether the kernel lock holds, and why not when it does not (/health, the start's log line). */
export type KernelLockStatus =
  { readonly on: true; readonly table: string } | { readonly on: false; readonly why: KernelLockOff };

/**
 * Why the lock is off: the front is not root, the operator turned it off, or (root of a user namespace of
 * its own, a container) the runtime gave no CAP_NET_ADMIN over the network namespace it runs in.
 */
export type KernelLockOff =
  'not root' | 'EGRESS_KERNEL_LOCK=off' | 'no NET_ADMIN' | 'no NET_ADMIN over this network namespace';

/** Where Debian's nftables puts nft (root's PATH may lack /usr/sbin under some supervisors). */
const NFT_PATHS = ['/usr/sbin/nft', '/sbin/nft', '/usr/bin/nft'];
/** How long one nft run may take (it answers in milliseconds; a hung one must not hang the start). */
const NFT_TIMEOUT_MS = 10_000;
/** The service's tables: pagescript_<pid>_<the pid's start time in ticks>_<n>. */
const TABLE_NAME = /^pagescript_(\d+)_(\d+)_(\d+)$/;

/** The table's map from a slot's uid to its counter of refused packets. */
const DROPS_MAP = 'slot_drops';
/** The name of the counter of uid `uid`'s refused packets in a lock table. */
export const dropCounter = (uid: number): string => `slot_${uid}`;

/** This process's start, in clock ticks since boot: with the pid, names one process for ever (pids are reused). */
function startTicks(pid: number): number | undefined {
  const stat = readOr(`/proc/${pid}/stat`);
  return stat === undefined ? undefined : parseStat(stat).startTicks;
}

let tablesMade = 0;
/** This process's tables still in the kernel: removed on exit if nobody closed them (a crash of the front). */
const live = new Set<string>();

/** The name of this process's next table. */
export function nextTableName(): string {
  return `pagescript_${process.pid}_${startTicks(process.pid) ?? 0}_${++tablesMade}`;
}

/**
 * The nft script that (re)makes the table. `uids`: the slots' users; `ports`: the
 * guard's. Pure: test/unit/front/kernel-lock.test.ts reads it.
 *
 * Several instances may lock the same slot users (the default SLOT_USER_PREFIX):
 * a packet is dropped if any table at the hook drops it, so each table must let
 * through every instance's guard traffic. It does: every instance's guard listens
 * in the same EGRESS_PORTS, and each table accepts the whole range (a table with
 * another range would refuse the others' guard traffic: docs/network.md).
 */
export function lockScript(
  table: string,
  uids: readonly number[],
  ports: { readonly first: number; readonly last: number },
): string {
  if (!TABLE_NAME.test(table)) throw new Error(`not a kernel lock table name: ${table}`);
  if (uids.length === 0 || uids.some((u) => !Number.isSafeInteger(u) || u <= 0))
    throw new Error(`the kernel lock needs the slots' unprivileged uids, got [${uids.join(', ')}]`);
  if (!(Number.isSafeInteger(ports.first) && Number.isSafeInteger(ports.last) && ports.first <= ports.last))
    throw new Error(`not a port range: ${ports.first}-${ports.last}`);
  const sorted = [...new Set(uids)].sort((a, b) => a - b);
  const slots = `meta skuid { ${sorted.join(', ')} }`;
  // Each uid's refusals are also counted apart (dropCounter), read once when a job of its slot ends.
  const byUid = `counter name meta skuid map @${DROPS_MAP}`;
  return [
    // Made empty then removed: the script replaces a table of this name, whether there is one or not.
    `table inet ${table}`,
    `delete table inet ${table}`,
    `table inet ${table} {`,
    ...sorted.map((u) => `  counter ${dropCounter(u)} {}`),
    `  map ${DROPS_MAP} { type uid : counter; elements = { ${sorted.map((u) => `${u} : "${dropCounter(u)}"`).join(', ')} } }`,
    `  chain output {`,
    `    type filter hook output priority filter; policy accept;`,
    // The guard's ports on loopback: Chromium's proxy connections, every context's and the browser-wide one.
    `    ${slots} ip daddr 127.0.0.1 tcp dport ${ports.first}-${ports.last} accept`,
    // SECURITY: anything else, of any protocol, to any address (loopback and this
    // machine's own included): refused at once (ECONNREFUSED, EPERM), counted.
    `    ${slots} meta l4proto tcp counter ${byUid} reject with tcp reset`,
    `    ${slots} counter ${byUid} reject with icmpx type admin-prohibited`,
    `  }`,
    `}`,
    '',
  ].join('\n');
}

/** The nft this machine has, or undefined. */
export function findNft(paths: readonly string[] = NFT_PATHS): string | undefined {
  return paths.find((p) => existsSync(p));
}

/** Runs nft with `input` on its stdin; rejects with its stderr when it fails. Exported for tests. */
export function runNft(nft: string, args: readonly string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let stdinClosed!: Promise<void>;
    const child = execFile(nft, args, { timeout: NFT_TIMEOUT_MS, encoding: 'utf8' }, (e, stdout, stderr) => {
      // Settled once its input's pipe is closed too: nothing of this call is left to happen after it.
      stdinClosed.then(() => {
        if (e) reject(new Error(`${nft} ${args.join(' ')}: ${stderr.trim() || e.message}`));
        else resolve(stdout);
      }, reject);
    });
    const stdin = child.stdin;
    stdinClosed = stdin ? new Promise((r) => stdin.once('close', () => r())) : Promise.resolve();
    // nft may exit before reading its input (`list` reads none; a bad rule ends it early): the
    // write then fails with EPIPE, which is no error of its own — the exit status above says what happened.
    // Unhandled, the EPIPE would be thrown as an uncaught error.
    stdin?.on('error', () => {});
    if (input === undefined) stdin?.end();
    else stdin?.end(input);
  });
}

/**
 * The tables a crashed instance left (its process is gone, or its pid is now
 * another process's): removed, so that its rules (perhaps of another range)
 * do not refuse this instance's traffic. A live instance's tables are left alone.
 */
async function removeStaleTables(nft: string, logger: Logger): Promise<void> {
  for (const name of await serviceTables(nft)) {
    const m = TABLE_NAME.exec(name);
    if (!m || live.has(name) || startTicks(Number(m[1])) === Number(m[2])) continue;
    try {
      await runNft(nft, ['delete', 'table', 'inet', name]);
    } catch (e) {
      // Another instance starting at the same time may have removed it first.
      if ((await serviceTables(nft)).includes(name)) throw e;
      continue;
    }
    logger.warn({ table: name }, 'removed the kernel lock table of a pagescript instance that is gone');
  }
}

/** The names of the service's tables (every instance's) in the kernel now. */
async function serviceTables(nft: string): Promise<string[]> {
  const listed = JSON.parse(await runNft(nft, ['-j', 'list', 'tables'])) as {
    nftables?: { table?: { family?: string; name?: string } }[];
  };
  return (listed.nftables ?? []).flatMap(({ table }) =>
    table?.family === 'inet' && table.name !== undefined && TABLE_NAME.test(table.name) ? [table.name] : [],
  );
}

let exitHook = false;
/** On an exit nobody closed the lock for (a crash of the front), its tables go with the process. */
function removeOnExit(nft: string): void {
  if (exitHook) return;
  exitHook = true;
  process.on('exit', () => {
    for (const table of live) spawnSync(nft, ['delete', 'table', 'inet', table], { timeout: NFT_TIMEOUT_MS });
  });
}

export interface KernelLock {
  readonly status: KernelLockStatus;
  /**
   * Packets of slot user `uid` the lock refused since the last call for it (undefined: the lock is
   * off, or the count could not be read). One nft query (nft-reader.ts); call it once per job.
   */
  drops(uid: number): Promise<number | undefined>;
  /** Removes the table (once; again is a no-op). Call it after every slot process has stopped. */
  close(): Promise<void>;
}

/**
 * Sets the lock for this instance's slot users (undefined: not root, nothing to
 * lock). SECURITY: as root with EGRESS_KERNEL_LOCK on, a lock that cannot be set
 * (nft missing, or refused) stops the start: the operator asked for the kernel
 * to back the guard, and a service that quietly runs without it is not that.
 */
export async function setKernelLock(
  config: Pick<Config, 'egressKernelLock' | 'egressPorts'>,
  uids: readonly number[] | undefined,
  logger: Logger,
  opts: { readonly nftPaths?: readonly string[]; readonly privileges?: Privileges } = {},
): Promise<KernelLock> {
  const off = (why: KernelLockOff, err?: unknown): KernelLock => {
    logger.warn(
      { kernelLock: 'off', why, ...(err === undefined ? {} : { err }) },
      why === 'not root'
        ? 'the kernel lock is off: the service is not root (the slots cannot be told apart from it); only the egress guard holds the slots to their requests (docs/container.md)'
        : why === 'EGRESS_KERNEL_LOCK=off'
          ? 'the kernel lock is off (EGRESS_KERNEL_LOCK=off): only the egress guard holds the slots to their requests'
          : `the kernel lock is off: the container has ${why === 'no NET_ADMIN' ? 'no CAP_NET_ADMIN' : 'no CAP_NET_ADMIN over the network namespace it runs in (one it shares, such as the host network)'}; only the egress guard and the orchestrator's network policy hold the slots (docs/container.md)`,
    );
    return { status: { on: false, why }, drops: async () => undefined, close: async () => undefined };
  };
  if (uids === undefined) return off('not root');
  if (!config.egressKernelLock) return off('EGRESS_KERNEL_LOCK=off');
  // Root of a user namespace of its own (a container): the lock where the runtime gave what it needs, else said.
  const p = opts.privileges ?? privileges();
  if (!p.hostRoot && !hasCap(p.effective, 'NET_ADMIN')) return off('no NET_ADMIN');
  const nft = findNft(opts.nftPaths);
  if (nft === undefined)
    throw new Error(
      "EGRESS_KERNEL_LOCK is on and the service runs as root, but nft is not installed: install Debian's nftables " +
        '(`apt-get install nftables`; `npm start` does it as root) or set EGRESS_KERNEL_LOCK=off',
    );
  const table = nextTableName();
  try {
    await removeStaleTables(nft, logger);
    live.add(table);
    removeOnExit(nft);
    await runNft(nft, ['-f', '-'], lockScript(table, uids, config.egressPorts));
  } catch (e) {
    live.delete(table);
    await runNft(nft, ['delete', 'table', 'inet', table]).catch(() => undefined);
    // A container's root with NET_ADMIN in its own user namespace, on a network namespace it does not own.
    if (!p.hostRoot) return off('no NET_ADMIN over this network namespace', e);
    throw new Error(
      `EGRESS_KERNEL_LOCK is on and the service runs as root, but the kernel lock could not be set ` +
        `(${e instanceof Error ? e.message : String(e)}); or set EGRESS_KERNEL_LOCK=off`,
      { cause: e },
    );
  }
  const { first, last } = config.egressPorts;
  logger.info(
    { kernelLock: 'on', table, slotUids: uids, guardPorts: `${first}-${last}` },
    "the kernel lock is on: the slots' users may reach only the egress guard's ports",
  );
  let closing: Promise<void> | undefined;
  const reader = new NftReader(nft, logger);
  /** Each uid's count as last read: the table is made with every counter at 0. */
  const seen = new Map<number, number>();
  return {
    status: { on: true, table },
    async drops(uid) {
      if (closing || !uids.includes(uid)) return undefined;
      const n = await reader.counterPackets(table, dropCounter(uid));
      if (n === undefined) return undefined;
      const before = seen.get(uid) ?? 0;
      seen.set(uid, n);
      return Math.max(0, n - before);
    },
    close() {
      closing ??= reader.close().then(() =>
        runNft(nft, ['delete', 'table', 'inet', table]).then(() => {
          live.delete(table);
        }),
      );
      return closing;
    },
  };
}
