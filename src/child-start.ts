// How the front starts a child process (an executor, the egress process): the
// fork with nothing of the front's but the IPC channel, the child's stdout and
// stderr logged line by line, and its first `ready` awaited within a deadline;
// and how it stops one.
// Shared by src/supervisor.ts and src/egress-supervisor.ts; front side only.
import { fork, type ChildProcess } from 'node:child_process';
import type { Logger } from './log.js';
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
 * characters were cut from it when it was longer than MAX_OUTPUT_LINE.
 */
export function logChildOutput(child: ChildProcess, logger: Logger, who: Record<string, unknown>, msg: string): void {
  for (const [stream, from] of [
    ['stdout', child.stdout],
    ['stderr', child.stderr],
  ] as const) {
    if (!from) continue;
    // SECURITY: each line is cut as it arrives; a line without end costs no more than its first characters.
    readBoundedLines(from, MAX_OUTPUT_LINE, ({ text, cutChars }) =>
      logger.warn({ ...who, stream, line: text, ...(cutChars > 0 ? { cutChars } : {}) }, msg),
    );
  }
}

/** What awaitReady does with a child's messages and exit, and the words it logs. */
export interface ReadyWatch<M extends { readonly type: string }> {
  readonly logger: Logger;
  /** How long the child may take to say `ready` before it is killed (SIGKILL). */
  readonly timeoutMs: number;
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
 * message is checked and handed to `watch.onMessage` (a malformed one kills the
 * child, not the front). Resolves at its first `ready`; rejects if it exits
 * before it was ready.
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
    child.on('message', (raw: unknown) => {
      try {
        const msg = watch.check(raw);
        watch.onMessage(msg);
        if (msg.type === 'ready') {
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
