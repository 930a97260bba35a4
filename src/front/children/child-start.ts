// How the front starts a child process (an executor, the egress process): the
// fork with nothing of the front's but the IPC channel, the child's stdout and
// stderr logged line by line, and its first `ready` awaited within a deadline;
// and how it stops one.
// Shared by supervisor.ts (executors) and egress-supervisor.ts.
import { fork, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../../common/log.js';
import type { ToEgress } from '../../protocol/egress-messages.js';
import type { ToExecutor } from '../../protocol/executor-messages.js';
import type { RunAs } from './users.js';
import { LogBudget } from './log-budget.js';
import { boundChildMessages } from './message-bound.js';
import { readBoundedLines } from './output-lines.js';

/** What is kept of one line a child writes to stdout or stderr (a native crash's report). */
export const MAX_OUTPUT_LINE = 4096;

/**
 * Forks `file` with exactly `env` and, when `runAs` is given, as that user.
 * SECURITY: no descriptor of the front: stdin closed, stdout and stderr pipes of
 * the child's own (logChildOutput reads them: what a native crash prints is
 * logged), and the IPC channel. Node opens every other descriptor close-on-exec.
 */
export function forkChild(
  file: string,
  execArgv: string[],
  env: Record<string, string>,
  runAs: { readonly uid: number; readonly gid: number } | undefined,
): ChildProcess {
  return fork(file, [], {
    execArgv,
    env,
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    serialization: 'advanced',
    ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}),
  });
}

/**
 * Logs every line `child` writes to stdout or stderr as a warning `msg`, with
 * `who` (e.g. { executor: pid }) first, then the stream, the line, and how many
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
  /** The longest message the child may send; a longer one (or one that cannot be read) kills it (message-bound.ts). */
  readonly maxMessageBytes: number;
  /** How many of its messages the front reads each 100 ms (message-bound.ts); its default when absent. */
  readonly messagesPerWindow?: number;
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
 * exits before it was ready. Call it in the tick the child was forked in.
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
    // SECURITY: a message without end, or one V8 cannot deserialize, ends the child, not the front.
    boundChildMessages(
      child,
      watch.maxMessageBytes,
      (reason) => {
        logger.error({ pid: child.pid, reason }, words.badMessage);
        watch.kill();
      },
      watch.messagesPerWindow === undefined ? {} : { messagesPerWindow: watch.messagesPerWindow },
    );
    child.on('message', (raw: unknown) => {
      try {
        const msg = watch.check(raw);
        // SECURITY: a child is ready once. Each `ready` was logged (the slot's) or had every grant sent again (the egress's).
        if (msg.type === 'ready' && saidReady) throw new Error(`${words.who} said it was ready a second time`);
        watch.onMessage(msg);
        if (msg.type === 'ready') {
          saidReady = true;
          clearTimeout(startTimer);
          resolve();
        }
      } catch (e) {
        // SECURITY: a malformed message from a child ends the child, not the front.
        logger.error({ err: e, pid: child.pid }, words.badMessage);
        watch.kill();
      }
    });
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

/** How long an executor may take to start (Chromium's launch included) before it is killed and replaced. */
export const EXECUTOR_START_TIMEOUT_MS = 60_000;
/** How long an executor may take to close Chromium and exit when asked, before it is killed. */
export const EXECUTOR_CLOSE_TIMEOUT_MS = 10_000;
/** Wait before replacing an executor that died; doubled while replacements die before they are ready. */
export const EXECUTOR_RESTART_BACKOFF_MS = 100;
export const EXECUTOR_RESTART_BACKOFF_MAX_MS = 10_000;
/** How long a question to an executor (the tests' guard counts, closing its guard) may wait for its answer. */
export const EXECUTOR_ASK_TIMEOUT_MS = 10_000;

/**
 * The wait before a child (an executor, the egress process) is replaced, after
 * `failedStarts` replacements in a row that died before they were ready.
 */
export function restartBackoffMs(failedStarts: number): number {
  return Math.min(EXECUTOR_RESTART_BACKOFF_MAX_MS, EXECUTOR_RESTART_BACKOFF_MS * 2 ** Math.min(failedStarts, 10));
}

/**
 * SECURITY: the only variables an executor (and the Chromium it starts) sees;
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

/**
 * Sends `socket` to `child` as an IPC handle and closes the front's copy as soon
 * as it is written (`done` is then called, with the error if it could not be).
 * Node would otherwise keep its copy open until the child acknowledges it, and
 * for ever if the child dies first (its disconnect waits for that
 * acknowledgement): the socket's other end, handed to another child, would then
 * never see this one close, and wait on it. A child that dies before the message
 * is even written gets its copy closed at its exit.
 */
export function sendSocket(
  child: ChildProcess,
  msg: ToExecutor | ToEgress,
  socket: Socket,
  done: (e: Error | null) => void = () => undefined,
): void {
  let pending = unwritten.get(child);
  if (pending === undefined) {
    // One 'exit' listener per child, however many sockets wait to be written to it.
    const sockets = new Set<Socket>();
    child.once('exit', () => {
      for (const s of sockets) s.destroy();
      sockets.clear();
    });
    unwritten.set(child, sockets);
    pending = sockets;
  }
  pending.add(socket);
  child.send(msg, socket, { keepOpen: true }, (e) => {
    pending.delete(socket);
    socket.destroy();
    done(e);
  });
}

/** Each child's sockets sent and not yet written (sendSocket). */
const unwritten = new WeakMap<ChildProcess, Set<Socket>>();

/** A private home for a child (mode 0700), given to its user when it has one of its own. */
export function childDir(prefix: string, runAs: RunAs | undefined): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  if (runAs) chownSync(dir, runAs.uid, runAs.gid);
  return dir;
}

/**
 * Removes a child's home once it has exited, off the event loop. SECURITY: the
 * directory is the child's user's, and what that user left running may still
 * write into it: rmSync in an exit handler threw ENOTEMPTY there, uncaught,
 * and ended the front (and 200,000 files held its event loop for 2 s). A
 * failure is logged; the directory is under the system's temporary directory.
 */
export function removeChildDir(dir: string, logger: Logger): Promise<void> {
  return rm(dir, { recursive: true, force: true, maxRetries: 3 }).catch((err: unknown) =>
    logger.warn({ err, dir }, "a child process's directory could not be removed"),
  );
}

/** Where each child's entry point is, in the source tree (run through tsx). */
const CHILD_SOURCES = { executor: '../../slot/main.ts', 'egress-process': '../../egress/main.ts' } as const;

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
 */
export function childEntry(
  name: keyof typeof CHILD_SOURCES,
  heap?: { readonly oldMb: number; readonly semiSpaceMb: number },
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
 * ({ executor: pid } or { egress: pid }), within the child's budget of lines
 * (log-budget.ts). SECURITY: the line says which child wrote it, in the
 * front's words: a child cannot pass its lines off as the front's (a forged
 * "scrape done"); and its level is at most error: pino writes a fatal line
 * synchronously, and a child's flood of them froze the front for seconds
 * while its stdout was full.
 */
export function writeChildLine(
  child: ChildProcess,
  logger: Logger,
  line: string,
  who: Record<string, unknown>,
  what: string,
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
  // A child's fatal line is written as an error that says it was fatal.
  if (named === 'fatal') logger.error({ ...fields, ...who, fatal: true }, typeof msg === 'string' ? msg : what);
  else logger[named]({ ...fields, ...who }, typeof msg === 'string' ? msg : what);
}
