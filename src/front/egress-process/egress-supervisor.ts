// The front's side of the egress process (src/egress/main.ts): forks it with
// an allow-listed environment, a home of its own and, as root, a user of its own
// (EGRESS_USER, not the slot processes'); gives it its configuration (and nothing of
// the front's secrets); connects each slot process's channel to it (given to the
// slot process at its spawn); reads every message
// it sends against its shape and kills it for one it cannot read; and when it
// dies, tells the supervisor (whose requests in flight fail with 500) and starts
// another after a backoff, on the same browser-wide port.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { background } from '../../common/background.js';
import { residentBytes } from '../../common/service-memory.js';
import type { Config } from '../../common/config.js';
import {
  checkFromEgress,
  egressConfig,
  egressInit,
  MAX_EGRESS_MESSAGE_BYTES,
  MAX_EGRESS_MESSAGE_TOKENS,
  type FromEgress,
  type ToEgress,
} from '../../protocol/egress-messages.js';
import type { EgressStats, GuardCounts } from '../../protocol/egress.js';
import { channelMac } from '../../protocol/egress-channel.js';
import { type EgressTestSeam, type FaultKind } from '../../protocol/test-seams.js';
import type { Logger } from '../../common/log.js';
import {
  SLOT_ASK_TIMEOUT_MS,
  SLOT_CLOSE_TIMEOUT_MS,
  SLOT_START_TIMEOUT_MS,
  childDir,
  childEntry,
  childEnv,
  onWireClosed,
  restartBackoffMs,
  sendToChild,
  wireOpen,
  writeChildLine,
} from '../child-guard/child-start.js';
import { awaitReady, spawnChild, logChildOutput, removeChildDir, stopChild } from '../child-guard/child-start.js';
import { lookupUser, slotUsers, whyNoUsers, type RunAs } from '../host/users.js';

/**
 * As root, the egress process's user: it must exist (scripts/bootstrap.mjs
 * creates it) and be neither root nor a slot's user (SECURITY: code that
 * escaped a slot process or a renderer runs as that user, and could read the
 * memory of any process of it).
 */
export function egressUser(
  config: Pick<Config, 'egressUser' | 'slotUserPrefix' | 'maxConcurrency'>,
): RunAs | undefined {
  if (whyNoUsers() !== undefined) return undefined;
  const found = lookupUser(config.egressUser);
  if (found === undefined || found.uid === 0)
    throw new Error(
      `running as root, the egress process needs the unprivileged user "${config.egressUser}" ` +
        `(EGRESS_USER): run \`node scripts/bootstrap.mjs build\` as root, which creates it, or ` +
        `\`useradd --system --no-create-home --shell /usr/sbin/nologin ${config.egressUser}\``,
    );
  const slot = slotUsers(config)?.find((u) => u.uid === found.uid);
  if (slot !== undefined)
    throw new Error(`EGRESS_USER (${config.egressUser}) must be another user than the slot user ${slot.user}`);
  return found;
}

/**
 * The first message the egress process gets: the guard's policy, the ports it
 * keeps, and (SECURITY) the upstream proxies with their credentials, which go
 * to this process alone, never to a slot process (see slotInit in supervisor.ts).
 */
export function egressInitMessage(
  config: Config,
  logLevel: string,
  servicePort: number,
  port: number,
  seam: EgressTestSeam | undefined,
  clientUids?: readonly number[],
  channels?: { readonly path: string; readonly key: string },
): Extract<ToEgress, { type: 'init' }> {
  return {
    type: 'init',
    config: egressConfig(config),
    logLevel,
    servicePort,
    port,
    channelPath: channels?.path ?? '',
    channelKey: channels?.key ?? '',
    egress: egressInit(config),
    ...(clientUids === undefined ? {} : { clientUids }),
    ...(seam
      ? {
          seam: {
            ...(seam.hosts ? { hosts: seam.hosts } : {}),
            ...(seam.localAddresses ? { localAddresses: seam.localAddresses } : {}),
            ...(seam.publicTargets ? { publicTargets: seam.publicTargets } : {}),
            ...(seam.guardLimits ? { guardLimits: seam.guardLimits } : {}),
            loopbackOnly: seam.loopbackOnly,
            reportDials: seam.reportDials,
            faults: seam.faults,
          },
        }
      : {}),
  };
}

/**
 * Two connected Unix sockets: a listener in directory `dir`, one connection to
 * it, and the listener closed and removed at once (Node has no socketpair()).
 * Both ends come paused: neither reads until its reader is in place.
 */
