// The slot process's side of the egress guard, which runs in a process of its own
// (src/egress/main.ts): each browser context's session is opened, bound to
// its request, ended and closed there, over the slot process's channel (channel.ts);
// URL checks are asked of the same checker the guard uses (one resolver, one
// policy). A session's counts and failures are sent here as they change, so the
// job reads them without a round trip; its final counts (the request's bill,
// with what the connections still open moved) are asked once, as it ends.
//
// When the egress process dies, the channel closes: every session of it is
// ended here at once (a context leased after that fails rather than using a port
// that a new egress process might give to another context), the slot process closes
// the contexts that used them, and says so (onDrained) once the last is closed;
// only then does the front hand it a channel to the next egress process.
import type { Socket } from 'node:net';
import type { Logger } from '../../common/log.js';
import {
  ChannelEnd,
  MAX_CHANNEL_HOST,
  SLOT_END_LIMITS,
  checkFromEgressChannel,
  type EgressToSlot,
  type SlotToEgress,
} from '../../protocol/egress-channel.js';
import {
  FAILURE_TTL_MS,
  MAX_FAILURES,
  MAX_REFUSED_HOSTS,
  type EgressDecision,
  type EgressStats,
  type SessionState,
} from '../../protocol/egress.js';

/** How long a question to the egress process may wait for its answer. */
export const EGRESS_ASK_TIMEOUT_MS = 10_000;
/** How long opening a session or a check waits for a channel while the egress process is being replaced. */
export const EGRESS_WAIT_TIMEOUT_MS = 15_000;

/** What a browser context has of the egress guard: its port, its request, what it did, the errors it met. */
export interface ContextEgress {
  readonly port: number;
  readonly state: SessionState;
  /** From now on the context's traffic is the request's; resolves once the guard holds it so. */
  bind(requestId: string, proxy?: string): void | Promise<void>;
  /** The request is over: its connections are cut, new ones refused. */
  end(): void;
  /**
   * end(), then the request's final counts: taken by the guard once the connections
   * still open are cut, so what they moved until then is in them.
   */
  finish(): Promise<EgressStats>;
  /** The context is gone: the port is released. */
  close(): Promise<void>;
  stats(): EgressStats;
  /** The net::ERR_… name of this request's last upstream failure for host:port, if recent. */
  recentFailure(host: string, port: number): string | undefined;
  /** The host:port the guard refused for being outside the request's key's hosts (the first few). */
  refusedHosts?(): readonly string[];
}

type Answer = Extract<EgressToSlot, { op: 'answer' }>;
type Question = SlotToEgress extends infer M ? (M extends { q: number } ? Omit<M, 'q'> : never) : never;

interface Asking {
  readonly resolve: (a: Answer) => void;
  readonly reject: (e: Error) => void;
  readonly timer: NodeJS.Timeout;
}

export class RemoteSession implements ContextEgress {
  readonly port: number;
  readonly #id: number;
  readonly #remote: RemoteGuard;
  #state: SessionState = 'spare';
  #stats: EgressStats = { connections: 0, refused: 0, bytesSent: 0, bytesReceived: 0 };
  readonly #failures = new Map<string, { error: string; at: number }>();
  readonly #refusedHosts = new Set<string>();
  #closed: Promise<void> | undefined;
  /** The final counts are taken (finish()): nothing the egress process sends later changes them. */
  #final = false;

  /** @internal made by RemoteGuard.openSession() */
  constructor(remote: RemoteGuard, id: number, port: number) {
    this.#remote = remote;
    this.#id = id;
    this.port = port;
  }

  get state(): SessionState {
    return this.#state;
  }

