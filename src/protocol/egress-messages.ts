// The messages between the front and the egress process, over the front's wire
// (wire.ts: JSON lines on the socket pair given at its spawn), and the check the
// front makes of each message it sends. No descriptor crosses: each slot process's
// channel is a connection to the egress process's socket (egress-channel.ts).
import type { Config, UpstreamProxy } from '../common/config.js';
import { MAX_SLOT_LOG_LINE } from './slot-wire.js';
import { isCount, isObject, isPort } from './shape.js';
import type { EgressStats, GuardCounts } from './egress.js';
import { isEgress } from './jobs.js';
import { isEgressRefusalKind, type EgressRefusalKind } from './security.js';
import type { EgressTestSeam, FaultKind } from './test-seams.js';

/**
 * What the egress guard is given at its start, apart from the policy: the
 * upstream proxies with their credentials. SECURITY: a secret; whoever holds
 * the guard holds this, and nothing else of the service should: the front sends
 * it to the egress process (src/front/egress-process/egress-supervisor.ts), never to a slot process.
 */
export interface EgressInit {
  readonly proxies: readonly UpstreamProxy[];
}

/**
 * What the egress process runs with: the fields of the configuration it needs,
 * chosen one by one (an allow-list, unlike the slot process's deny-list), so a
 * setting added later reaches it only when it is named here. SECURITY: the
 * front hands the egress process its configuration (and, with upstream proxies,
 * their credentials) directly over this channel; nothing of it passes through a
 * slot process.
 */
export interface EgressConfig {
  readonly egressAllowlist: Config['egressAllowlist'];
  /** The address the service listens on: one of this machine's, refused unless allow-listed. */
  readonly host: Config['host'];
  /** The DNS servers the guard asks (DNS_SERVERS); empty: /etc/resolv.conf's. */
  readonly dnsServers: Config['dnsServers'];
  /** The ports the guard listens on (EGRESS_PORTS): the only ones the kernel lock lets the slots reach. */
  readonly egressPorts: Config['egressPorts'];
}

export function egressConfig(config: Config): EgressConfig {
  return {
    egressAllowlist: config.egressAllowlist,
    host: config.host,
    dnsServers: config.dnsServers,
    egressPorts: config.egressPorts,
  };
}

/** What the egress guard is started with (its proxies); see EgressInit. */
export function egressInit(config: Config): EgressInit {
  return { proxies: config.proxies };
}

export type ToEgress =
  | {
      readonly type: 'init';
      readonly config: EgressConfig;
      readonly logLevel: string;
      /** The service's own port, which no page may reach. */
      readonly servicePort: number;
      /** The browser-wide port to listen on: the previous egress process's (Chromium was started with it), or 0. */
      readonly port: number;
      /**
       * The guard's upstream proxies with their credentials. SECURITY: sent to
       * this process alone; a slot process names a request's proxy by name only.
       */
      readonly egress: EgressInit;
      /**
       * SECURITY: as root, the slots' uids (one per request slot): a context's
       * port takes connections only from sockets of these users (their Chromium),
       * and of its own slot's alone when its channel names one (attach `uid`).
       * Absent: from any local process.
       */
      readonly clientUids?: readonly number[];
      /**
       * Where it listens for the slot processes' channels (in its own directory), and the key (hex) of their hellos
       * (egress-channel.ts ChannelHello). SECURITY: the key is sent to this process alone.
       */
      readonly channelPath: string;
      readonly channelKey: string;
      readonly seam?: EgressTestSeam;
    }
  /**
   * SECURITY: slot process `slotProcess` may bind one session to request `requestId`,
   * leaving through `proxy` (by name; absent: no proxy). Sent when the front
   * hands the slot process the request; the egress process refuses every bind that
   * matches no unused grant, so a slot process cannot pick another request's id or
   * a proxy its request's key may not use.
   */
  | {
      readonly type: 'grant';
      readonly grant: number;
      readonly slotProcess: number;
      readonly requestId: string;
      readonly proxy?: string;
      /** SECURITY: the hosts the request's key may reach (host-patterns.ts); absent: any public host. */
      readonly hosts?: readonly string[];
    }
  /** The request of grant `grant` is over: no session may be bound with it any more. */
  | { readonly type: 'revoke'; readonly grant: number }
  /**
   * SECURITY: the request of grant `grant` is answered: its session ends (open connections cut, and counted)
   * and its counts are answered with { type: 'finished' } and the same `ask`. The front bills these, never
   * what the slot reports.
   */
  | { readonly type: 'finish'; readonly grant: number; readonly ask: number }
  /** Closes the egress guard (a test of what happens when it is down). */
  | { readonly type: 'close-guard'; readonly ask: number }
  /** Tests (any seam): the guard's counts, answered with { type: 'guard-counts' } and the same `ask`. */
  | { readonly type: 'guard-counts'; readonly ask: number }
  | { readonly type: 'fault'; readonly kind: FaultKind; readonly message?: unknown }
  | { readonly type: 'shutdown' };

