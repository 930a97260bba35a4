// The slot processes' channels, the egress process's side: each connection to its
// channels' socket begins with the front's hello, which names its slot process; the
// sessions a slot process opens there are its own, and a bind takes a grant the
// front sent for that slot process's request.
import type { Socket } from 'node:net';
import { background } from '../common/background.js';
import type { Logger } from '../common/log.js';
import {
  ChannelEnd,
  EGRESS_END_LIMITS,
  MAX_CHECKS_IN_FLIGHT_PER_CHANNEL,
  checkChannelHello,
  checkFromSlotChannel,
  type ChannelHello,
  type EgressToSlot,
  type SlotToEgress,
} from '../protocol/egress-channel.js';
import type { EgressStats } from '../protocol/egress.js';
import type { FromEgress } from '../protocol/egress-messages.js';
import { parseHostPattern, type HostPattern } from '../protocol/host-patterns.js';
import type { EgressChecker } from './checker.js';
import type { EgressGuard } from './guard.js';
import type { EgressSession } from './session.js';

/**
 * Sessions (ports) one slot process may hold at once. A slot process needs a few at a
 * time (the request's, a spare, one closing); SECURITY: one that escaped its
 * code cannot take every port and descriptor of this process from the others.
 */
export const MAX_SESSIONS_PER_CHANNEL = 256;
/**
 * How long a bind waits for its grant: the front sends the grant before it hands
 * the slot process the request, but on another pipe than the slot process's bind, so the
 * two may be read in either order.
 */
export const GRANT_WAIT_MS = 5_000;
/** Grants held at once (the front revokes each when its request ends; a bound, not a limit it reaches). */
export const MAX_GRANTS = 16_384;
/** How long a connection to the channels' socket may take to say its hello (the front writes it at once). */
export const HELLO_TIMEOUT_MS = 10_000;
/**
 * Connections to the channels' socket without a hello yet, at once. SECURITY: where every process shares
 * one uid, a slot process can connect too; it cannot name itself, and cannot hold this process's descriptors.
 */
export const MAX_UNNAMED_CHANNELS = 64;

interface Grant {
  readonly slotProcess: number;
  readonly requestId: string;
  readonly proxy: string | undefined;
  /** The key's host patterns, parsed; undefined: any public host. */
  readonly hosts: readonly HostPattern[] | undefined;
  used: boolean;
  /** The session bound with it: the request's traffic, counted here (finish()). */
  session?: EgressSession;
}

/**
 * SECURITY: what the front allowed each slot process to bind. A bind names a request
 * and a proxy; it is refused unless an unused grant for that slot process names
 * both: the key's proxy rules hold here too, not only in the front, and a
 * slot process cannot take another request's id.
 */
export class Grants {
  readonly #grants = new Map<number, Grant>();
  readonly #waiting = new Set<() => void>();