  async bind(requestId: string, proxy?: string): Promise<void> {
    if (this.#state === 'live') throw new Error('an egress session can be bound once');
    if (this.#state === 'ended') throw new Error('the egress session is gone (the egress process stopped)');
    // SECURITY: the proxy by name only; the egress process alone knows where it is and how to log in.
    await this.#remote.ask({ op: 'bind', s: this.#id, requestId, ...(proxy === undefined ? {} : { proxy }) });
    // SECURITY: ended meanwhile (the egress process stopped): the lease fails.
    if (this.#state !== 'spare') throw new Error('the egress session is gone (the egress process stopped)');
    this.#state = 'live';
  }

  end(): void {
    if (this.#state === 'ended') return;
    this.#state = 'ended';
    this.#remote.tell({ op: 'end', s: this.#id });
  }

  async finish(): Promise<EgressStats> {
    if (this.#state === 'ended') return this.stats();
    this.#state = 'ended';
    try {
      const a = await this.#remote.ask({ op: 'finish', s: this.#id }, false);
      if (a.stats) this.#stats = { ...a.stats };
      this.#final = true;
    } catch {
      // The egress process is gone (its requests fail): the counts it sent are all there are.
    }
    return this.stats();
  }

  close(): Promise<void> {
    this.end();
    this.#closed ??= this.#remote.release(this, this.#id);
    return this.#closed;
  }

  stats(): EgressStats {
    return { ...this.#stats };
  }

  recentFailure(host: string, port: number): string | undefined {
    const f = this.#failures.get(`${host.toLowerCase()}:${port}`);
    return f && performance.now() - f.at < FAILURE_TTL_MS ? f.error : undefined;
  }

  refusedHosts(): readonly string[] {
    return [...this.#refusedHosts];
  }

  /** @internal SECURITY: bounded here too, whatever the egress process sends. */
  addRefusedHost(host: string, port: number): void {
    if (this.#refusedHosts.size < MAX_REFUSED_HOSTS) this.#refusedHosts.add(`${host}:${port}`);
  }

  /** @internal the egress process's counts */
  setStats(stats: EgressStats): void {
    if (!this.#final) this.#stats = { ...stats };
  }

  /** @internal */
  recordFailure(host: string, port: number, error: string): void {
    const key = `${host.toLowerCase()}:${port}`;
    this.#failures.delete(key);
    // Bounded: the oldest entry goes first (a Map iterates in insertion order).
    if (this.#failures.size >= MAX_FAILURES) this.#failures.delete(this.#failures.keys().next().value as string);
    this.#failures.set(key, { error, at: performance.now() });
  }

  /** @internal its egress process is gone: nothing of this session is let through any more. */
  lost(): void {
    this.#state = 'ended';
  }
}

export interface RemoteGuardOptions {
  readonly logger: Logger;
  /** The channel closed (the egress process stopped): the slot process ends the requests and contexts that used it. */
  readonly onLost: () => void;
  /** Every session of the lost channel is closed: the slot process may be given a new channel. */
  readonly onDrained: () => void;
  readonly askTimeoutMs?: number;
  readonly waitTimeoutMs?: number;
}

export class RemoteGuard {
  readonly #opts: RemoteGuardOptions;
  #end: ChannelEnd<EgressToSlot, SlotToEgress> | undefined;
  readonly #asking = new Map<number, Asking>();
  #nextQ = 1;
  /** The current channel's sessions, by the egress process's id. */
  readonly #sessions = new Map<number, RemoteSession>();
  /** Sessions of a lost channel whose contexts are not closed yet. */
  readonly #draining = new Set<RemoteSession>();
  readonly #waiting = new Set<() => void>();
  #closed = false;

  constructor(opts: RemoteGuardOptions) {
    this.#opts = opts;
  }

  /** A channel is up. */
  get attached(): boolean {
    return this.#end !== undefined;
  }

  /** Takes a channel to the egress process (the front made it; a new one after the last was lost). */
  attach(socket: Socket): void {
    if (this.#closed) {
      socket.destroy();
      return;
    }
    // SECURITY: a channel handed while one is up replaces it without a report: its
    // sessions end (the egress process closes their ports with it), but the
    // slot process does not say it drained a channel nobody lost (src/front/egress-process/slot-channels.ts
    // free(): a drained report the front did not expect changes nothing).
    const replaced = this.#end;
    if (replaced) {
      this.#end = undefined;
      this.#failAsking('the channel to the egress process was replaced');
      for (const session of this.#sessions.values()) session.lost();
      this.#sessions.clear();
      replaced.close();
    }
    const end: ChannelEnd<EgressToSlot, SlotToEgress> = new ChannelEnd(
      socket,
      checkFromEgressChannel,
      (m) => this.#onMessage(m),
      (e) => this.#opts.logger.error({ err: e }, 'the egress process sent what the slot process cannot read'),
      SLOT_END_LIMITS,
    );
    this.#end = end;
    end.onClose(() => this.#lost(end));
    for (const wake of [...this.#waiting]) wake();
  }

  /** A port for one new browser context; it carries nothing until bound to a request. */
  async openSession(): Promise<RemoteSession> {
    const a = await this.ask({ op: 'open' });
    if (a.s === undefined || a.port === undefined) throw new Error('the egress process answered open without a port');
    const session = new RemoteSession(this, a.s, a.port);
    this.#sessions.set(a.s, session);
    return session;
  }

  /** The egress policy's decision for host:port, by the guard's own checker. */
  async check(host: string, port: number): Promise<EgressDecision> {
    if (host.length > MAX_CHANNEL_HOST)
      return { ok: false, reason: `${host} could not be resolved`, code: 'NAME_NOT_RESOLVED' };
    const a = await this.ask({ op: 'check', host, port });
    if (!a.decision) throw new Error('the egress process answered a check without a decision');
    return a.decision;
  }

  /** Stops: the channel is closed without a drain (the slot process is exiting). */
  close(): void {
    this.#closed = true;
    const end = this.#end;
    this.#end = undefined;
    end?.close();
    for (const wake of [...this.#waiting]) wake();
  }

  /** @internal sends a message that has no answer (dropped when no channel is up: its session is gone then). */
  tell(msg: Extract<SlotToEgress, { op: 'end' }>): void {
    this.#end?.send(msg);
  }

  /** @internal */
  async release(session: RemoteSession, id: number): Promise<void> {
    if (this.#sessions.get(id) === session) {
      try {
        await this.ask({ op: 'close', s: id }, false);
        return;
      } catch (e) {
        // Lost meanwhile: it is one of the lost channel's sessions now (below).
        if (!this.#draining.has(session)) throw e;
      } finally {
        if (this.#sessions.get(id) === session) this.#sessions.delete(id);
      }
    }
    // A session of a lost channel: its context is gone now.
    if (this.#draining.delete(session) && this.#draining.size === 0) this.#opts.onDrained();
  }

  /** @internal one question; fails when the channel is lost or at its deadline. */
  async ask(question: Question, waitForChannel = true): Promise<Answer> {
    const end = waitForChannel ? await this.#channel() : this.#end;
    if (!end) throw new Error('no channel to the egress process');
    return await new Promise<Answer>((resolve, reject) => {
      const q = this.#nextQ++;
      const ms = this.#opts.askTimeoutMs ?? EGRESS_ASK_TIMEOUT_MS;
      const timer = setTimeout(() => {
        this.#asking.delete(q);
        reject(new Error(`the egress process did not answer ${question.op} within ${ms} ms`));
        // SECURITY: a channel that stops answering is taken as lost (its sessions end, the
        // slot process drains), and the front hands a new one, rather than every later question waiting.
        end.close();
      }, ms);
      this.#asking.set(q, { resolve, reject, timer });
      end.send({ ...question, q } as SlotToEgress);
    }).then((a) => {
      if (!a.ok) throw new Error(`egress ${question.op}: ${a.error ?? 'refused'}`);
      return a;
    });
  }

  /** The channel, waiting for one (within waitTimeoutMs) while the egress process is being replaced. */
  async #channel(): Promise<ChannelEnd<EgressToSlot, SlotToEgress>> {
    if (this.#end) return this.#end;
    const ms = this.#opts.waitTimeoutMs ?? EGRESS_WAIT_TIMEOUT_MS;
    await new Promise<void>((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.#waiting.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.#waiting.add(wake);
    });
    if (!this.#end) throw new Error(`no egress process within ${ms} ms`);
    return this.#end;
  }

  #onMessage(m: EgressToSlot): void {
    switch (m.op) {
      case 'answer': {
        const asking = this.#asking.get(m.q);
        if (!asking) return;
        this.#asking.delete(m.q);
        clearTimeout(asking.timer);
        asking.resolve(m);
        return;
      }
      case 'stats':
        this.#sessions.get(m.s)?.setStats(m.stats);
        return;
      case 'failure':
        this.#sessions.get(m.s)?.recordFailure(m.host, m.port, m.error);
        return;
      case 'refused-host':
        this.#sessions.get(m.s)?.addRefusedHost(m.host, m.port);
        return;
    }
  }

  #failAsking(why: string): void {
    for (const [q, asking] of this.#asking) {
      clearTimeout(asking.timer);
      asking.reject(new Error(why));
      this.#asking.delete(q);
    }
  }

  #lost(end: ChannelEnd<EgressToSlot, SlotToEgress>): void {
    if (this.#end !== end) return;
    this.#end = undefined;
    this.#failAsking('the egress process stopped');
    // SECURITY: every port of the dead process is refused from here on: a context
    // leased later fails, and the contexts that used one are closed (onLost).
    for (const session of this.#sessions.values()) {
      session.lost();
      this.#draining.add(session);
    }
    this.#sessions.clear();
    if (this.#closed) return;
    this.#opts.logger.error({ sessions: this.#draining.size }, 'the channel to the egress process closed');
    this.#opts.onLost();
    if (this.#draining.size === 0) this.#opts.onDrained();
  }
}
