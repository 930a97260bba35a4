// The egress process's entry point: a process the front forks (src/front/children/egress-supervisor.ts)
// to hold the egress guard, apart from the executors. It runs no script and no
// Chromium; as root it runs as a user of its own (EGRESS_USER), not the
// executors', so code that escapes an isolate or a renderer cannot read its
// memory (ptrace, /proc/<pid>/mem) — where, with upstream proxies, their
// credentials are. A hostile upstream (or a bug in the guard) can end only this
// process: the front fails the requests in flight and starts another.
//
// Each executor reaches it over a channel of its own (src/protocol/egress-channel.ts):
// a connection the front opens to its socket (in this process's own directory)
// and gives the executor at its spawn; Chromium's traffic reaches it on loopback
// ports (one per browser context, and the browser-wide one).
//
// Nothing here imports from the front, nor from the executor's browser/,
// sandbox/ or scrape/ (test/unit/process-boundary.test.ts).
import { createServer, isIP, type Socket } from 'node:net';
import { pino } from 'pino';
import { background } from '../common/background.js';
import {
  ChannelEnd,
  MAX_CHECKS_IN_FLIGHT_PER_CHANNEL,
  checkChannelHello,
  checkFromExecutorChannel,
  type ChannelHello,
  type EgressToExecutor,
  type ExecutorToEgress,
} from '../protocol/egress-channel.js';
import { FRONT_WIRE_FD, frontWire, inheritedSocket } from '../protocol/wire.js';
import {
  EgressChecker,
  dnsResolver,
  systemAddresses,
  systemResolver,
  type ResolvedAddress,
  type Resolver,
} from './checker.js';
import { EgressGuard, netConnector, type Connector } from './guard.js';
import type { EgressSession } from './session.js';
import type { FromEgress, ToEgress } from '../protocol/egress-messages.js';
import type { EgressTestSeam } from '../protocol/test-seams.js';
import type { Logger } from '../common/log.js';
import { collectWhenIdle } from '../common/idle-gc.js';
import { parseHostPattern, type HostPattern } from '../protocol/host-patterns.js';

/** After a fatal error, how long the last messages (the log line) get to leave before the exit. */
const FATAL_FLUSH_MS = 200;
/** Exit status after a fatal error (EX_SOFTWARE). */
const EXIT_FATAL = 70;
/**
 * Sessions (ports) one executor may hold at once. An executor needs a few per
 * lane (the request's, a spare, one closing); SECURITY: one that escaped its
 * code cannot take every port and descriptor of this process from the others.
 */
export const MAX_SESSIONS_PER_CHANNEL = 256;
/**
 * How long a bind waits for its grant: the front sends the grant before it hands
 * the executor the request, but on another pipe than the executor's bind, so the
 * two may be read in either order.
 */
export const GRANT_WAIT_MS = 5_000;
/** Grants held at once (the front revokes each when its request ends; a bound, not a limit it reaches). */
export const MAX_GRANTS = 16_384;
/** How long a connection to the channels' socket may take to say its hello (the front writes it at once). */
export const HELLO_TIMEOUT_MS = 10_000;
/**
 * Connections to the channels' socket without a hello yet, at once. SECURITY: where every process shares
 * one uid, an executor can connect too; it cannot name itself, and cannot hold this process's descriptors.
 */
export const MAX_UNNAMED_CHANNELS = 64;

interface Grant {
  readonly executor: number;
  readonly requestId: string;
  readonly proxy: string | undefined;
  /** The key's host patterns, parsed; undefined: any public host. */
  readonly hosts: readonly HostPattern[] | undefined;
  used: boolean;
}

/**
 * SECURITY: what the front allowed each executor to bind. A bind names a request
 * and a proxy; it is refused unless an unused grant for that executor names
 * both: the key's proxy rules hold here too, not only in the front, and an
 * executor cannot take another request's id.
 */
class Grants {
  readonly #grants = new Map<number, Grant>();
  readonly #waiting = new Set<() => void>();

