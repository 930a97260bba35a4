// The channel between a slot process and the egress process: a Unix socket the
// front connects to the egress process and gives the slot process at its spawn
// (stdio, EGRESS_CHANNEL_FD), so the per-context
// questions (open a port, bind it to a request, check a URL) take one hop, not
// two through the front, and cost the front nothing. Messages are JSON, one per
// line. The egress process reads what a slot process sends as hostile (a slot process
// runs hostile scripts): every message is checked against its shape, lines are
// bounded, and a slot process reaches only the sessions it opened on its own channel.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { isEgressRefusalKind } from './security.js';
import type { Socket } from 'node:net';
import { PROXY_FAILURE_STATS } from './egress.js';
import { type EgressDecision, type EgressStats } from './egress.js';
import { WireEnd, type WireLimits } from './wire.js';

/** The longest line either side sends; a longer one ends the channel. */
export const MAX_CHANNEL_LINE = 16 * 1024;
/** Unsent bytes at which a channel end stops reading the other side's questions, until they drain. */
export const CHANNEL_PAUSE_BYTES = 2 ** 20;
/** Unsent bytes at which a channel end closes the channel: the other side does not read what it is sent. */
export const CHANNEL_MAX_UNSENT_BYTES = 8 * 2 ** 20;
/** The longest host name a check carries (DNS allows 253; the URL parser allows more, which the slot process refuses itself). */
export const MAX_CHANNEL_HOST = 1024;
/**
 * URL checks one slot process may have in flight at once (each may hold one of the
 * resolver's few threads, shared by every slot process). A slot process asks one per
 * navigation of a request (a handful per request); SECURITY: one that escaped its
 * code cannot take the resolver from the others. The next is refused at once.
 */
export const MAX_CHECKS_IN_FLIGHT_PER_CHANNEL = 64;
/** The longest request id a session is bound to. */
export const MAX_REQUEST_ID = 256;
/** The longest proxy name a bind carries (names are the operator's, short). */
export const MAX_PROXY_NAME = 256;

export type SlotToEgress =
  /** A new port for one browser context; answered { port, s }. */
  | { readonly op: 'open'; readonly q: number }
  /**
   * The context's traffic is the request's from now on, leaving through the
   * upstream proxy named `proxy` (a name in the egress process's table: the
   * slot process never holds its URL or credentials); answered once the guard holds it so.
   */
  | {
      readonly op: 'bind';
      readonly q: number;
      readonly s: number;
      readonly requestId: string;
      readonly proxy?: string;
    }
  /** The request is over: the session's connections are cut, new ones refused (no answer). */
  | { readonly op: 'end'; readonly s: number }
  /** As `end`, answered with the session's counts taken once its connections are cut: the request's bill. */
  | { readonly op: 'finish'; readonly q: number; readonly s: number }
  /** The context is gone: the port is closed; answered once it is. */
  | { readonly op: 'close'; readonly q: number; readonly s: number }
  /** The policy's decision for host:port (a URL a script or the request navigates to). */
  | { readonly op: 'check'; readonly q: number; readonly host: string; readonly port: number };

export type EgressToSlot =
  | {
      readonly op: 'answer';
      readonly q: number;
      readonly ok: boolean;
      readonly error?: string;
      readonly s?: number;
      readonly port?: number;
      readonly decision?: EgressDecision;
      readonly stats?: EgressStats;
    }
  /** A session's counts changed (sent before the page hears of what changed them). */
  | { readonly op: 'stats'; readonly s: number; readonly stats: EgressStats }
  /** A session's upstream failure, to name the page's net error (sent before the page hears of it). */
  | {
      readonly op: 'failure';
      readonly s: number;
      readonly host: string;
      readonly port: number;
      readonly error: string;
    }
  /** A connection of a session's page refused for being outside its key's hosts (each host:port once, the first few). */
  | { readonly op: 'refused-host'; readonly s: number; readonly host: string; readonly port: number };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isId = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
const isPort = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= 1 && (v as number) <= 65_535;
const isText = (v: unknown, max: number): v is string => typeof v === 'string' && v.length <= max;

/**
 * SECURITY: what the egress process takes from a slot process. Throws on anything
 * else; the egress process then closes the channel and the front kills the slot process.
 */
