// How the front starts a child process (a slot process, the egress process): the
// spawn with nothing of the front's but its wire (wire.ts, on FRONT_WIRE_FD),
// the child's stdout and stderr logged line by line, and its first `ready`
// awaited within a deadline; and how it stops one.
// Shared by supervisor.ts (slot processes) and egress-supervisor.ts.
import { spawn, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../../common/log.js';
import { FRONT_WIRE_FD, WireEnd, type WirePace } from '../../protocol/wire.js';
import type { RunAs } from '../host/users.js';
import { LogBudget } from './log-budget.js';
import { readBoundedLines } from './output-lines.js';

/** What is kept of one line a child writes to stdout or stderr (a native crash's report). */
export const MAX_OUTPUT_LINE = 4096;

/** How many of a child's messages the front reads each PACE_WINDOW_MS (wire.ts): 10,000 a second; a slot sends a few dozen a request. */
export const MESSAGES_PER_WINDOW = 1_000;
/**
 * How many bytes of a child's lines the front reads each PACE_WINDOW_MS: 40 MiB a second. Reading a line
 * (decoding, scanning, parsing) costs the front's event loop about 9 ms a MiB, so a slot sending all it
 * may holds about a third of it, and others' requests still run; a result of the largest size is read at
 * once, and that slot's next messages wait the windows it took (under 2 s).
 */
export const BYTES_PER_WINDOW = 4 * 2 ** 20;
/**
 * How many JSON tokens (wire.ts) of a child's lines the front reads each PACE_WINDOW_MS. A token costs
 * JSON.parse up to ~1 µs (an object of new keys), so this is ~30 ms a window at most; an honest slot's
 * one large list is its logs (MAX_LOG_LINES, 1,000 by default).
 */
export const TOKENS_PER_WINDOW = 2 ** 15;
/** What the front may have sent a child that it has not read, by default, before it is taken as misbehaving. */
export const MAX_UNSENT_TO_CHILD_BYTES = 64 * 2 ** 20;

/**
 * Starts node on `file` with exactly `env` and, when `runAs` is given, as that user.
 * `through`: node is started by that command (`execPath`, then `prefix`, then
 * node and its arguments), and the child gets `args`.
 * SECURITY: no descriptor of the front: stdin closed, stdout and stderr pipes of
 * the child's own (logChildOutput reads them: what a native crash prints is
 * logged), the front's wire (a socket pair of its own, FRONT_WIRE_FD), and
 * `egressChannel` (a slot's channel to the egress process, EGRESS_CHANNEL_FD).
 * No Node IPC: Node opens every other descriptor close-on-exec.
 */
export function spawnChild(
  file: string,
  execArgv: string[],
  env: Record<string, string>,
  runAs: { readonly uid: number; readonly gid: number } | undefined,
  through?: { readonly execPath: string; readonly prefix: readonly string[] },
  args: string[] = [],
  egressChannel?: Socket,
): ChildProcess {
  const argv = through ? [...through.prefix, process.execPath, ...execArgv] : execArgv;
  const stdio: Array<'ignore' | 'pipe' | Socket> = ['ignore', 'pipe', 'pipe', 'pipe'];
  if (egressChannel) stdio.push(egressChannel);
  return spawn(through?.execPath ?? process.execPath, [...argv, file, ...args], {
    env,
    stdio,
    ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}),
  });
}

/**
 * Logs every line `child` writes to stdout or stderr as a warning `msg`, with
 * `who` (e.g. { slotPid: pid }) first, then the stream, the line, and how many
 * characters were cut from it when it was longer than MAX_OUTPUT_LINE; `onLine`
 * gets each line's kept text too.
 */
export function logChildOutput(
  child: ChildProcess,
  logger: Logger,
  who: Record<string, unknown>,
  msg: string,
  onLine?: (text: string) => void,
): void {
  for (const [stream, from] of [
    ['stdout', child.stdout],
    ['stderr', child.stderr],
  ] as const) {
    if (!from) continue;
    // SECURITY: each line is cut as it arrives; a line without end costs no more than its first characters.
    readBoundedLines(from, MAX_OUTPUT_LINE, ({ text, cutChars }) => {
      onLine?.(text);
      if (!logBudgetOf(child, logger, who).admit(text.length)) return;
      logger.warn({ ...who, stream, line: text, ...(cutChars > 0 ? { cutChars } : {}) }, msg);
    });
  }
}

