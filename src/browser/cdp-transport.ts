// The DevTools protocol between Puppeteer and Chromium (--remote-debugging-pipe:
// NUL-separated JSON messages on fds 3 and 4), read with a bound on the size of
// one message. Puppeteer's own pipe transport gathers a message whole, decodes
// it and parses it before anything of ours can look at it: one page.evaluate of
// 'x'.repeat(100e6) took the executor from 119 to 696 MB and blocked its event
// loop ~11 s, and four at once made another tenant's navigation time out. Nothing
// in the page can prevent such a message (getters, toJSON, console arguments,
// exception messages, the DOM's HTML), so the bound is here, on the wire.
//
// A message over the bound is dropped as it streams in, never held whole: only
// its first and last EDGE_BYTES are kept, enough to read who waits for it.
// - A response (it starts {"id":N,...) is answered with a protocol error for its
//   id (and its sessionId, which Chromium appends at the end), so Puppeteer
//   rejects that one call and the script gets a named error (see
//   OVERSIZED_MESSAGE and src/sandbox/membrane.ts).
// - An event ({"method":...) is dropped and counted.
import type { Readable, Writable } from 'node:stream';
import type { ConnectionTransport } from 'puppeteer';

/**
 * SECURITY: the largest DevTools message Chromium may send the executor, in
 * bytes. A constant, not a setting: it only has to be larger than the largest
 * legitimate message under the membrane's own caps, and it bounds what one
 * message costs the executor (the message, its text and what JSON.parse makes of
 * it: about three times this at the peak, once at a time, since the pipe carries
 * one message after another). The largest legitimate ones are a result or event
 * the membrane can still give the script (MAX_TRANSFER_CHARS, 16 Mi characters:
 * 16 MiB of JSON for ASCII text) and a screenshot whose bytes fit in it (its
 * base64 text is 4/3 of them: 21.4 MiB for 16 MiB). PDFs come as a stream in
 * small reads (IO.read). See README "Budgets".
 */
export const MAX_CDP_MESSAGE_BYTES = 24 * 2 ** 20;

/** The text of the protocol error a dropped response is answered with; membrane.ts recognises it. */
export const OVERSIZED_MESSAGE = 'pagescript: the answer is larger than the DevTools message limit';

/** Bytes kept of each end of a message being dropped: room for its id, method and sessionId. */
export const EDGE_BYTES = 256;

/** A message over the limit, dropped: what could be read of it from its two ends. */
export interface DroppedMessage {
  readonly bytes: number;
  /** The call it answers (a response); undefined for an event or a message that could not be read. */
  readonly id: number | undefined;
  /** The target session it belongs to (Chromium appends it last), if any. */
  readonly sessionId: string | undefined;
  /** The event's name (an event). */
  readonly method: string | undefined;
}

// Chromium writes a response as {"id":N,"result":...} or {"id":N,"error":...}, an
// event as {"method":"Domain.event","params":...}, and puts a session's id last,
// ,"sessionId":"..."} (measured: test/unit/cdp-transport.test.ts, and the e2e
// tests of test/e2e/cdp-bound.test.ts). SECURITY: both patterns are anchored at
// the message's own first or last byte. Page data sits inside JSON strings,
// where every quote is escaped, so it can neither begin the message nor end
// it with an unescaped ","sessionId":"…"}".
const HEAD_ID = /^\{"id":(\d{1,15})[,}]/;
const HEAD_METHOD = /^\{"method":"([A-Za-z]{1,64}\.[A-Za-z]{1,128})"/;
const TAIL_SESSION = /,"sessionId":"([0-9A-Za-z]{1,128})"\}$/;

/** What was read of one oversized message's ends. */
export function readEdges(head: string, tail: string, bytes: number): DroppedMessage {
  const id = HEAD_ID.exec(head)?.[1];
  return {
    bytes,
    id: id === undefined ? undefined : Number(id),
    sessionId: TAIL_SESSION.exec(tail)?.[1],
    method: HEAD_METHOD.exec(head)?.[1],
  };
}

/**
 * Splits the pipe's bytes into messages, holding at most maxBytes of one
 * message at any time. Messages up to maxBytes (exactly maxBytes included) are
 * given whole to onMessage; a longer one is dropped as it streams in and
 * reported to onOversized once its end arrives. Empty messages are skipped.
 */
export class CdpFramer {
  readonly #maxBytes: number;
  readonly #onMessage: (text: string) => void;
  readonly #onOversized: (d: DroppedMessage) => void;
  /** The message being read: its pieces (while within the limit) and its length so far. */
  #parts: Buffer[] = [];
  #bytes = 0;
  /** Over the limit: only its ends are kept. */
  #dropping = false;
  #head: Buffer = Buffer.alloc(0);
  #tail: Buffer = Buffer.alloc(0);

  constructor(maxBytes: number, onMessage: (text: string) => void, onOversized: (d: DroppedMessage) => void) {
    this.#maxBytes = maxBytes;
    this.#onMessage = onMessage;
    this.#onOversized = onOversized;
  }

  /** Bytes of the message being read that are held now (at most maxBytes, or 2 × EDGE_BYTES while dropping). */
  get heldBytes(): number {
    return this.#dropping ? this.#head.length + this.#tail.length : this.#bytes;
  }

  push(chunk: Buffer): void {
    let start = 0;
    while (start <= chunk.length) {
      const nul = chunk.indexOf(0, start);
      const end = nul === -1 ? chunk.length : nul;
      if (end > start) this.#add(chunk.subarray(start, end));
      if (nul === -1) return;
      this.#finish();
      start = nul + 1;
    }
  }

