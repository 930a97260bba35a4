// The one wire every process of the service speaks to another over: JSON
// messages, one per line, on a stream socket (a socket pair the front gives a
// child at its spawn, or a Unix socket). SECURITY: the reading end takes what
// the other side sends as hostile: a line is bounded in bytes and in JSON
// values before it is parsed, a line that does not parse or breaks its shape
// ends the channel (`onBad`: the caller kills the sender), what is read is
// paced (messages, bytes, values), and what the other side does not read is bounded. Plain data only: no descriptor, no
// Node message, nothing V8 deserializes but JSON.
import { Socket } from 'node:net';
import { countTokens } from './compact-json.js';

/** The bounds of one end of a wire. */
export interface WireLimits {
  /** The longest line (bytes, its newline excluded) this end reads; a longer one ends the channel. */
  readonly maxLineBytes: number;
  /** Unsent bytes at which this end stops reading the other side, until they drain. */
  readonly pauseBytes: number;
  /** Unsent bytes at which this end closes the channel: the other side does not read what it is sent. */
  readonly maxUnsentBytes: number;
  /**
   * The most structural tokens (`{ [ , :` outside strings: about one per value and key) a line may hold; a line
   * with more, or with bytes compact JSON never has outside a string, ends the channel (compact-json.ts).
   * Infinity: lines are not scanned (a trusted peer).
   */
  readonly maxTokens: number;
  /** How many messages this end reads in a window of PACE_WINDOW_MS (Infinity: not paced). */
  readonly messagesPerWindow: number;
  /** How many bytes of lines this end reads a window; a longer line is read whole, and owed by the windows after it. */
  readonly bytesPerWindow: number;
  /** How many tokens (as maxTokens) this end reads a window, owed as bytes are; counted only where lines are scanned. */
  readonly tokensPerWindow: number;
  /** The clock the windows are counted by (ms); performance.now unless a test stops it, so that a pace trips whatever the reader's speed. */
  readonly clock?: () => number;
}

/** The window in which what is read is counted (WireLimits.messagesPerWindow, bytesPerWindow, tokensPerWindow). */
export const PACE_WINDOW_MS = 100;

/** How often, and for how long in all (ms), an end stopped reading the other side for sending too much (tests). */
export interface WirePace {
  pauses: number;
  pausedMs: number;
}

const NEWLINE = 0x0a;

/**
 * One end of a wire: writes messages as JSON lines, and hands each line it
 * reads, parsed and checked by `check`, to `onMessage`. A line that is too
 * long, not JSON or not of a known shape calls `onBad` and ends the channel.
 */
export class WireEnd<In, Out> {
  readonly #socket: Socket;
  readonly #onBad: (e: unknown) => void;
  readonly #limits: WireLimits;
  /** What is held of the line being read, and how many of its bytes are there. */
  #held: Buffer = Buffer.alloc(0);
  #heldBytes = 0;
  #closed = false;
  /** Paused for what the other side has not read, or for its pace: reading resumes when neither holds. */
  #pausedUnsent = false;
  #pausedPace = false;
  readonly #now: () => number;
  #windowStart: number;
  #messagesInWindow = 0;
  #bytesInWindow = 0;
  #tokensInWindow = 0;
  readonly pace: WirePace = { pauses: 0, pausedMs: 0 };
  readonly #onClose = new Set<() => void>();