/** What awaitReady does with a child's messages and exit, and the words it logs. */
export interface ReadyWatch<M extends { readonly type: string }> {
  readonly logger: Logger;
  /** How long the child may take to say `ready` before it is killed (SIGKILL). */
  readonly timeoutMs: number;
  /** The longest message the child may send (bytes of its line); a longer one (or one that cannot be read) kills it. */
  readonly maxMessageBytes: number;
  /** The most JSON tokens one of its messages may hold (wire.ts, WireLimits.maxTokens); more kills it. */
  readonly maxMessageTokens: number;
  /** How many of its messages the front reads each PACE_WINDOW_MS (wire.ts); MESSAGES_PER_WINDOW when absent. */
  readonly messagesPerWindow?: number;
  /** How many bytes of its messages the front reads each PACE_WINDOW_MS; BYTES_PER_WINDOW when absent. */
  readonly bytesPerWindow?: number;
  /** How many JSON tokens of its messages the front reads each PACE_WINDOW_MS; TOKENS_PER_WINDOW when absent. */
  readonly tokensPerWindow?: number;
  /** The clock of those windows (wire.ts, WireLimits.clock): tests only. */
  readonly clock?: () => number;
  /** What the front may send it that it has not read before it is killed; MAX_UNSENT_TO_CHILD_BYTES when absent. */
  readonly maxUnsentBytes?: number;
  /** Sends the child its first message, once every listener is in place; a throw rejects the wait. */
  begin(): void;
  /** Reads a raw message against its shape; throws for one it cannot read. */
  check(raw: unknown): M;
  /** Each message that passed `check`, before a `ready` resolves the wait. */
  onMessage(msg: M): void;
  /** Ends the child for a message it could not read. */
  kill(): void;
  /** Whether the child had been ready, asked when it exits (before onExit). */
  wasReady(): boolean;
  onExit(code: number | null, signal: NodeJS.Signals | null): void;
  readonly words: {
    /** Logged (error) when the deadline passes: "... did not start in time; killing it". */
    readonly timeout: string;
    /** Logged (error) for a message `check` refused. */
    readonly badMessage: string;
    /** Logged (error) for the child's 'error' event. */
    readonly error: string;
    /** Who exited, in the rejection: "<who> exited before it was ready (code)". */
    readonly who: string;
  };
}

/**
 * Listens to `child` for the rest of its life, then calls `watch.begin`: every
 * message is checked and handed to `watch.onMessage` (a malformed one, one
 * longer than `watch.maxMessageBytes` or one that cannot be deserialized kills
 * the child, not the front). Resolves at its first `ready`; rejects if it
 * exits before it was ready. Call it in the tick the child was spawned in.
 * The child is killed if it has not said `ready` within `watch.timeoutMs`.
 */
export function awaitReady<M extends { readonly type: string }>(
  child: ChildProcess,
  watch: ReadyWatch<M>,
): Promise<void> {
  const { logger, words } = watch;
  return new Promise<void>((resolve, reject) => {
    const startTimer = setTimeout(() => {
      logger.error({ pid: child.pid, ms: watch.timeoutMs }, words.timeout);
      child.kill('SIGKILL');
    }, watch.timeoutMs);
    startTimer.unref();
    let saidReady = false;
    // SECURITY: a message over its bound, one that does not parse or breaks its shape ends the child, not the front.
    const bad = (e: unknown): void => {
      logger.error({ err: e, pid: child.pid, ...(e instanceof Error ? { reason: e.message } : {}) }, words.badMessage);
      watch.kill();
    };
    const socket = child.stdio[FRONT_WIRE_FD] as Socket | null | undefined;
    if (!socket) throw new Error(`${words.who} has no wire`);
    const maxUnsent = watch.maxUnsentBytes ?? MAX_UNSENT_TO_CHILD_BYTES;
    const wire = new WireEnd<M, unknown>(
      socket,
      (raw) => {
        const msg = watch.check(raw);
        // SECURITY: a child is ready once. Each `ready` was logged (the slot's) or had every grant sent again (the egress's).
        if (msg.type === 'ready' && saidReady) throw new Error(`${words.who} said it was ready a second time`);
        return msg;
      },
      (msg) => {
        try {
          watch.onMessage(msg);
        } catch (e) {
          bad(e);
          return;
        }
        if (msg.type === 'ready') {
          saidReady = true;
          clearTimeout(startTimer);
          resolve();
        }
      },
      bad,
      {
        maxLineBytes: watch.maxMessageBytes,
        pauseBytes: maxUnsent,
        maxUnsentBytes: maxUnsent,
        maxTokens: watch.maxMessageTokens,
        messagesPerWindow: watch.messagesPerWindow ?? MESSAGES_PER_WINDOW,
        bytesPerWindow: watch.bytesPerWindow ?? BYTES_PER_WINDOW,
        tokensPerWindow: watch.tokensPerWindow ?? TOKENS_PER_WINDOW,
        ...(watch.clock === undefined ? {} : { clock: watch.clock }),
      },
    );
    wires.set(child, wire);
    child.once('error', (e) => logger.error({ err: e, pid: child.pid }, words.error));
    child.once('exit', (code, signal) => {
      clearTimeout(startTimer);
      const wasReady = watch.wasReady();
      watch.onExit(code, signal);
      if (!wasReady) reject(new Error(`${words.who} exited before it was ready (${code ?? signal})`));
    });
    watch.begin();
  });
}