export function checkFromSlotChannel(msg: unknown): SlotToEgress {
  if (!isObject(msg)) throw new Error('a slot process sent a channel message that is not an object');
  const ok = (() => {
    switch (msg.op) {
      case 'open':
        return isId(msg.q);
      case 'bind':
        return (
          isId(msg.q) &&
          isId(msg.s) &&
          isText(msg.requestId, MAX_REQUEST_ID) &&
          (msg.proxy === undefined || isText(msg.proxy, MAX_PROXY_NAME))
        );
      case 'end':
        return isId(msg.s);
      case 'finish':
      case 'close':
        return isId(msg.q) && isId(msg.s);
      case 'check':
        return isId(msg.q) && isText(msg.host, MAX_CHANNEL_HOST) && Number.isSafeInteger(msg.port);
      default:
        return false;
    }
  })();
  if (!ok) throw new Error(`a slot process sent a channel message the egress process cannot read (${String(msg.op)})`);
  return msg as unknown as SlotToEgress;
}

const STATS_KEYS: ReadonlySet<string> = new Set([
  'connections',
  'refused',
  'bytesSent',
  'bytesReceived',
  ...Object.values(PROXY_FAILURE_STATS),
]);

/** The four counts, the proxy failures counted so far (each optional), and nothing else. */
function isStats(v: unknown): v is EgressStats {
  return (
    isObject(v) &&
    isId(v.connections) &&
    isId(v.refused) &&
    isId(v.bytesSent) &&
    isId(v.bytesReceived) &&
    Object.entries(v).every(([k, n]) => STATS_KEYS.has(k) && isId(n))
  );
}

function isDecision(v: unknown): v is EgressDecision {
  if (!isObject(v)) return false;
  if (v.ok === true) return typeof v.address === 'string' && (v.family === 4 || v.family === 6);
  return (
    v.ok === false &&
    typeof v.reason === 'string' &&
    (v.code === 'NOT_ALLOWED' || v.code === 'NAME_NOT_RESOLVED') &&
    (v.kind === undefined || isEgressRefusalKind(v.kind))
  );
}

/** What the slot process takes from the egress process: checked too, so a bug there fails a request, not the slot process. */
export function checkFromEgressChannel(msg: unknown): EgressToSlot {
  if (!isObject(msg)) throw new Error('the egress process sent a channel message that is not an object');
  const ok = (() => {
    switch (msg.op) {
      case 'answer':
        return (
          isId(msg.q) &&
          typeof msg.ok === 'boolean' &&
          (msg.error === undefined || typeof msg.error === 'string') &&
          (msg.s === undefined || isId(msg.s)) &&
          (msg.port === undefined || isPort(msg.port)) &&
          (msg.decision === undefined || isDecision(msg.decision)) &&
          (msg.stats === undefined || isStats(msg.stats))
        );
      case 'stats':
        return isId(msg.s) && isStats(msg.stats);
      case 'failure':
        return isId(msg.s) && typeof msg.host === 'string' && isPort(msg.port) && typeof msg.error === 'string';
      case 'refused-host':
        return isId(msg.s) && isText(msg.host, MAX_CHANNEL_HOST) && isPort(msg.port);
      default:
        return false;
    }
  })();
  if (!ok)
    throw new Error(`the egress process sent a channel message the slot process cannot read (${String(msg.op)})`);
  return msg as unknown as EgressToSlot;
}

/**
 * The first line of every channel, written by the front before the slot process is given it: which slot process
 * it is (its slot's uid, as root), and `mac`, the HMAC-SHA256 of those names under the egress process's
 * key (channelMac). SECURITY: only the front and the egress process hold the key; a connection whose
 * hello does not carry its mark is closed.
 */
export interface ChannelHello {
  readonly op: 'hello';
  readonly slotProcess: number;
  readonly channel: number;
  readonly uid?: number;
  readonly mac: string;
}

/** The mark of a channel's hello: HMAC-SHA256 of its names under `key`, hex. */
export function channelMac(key: Buffer, slotProcess: number, channel: number, uid: number | undefined): string {
  return createHmac('sha256', key)
    .update(`${slotProcess}:${channel}:${uid ?? ''}`)
    .digest('hex');
}