  add(id: number, slotProcess: number, requestId: string, proxy: string | undefined, hosts?: readonly string[]): void {
    // Oldest first when full: the front revokes each grant, so this is a bound for a bug, not a limit.
    if (this.#grants.size >= MAX_GRANTS) this.#grants.delete(this.#grants.keys().next().value as number);
    // A pattern that does not parse matches nothing: the front only sends checked ones.
    const patterns = hosts?.map((h) => parseHostPattern(h)).filter((h): h is HostPattern => h !== undefined);
    this.#grants.set(id, { slotProcess, requestId, proxy, hosts: patterns, used: false });
    for (const wake of [...this.#waiting]) wake();
  }

  revoke(id: number): void {
    this.#grants.delete(id);
  }

  /**
   * The request of grant `id` is answered: its session ends (its open connections cut and counted in) and its
   * final counts are returned; undefined when no session was bound with it.
   */
  finish(id: number): EgressStats | undefined {
    const session = this.#grants.get(id)?.session;
    session?.end();
    return session?.stats();
  }

  /**
   * Takes the grant that allows this bind, waiting GRANT_WAIT_MS for it; throws if there is none. Returns the
   * key's hosts and `bound`, to call with the session once it is bound (its counts are the request's).
   */
  async take(
    slotProcess: number,
    requestId: string,
    proxy: string | undefined,
    closed: () => boolean,
  ): Promise<{ hosts: readonly HostPattern[] | undefined; bound: (session: EgressSession) => void }> {
    const deadline = performance.now() + GRANT_WAIT_MS;
    for (;;) {
      let other: Grant | undefined;
      for (const g of this.#grants.values()) {
        if (g.used || g.slotProcess !== slotProcess || g.requestId !== requestId) continue;
        if (g.proxy === proxy) {
          g.used = true;
          const grant = g;
          return { hosts: g.hosts, bound: (session) => (grant.session = session) };
        }
        other = g;
      }
      // Granted with another proxy (or none): refused at once, the proxy never asked.
      if (other)
        throw new Error(
          `request ${requestId} was not granted ${proxy === undefined ? 'no proxy' : `proxy "${proxy}"`}`,
        );
      const left = deadline - performance.now();
      if (left <= 0 || closed()) throw new Error(`request ${requestId} was not granted to this slot process`);
      await new Promise<void>((resolve) => {
        const wake = (): void => {
          clearTimeout(timer);
          this.#waiting.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, left);
        this.#waiting.add(wake);
      });
    }
  }
}

/** Each slot process's one channel, by the front's number for the slot process. */
export type Channels = Map<number, ChannelEnd<SlotToEgress | ChannelHello, EgressToSlot>>;

/** What every channel of the egress process shares. */
export interface ChannelServing {
  /** The key of the front's hellos (channelMac). */
  readonly key: Buffer;
  readonly channels: Channels;
  /** Connections without a hello yet. */
  readonly unnamed: { count: number };
  readonly guard: Pick<EgressGuard, 'openSession'>;
  readonly checker: Pick<EgressChecker, 'check'>;
  readonly grants: Grants;
  readonly log: Logger;
  /** Tells the front (its wire). */
  readonly send: (msg: FromEgress) => void;
}

/**
 * Serves one connection to the channels' socket: its first line is the
 * front's hello (ChannelHello), which names its slot process; then it is that
 * slot process's channel: the sessions it opens are its own (an id it did not get
 * here names nothing), and all of them are closed with the channel.
 */
export function serveChannel(socket: Socket, serving: ChannelServing): void {
  const { key, channels, unnamed, guard, checker, grants, log, send } = serving;
  let who: ChannelHello | undefined;
  const sessions = new Map<number, EgressSession>();
  /** Sessions whose bind waits for its grant (one each: a session is bound once). */
  const binding = new Set<number>();
  /** URL checks of this channel in flight (bounded: MAX_CHECKS_IN_FLIGHT_PER_CHANNEL). */
  let checking = 0;
  let opening = 0;
  let nextId = 1;
  const answer = (q: number, fields: Omit<Extract<EgressToSlot, { op: 'answer' }>, 'op' | 'q'>): void =>
    end.send({ op: 'answer', q, ...fields });
  const failed = (q: number, e: unknown): void => answer(q, { ok: false, error: String(e) });

  const open = async (q: number): Promise<void> => {
    if (sessions.size + opening >= MAX_SESSIONS_PER_CHANNEL) {
      answer(q, { ok: false, error: `a slot process may hold ${MAX_SESSIONS_PER_CHANNEL} egress sessions at once` });
      return;
    }
    opening++;
    let session: EgressSession;
    try {
      session = await guard.openSession(who?.uid);
    } finally {
      opening--;
    }
    if (end.closed) {
      await session.close();
      return;
    }
    const s = nextId++;
    sessions.set(s, session);
    // SECURITY: sent before the page hears of the change (the guard counts and
    // records a failure before it answers Chromium), so the slot process names the
    // page's error from this request's failures alone.
    session.observe({
      stats: (stats) => end.send({ op: 'stats', s, stats }),
      failure: (host, port, error) => end.send({ op: 'failure', s, host, port, error }),
      refusedHost: (host, port) => end.send({ op: 'refused-host', s, host, port }),
    });
    answer(q, { ok: true, s, port: session.port });
  };

  const onMessage = (m: SlotToEgress): void => {
    switch (m.op) {
      case 'open':
        open(m.q).catch((e: unknown) => failed(m.q, e));
        return;
      case 'bind': {
        const session = sessions.get(m.s);
        if (!session) return failed(m.q, `no egress session ${m.s}`);
        if (binding.has(m.s)) return failed(m.q, `egress session ${m.s} is being bound`);
        binding.add(m.s);
        grants
          .take(who?.slotProcess ?? -1, m.requestId, m.proxy, () => end.closed || sessions.get(m.s) !== session)
          .then(({ hosts, bound }) => {
            if (sessions.get(m.s) !== session) throw new Error(`no egress session ${m.s}`);
            session.bind(m.requestId, m.proxy, hosts);
            bound(session);
            answer(m.q, { ok: true });
          })
          .catch((e: unknown) => {
            log.warn(
              { slotProcess: who?.slotProcess, requestId: m.requestId, err: String(e) },
              'an egress bind was refused',
            );
            failed(m.q, e);
          })
          .finally(() => binding.delete(m.s));
        return;
      }
      case 'end':
        sessions.get(m.s)?.end();
        return;
      case 'finish': {
        const session = sessions.get(m.s);
        if (!session) return failed(m.q, `no egress session ${m.s}`);
        session.end();
        answer(m.q, { ok: true, stats: session.stats() });
        return;
      }
      case 'close': {
        const session = sessions.get(m.s);
        if (!session) return failed(m.q, `no egress session ${m.s}`);
        session.close().then(
          () => {
            sessions.delete(m.s);
            answer(m.q, { ok: true });
          },
          (e: unknown) => failed(m.q, e),
        );
        return;
      }
      case 'check':
        if (checking >= MAX_CHECKS_IN_FLIGHT_PER_CHANNEL)
          return failed(
            m.q,
            `a slot process may have ${MAX_CHECKS_IN_FLIGHT_PER_CHANNEL} egress checks in flight at once; this one was refused`,
          );
        checking++;
        checker
          .check(m.host, m.port)
          .then(
            (decision) => answer(m.q, { ok: true, decision }),
            (e: unknown) => failed(m.q, e),
          )
          .finally(() => checking--);
        return;
    }
  };

  unnamed.count++;
  const helloTimer = setTimeout(() => end.close(), HELLO_TIMEOUT_MS);
  helloTimer.unref();
  const named = (hello: ChannelHello): void => {
    who = hello;
    unnamed.count--;
    clearTimeout(helloTimer);
    // SECURITY: one channel per slot process. Its previous one (and every session of it) is closed first, so that
    // a slot process can never hold more than MAX_SESSIONS_PER_CHANNEL ports, however many channels it is given.
    channels.get(hello.slotProcess)?.close();
    channels.set(hello.slotProcess, end);
  };
  const end: ChannelEnd<SlotToEgress | ChannelHello, EgressToSlot> = new ChannelEnd(
    socket,
    (msg) => {
      if (who === undefined) return checkChannelHello(msg, key);
      const m = checkFromSlotChannel(msg);
      // SECURITY: ids are given in order, so one never given here is a forgery (or a bug): the channel ends and
      // the front kills the slot. One given and closed since is the slot's own, and only refused.
      if ('s' in m && !(m.s >= 1 && m.s < nextId))
        throw new Error(`a slot process named egress session ${m.s}, which its channel never gave`);
      return m;
    },
    (m) => (m.op === 'hello' ? named(m) : onMessage(m)),
    (e) => {
      if (who === undefined) {
        log.warn({ err: e }, 'a connection to the channels socket that is not the front’s; closed');
        return;
      }
      // SECURITY: a slot process that sends what it should not is taken over or broken: the front kills it.
      log.error(
        { err: e, slotProcess: who.slotProcess },
        'a slot process sent what the egress process cannot read; closing its channel',
      );
      send({ type: 'slot-misbehaved', slotProcess: who.slotProcess });
    },
    EGRESS_END_LIMITS,
  );
  end.onClose(() => {
    clearTimeout(helloTimer);
    if (who === undefined) {
      unnamed.count--;
      return;
    }
    if (channels.get(who.slotProcess) === end) channels.delete(who.slotProcess);
    // The slot process is gone (or its channel is): every port it held is closed, whatever its contexts still do.
    for (const session of sessions.values()) background(session.close(), 'closing an egress session', log);
    sessions.clear();
    // The front replaces a slot process still up without its channel.
    send({ type: 'channel-closed', slotProcess: who.slotProcess, channel: who.channel });
  });
}
