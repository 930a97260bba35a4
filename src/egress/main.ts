// The egress process's entry point: a process the front forks (src/front/egress-process/egress-supervisor.ts)
// to hold the egress guard, apart from the slot processes. It runs no script and no
// Chromium; as root it runs as a user of its own (EGRESS_USER), not the
// slot processes', so code that escapes an isolate or a renderer cannot read its
// memory (ptrace, /proc/<pid>/mem) — where, with upstream proxies, their
// credentials are. A hostile upstream (or a bug in the guard) can end only this
// process: the front fails the requests in flight and starts another.
//
// Each slot process reaches it over a channel of its own (src/protocol/egress-channel.ts):
// a connection the front opens to its socket (in this process's own directory)
// and gives the slot process at its spawn; Chromium's traffic reaches it on loopback
// ports (one per browser context, and the browser-wide one).
//
// Nothing here imports from the front, nor from the slot process's browser/,
// sandbox/ or scrape/ (test/unit/repo/process-boundary.test.ts).
import { createServer, isIP } from 'node:net';
import { pino } from 'pino';
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
import type { FromEgress, ToEgress } from '../protocol/egress-messages.js';
import type { EgressTestSeam } from '../protocol/test-seams.js';
import type { Logger } from '../common/log.js';
import { collectWhenIdle } from '../common/idle-gc.js';
import { Grants, MAX_UNNAMED_CHANNELS, serveChannel, type Channels } from './channels.js';

/** After a fatal error, how long the last messages (the log line) get to leave before the exit. */
const FATAL_FLUSH_MS = 200;
/** Exit status after a fatal error (EX_SOFTWARE). */
const EXIT_FATAL = 70;

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

function wireLogger(level: string): Logger {
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
// loudly, never silently, and never the front or a slot process.
process.on('uncaughtException', (e) => fatal('uncaught exception', e));
process.on('unhandledRejection', (e) => fatal('unhandled rejection', e));
front.onClose(() => {
  if (!exiting) process.exit(0);
});

/** The resolver a test describes as data (see SlotTestSeam.hosts): each lookup takes the next answer. */
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

async function start(init: Extract<ToEgress, { type: 'init' }>): Promise<void> {
  const { config, seam } = init;
  const log = wireLogger(init.logLevel);
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
    // script, no Chromium): never in a slot process, a job or a log line.
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
  // The slot processes' channels: connections the front opens to this socket, in this process's own directory.
  const server = createServer((socket) => {
    if (unnamed.count >= MAX_UNNAMED_CHANNELS) {
      socket.destroy();
      return;
    }
    serveChannel(socket, { key, channels, unnamed, guard: theGuard, checker, grants, log, send });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(init.channelPath, () => resolve());
  });
  onStarted = (msg: ToEgress): void => {
    switch (msg.type) {
      case 'grant':
        grants.add(msg.grant, msg.slotProcess, msg.requestId, msg.proxy, msg.hosts);
        return;
      case 'revoke':
        grants.revoke(msg.grant);
        return;
      case 'finish': {
        const stats = grants.finish(msg.grant);
        send({ type: 'finished', ask: msg.ask, ...(stats === undefined ? {} : { stats }) });
        return;
      }
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