/** SECURITY: the hello `msg` if it is one and carries the mark of `key`; throws otherwise. */
export function checkChannelHello(msg: unknown, key: Buffer): ChannelHello {
  if (
    !isObject(msg) ||
    msg.op !== 'hello' ||
    !isId(msg.slotProcess) ||
    !isId(msg.channel) ||
    !(msg.uid === undefined || isId(msg.uid)) ||
    typeof msg.mac !== 'string' ||
    msg.mac.length !== 64
  )
    throw new Error('a channel did not begin with a hello');
  const want = Buffer.from(channelMac(key, msg.slotProcess, msg.channel, msg.uid as number | undefined), 'hex');
  const got = Buffer.from(msg.mac, 'hex');
  if (got.length !== want.length || !timingSafeEqual(got, want))
    throw new Error("a channel's hello is not the front's");
  return msg as unknown as ChannelHello;
}

/** The most JSON tokens (wire.ts) a slot's channel message holds: a bind, its longest, has 10. */
export const MAX_CHANNEL_TOKENS_FROM_SLOT = 32;
/** The most JSON tokens an egress process's channel message holds: an answer with a decision and counts has ~50. */
export const MAX_CHANNEL_TOKENS_FROM_EGRESS = 256;
/**
 * Messages of a slot the egress process reads each PACE_WINDOW_MS: 10,000 a second. A slot sends four per
 * browser context (open, bind, end or finish, close) and a check per navigation, each awaited in turn: a
 * script looping on refused navigations is slowed here, never cut off.
 */
export const CHANNEL_MESSAGES_PER_WINDOW = 1_000;
/** Bytes of a slot's lines the egress process reads each PACE_WINDOW_MS: a thousand of its longest honest lines (a check's host, 1 KiB). */
export const CHANNEL_BYTES_PER_WINDOW = 2 ** 20;

/**
 * The bounds of the egress process's end of a channel (wire.ts), which reads a slot. SECURITY: the one
 * process all traffic goes through reads every slot: a slot is paced (its tokens too: at most
 * messages × MAX_CHANNEL_TOKENS_FROM_SLOT a window), its lines scanned and short.
 */
export const EGRESS_END_LIMITS: WireLimits = {
  maxLineBytes: MAX_CHANNEL_LINE,
  pauseBytes: CHANNEL_PAUSE_BYTES,
  maxUnsentBytes: CHANNEL_MAX_UNSENT_BYTES,
  maxTokens: MAX_CHANNEL_TOKENS_FROM_SLOT,
  messagesPerWindow: CHANNEL_MESSAGES_PER_WINDOW,
  bytesPerWindow: CHANNEL_BYTES_PER_WINDOW,
  tokensPerWindow: Number.POSITIVE_INFINITY,
};

/**
 * The bounds of a slot's end of its channel, which reads the egress process: answers and events read as
 * they come (what waited would wait in the egress process), lines scanned and short.
 */
export const SLOT_END_LIMITS: WireLimits = {
  maxLineBytes: MAX_CHANNEL_LINE,
  pauseBytes: CHANNEL_PAUSE_BYTES,
  maxUnsentBytes: CHANNEL_MAX_UNSENT_BYTES,
  maxTokens: MAX_CHANNEL_TOKENS_FROM_EGRESS,
  messagesPerWindow: Number.POSITIVE_INFINITY,
  bytesPerWindow: Number.POSITIVE_INFINITY,
  tokensPerWindow: Number.POSITIVE_INFINITY,
};

/**
 * One end of a channel: the service's wire (wire.ts) with the bounds of that end (EGRESS_END_LIMITS,
 * SLOT_END_LIMITS). SECURITY: a slot process that asked and never read grew the egress process, which every
 * slot's traffic goes through: what it does not read is bounded (CHANNEL_MAX_UNSENT_BYTES), and past
 * CHANNEL_PAUSE_BYTES its questions wait.
 */
export class ChannelEnd<In, Out> extends WireEnd<In, Out> {
  constructor(
    socket: Socket,
    check: (msg: unknown) => In,
    onMessage: (msg: In) => void,
    onBad: (e: unknown) => void,
    limits: WireLimits,
  ) {
    super(socket, check, onMessage, onBad, limits);
  }
}