  constructor(
    socket: Socket,
    check: (msg: unknown) => In,
    onMessage: (msg: In) => void,
    onBad: (e: unknown) => void,
    limits: WireLimits,
  ) {
    this.#socket = socket;
    this.#onBad = onBad;
    this.#limits = limits;
    this.#now = limits.clock ?? (() => performance.now());
    this.#windowStart = this.#now();
    socket.setNoDelay?.(true);
    socket.on('data', (chunk: Buffer) => {
      if (this.#closed) return;
      let start = 0;
      for (let nl = chunk.indexOf(NEWLINE); nl >= 0; nl = chunk.indexOf(NEWLINE, start)) {
        const length = this.#heldBytes + nl - start;
        const line = this.#take(chunk, start, nl);
        start = nl + 1;
        let msg: In;
        let tokens = 0;
        try {
          if (line === undefined) throw new Error(this.#tooLong(length));
          const [buf, from, to] = line;
          // SECURITY: counted before JSON.parse, which makes tens of bytes of heap of each `[]` or `{}`.
          if (this.#scanned) tokens = countTokens(buf, from, to, this.#limits.maxTokens);
          msg = check(JSON.parse(buf.toString('utf8', from, to)));
        } catch (e) {
          this.#bad(e);
          return;
        }
        onMessage(msg);
        if (this.#closed) return;
        this.#count(length, tokens);
      }
      // SECURITY: a line without end is kept only up to the longest line allowed; what a read holds is its bytes.
      if (start < chunk.length && !this.#hold(chunk, start)) this.#bad(new Error(this.#tooLong(this.#heldBytes)));
    });
    socket.on('error', () => this.close());
    socket.once('close', () => this.close());
    socket.resume();
  }

  /** Whether lines are scanned for their tokens before they are parsed. */
  get #scanned(): boolean {
    return Number.isFinite(this.#limits.maxTokens) || Number.isFinite(this.#limits.tokensPerWindow);
  }

  /** The bytes of line `chunk[start, end)`, after what is held of it; undefined when it is longer than the bound. */
  #take(chunk: Buffer, start: number, end: number): [Buffer, number, number] | undefined {
    if (this.#heldBytes + end - start > this.#limits.maxLineBytes) return undefined;
    if (this.#heldBytes === 0) return [chunk, start, end];
    this.#hold(chunk, start, end);
    const line: [Buffer, number, number] = [this.#held, 0, this.#heldBytes];
    this.#held = Buffer.alloc(0);
    this.#heldBytes = 0;
    return line;
  }

  /** Keeps `chunk[start, end)` after what is held (one buffer, grown by doubling); false past the bound. */
  #hold(chunk: Buffer, start: number, end = chunk.length): boolean {
    const bytes = this.#heldBytes + end - start;
    if (bytes > this.#limits.maxLineBytes) {
      this.#heldBytes = bytes;
      return false;
    }
    if (bytes > this.#held.length) {
      const grown = Buffer.allocUnsafe(
        Math.min(Math.max(bytes, 2 * this.#held.length, 4096), this.#limits.maxLineBytes),
      );
      this.#held.copy(grown, 0, 0, this.#heldBytes);
      this.#held = grown;
    }
    chunk.copy(this.#held, this.#heldBytes, start, end);
    this.#heldBytes = bytes;
    return true;
  }

  #tooLong(held: number): string {
    return `it sent a message longer than ${this.#limits.maxLineBytes} bytes (${held} held when it was cut)`;
  }

  #bad(e: unknown): void {
    this.#onBad(e);
    this.close();
  }

  /**
   * SECURITY: the reader takes at most `messagesPerWindow` messages, `bytesPerWindow` bytes and
   * `tokensPerWindow` tokens each PACE_WINDOW_MS (and the rest of the read that crossed it); past that, the
   * socket is not read until the window ends, and the sender's writes wait in the sender. A line larger
   * than a window's budget is read whole, and the pause lasts as many windows as it took: the sustained
   * rate holds whatever the sizes. A flood of valid messages, small or large, cannot hold the reader's core.
   */
  #count(bytes: number, tokens: number): void {
    const now = this.#now();
    if (now - this.#windowStart >= PACE_WINDOW_MS) {
      this.#windowStart = now;
      this.#messagesInWindow = 0;
      this.#bytesInWindow = 0;
      this.#tokensInWindow = 0;
    }
    const { messagesPerWindow, bytesPerWindow, tokensPerWindow } = this.#limits;
    const messages = ++this.#messagesInWindow;
    const read = (this.#bytesInWindow += bytes);
    const scanned = (this.#tokensInWindow += tokens);
    if (this.#pausedPace || (messages <= messagesPerWindow && read <= bytesPerWindow && scanned <= tokensPerWindow))
      return;
    const windows = Math.max(1, Math.ceil(read / bytesPerWindow), Math.ceil(scanned / tokensPerWindow));
    const pauseMs = Math.max(1, windows * PACE_WINDOW_MS - (now - this.#windowStart));
    this.#pausedPace = true;
    this.pace.pauses++;
    this.pace.pausedMs += pauseMs;
    this.#socket.pause();
    setTimeout(() => {
      this.#pausedPace = false;
      this.#windowStart = this.#now();
      this.#messagesInWindow = 0;
      this.#bytesInWindow = 0;
      this.#tokensInWindow = 0;
      if (!this.#closed && !this.#pausedUnsent) this.#socket.resume();
    }, pauseMs).unref();
  }

  get closed(): boolean {
    return this.#closed;
  }

  /**
   * SECURITY: what the other side has not read is bounded. Past `pauseBytes` unsent, this end stops reading
   * the other's messages until they drain; past `maxUnsentBytes` (what it did not ask for piles up too), the
   * channel is closed as misbehaving.
   */
  send(msg: Out): void {
    if (this.#closed) return;
    this.#socket.write(`${JSON.stringify(msg)}\n`);
    const unsent = this.#socket.writableLength;
    if (unsent > this.#limits.maxUnsentBytes) {
      this.#bad(new Error(`the other end of the channel did not read ${unsent} bytes sent to it`));
    } else if (unsent > this.#limits.pauseBytes && !this.#pausedUnsent) {
      this.#pausedUnsent = true;
      this.#socket.pause();
      this.#socket.once('drain', () => {
        this.#pausedUnsent = false;
        if (!this.#closed && !this.#pausedPace) this.#socket.resume();
      });
    }
  }

  onClose(fn: () => void): void {
    if (this.#closed) fn();
    else this.#onClose.add(fn);
  }

  /** Ends the channel: nothing more is read or sent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#held = Buffer.alloc(0);
    this.#heldBytes = 0;
    this.#socket.destroy();
    for (const fn of this.#onClose) fn();
    this.#onClose.clear();
  }

  /** Ends the channel once what was sent is written (a child's last words before it exits). */
  end(): void {
    if (this.#closed) return;
    this.#socket.end();
  }
}

/** The descriptor a child reads the front's wire on (stdio[3] of its spawn). */
export const FRONT_WIRE_FD = 3;
/** The descriptor a slot process reads its egress channel on (stdio[4] of its spawn). */
export const EGRESS_CHANNEL_FD = 4;

/** The socket of descriptor `fd` a child was given at its spawn. */
export function inheritedSocket(fd: number): Socket {
  return new Socket({ fd, readable: true, writable: true });
}

/**
 * A child's end of the front's wire (FRONT_WIRE_FD, `socket`). Unbounded and
 * not paced: the front is trusted, and the bounds on what the child sends are
 * the front's to hold. Checks only that each message names its type.
 */
export function frontWire<In extends { readonly type: string }, Out>(
  socket: Socket,
  onMessage: (msg: In) => void,
  onBad: (e: unknown) => void,
): WireEnd<In, Out> {
  return new WireEnd<In, Out>(
    socket,
    (m) => {
      if (typeof m !== 'object' || m === null || typeof (m as { type?: unknown }).type !== 'string')
        throw new Error('the front sent a message of no type');
      return m as In;
    },
    onMessage,
    onBad,
    {
      maxLineBytes: 2 ** 30,
      pauseBytes: Number.POSITIVE_INFINITY,
      maxUnsentBytes: Number.POSITIVE_INFINITY,
      maxTokens: Number.POSITIVE_INFINITY,
      messagesPerWindow: Number.POSITIVE_INFINITY,
      bytesPerWindow: Number.POSITIVE_INFINITY,
      tokensPerWindow: Number.POSITIVE_INFINITY,
    },
  );
}