/**
 * Asks `child` to exit (`ask`: its shutdown message) and waits until it has;
 * kills it (SIGKILL) if it has not within `timeoutMs`. The child must not have
 * exited yet (its exit would never be seen again).
 */
export async function stopChild(child: ChildProcess, ask: () => void, timeoutMs: number): Promise<void> {
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  ask();
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  await exited;
  clearTimeout(timer);
}

/** How long a slot process may take to start (Chromium's launch included) before it is killed and replaced. */
export const SLOT_START_TIMEOUT_MS = 60_000;
/** How long a slot process may take to close Chromium and exit when asked, before it is killed. */
export const SLOT_CLOSE_TIMEOUT_MS = 10_000;
/** Wait before replacing a slot process that died; doubled while replacements die before they are ready. */
export const SLOT_RESTART_BACKOFF_MS = 100;
export const SLOT_RESTART_BACKOFF_MAX_MS = 10_000;
/** How long a question to a slot process (the tests' guard counts, closing its guard) may wait for its answer. */
export const SLOT_ASK_TIMEOUT_MS = 10_000;

/**
 * The wait before a child (a slot process, the egress process) is replaced, after
 * `failedStarts` replacements in a row that died before they were ready.
 */
export function restartBackoffMs(failedStarts: number): number {
  return Math.min(SLOT_RESTART_BACKOFF_MAX_MS, SLOT_RESTART_BACKOFF_MS * 2 ** Math.min(failedStarts, 10));
}

/**
 * SECURITY: the only variables a slot process (and the Chromium it starts) sees;
 * everything else of the front's environment (API_KEYS, API_KEYS_FILE,
 * REDIS_URL, METRICS_TOKEN, and whatever else the operator set) stays behind.
 */
const PASSED_ENV = ['PATH', 'LANG', 'LC_ALL', 'LC_CTYPE', 'TZ', 'MALLOC_ARENA_MAX', 'NODE_ENV'] as const;

/**
 * SECURITY: a child process's whole environment: the allow-listed variables,
 * and a home and temporary directory of its own (`dir`, which only its user may enter).
 */
export function childEnv(dir: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of PASSED_ENV) {
    const v = process.env[name];
    if (v !== undefined) env[name] = v;
  }
  Object.assign(env, { HOME: dir, TMPDIR: dir, XDG_CONFIG_HOME: dir, XDG_CACHE_HOME: dir });
  return env;
}

/** Each child's end of the front's wire, from awaitReady on. */
const wires = new WeakMap<ChildProcess, WireEnd<unknown, unknown>>();

/** Sends `msg` to `child` over the front's wire; a message to a child whose wire is closed is lost (its exit says the rest). */
export function sendToChild(child: ChildProcess, msg: unknown): void {
  wires.get(child)?.send(msg);
}

/** Whether the front's wire to `child` is open. */
export function wireOpen(child: ChildProcess): boolean {
  const wire = wires.get(child);
  return wire !== undefined && !wire.closed;
}

/** Calls `fn` once the front's wire to `child` is closed (by either side). */
export function onWireClosed(child: ChildProcess, fn: () => void): void {
  wires.get(child)?.onClose(fn);
}

/** The pace at which the front has read `child` (tests). */
export function wirePace(child: ChildProcess): WirePace {
  return wires.get(child)?.pace ?? { pauses: 0, pausedMs: 0 };
}

/** A private home for a child (mode 0700), given to its user when it has one of its own. */
export function childDir(prefix: string, runAs: RunAs | undefined): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  if (runAs) chownSync(dir, runAs.uid, runAs.gid);
  return dir;
}

/**
 * Removes a child's home once it has exited, off the event loop. SECURITY: the
 * directory is the child's user's, and what that user left running may still
 * write into it: rmSync in an exit handler could throw ENOTEMPTY, uncaught,
 * and end the front, and a directory of many files would hold its event loop. A
 * failure is logged; the directory is under the system's temporary directory.
 */
