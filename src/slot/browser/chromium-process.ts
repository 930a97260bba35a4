// One Chromium process, started here rather than by puppeteer.launch, so that
// the DevTools pipe between it and Puppeteer is ours (src/slot/browser/cdp-transport.ts:
// no message over MAX_CDP_MESSAGE_BYTES is ever held whole). What launch did is
// done here: Puppeteer's default flags (puppeteer.defaultArgs) with ours, a fresh
// profile directory, the process in a group of its own (so that the browser and
// every helper it started can be killed together), its stderr read as it comes,
// the browser closed and its profile removed at the end, and the process group
// killed when the slot process exits.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import puppeteer, { type Browser } from 'puppeteer';
import { within } from '../../common/within.js';
import { BoundedPipeTransport, type DroppedMessage } from './cdp-transport.js';

/** The start of each profile directory's name, in the temporary directory. */
export const PROFILE_PREFIX = 'pagescript-chromium-';
/** How long Chromium may take to start and answer its first DevTools call (Puppeteer's launch timeout). */
export const CHROMIUM_START_TIMEOUT_MS = 30_000;
/** How long a graceful close (Browser.close, then the process's exit) may take before the group is killed. */
export const CHROMIUM_CLOSE_TIMEOUT_MS = 5_000;
/** How long the process may take to go once killed (SIGKILL: at once, unless the kernel is stuck). */
const CHROMIUM_KILL_WAIT_MS = 5_000;

export interface ChromiumStartOptions {
  readonly executablePath: string;
  /** 'shell': the old headless mode (--headless, the headless shell); true: the new one (the full browser). */
  readonly headless: 'shell' | true;
  /** Flags beyond Puppeteer's defaults; a --disable-features here is merged with Puppeteer's. */
  readonly args: readonly string[];
  /** Puppeteer's defaults left out (as launch's ignoreDefaultArgs). */
  readonly ignoreDefaultArgs: readonly string[];
  readonly protocolTimeoutMs: number;
  readonly defaultViewport: { width: number; height: number };
  /** Chromium's stderr, as it comes (read whether anyone listens or not, so a full pipe never blocks it). */
  readonly onOutput?: (text: string) => void;
  /** A DevTools message over the transport's limit was dropped. */
  readonly onDropped?: (d: DroppedMessage) => void;
  readonly startTimeoutMs?: number;
  /**
   * A cgroup's cgroup.procs: the process joins that group before it becomes
   * Chromium, so that every process Chromium starts is born there (the kernel
   * holds the page's memory: src/front/cgroups/memory-limits.ts). Chromium is
   * not started when it cannot join.
   */
  readonly cgroupProcs?: string;
  /** The shell that does it: /bin/sh unless given (an execute-only copy keeps it non-dumpable: slot-privacy.ts). */
  readonly shellPath?: string;
}

/** Runs `file` with `args` once the shell that becomes it has joined the cgroup of `procs` (exec keeps its pid). */
export function inCgroup(procs: string, file: string, args: readonly string[], shell = '/bin/sh'): [string, string[]] {
  return [shell, ['-c', 'echo $$ > "$0" && exec "$@"', procs, file, ...args]];
}

/**
 * The profile directories of the Chromiums of this process that are not yet
 * removed, and how many are being made: what emptying the slot's temporary
 * directory keeps (src/slot/tmp-empty.ts).
 */
export const liveProfiles = { dirs: new Set<string>(), making: 0 };

export interface ChromiumProcess {
  readonly browser: Browser;
  readonly pid: number;
  /** Closes the browser (Browser.close, then SIGKILL to its process group past the deadline) and removes its profile. */
  close(): Promise<void>;
  /** Kills the process group at once (SIGKILL). */
  kill(): void;
  /** A context's request is over: its targets' events are dropped unread (BoundedPipeTransport.retireContext). */
  retireContext(contextId: string): void;
  /** Chromium has more DevTools messages for us than the transport queues (BoundedPipeTransport.backedUp). */
  readonly backedUp: boolean;
  /** An Input.* command was sent to it since the last ask (BoundedPipeTransport.takeInputSent). */
  takeInputSent(): boolean;
  /** Bytes of retired contexts' events dropped unread so far (BoundedPipeTransport.droppedEventBytes). */
  readonly droppedEventBytes: number;
}

/** The process groups of Chromiums running now: killed when the slot process exits (as Puppeteer's launch did). */
const running = new Set<() => void>();
let exitHookInstalled = false;
function killAllOnExit(kill: () => void): () => void {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on('exit', () => {
      for (const k of running) k();
    });
  }
  running.add(kill);
  return () => void running.delete(kill);
}

/** The flags Chromium is started with: Puppeteer's defaults (less those ignored), ours, the pipe and the profile. */
export function chromiumCommandLine(
  opts: Pick<ChromiumStartOptions, 'headless' | 'args' | 'ignoreDefaultArgs'>,
  profileDir: string,
): string[] {
  // defaultArgs merges (and takes out of the list it is given) --disable-features/--enable-features: a copy.
  const args = puppeteer
    .defaultArgs({ headless: opts.headless, args: [...opts.args] })
    .filter((a) => !opts.ignoreDefaultArgs.includes(a));
  // SECURITY: the DevTools protocol goes over fds 3 and 4 only (no port anyone on the host could reach).
  args.push('--remote-debugging-pipe', `--user-data-dir=${profileDir}`);
  return args;
}