export async function socketPair(dir: string): Promise<[Socket, Socket]> {
  const path = join(dir, `channel-${process.pid}-${Math.random().toString(36).slice(2)}`);
  // pauseOnConnect: the accepted end never starts reading in the front.
  const server = createServer({ pauseOnConnect: true });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(path, () => resolve());
    });
    const accepted = new Promise<Socket>((resolve) => server.once('connection', resolve));
    const client = connect(path);
    // Paused before it connects, so Node never starts reading it (see above).
    client.pause();
    await new Promise<void>((resolve, reject) => {
      client.once('connect', resolve);
      client.once('error', reject);
    });
    return [await accepted, client];
  } finally {
    server.close();
    rmSync(path, { force: true });
  }
}

export interface EgressEvents {
  /** A refusal of a request's traffic. */
  egressRefused?(refusal: Extract<FromEgress, { type: 'egress-refused' }>): void;
  /** The egress process died: the requests in flight fail; the slot processes' channels are gone (they are replaced). */
  stopped?(): void;
  /** A (new) egress process is ready: channels can be made. */
  ready?(): void;
  /** A slot process sent what the egress process cannot read: the front kills it. */
  slotMisbehaved?(slotProcess: number): void;
  /** The egress process closed a slot process's channel (and every session of it). */
  channelClosed?(slotProcess: number, channel: number): void;
}

export interface EgressSupervisorOptions {
  readonly config: Config;
  readonly logger: Logger;
  /** The front's own port, which no page may reach. */
  readonly servicePort: number;
  readonly events?: EgressEvents;
  readonly seam?: EgressTestSeam & { onDial?(address: string, port: number): void };
}

/**
 * How long a request's reply waits for its egress counts (a round trip to the egress process, answered at once):
 * past it the request is billed no bytes, and the reply goes.
 */
export const EGRESS_BILL_TIMEOUT_MS = 5_000;

type Answer = Extract<FromEgress, { type: 'guard-closed' | 'guard-counts' | 'finished' }>;

interface Asking {
  readonly id: number;
  readonly type: Answer['type'];
  readonly answer: (msg: Answer) => void;
  readonly fail: (e: Error) => void;
}

export class EgressSupervisor {
  readonly #opts: EgressSupervisorOptions;
  readonly #runAs: RunAs | undefined;
  #child: ChildProcess | undefined;
  #childDir: string | undefined;
  /** The current process's socket for the slot processes' channels (in its own directory), and the key of their hellos. */
  #channelPath = '';
  #channelKey: Buffer = Buffer.alloc(0);
  /** Those waiting for a (new) process to be ready (channel()). */
  readonly #waitingReady = new Set<{ resolve: () => void; reject: (e: Error) => void }>();
  #ready = false;
  /** The current process said it was ready once (whether or not it still is). */
  #wasReady = false;
  #generation = 0;
  #guardPort = 0;
  #restarts = 0;
  #failedStarts = 0;
  #nextAsk = 1;
  /** The front's number for the next channel: unique across egress processes. */
  #nextChannel = 1;
  #nextGrant = 1;
  /** The requests in flight that may bind a session: given again to each new egress process. */
  readonly #grants = new Map<number, Extract<ToEgress, { type: 'grant' }>>();
  #channelsMade = 0;
  readonly #asking = new Set<Asking>();
  #closed = false;
  #stopping = false;
  #timer: NodeJS.Timeout | undefined;

  constructor(opts: EgressSupervisorOptions) {
    this.#opts = opts;
    this.#runAs = egressUser(opts.config);
  }

  /** Starts the egress process and waits until it listens. */
  async start(): Promise<void> {
    await this.#spawn();
  }

  get ready(): boolean {
    return this.#ready;
  }

  /** Which egress process this is: 1 for the first, one more for each replacement. */
  get generation(): number {
    return this.#generation;
  }

  /** The browser-wide port (Chromium's --proxy-server): the first process's, kept by its replacements. */
  get guardPort(): number {
    return this.#guardPort;
  }

  /** Egress processes that died and were replaced. */
  get restarts(): number {
    return this.#restarts;
  }

  get pid(): number | undefined {
    return this.#ready ? this.#child?.pid : undefined;
  }

  /** The user it runs as (undefined: the front's own). */
  get runAs(): RunAs | undefined {
    return this.#runAs;
  }