export function removeChildDir(dir: string, logger: Logger): Promise<void> {
  return rm(dir, { recursive: true, force: true, maxRetries: 3 }).catch((err: unknown) =>
    logger.warn({ err, dir }, "a child process's directory could not be removed"),
  );
}

/** Where each child's entry point is, in the source tree (run through tsx). */
const CHILD_SOURCES = { slot: '../../slot/main.ts', 'egress-process': '../../egress/main.ts' } as const;

/**
 * Set by `npm test` once it has built dist/ (scripts/bootstrap.mjs): a front
 * run from source (the e2e tests') starts its children from dist/, as in
 * production, instead of through tsx, which costs a second of each start.
 */
export const CHILDREN_FROM_DIST_ENV = 'PAGESCRIPT_CHILDREN_FROM_DIST';

/**
 * A child's entry: dist/<name>.js next to dist/server.js, or its main.ts in
 * src/ run through tsx; from source with CHILDREN_FROM_DIST_ENV=1, the built
 * dist/<name>.js with its source maps (stack traces and coverage name src/).
 * With `cpuProfileDir` (CPU_PROFILE_DIR), the child writes a V8 CPU profile there when it exits.
 */
export function childEntry(
  name: keyof typeof CHILD_SOURCES,
  heap?: { readonly oldMb: number; readonly semiSpaceMb: number },
  cpuProfileDir?: string,
): { file: string; execArgv: string[] } {
  const fromSource = import.meta.url.endsWith('.ts');
  const built = fromSource && process.env[CHILDREN_FROM_DIST_ENV] === '1';
  const path = !fromSource ? `./${name}.js` : built ? `../../../dist/${name}.js` : CHILD_SOURCES[name];
  const file = fileURLToPath(new URL(path, import.meta.url));
  const execArgv = ['--no-node-snapshot'];
  if (process.execArgv.includes('--expose-gc')) execArgv.push('--expose-gc');
  if (heap !== undefined)
    execArgv.push(`--max-old-space-size=${heap.oldMb}`, `--max-semi-space-size=${heap.semiSpaceMb}`);
  if (built) execArgv.push('--enable-source-maps');
  else if (fromSource) execArgv.push('--import', import.meta.resolve('tsx'));
  if (cpuProfileDir !== undefined) execArgv.push('--cpu-prof', `--cpu-prof-dir=${cpuProfileDir}`);
  return { file, execArgv };
}

const LEVELS = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' } as const;

const budgets = new WeakMap<ChildProcess, LogBudget>();

/** The budget of lines `child` may have the front log (log-budget.ts), its stdout, stderr and log messages together. */
function logBudgetOf(child: ChildProcess, logger: Logger, who: Record<string, unknown>): LogBudget {
  let budget = budgets.get(child);
  if (!budget) budgets.set(child, (budget = new LogBudget(logger, who)));
  return budget;
}

/**
 * A child's log line (pino JSON), written by the front's logger with `who`
 * ({ slotPid: pid } or { egress: pid }), within the child's budget of lines
 * (log-budget.ts). SECURITY: the line says which child wrote it, in the
 * front's words: a child cannot pass its lines off as the front's (a forged
 * "scrape done"); and its level is at most error: pino writes a fatal line
 * synchronously, and a child's flood of them would freeze the front while its
 * stdout is full. `stopping`: the service shuts down (at most warn).
 */
export function writeChildLine(
  child: ChildProcess,
  logger: Logger,
  line: string,
  who: Record<string, unknown>,
  what: string,
  stopping = false,
): void {
  if (!logBudgetOf(child, logger, who).admit(line.length)) return;
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    parsed = undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    logger.warn({ ...who, line: line.slice(0, 1000) }, `${what} wrote a line that is not JSON`);
    return;
  }
  const { level, msg, time: _time, pid: _pid, hostname: _host, ...fields } = parsed as Record<string, unknown>;
  const named = Object.hasOwn(LEVELS, String(level)) ? LEVELS[level as keyof typeof LEVELS] : 'info';
  // While the service shuts down its processes end in any order (a whole group's SIGTERM): what a child
  // says of a peer gone meanwhile is expected then, and written as a warning that says so.
  if (stopping && (named === 'error' || named === 'fatal')) {
    logger.warn({ ...fields, ...who, duringShutdown: true }, typeof msg === 'string' ? msg : what);
    return;
  }
  // A child's fatal line is written as an error that says it was fatal.
  if (named === 'fatal') logger.error({ ...fields, ...who, fatal: true }, typeof msg === 'string' ? msg : what);
  else logger[named]({ ...fields, ...who }, typeof msg === 'string' ? msg : what);
}