/** Settles with the value, or rejects with `message` after ms. */
function withDeadline<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  return within(p, ms, () => {
    throw new Error(message);
  });
}

export async function startChromium(opts: ChromiumStartOptions): Promise<ChromiumProcess> {
  liveProfiles.making++;
  let profileDir: string;
  try {
    profileDir = await mkdtemp(join(tmpdir(), PROFILE_PREFIX));
    liveProfiles.dirs.add(profileDir);
  } finally {
    liveProfiles.making--;
  }
  const removeProfile = (): Promise<void> =>
    rm(profileDir, { recursive: true, force: true, maxRetries: 5 })
      .catch(() => undefined)
      .finally(() => liveProfiles.dirs.delete(profileDir));
  let child: ChildProcess;
  try {
    const args = chromiumCommandLine(opts, profileDir);
    const [file, argv] =
      opts.cgroupProcs === undefined
        ? [opts.executablePath, args]
        : inCgroup(opts.cgroupProcs, opts.executablePath, args, opts.shellPath);
    child = spawn(file, argv, {
      // A group of its own: killing -pid reaches the browser and every helper it started.
      detached: true,
      env: process.env,
      // stdin, stdout: nothing; stderr read below; fds 3 and 4: the DevTools pipe.
      stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'],
    });
  } catch (e) {
    await removeProfile();
    throw e;
  }
  let gone = false;
  let unhook = (): void => undefined;
  const exited = new Promise<void>((resolve) => {
    const onGone = (): void => {
      // SECURITY: its helpers (zygote, renderers) outlive a browser that died on its own; killed with its group
      // now, while they hold its group id, they are gone before the job's answer, not a tenant's strays.
      kill();
      // Reaped: from here its pid (and group id) may be another process's; kill() does nothing.
      gone = true;
      unhook();
      resolve();
    };
    child.once('exit', onGone);
    // Not started at all (no such file): 'exit' may never come.
    child.once('error', onGone);
  });
  const spawnError = new Promise<never>((_, reject) => child.once('error', reject));
  spawnError.catch(() => undefined);
  const kill = (): void => {
    if (gone || child.pid === undefined) return;
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      try {
        child.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
  };
  unhook = killAllOnExit(kill);
  const onOutput = opts.onOutput;
  child.stderr?.on('data', (chunk: Buffer) => onOutput?.(chunk.toString('utf8')));

  const transport = new BoundedPipeTransport(child.stdio[3] as Writable, child.stdio[4] as Readable, {
    ...(opts.onDropped ? { onDropped: opts.onDropped } : {}),
  });
  const startTimeoutMs = opts.startTimeoutMs ?? CHROMIUM_START_TIMEOUT_MS;
  let browser: Browser;
  try {
    browser = await withDeadline(
      Promise.race([
        puppeteer.connect({
          transport,
          defaultViewport: opts.defaultViewport,
          protocolTimeout: opts.protocolTimeoutMs,
        }),
        spawnError,
        exited.then(() => {
          throw new Error(`Chromium exited as it started (${child.exitCode ?? child.signalCode ?? 'no exit code'})`);
        }),
      ]),
      startTimeoutMs,
      `Chromium did not start within ${startTimeoutMs} ms`,
    );
  } catch (e) {
    transport.close();
    kill();
    await withDeadline(exited, CHROMIUM_KILL_WAIT_MS, 'Chromium did not exit').catch(() => undefined);
    await removeProfile();
    throw e;
  }
  const pid = child.pid as number;
  let closing: Promise<void> | undefined;
  // A Chromium the slot process can no longer talk to is of no use: its whole group goes.
  browser.once('disconnected', () => {
    if (!closing) kill();
  });
  // A Chromium that dies on its own (not closed) leaves its profile: removed once it is gone.
  exited.then(removeProfile, () => undefined);
  return {
    browser,
    pid,
    kill,
    retireContext: (id) => transport.retireContext(id),
    takeInputSent: () => transport.takeInputSent(),
    get backedUp() {
      return transport.backedUp;
    },
    get droppedEventBytes() {
      return transport.droppedEventBytes;
    },
    close: () => {
      closing ??= (async () => {
        if (!gone) {
          await withDeadline(browser.close(), CHROMIUM_CLOSE_TIMEOUT_MS, 'Browser.close timed out').catch(
            () => undefined,
          );
          await withDeadline(exited, CHROMIUM_CLOSE_TIMEOUT_MS, 'Chromium did not exit').catch(() => undefined);
          kill();
          await withDeadline(exited, CHROMIUM_KILL_WAIT_MS, 'Chromium did not exit').catch(() => undefined);
        }
        await removeProfile();
      })();
      return closing;
    },
  };
}