  add(id: number, executor: number, requestId: string, proxy: string | undefined, hosts?: readonly string[]): void {
    // Oldest first when full: the front revokes each grant, so this is a bound for a bug, not a limit.
    if (this.#grants.size >= MAX_GRANTS) this.#grants.delete(this.#grants.keys().next().value as number);
    // A pattern that does not parse matches nothing: the front only sends checked ones.
    const patterns = hosts?.map((h) => parseHostPattern(h)).filter((h): h is HostPattern => h !== undefined);
    this.#grants.set(id, { executor, requestId, proxy, hosts: patterns, used: false });
    for (const wake of [...this.#waiting]) wake();
  }

  revoke(id: number): void {
    this.#grants.delete(id);
  }

  /** Takes the grant that allows this bind, waiting GRANT_WAIT_MS for it; throws if there is none. */
  async take(
    executor: number,
    requestId: string,
    proxy: string | undefined,
    closed: () => boolean,
  ): Promise<readonly HostPattern[] | undefined> {
    const deadline = performance.now() + GRANT_WAIT_MS;
    for (;;) {
      let other: Grant | undefined;
      for (const g of this.#grants.values()) {
        if (g.used || g.executor !== executor || g.requestId !== requestId) continue;
        if (g.proxy === proxy) {
          g.used = true;
          return g.hosts;
        }
        other = g;
      }
      // Granted with another proxy (or none): refused at once, the proxy never asked.
      if (other)
        throw new Error(
          `request ${requestId} was not granted ${proxy === undefined ? 'no proxy' : `proxy "${proxy}"`}`,
        );
      const left = deadline - performance.now();
      if (left <= 0 || closed()) throw new Error(`request ${requestId} was not granted to this executor`);
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

/** The front's wire (given at the spawn, FRONT_WIRE_FD); what the front sends is trusted. */
const front = frontWire<ToEgress, FromEgress>(
  inheritedSocket(FRONT_WIRE_FD),
  (m) => onFront(m),
  (e) => fatal('the front sent what the egress process cannot read', e),
);

function send(msg: FromEgress): void {
  front.send(msg);
}

/** What the front's messages go to once the process has started (start()). */
let onStarted: ((msg: ToEgress) => void) | undefined;
let initSeen = false;

function onFront(msg: ToEgress): void {
  if (!initSeen) {
    initSeen = true;
    if (msg.type !== 'init') {
      fatal('the first message was not init', new Error(msg.type));
      return;
    }
    start(msg).catch((e: unknown) => fatal('the egress process could not start', e));
    return;
  }
  if (onStarted) onStarted(msg);
  else if (msg.type === 'shutdown') process.exit(0);
}

function ipcLogger(level: string): Logger {
  return pino(
    { level, base: { egress: process.pid } },
    { write: (line: string) => send({ type: 'log', line: line.trimEnd() }) },
  );
}

let logger: Logger | undefined;
let exiting = false;

function fatal(what: string, e: unknown): void {
  if (logger) logger.fatal({ err: e }, `${what}; the egress process exits`);
  else
    process.stderr.write(
      `pagescript egress ${process.pid}: ${what}: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`,
    );
  if (exiting) return;
  exiting = true;
  // The front fails the requests in flight when it sees this process exit (EGRESS_STOPPED).
  setTimeout(() => process.exit(EXIT_FATAL), FATAL_FLUSH_MS);
}

// SECURITY: an error nobody caught (an upstream's parser, a bug) ends this process
// loudly, never silently, and never the front or an executor.
process.on('uncaughtException', (e) => fatal('uncaught exception', e));
process.on('unhandledRejection', (e) => fatal('unhandled rejection', e));
front.onClose(() => {
  if (!exiting) process.exit(0);
});

/** The resolver a test describes as data (see ExecutorTestSeam.hosts): each lookup takes the next answer. */
function seamResolver(hosts: NonNullable<EgressTestSeam['hosts']>): Resolver {
  const turns = new Map<string, number>();
  return async (host) => {
    const answers = hosts[host];
    if (answers === undefined || answers.length === 0)
      throw Object.assign(new Error(`ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    const turn = turns.get(host) ?? 0;
    turns.set(host, turn + 1);
    const chosen = answers[turn % answers.length] ?? [];
    return chosen.map((address): ResolvedAddress => ({ address, family: isIP(address) === 6 ? 6 : 4 }));
  };
}

function seamConnector(seam: EgressTestSeam): Connector {
  return async (t, ms) => {
    if (seam.reportDials) send({ type: 'dial', address: t.address, port: t.port });
    if (seam.loopbackOnly && t.address !== '127.0.0.1' && t.address !== '::1')
      throw Object.assign(new Error('refused by the test seam'), { code: 'ECONNREFUSED' });
    return await netConnector(t, ms);
  };
}

/** Each executor's one channel, by the front's number for the executor. */
type Channels = Map<number, ChannelEnd<ExecutorToEgress | ChannelHello, EgressToExecutor>>;

/**
 * Serves one connection to the channels' socket: its first line is the
 * front's hello (ChannelHello), which names its executor; then it is that
 * executor's channel: the sessions it opens are its own (an id it did not get
 * here names nothing), and all of them are closed with the channel.
 */
function serveChannel(
  socket: Socket,
  key: Buffer,
  channels: Channels,
  unnamed: { count: number },
  guard: EgressGuard,
  checker: EgressChecker,
  grants: Grants,
  log: Logger,
): void {
  let who: ChannelHello | undefined;
  const sessions = new Map<number, EgressSession>();
  /** Sessions whose bind waits for its grant (one each: a session is bound once). */
  const binding = new Set<number>();
  /** URL checks of this channel in flight (bounded: MAX_CHECKS_IN_FLIGHT_PER_CHANNEL). */
  let checking = 0;
  let opening = 0;
  let nextId = 1;
  const answer = (q: number, fields: Omit<Extract<EgressToExecutor, { op: 'answer' }>, 'op' | 'q'>): void =>
    end.send({ op: 'answer', q, ...fields });
  const failed = (q: number, e: unknown): void => answer(q, { ok: false, error: String(e) });

  const open = async (q: number): Promise<void> => {
    if (sessions.size + opening >= MAX_SESSIONS_PER_CHANNEL) {
      answer(q, { ok: false, error: `an executor may hold ${MAX_SESSIONS_PER_CHANNEL} egress sessions at once` });
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
    // records a failure before it answers Chromium), so the executor names the
    // page's error from this request's failures alone.
    session.observe({
      stats: (stats) => end.send({ op: 'stats', s, stats }),
      failure: (host, port, error) => end.send({ op: 'failure', s, host, port, error }),
      refusedHost: (host, port) => end.send({ op: 'refused-host', s, host, port }),
    });
    answer(q, { ok: true, s, port: session.port });
  };

  const onMessage = (m: ExecutorToEgress): void => {
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
          .take(who?.executor ?? -1, m.requestId, m.proxy, () => end.closed || sessions.get(m.s) !== session)
          .then((hosts) => {
            if (sessions.get(m.s) !== session) throw new Error(`no egress session ${m.s}`);
            session.bind(m.requestId, m.proxy, hosts);
            answer(m.q, { ok: true });
          })
          .catch((e: unknown) => {
            log.warn({ executor: who?.executor, requestId: m.requestId, err: String(e) }, 'an egress bind was refused');
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
            `an executor may have ${MAX_CHECKS_IN_FLIGHT_PER_CHANNEL} egress checks in flight at once; this one was refused`,
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
    // SECURITY: one channel per executor. Its previous one (and every session of it) is closed first, so that
    // an executor can never hold more than MAX_SESSIONS_PER_CHANNEL ports, however many channels it is given.
    channels.get(hello.executor)?.close();
    channels.set(hello.executor, end);
  };
  const end: ChannelEnd<ExecutorToEgress | ChannelHello, EgressToExecutor> = new ChannelEnd(
    socket,
    (msg) => (who === undefined ? checkChannelHello(msg, key) : checkFromExecutorChannel(msg)),
    (m) => (m.op === 'hello' ? named(m) : onMessage(m)),
    (e) => {
      if (who === undefined) {
        log.warn({ err: e }, 'a connection to the channels socket that is not the front’s; closed');
        return;
      }
      // SECURITY: an executor that sends what it should not is taken over or broken: the front kills it.
      log.error(
        { err: e, executor: who.executor },
        'an executor sent what the egress process cannot read; closing its channel',
      );
      send({ type: 'executor-misbehaved', executor: who.executor });
    },
  );
  end.onClose(() => {
    clearTimeout(helloTimer);
    if (who === undefined) {
      unnamed.count--;
      return;
    }
    if (channels.get(who.executor) === end) channels.delete(who.executor);
    // The executor is gone (or its channel is): every port it held is closed, whatever its contexts still do.
    for (const session of sessions.values()) background(session.close(), 'closing an egress session', log);
    sessions.clear();
    // The front replaces an executor still up without its channel.
    send({ type: 'channel-closed', executor: who.executor, channel: who.channel });
  });
}

async function start(init: Extract<ToEgress, { type: 'init' }>): Promise<void> {
  const { config, seam } = init;
  const log = ipcLogger(init.logLevel);
  logger = log;
  const interfaces = seam?.localAddresses ? (): readonly string[] => seam.localAddresses ?? [] : systemAddresses();
  let guard: EgressGuard | undefined;
  const seamHosts = seam?.hosts ? seamResolver(seam.hosts) : undefined;
  // SECURITY: names a page chooses go to c-ares with a deadline (DNS_SERVERS), never to
  // the shared getaddrinfo threads; the proxies' names are the operator's (/etc/hosts read).
  const resolve = seamHosts ?? dnsResolver(config.dnsServers);
  const checker = new EgressChecker({
    allowlist: config.egressAllowlist,
    // SECURITY: the service's port and every port of the guard (the browser-wide
    // one and each context's) are never reachable, allow-list or not.
    protectedPorts: () => [init.servicePort, ...(guard?.ports() ?? [])],
    resolve,
    // SECURITY: this machine's own addresses (and the one the service listens on) are not "public".
    localAddresses: () => [...interfaces(), config.host],
    ...(seam?.publicTargets ? { publicTargets: seam.publicTargets } : {}),
  });
  const theGuard = new EgressGuard({
    checker,
    logger: log,
    // SECURITY: the proxies' credentials live here, in this process alone (no
    // script, no Chromium): never in an executor, a job or a log line.
    proxies: init.egress.proxies,
    resolveProxy: seamHosts ?? systemResolver,
    events: {
      // Only refusals for a request count; Chromium's own background requests do not.
      onRefused: (host, port, _reason, requestId, kind) => {
        if (requestId !== undefined)
          send({ type: 'egress-refused', requestId, host: host.slice(0, 260), port, ...(kind ? { kind } : {}) });
      },
    },
    ports: config.egressPorts,
    ...(init.clientUids === undefined ? {} : { clientUids: init.clientUids }),
    ...(seam ? { connector: seamConnector(seam) } : {}),
    ...(seam?.guardLimits ? { limits: seam.guardLimits } : {}),
  });
  guard = theGuard;
  // The previous egress process's port when there was one: Chromium was started with it.
  const guardPort = await theGuard.listen(init.port);
  // The guard's heap grows with traffic (parsers, buffers) and would stay at its
  // high-water mark: it is collected once idle (idle-gc.ts). Idle: no connection
  // open and none made since the last look (requests' connections last less than
  // the 1 s between looks).
  let seen = -1;
  const stopCollecting = collectWhenIdle(() => {
    const made = theGuard.counts().clientConnections;
    const busy = made !== seen || theGuard.openConnections > 0;
    seen = made;
    return busy;
  });

  const channels: Channels = new Map();
  const unnamed = { count: 0 };
  const grants = new Grants();
  const key = Buffer.from(init.channelKey, 'hex');
  // The executors' channels: connections the front opens to this socket, in this process's own directory.
  const server = createServer((socket) => {
    if (unnamed.count >= MAX_UNNAMED_CHANNELS) {
      socket.destroy();
      return;
    }
    serveChannel(socket, key, channels, unnamed, theGuard, checker, grants, log);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(init.channelPath, () => resolve());
  });
  onStarted = (msg: ToEgress): void => {
    switch (msg.type) {
      case 'grant':
        grants.add(msg.grant, msg.executor, msg.requestId, msg.proxy, msg.hosts);
        return;
      case 'revoke':
        grants.revoke(msg.grant);
        return;
      case 'close-guard':
        theGuard.close().then(
          () => send({ type: 'guard-closed', ask: msg.ask }),
          (e: unknown) => fatal('closing the egress guard', e),
        );
        return;
      case 'guard-counts':
        // Tests only: what the guard has seen (counts, no traffic).
        if (seam) send({ type: 'guard-counts', ask: msg.ask, counts: theGuard.counts() });
        return;
      case 'shutdown':
        stopCollecting();
        theGuard.close().then(
          () => process.exit(0),
          (e: unknown) => fatal('shutdown', e),
        );
        return;
      case 'fault':
        if (seam?.faults !== true) return;
        if (msg.kind === 'throw')
          setImmediate(() => {
            throw new Error('a fault the test asked for');
          });
        else if (msg.kind === 'send') front.send(msg.message as FromEgress);
        // eslint-disable-next-line @typescript-eslint/no-floating-promises -- the point: a rejection nobody handles
        else if (msg.kind === 'reject') Promise.reject(new Error('a fault the test asked for'));
        return;
      case 'init':
        return;
    }
  };
  send({ type: 'ready', guardPort });
  log.info({ guardPort, user: process.getuid?.() }, 'egress process ready');
}