/** The longest request id and host an egress-refused message carries (ids are UUIDs; a DNS name is at most 253). */
const MAX_REQUEST_ID_CHARS = 128;
const MAX_HOST_CHARS = 260;

/** The longest message the front takes from the egress process (its longest, a log line, is far shorter). */
export const MAX_EGRESS_MESSAGE_BYTES = 2 ** 20;
/** The most JSON tokens (wire.ts) a message of the egress process holds: its largest, guard-counts, has a dozen. */
export const MAX_EGRESS_MESSAGE_TOKENS = 256;

export type FromEgress =
  | { readonly type: 'ready'; readonly guardPort: number }
  | { readonly type: 'log'; readonly line: string }
  /**
   * A refusal of a request's traffic (counted in pagescript_egress_refusals_total):
   * of which request, what kind of address (a security event's class) and which host:port.
   */
  | {
      readonly type: 'egress-refused';
      readonly requestId?: string;
      readonly kind?: EgressRefusalKind;
      readonly host?: string;
      readonly port?: number;
    }
  | { readonly type: 'dial'; readonly address: string; readonly port: number }
  /**
   * A slot process sent what the egress process cannot read on its channel: the
   * channel is closed, and the front kills that slot process as it would for a
   * malformed message to itself.
   */
  | { readonly type: 'slot-misbehaved'; readonly slotProcess: number }
  /**
   * A channel is closed on the egress side (the slot process closed it, or it was
   * replaced or misbehaved), every session of it with it: a slot process still up
   * without it cannot serve, and the front replaces it.
   */
  | { readonly type: 'channel-closed'; readonly slotProcess: number; readonly channel: number }
  | { readonly type: 'guard-closed'; readonly ask: number }
  /** A request's final egress counts (`finish`); absent: no session was bound with its grant here. */
  | { readonly type: 'finished'; readonly ask: number; readonly stats?: EgressStats }
  | { readonly type: 'guard-counts'; readonly ask: number; readonly counts: GuardCounts };

function isGuardCounts(c: unknown): boolean {
  return (
    isObject(c) &&
    isCount(c.clientConnections) &&
    isCount(c.unclaimed) &&
    isCount(c.upstreamConnections) &&
    isCount(c.otherUsers)
  );
}

const EGRESS_SHAPES: Record<FromEgress['type'], (m: Record<string, unknown>) => boolean> = {
  ready: (m) => isPort(m.guardPort),
  log: (m) => typeof m.line === 'string' && m.line.length <= MAX_SLOT_LOG_LINE,
  'egress-refused': (m) =>
    (m.requestId === undefined || (typeof m.requestId === 'string' && m.requestId.length <= MAX_REQUEST_ID_CHARS)) &&
    (m.kind === undefined || isEgressRefusalKind(m.kind)) &&
    (m.host === undefined || (typeof m.host === 'string' && m.host.length <= MAX_HOST_CHARS)) &&
    (m.port === undefined || isPort(m.port)),
  dial: (m) => typeof m.address === 'string' && m.address.length <= 64 && isPort(m.port),
  'slot-misbehaved': (m) => isCount(m.slotProcess),
  'channel-closed': (m) => isCount(m.slotProcess) && isCount(m.channel),
  'guard-closed': (m) => isCount(m.ask),
  finished: (m) => isCount(m.ask) && (m.stats === undefined || isEgress(m.stats)),
  'guard-counts': (m) => isCount(m.ask) && isGuardCounts(m.counts),
};

/**
 * SECURITY: what the front takes from the egress process. It runs no script,
 * but it parses what hostile pages and upstreams send; one that a bug or an
 * upstream took over could send anything. Throws on anything that is not a
 * FromEgress the front can read; the front then kills the egress process.
 */
export function checkFromEgress(msg: unknown): FromEgress {
  if (!isObject(msg) || typeof msg.type !== 'string' || !Object.hasOwn(EGRESS_SHAPES, msg.type))
    throw new Error('the egress process sent a message of no known type');
  if (!EGRESS_SHAPES[msg.type as FromEgress['type']](msg))
    throw new Error(`the egress process sent a ${msg.type} message the front cannot read`);
  return msg as unknown as FromEgress;
}