  /** What it holds now, read from /proc as it is asked (a scrape of /metrics, /health), in bytes. */
  get memoryBytes(): number {
    const pid = this.#ready ? this.#child?.pid : undefined;
    return pid === undefined ? 0 : residentBytes(pid);
  }

  /**
   * A new channel for slot process `slotProcess` (as root, slot user `uid`), once a process is ready: a connection
   * to its socket, which the front opens with a hello only it can make (HMAC of the process's own key, which
   * no slot process holds), for the slot process to be given at its spawn. SECURITY: the socket is in the egress
   * process's own directory (0700, its user's): as root, no slot's user can reach it; where every process
   * shares one uid, the hello's key is what makes a connection a slot process's channel.
   */
  async channel(slotProcess: number, uid?: number): Promise<{ socket: Socket; channel: number; generation: number }> {
    await this.#whenReady();
    const child = this.#child;
    const generation = this.#generation;
    const channel = this.#nextChannel++;
    const hello = {
      op: 'hello',
      slotProcess,
      channel,
      ...(uid === undefined ? {} : { uid }),
      mac: channelMac(this.#channelKey, slotProcess, channel, uid),
    };
    const socket = connect(this.#channelPath);
    // Never read here: what the egress process answers is the slot process's.
    socket.pause();
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once('error', reject);
        socket.once('connect', () => socket.write(`${JSON.stringify(hello)}\n`, (e) => (e ? reject(e) : resolve())));
      });
    } catch (e) {
      socket.destroy();
      throw e;
    }
    if (child !== this.#child || !this.#ready) {
      socket.destroy();
      throw new Error('the egress process stopped while a channel was made');
    }
    this.#channelsMade++;
    return { socket, channel, generation };
  }

  /** Resolves once a process is ready; rejects once the supervisor is closed. */
  #whenReady(): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('the egress supervisor is closed'));
    if (this.#ready && this.#child && wireOpen(this.#child)) return Promise.resolve();
    return new Promise((resolve, reject) => this.#waitingReady.add({ resolve, reject }));
  }

  /**
   * SECURITY: slot process `slotProcess` may bind one egress session to `requestId`,
   * through `proxy` (a name the front checked against the request's key) or none.
   * Kept until revoke() (the request's context is closed), and given again to a
   * replacement egress process. Returns the grant's number for revoke().
   */
  grant(slotProcess: number, requestId: string, proxy: string | undefined, hosts?: readonly string[]): number {
    const grant = this.#nextGrant++;
    const msg: Extract<ToEgress, { type: 'grant' }> = {
      type: 'grant',
      grant,
      slotProcess,
      requestId,
      ...(proxy === undefined ? {} : { proxy }),
      ...(hosts === undefined ? {} : { hosts }),
    };
    // Bounded by the requests in flight: each is revoked when its context is closed.
    this.#grants.set(grant, msg);
    if (this.#ready) this.#send(msg);
    return grant;
  }

  /**
   * SECURITY: the request of `grant` is answered: the egress process ends its session (cutting its open
   * connections, counted in) and answers its final counts, what the request is billed; undefined when no
   * session was bound with it, or the egress process could not answer within `timeoutMs`.
   */
  async finish(grant: number, timeoutMs = EGRESS_BILL_TIMEOUT_MS): Promise<EgressStats | undefined> {
    if (!this.#grants.has(grant)) return undefined;
    try {
      return (await this.#ask('finish', 'finished', timeoutMs, { grant })).stats;
    } catch (err) {
      this.#opts.logger.warn({ err: String(err) }, "a request's egress counts could not be read; it is billed none");
      return undefined;
    }
  }

  /** The request of `grant` is over. */
  revoke(grant: number): void {
    if (this.#grants.delete(grant) && this.#ready) this.#send({ type: 'revoke', grant });
  }

  /** Channels made to slot processes since the start (every process's), for tests and the log. */
  get channelsMade(): number {
    return this.#channelsMade;
  }

  /** Tests (seam.faults): makes the egress process fail as asked. */
  fault(kind: FaultKind, message?: unknown): void {
    this.#send({ type: 'fault', kind, ...(message === undefined ? {} : { message }) });
  }

  /** Closes the egress guard (a test of what happens when it is down). */
  async closeGuard(timeoutMs = SLOT_ASK_TIMEOUT_MS): Promise<void> {
    await this.#ask('close-guard', 'guard-closed', timeoutMs);
  }

  /** Tests (seam): the guard's counts. */
  async guardCounts(timeoutMs = SLOT_ASK_TIMEOUT_MS): Promise<GuardCounts> {
    if (!this.#opts.seam) throw new Error('the guard counts are answered only in tests (egressSeam)');
    return (await this.#ask('guard-counts', 'guard-counts', timeoutMs)).counts;
  }

  #send(msg: ToEgress): void {
    if (this.#child) sendToChild(this.#child, msg);
  }

  #ask<T extends Answer['type']>(
    question: 'close-guard' | 'guard-counts' | 'finish',
    answer: T,
    timeoutMs: number,
    fields: { grant?: number } = {},
  ): Promise<Extract<Answer, { type: T }>> {
    return new Promise((resolve, reject) => {
      if (!this.#ready || !this.#child || !wireOpen(this.#child)) {
        reject(new Error(`the egress process is not ready; it cannot answer ${question}`));
        return;
      }
      const asking: Asking = {
        id: this.#nextAsk++,
        type: answer,
        answer: (msg) => {
          done();
          resolve(msg as Extract<Answer, { type: T }>);
        },
        fail: (err) => {
          done();
          reject(err);
        },
      };
      const timer = setTimeout(
        () => asking.fail(new Error(`the egress process did not answer ${question} within ${timeoutMs} ms`)),
        timeoutMs,
      );
      const done = (): void => {
        clearTimeout(timer);
        this.#asking.delete(asking);
      };
      this.#asking.add(asking);
      this.#send(
        question === 'finish'
          ? { type: question, ask: asking.id, grant: fields.grant ?? 0 }
          : { type: question, ask: asking.id },
      );
    });
  }

  #spawn(): Promise<void> {
    const { config, logger, seam } = this.#opts;
    // SECURITY: a home and temporary directory of its own, which only its user may enter.
    const dir = childDir('pagescript-egress-', this.#runAs);
    const profileDir = config.cpuProfileDir === undefined ? undefined : join(config.cpuProfileDir, 'egress');
    const { file, execArgv } = childEntry('egress-process', undefined, profileDir);
    const child = spawnChild(file, execArgv, childEnv(dir), this.#runAs);
    this.#child = child;
    this.#childDir = dir;
    this.#channelPath = join(dir, 'channels.sock');
    this.#channelKey = randomBytes(32);
    const channels = { path: this.#channelPath, key: this.#channelKey.toString('hex') };
    this.#ready = false;
    this.#wasReady = false;
    this.#generation++;
    logChildOutput(child, logger, { egress: child.pid }, 'egress process output');
    const wasReady = (): boolean => this.#wasReady && this.#child === child;
    const ready = awaitReady(child, {
      logger,
      timeoutMs: SLOT_START_TIMEOUT_MS,
      maxMessageBytes: MAX_EGRESS_MESSAGE_BYTES,
      maxMessageTokens: MAX_EGRESS_MESSAGE_TOKENS,
      // Not paced: it says each refusal of every slot's traffic (a page chooses how many), and what waited in it
      // would grow the one process all traffic goes through. It runs no script; a slot is paced.
      messagesPerWindow: Number.POSITIVE_INFINITY,
      bytesPerWindow: Number.POSITIVE_INFINITY,
      tokensPerWindow: Number.POSITIVE_INFINITY,
      begin: () => {
        sendToChild(
          child,
          egressInitMessage(
            config,
            logger.level,
            this.#opts.servicePort,
            this.#guardPort,
            seam,
            // SECURITY: as root, each slot (its process and Chromium) runs as a user of its
            // own: only the slots' sockets are served on a context's port, each its own slot's.
            slotUsers(config)?.map((u) => u.uid),
            channels,
          ),
        );
      },
      check: checkFromEgress,
      onMessage: (msg) => this.#onMessage(child, msg),
      kill: () => this.#kill(child),
      wasReady,
      onExit: (code, signal) => this.#onExit(child, dir, wasReady(), code, signal),
      words: {
        timeout: 'egress process did not start in time; killing it',
        badMessage: 'bad message from the egress process; killing it',
        error: 'egress process error',
        who: 'the egress process',
      },
    });
    // Its wire is gone before its exit is seen: no channel is made to it from now on.
    onWireClosed(child, () => {
      if (this.#child === child) this.#ready = false;
    });
    return ready;
  }

  /**
   * Kills the egress process and, at once, makes no more channels to it: one
   * handed out before its exit is seen would reach no process, and the slot process
   * that took it would wait for it.
   */
  #kill(child: ChildProcess): void {
    if (this.#child === child) this.#ready = false;
    child.kill('SIGKILL');
  }

  #onMessage(child: ChildProcess, msg: FromEgress): void {
    const { logger, events } = this.#opts;
    switch (msg.type) {
      case 'ready':
        if (this.#guardPort !== 0 && msg.guardPort !== this.#guardPort) {
          // Chromium was started with the first port: a process on another would carry none of its traffic.
          logger.error(
            { pid: child.pid, guardPort: msg.guardPort },
            'the egress process listens on another port; killing it',
          );
          this.#kill(child);
          return;
        }
        this.#guardPort = msg.guardPort;
        // Before any channel is made to it (events.ready): the requests in flight may bind.
        for (const grant of this.#grants.values()) sendToChild(child, grant);
        this.#ready = true;
        for (const waiting of [...this.#waitingReady]) waiting.resolve();
        this.#waitingReady.clear();
        this.#wasReady = true;
        this.#failedStarts = 0;
        logger.info(
          { pid: child.pid, user: this.#runAs?.user, guardPort: msg.guardPort, restarts: this.#restarts },
          'egress process ready',
        );
        events?.ready?.();
        return;
      case 'log':
        writeChildLine(child, logger, msg.line, { egress: child.pid }, 'egress process', this.#stopping);
        return;
      case 'egress-refused':
        events?.egressRefused?.(msg);
        return;
      case 'dial':
        this.#opts.seam?.onDial?.(msg.address, msg.port);
        return;
      case 'slot-misbehaved':
        events?.slotMisbehaved?.(msg.slotProcess);
        return;
      case 'channel-closed':
        if (child === this.#child) events?.channelClosed?.(msg.slotProcess, msg.channel);
        return;
      case 'guard-closed':
      case 'guard-counts':
      case 'finished':
        for (const asking of [...this.#asking])
          if (asking.type === msg.type && asking.id === msg.ask) asking.answer(msg);
        return;
    }
  }

  #onExit(
    child: ChildProcess,
    dir: string,
    wasReady: boolean,
    code: number | null,
    signal: NodeJS.Signals | null,
  ): void {
    background(removeChildDir(dir, this.#opts.logger), 'removing the egress process directory', this.#opts.logger);
    if (this.#child !== child) return;
    this.#ready = false;
    for (const asking of [...this.#asking])
      asking.fail(new Error(`the egress process exited (${code ?? signal}) before it answered`));
    if (this.#closed) return;
    if (this.#stopping) {
      // A SIGTERM to the whole group (systemd's KillMode=control-group, kill -- -PGID) reaches it with the
      // front: no failure of its own, and no replacement for a service that is going away.
      this.#opts.logger.info({ pid: child.pid, code, signal }, 'egress process exited while the service shuts down');
      this.#opts.events?.stopped?.();
      return;
    }
    this.#restarts++;
    if (!wasReady) this.#failedStarts++;
    const backoff = restartBackoffMs(this.#failedStarts);
    this.#opts.logger.error(
      { pid: child.pid, code, signal, restarts: this.#restarts, backoffMs: backoff },
      'egress process stopped; starting another',
    );
    this.#opts.events?.stopped?.();
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      // One that died just before the service began to shut down is not started again as it goes.
      if (this.#closed || this.#stopping) return;
      this.#spawn().catch((err: unknown) => {
        // A replacement the shutdown's SIGTERM reached before it was ready is no failure of its own.
        if (this.#closed || this.#stopping)
          this.#opts.logger.info({ err }, 'egress process replacement ended: the service shuts down');
        else this.#opts.logger.error({ err }, 'egress process replacement failed');
      });
    }, backoff);
    this.#timer.unref();
  }

  /**
   * The service began to shut down (the front got SIGTERM, maybe with every
   * process of its group): an exit from now on is not replaced or logged as an error.
   */
  stopping(): void {
    this.#stopping = true;
  }

  /** Asks the egress process to close its guard and exit; kills it if it does not in time. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    for (const waiting of [...this.#waitingReady]) waiting.reject(new Error('the egress supervisor is closed'));
    this.#waitingReady.clear();
    const child = this.#child;
    if (child && child.exitCode === null && child.signalCode === null)
      await stopChild(child, () => this.#send({ type: 'shutdown' }), SLOT_CLOSE_TIMEOUT_MS);
    if (this.#childDir) await removeChildDir(this.#childDir, this.#opts.logger);
  }
}