  #add(piece: Buffer): void {
    this.#bytes += piece.length;
    if (this.#dropping) {
      this.#tail = lastBytes([this.#tail, piece], EDGE_BYTES);
      return;
    }
    if (this.#bytes <= this.#maxBytes) {
      this.#parts.push(piece);
      return;
    }
    // SECURITY: over the limit: keep the two ends and let go of the rest now, so
    // that what is held for one message never passes maxBytes, however long it is.
    const all = [...this.#parts, piece];
    this.#head = firstBytes(all, EDGE_BYTES);
    this.#tail = lastBytes(all, EDGE_BYTES);
    this.#parts = [];
    this.#dropping = true;
  }

  #finish(): void {
    const parts = this.#parts;
    const bytes = this.#bytes;
    const dropping = this.#dropping;
    const head = this.#head;
    const tail = this.#tail;
    this.#parts = [];
    this.#bytes = 0;
    this.#dropping = false;
    this.#head = this.#tail = Buffer.alloc(0);
    if (dropping) {
      this.#onOversized(readEdges(head.toString('latin1'), tail.toString('latin1'), bytes));
    } else if (bytes > 0) {
      this.#onMessage(
        parts.length === 1 ? (parts[0] as Buffer).toString('utf8') : Buffer.concat(parts, bytes).toString('utf8'),
      );
    }
  }
}

/** The first n bytes of the pieces, copied (the pieces' chunks are not kept alive). */
function firstBytes(pieces: readonly Buffer[], n: number): Buffer {
  const out: Buffer[] = [];
  let have = 0;
  for (const p of pieces) {
    if (have >= n) break;
    const take = p.subarray(0, n - have);
    out.push(take);
    have += take.length;
  }
  return Buffer.from(Buffer.concat(out, have));
}

/** The last n bytes of the pieces, copied. */
function lastBytes(pieces: readonly Buffer[], n: number): Buffer {
  const out: Buffer[] = [];
  let have = 0;
  for (let i = pieces.length - 1; i >= 0 && have < n; i--) {
    const p = pieces[i] as Buffer;
    const take = p.subarray(Math.max(0, p.length - (n - have)));
    out.unshift(take);
    have += take.length;
  }
  return Buffer.from(Buffer.concat(out, have));
}

export interface BoundedPipeTransportOptions {
  readonly maxMessageBytes?: number;
  /** Told of every message dropped (after a dropped response has been answered). */
  readonly onDropped?: (d: DroppedMessage) => void;
}

/**
 * Puppeteer's ConnectionTransport over Chromium's pipe (write: Chromium's fd 3,
 * read: its fd 4), with the bound above. Messages are handed on as they are
 * complete, in order; onclose follows the last one.
 */
export class BoundedPipeTransport implements ConnectionTransport {
  readonly #write: Writable;
  readonly #read: Readable;
  readonly #framer: CdpFramer;
  readonly #maxBytes: number;
  #closed = false;
  /** The pipe closed before anyone listened (Chromium died at start): told to onclose when it is set. */
  #closedEarly = false;
  #onclose: (() => void) | undefined;
  onmessage?: (message: string) => void;

  readonly #onData = (chunk: Buffer): void => this.#framer.push(chunk);
  readonly #onEnd = (): void => this.#ended();
  readonly #onError = (): void => this.#ended();

  constructor(write: Writable, read: Readable, opts: BoundedPipeTransportOptions = {}) {
    this.#write = write;
    this.#read = read;
    this.#maxBytes = opts.maxMessageBytes ?? MAX_CDP_MESSAGE_BYTES;
    const onDropped = opts.onDropped;
    // Each message is handed on in a turn of its own, in order, as Puppeteer's own
    // pipe transport does: Puppeteer sets up a new target's session and execution
    // contexts in the turns between messages, and a console event handed on in the
    // same turn as its context's creation was lost (measured: two conformance cases).
    this.#framer = new CdpFramer(
      this.#maxBytes,
      (text) => setImmediate(() => this.onmessage?.(text)),
      (d) => {
        if (d.id !== undefined) {
          const answer = oversizedAnswer(d, this.#maxBytes);
          setImmediate(() => this.onmessage?.(answer));
        }
        onDropped?.(d);
      },
    );
    read.on('data', this.#onData);
    read.on('close', this.#onEnd);
    read.on('error', this.#onError);
    // A write to a Chromium that is gone fails here rather than as an unhandled 'error'.
    write.on('error', this.#onError);
  }

  get onclose(): (() => void) | undefined {
    return this.#onclose;
  }

  set onclose(fn: (() => void) | undefined) {
    this.#onclose = fn;
    if (fn && this.#closedEarly) {
      this.#closedEarly = false;
      queueMicrotask(fn);
    }
  }

  send(message: string): void {
    if (this.#closed || this.#write.destroyed) return;
    this.#write.write(message);
    this.#write.write('\0');
  }

  #ended(): void {
    if (this.#closed) return;
    this.close();
    // After the messages already read (each in a turn of its own).
    setImmediate(() => {
      if (this.#onclose) this.#onclose();
      else this.#closedEarly = true;
    });
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#read.off('data', this.#onData);
    this.#read.off('close', this.#onEnd);
    // Errors after close are expected (Chromium exits) and not ours to report.
    this.#read.off('error', this.#onError);
    this.#read.on('error', () => undefined);
    this.#write.off('error', this.#onError);
    this.#write.on('error', () => undefined);
  }
}

/** The protocol error that answers a dropped response, for its call alone. */
export function oversizedAnswer(d: DroppedMessage, maxBytes: number): string {
  return JSON.stringify({
    id: d.id,
    error: { code: -32000, message: `${OVERSIZED_MESSAGE} (${d.bytes} bytes; at most ${maxBytes})` },
    ...(d.sessionId === undefined ? {} : { sessionId: d.sessionId }),
  });
}
