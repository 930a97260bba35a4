// The channel between an executor and the egress process: a Unix socket the
// front makes and hands to both (each end as an IPC handle), so the per-context
// questions (open a port, bind it to a request, check a URL) take one hop, not
// two through the front, and cost the front nothing. Messages are JSON, one per
// line. The egress process reads what an executor sends as hostile (an executor
// runs hostile scripts): every message is checked against its shape, lines are
// bounded, and an executor reaches only the sessions it opened on its own channel.
import type { Socket } from 'node:net';
import { PROXY_FAILURE_STATS } from './egress.js';
import { type EgressDecision, type EgressStats } from './egress.js';

/** The longest line either side sends; a longer one ends the channel. */
export const MAX_CHANNEL_LINE = 16 * 1024;
/** Unsent bytes at which a channel end stops reading the other side's questions, until they drain. */
export const CHANNEL_PAUSE_BYTES = 2 ** 20;
/** Unsent bytes at which a channel end closes the channel: the other side does not read what it is sent. */
export const CHANNEL_MAX_UNSENT_BYTES = 8 * 2 ** 20;
/** The longest host name a check carries (DNS allows 253; the URL parser allows more, which the executor refuses itself). */
export const MAX_CHANNEL_HOST = 1024;
/**
 * URL checks one executor may have in flight at once (each may hold one of the
 * resolver's few threads, shared by every executor). An executor asks one per
 * navigation of a request (a handful per lane); SECURITY: one that escaped its
 * code cannot take the resolver from the others. The next is refused at once.
 */
export const MAX_CHECKS_IN_FLIGHT_PER_CHANNEL = 64;
/** The longest request id a session is bound to. */
export const MAX_REQUEST_ID = 256;
/** The longest proxy name a bind carries (names are the operator's, short). */
export const MAX_PROXY_NAME = 256;

export type ExecutorToEgress =
  /** A new port for one browser context; answered { port, s }. */
  | { readonly op: 'open'; readonly q: number }
  /**
   * The context's traffic is the request's from now on, leaving through the
   * upstream proxy named `proxy` (a name in the egress process's table: the
   * executor never holds its URL or credentials); answered once the guard holds it so.
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
  /** The context is gone: the port is closed; answered once it is. */
  | { readonly op: 'close'; readonly q: number; readonly s: number }
  /** The policy's decision for host:port (a URL a script or the request navigates to). */
  | { readonly op: 'check'; readonly q: number; readonly host: string; readonly port: number };

export type EgressToExecutor =
  | {
      readonly op: 'answer';
      readonly q: number;
      readonly ok: boolean;
      readonly error?: string;
      readonly s?: number;
      readonly port?: number;
      readonly decision?: EgressDecision;
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
 * SECURITY: what the egress process takes from an executor. Throws on anything
 * else; the egress process then closes the channel and the front kills the executor.
 */
export function checkFromExecutorChannel(msg: unknown): ExecutorToEgress {
  if (!isObject(msg)) throw new Error('an executor sent a channel message that is not an object');
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
      case 'close':
        return isId(msg.q) && isId(msg.s);
      case 'check':
        return isId(msg.q) && isText(msg.host, MAX_CHANNEL_HOST) && Number.isSafeInteger(msg.port);
      default:
        return false;
    }
  })();
  if (!ok) throw new Error(`an executor sent a channel message the egress process cannot read (${String(msg.op)})`);
  return msg as unknown as ExecutorToEgress;
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
  return v.ok === false && typeof v.reason === 'string' && (v.code === 'NOT_ALLOWED' || v.code === 'NAME_NOT_RESOLVED');
}

/** What the executor takes from the egress process: checked too, so a bug there fails a request, not the executor. */
export function checkFromEgressChannel(msg: unknown): EgressToExecutor {
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
          (msg.decision === undefined || isDecision(msg.decision))
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
  if (!ok) throw new Error(`the egress process sent a channel message the executor cannot read (${String(msg.op)})`);
  return msg as unknown as EgressToExecutor;
}

/**
 * One end of a channel: writes messages as JSON lines, and hands each line it
 * reads, parsed and checked by `check`, to `onMessage`. A line that is too long,
 * not JSON or not of a known shape calls `onBad` and ends the channel.
 */
export class ChannelEnd<In, Out> {
  readonly #socket: Socket;
  readonly #onBad: (e: unknown) => void;
  #buffer = '';
  #closed = false;
  #paused = false;
  readonly #onClose = new Set<() => void>();

  constructor(socket: Socket, check: (msg: unknown) => In, onMessage: (msg: In) => void, onBad: (e: unknown) => void) {
    this.#socket = socket;
    this.#onBad = onBad;
    socket.setEncoding('utf8');
    socket.setNoDelay?.(true);
    socket.on('data', (chunk: string) => {
      if (this.#closed) return;
      this.#buffer += chunk;
      for (let nl = this.#buffer.indexOf('\n'); nl >= 0; nl = this.#buffer.indexOf('\n')) {
        const line = this.#buffer.slice(0, nl);
        this.#buffer = this.#buffer.slice(nl + 1);
        let msg: In;
        try {
          if (line.length > MAX_CHANNEL_LINE) throw new Error('a channel line is too long');
          msg = check(JSON.parse(line));
        } catch (e) {
          onBad(e);
          this.close();
          return;
        }
        onMessage(msg);
        if (this.#closed) return;
      }
      // SECURITY: a line without end is not kept beyond the longest line allowed.
      if (this.#buffer.length > MAX_CHANNEL_LINE) {
        onBad(new Error('a channel line is too long'));
        this.close();
      }
    });
    socket.on('error', () => this.close());
    socket.once('close', () => this.close());
    // A socket the front made is paused (socketPair): reading starts here, with the reader in place.
    socket.resume();
  }

  get closed(): boolean {
    return this.#closed;
  }

  /**
   * SECURITY: what the other side has not read is bounded. Past CHANNEL_PAUSE_BYTES unsent, this end stops
   * reading the other's questions until they drain; past CHANNEL_MAX_UNSENT_BYTES (events it did not ask for
   * pile up too), the channel is closed as misbehaving. A slot process that asked and never read grew the
   * egress process, which every slot's traffic goes through, by ~270 MB a second (helper-31).
   */
  send(msg: Out): void {
    if (this.#closed) return;
    this.#socket.write(`${JSON.stringify(msg)}\n`);
    const unsent = this.#socket.writableLength;
    if (unsent > CHANNEL_MAX_UNSENT_BYTES) {
      this.#onBad(new Error(`the other end of the channel did not read ${unsent} bytes sent to it`));
      this.close();
    } else if (unsent > CHANNEL_PAUSE_BYTES && !this.#paused) {
      this.#paused = true;
      this.#socket.pause();
      this.#socket.once('drain', () => {
        this.#paused = false;
        if (!this.#closed) this.#socket.resume();
      });
    }
  }

  onClose(fn: () => void): void {
    if (this.#closed) fn();
    else this.#onClose.add(fn);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#buffer = '';
    this.#socket.destroy();
    for (const fn of this.#onClose) fn();
    this.#onClose.clear();
  }
}
