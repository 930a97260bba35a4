// The DevTools protocol between Puppeteer and Chromium (--remote-debugging-pipe:
// NUL-separated JSON messages on fds 3 and 4), read with a bound on the size of
// one message. Puppeteer's own pipe transport gathers a message whole, decodes
// it and parses it before anything of ours can look at it: one huge result
// costs the slot process several times its size in memory and blocks its event loop,
// and with it every other tenant's request. Nothing in the page can prevent such
// a message (getters, toJSON, console arguments, exception messages, the DOM's
// HTML), so the bound is here, on the wire.
//
// A message over the bound is dropped as it streams in, never held whole: only
// its first and last EDGE_BYTES are kept, enough to read who waits for it.
// - A response (it starts {"id":N,...) is answered with a protocol error for its
//   id (and its sessionId, which Chromium appends at the end), so Puppeteer
//   rejects that one call and the script gets a named error (see
//   OVERSIZED_MESSAGE and src/slot/membrane/wire-errors.ts).
// - An event ({"method":...) is dropped and counted.
//
// Messages are then handed to Puppeteer one per turn of the event loop, from a
// queue of bounded size (the pipe is not read while it is full), and the events
// of a request's context stop being decoded once the request is over. So a
// page's flood of events cannot keep the slot process's one thread from its
// other work (the front's messages, the script's calls): they take turns with
// it, the flood waits in its own Chromium (whose memory is the request's,
// PAGE_MEMORY_MB), and what is left of it when the request ends is dropped
// unread.
import type { Readable, Writable } from 'node:stream';
import type { ConnectionTransport } from 'puppeteer';
import { MAX_CDP_MESSAGE_BYTES, OVERSIZED_MESSAGE } from '../limits.js';

/** Bytes kept of each end of a message being dropped: room for its id, method and sessionId. */
export const EDGE_BYTES = 256;

/**
 * SECURITY: complete messages waiting for their turn, in bytes, above which the
 * pipe is no longer read (Chromium keeps the rest, in its own memory, which the
 * request's page memory budget counts) until the queue is below
 * QUEUE_RESUME_BYTES. One message larger than this is still handed on whole.
 */
export const QUEUE_PAUSE_BYTES = 2 ** 20;
export const QUEUE_RESUME_BYTES = 2 ** 18;

/**
 * Events of a retired context dropped in one turn at most, before the next turn
 * (dropping costs no parse, ~1-2 µs each: a turn stays near a millisecond, as
 * the slot process's other work waits for it; the backlog of a page's console
 * flood, sent by Chromium after its request ended, is ~1e5 events).
 */
const DROPS_PER_TURN = 512;

/**
 * SECURITY: characters of small messages joined into one write at the end of a
 * turn (BoundedPipeTransport.send), at most. A message that would take the
 * batch past this is not joined: what is batched is written first, then it, on
 * its own, at once (as every message was before batching). Without the bound the
 * batch of one turn had no limit but V8's longest string (2^29-24 characters),
 * and past that the send threw: Puppeteer sends all of a page's preload scripts
 * (evaluateOnNewDocument, up to 16 Mi characters each and kept on the host) to
 * each out-of-process frame in one turn, and a send that throws there ends in a
 * rejection nobody handles (TargetManager's attach handler), which ends the
 * slot process. Batching is for the many small commands of one step (a new page
 * sends ~10 of a few hundred bytes); a large message gains nothing from it.
 */
export const MAX_BATCH_CHARS = 64 * 1024;

/** Contexts remembered as retired, and sessions remembered with their context: bounds, oldest forgotten first. */
const MAX_RETIRED_CONTEXTS = 1024;
const MAX_SESSIONS = 16_384;

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
// ,"sessionId":"..."} (measured: test/unit/slot/cdp-transport.test.ts, and the e2e
// tests of test/e2e/slot/cdp-bound.test.ts). SECURITY: both patterns are anchored at
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
 * reported to onOversized once its end arrives. Empty messages are skipped. A
 * message's bytes are given undecoded (a view of the chunk when it fits in one).
 */
export class CdpFramer {
  readonly #maxBytes: number;
  readonly #onMessage: (message: Buffer) => void;
  readonly #onOversized: (d: DroppedMessage) => void;
  /** The message being read: its pieces (while within the limit) and its length so far. */
  #parts: Buffer[] = [];
  #bytes = 0;
  /** Over the limit: only its ends are kept. */
  #dropping = false;
  #head: Buffer = Buffer.alloc(0);
  #tail: Buffer = Buffer.alloc(0);

  constructor(maxBytes: number, onMessage: (message: Buffer) => void, onOversized: (d: DroppedMessage) => void) {
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
      this.#onMessage(parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts, bytes));
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
  /** Milliseconds for backedUp's recency; performance.now() unless a test gives its own. */
  readonly now?: () => number;
}

/**
 * The pipe counts as backed up (BoundedPipeTransport.backedUp) when its reading
 * was paused with at least this many messages queued — a flood of events, not
 * one large answer — within the last BACKLOG_RECENT_MS.
 */
export const BACKLOG_MESSAGES = 64;
export const BACKLOG_RECENT_MS = 1000;

const ATTACHED = '{"method":"Target.attachedToTarget"';
const DETACHED = '{"method":"Target.detachedFromTarget"';
const EVENT = '{"method":"';
const TARGET_EVENT = '{"method":"Target.';

/** How every Input.* command Puppeteer sends begins (its Connection writes `method` first). */
const INPUT_PREFIX = '{"method":"Input.';

/**
 * Puppeteer's ConnectionTransport over Chromium's pipe (write: Chromium's fd 3,
 * read: its fd 4), with the bound above. Messages are handed on as they are
 * complete, in order, one per turn of the event loop; onclose follows the last one.
 */
export class BoundedPipeTransport implements ConnectionTransport {
  /** An Input.* command was sent since takeInputSent last asked. */
  #inputSent = false;
  readonly #write: Writable;
  readonly #read: Readable;
  readonly #framer: CdpFramer;
  readonly #maxBytes: number;
  #closed = false;
  /** The pipe ended: onclose is told once the queue is empty. */
  #ended = false;
  /** The pipe closed before anyone listened (Chromium died at start): told to onclose when it is set. */
  #closedEarly = false;
  #onclose: (() => void) | undefined;
  onmessage?: (message: string) => void;

  /** Complete messages waiting for their turn: queue[queueStart..] holds queuedBytes. */
  #queue: Buffer[] = [];
  #queueStart = 0;
  #queuedBytes = 0;
  #paused = false;
  #pumping = false;
  readonly #now: () => number;
  /** When the pipe was last paused with BACKLOG_MESSAGES or more queued. */
  #backlogAt = -Infinity;
  /** Each session Chromium attached, with its browser context (a child's from its parent when not given). */
  readonly #sessions = new Map<string, string | undefined>();
  /** Contexts whose request is over: their sessions' events are dropped unread. */
  readonly #retired = new Set<string>();
  #droppedEvents = 0;
  #droppedEventBytes = 0;
  /** Messages sent in this turn, each ended by NUL, written together at its end. */
  #outgoing = '';
  #flushing = false;

  readonly #onData = (chunk: Buffer): void => this.#framer.push(chunk);
  readonly #onEnd = (): void => this.#end();
  readonly #onError = (): void => this.#end();

  constructor(write: Writable, read: Readable, opts: BoundedPipeTransportOptions = {}) {
    this.#write = write;
    this.#read = read;
    this.#maxBytes = opts.maxMessageBytes ?? MAX_CDP_MESSAGE_BYTES;
    const onDropped = opts.onDropped;
    this.#now = opts.now ?? ((): number => performance.now());
    this.#framer = new CdpFramer(
      this.#maxBytes,
      (message) => this.#enqueue(message),
      (d) => {
        if (d.id !== undefined) this.#enqueue(Buffer.from(oversizedAnswer(d, this.#maxBytes)));
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

  /**
   * Whether an Input.* command (a key, the mouse, a touch, inserted text) went
   * to this Chromium since the last ask, and forgets it. SECURITY: only input
   * writes Linux's selection clipboard (clipboard.ts), so a lease replaces it
   * only after a request that sent some. Puppeteer's Connection writes `method`
   * as a message's first key; the start of each message is all that is read.
   */
  takeInputSent(): boolean {
    const sent = this.#inputSent;
    this.#inputSent = false;
    return sent;
  }

  /**
   * Chromium has been sending events faster than they are handed on: the pipe
   * was not read (more than QUEUE_PAUSE_BYTES waiting here, in BACKLOG_MESSAGES
   * or more messages) within the last BACKLOG_RECENT_MS, and Chromium keeps what
   * it could not send in its own memory. One large answer does not count. Recent,
   * not only now: a queue that drained a moment ago (the pipe read again) may
   * leave Chromium still holding the rest. And now,
   * however long ago it paused: a pipe still paused with a flood queued (held
   * longer than BACKLOG_RECENT_MS) has Chromium keeping the rest as ever.
   */
  get backedUp(): boolean {
    if (this.#paused && this.#queue.length - this.#queueStart >= BACKLOG_MESSAGES) return true;
    return this.#now() - this.#backlogAt < BACKLOG_RECENT_MS;
  }

  /** Events of sessions of a retired context dropped unread so far. */
  get droppedEvents(): number {
    return this.#droppedEvents;
  }

  /** Their bytes: what Chromium sent of them (lease.ts tells a short backlog from a flood by it). */
  get droppedEventBytes(): number {
    return this.#droppedEventBytes;
  }

  /**
   * The request of this browser context is over: from now on the events of its
   * targets (pages, frames, workers, also those attached later) are dropped
   * without being decoded. Puppeteer would still parse and dispatch them to a
   * page nobody reads. Responses and Target.* messages still go through, so
   * pending calls end and closing the context works as before.
   */
  retireContext(contextId: string): void {
    if (this.#retired.size >= MAX_RETIRED_CONTEXTS) this.#retired.delete(this.#retired.values().next().value as string);
    this.#retired.add(contextId);
  }

  /** The pump runs at a next turn if it has anything to do (it is not running and not held). */
  #schedule(): void {
    if (this.#pumping) return;
    if (this.#queueStart >= this.#queue.length && !this.#ended) return;
    this.#pumping = true;
    setImmediate(this.#pump);
  }

  /**
   * Messages sent in this turn of the event loop go to Chromium in one write at
   * its end: Puppeteer often sends several at once (a new page sends ~10), and
   * each write wakes Chromium's I/O thread — on busy cores, a context switch
   * per message. Small messages only: at most MAX_BATCH_CHARS are joined.
   */
  send(message: string): void {
    if (this.#closed || this.#write.destroyed) return;
    if (message.startsWith(INPUT_PREFIX)) this.#inputSent = true;
    if (this.#outgoing.length + message.length >= MAX_BATCH_CHARS) {
      // In order: what was batched before it goes first.
      this.#flush();
      if (message.length >= MAX_BATCH_CHARS) {
        // SECURITY: written now, not joined (see MAX_BATCH_CHARS); two writes, so no copy of it is made.
        this.#write.write(message);
        this.#write.write('\0');
        return;
      }
    }
    this.#outgoing += `${message}\0`;
    if (this.#flushing) return;
    this.#flushing = true;
    process.nextTick(this.#flush);
  }

  readonly #flush = (): void => {
    this.#flushing = false;
    const out = this.#outgoing;
    this.#outgoing = '';
    if (out !== '' && !this.#write.destroyed) this.#write.write(out);
  };

  #enqueue(message: Buffer): void {
    this.#queue.push(message);
    this.#queuedBytes += message.length;
    // SECURITY: bytes Chromium sends faster than they are handed on wait in Chromium, not here.
    if (!this.#paused && this.#queuedBytes > QUEUE_PAUSE_BYTES && !this.#closed) {
      this.#paused = true;
      if (this.#queue.length - this.#queueStart >= BACKLOG_MESSAGES) this.#backlogAt = this.#now();
      this.#read.pause();
    }
    this.#schedule();
  }

  #take(): Buffer | undefined {
    if (this.#queueStart >= this.#queue.length) return undefined;
    const message = this.#queue[this.#queueStart] as Buffer;
    this.#queue[this.#queueStart++] = EMPTY;
    this.#queuedBytes -= message.length;
    if (this.#queueStart === this.#queue.length) {
      this.#queue = [];
      this.#queueStart = 0;
    } else if (this.#queueStart >= 1024 && this.#queueStart * 2 >= this.#queue.length) {
      this.#queue = this.#queue.slice(this.#queueStart);
      this.#queueStart = 0;
    }
    if (this.#paused && this.#queuedBytes < QUEUE_RESUME_BYTES && !this.#closed) {
      this.#paused = false;
      this.#read.resume();
    }
    return message;
  }

  /**
   * One turn: hands on the next message (dropping retired contexts' events
   * before it, up to DROPS_PER_TURN) and leaves the rest to later turns, so a
   * Chromium that floods the pipe takes turns with another Chromium's pipe (a
   * retiring one beside its successor) and with the slot process's own work.
   * Each message in a turn of its own, in order, is also what Puppeteer's own
   * pipe transport does and needs: it sets up a new target's session and
   * execution contexts in the turns between messages, and a console event
   * handed on in the same turn as its context's creation is lost.
   */
  readonly #pump = (): void => {
    let message: Buffer | undefined;
    // At most DROPS_PER_TURN drops, then the turn ends (the event after them is
    // not taken: it is dropped in a later turn, never handed on).
    for (let drops = 0; drops < DROPS_PER_TURN && (message = this.#take()) !== undefined; drops++) {
      if (!this.#retiredEvent(message)) break;
      this.#droppedEvents++;
      this.#droppedEventBytes += message.length;
      message = undefined;
    }
    if (message !== undefined) {
      const text = message.toString('utf8');
      if (startsWith(message, ATTACHED) || startsWith(message, DETACHED)) this.#track(text);
      this.onmessage?.(text);
    }
    if (this.#queueStart < this.#queue.length) {
      setImmediate(this.#pump);
      return;
    }
    this.#pumping = false;
    if (this.#ended) this.#tellClosed();
  };

  /** An event of a session whose context is retired (read from the message's two ends only). */
  #retiredEvent(message: Buffer): boolean {
    if (this.#retired.size === 0 || !startsWith(message, EVENT) || startsWith(message, TARGET_EVENT)) return false;
    const session = TAIL_SESSION.exec(message.toString('latin1', Math.max(0, message.length - EDGE_BYTES)))?.[1];
    if (session === undefined) return false;
    const context = this.#sessions.get(session);
    return context !== undefined && this.#retired.has(context);
  }

  /** Keeps the session table as Puppeteer's Connection keeps its own (same messages, same order). */
  #track(text: string): void {
    let m: {
      method?: unknown;
      sessionId?: unknown;
      params?: { sessionId?: unknown; targetInfo?: { browserContextId?: unknown } };
    };
    try {
      m = JSON.parse(text) as typeof m;
    } catch {
      return;
    }
    const id = m.params?.sessionId;
    if (typeof id !== 'string') return;
    if (m.method === 'Target.detachedFromTarget') {
      this.#sessions.delete(id);
      return;
    }
    const own = m.params?.targetInfo?.browserContextId;
    const context =
      typeof own === 'string' ? own : typeof m.sessionId === 'string' ? this.#sessions.get(m.sessionId) : undefined;
    if (this.#sessions.size >= MAX_SESSIONS) this.#sessions.delete(this.#sessions.keys().next().value as string);
    this.#sessions.set(id, context);
  }

  #end(): void {
    if (this.#closed) return;
    this.close();
    this.#ended = true;
    // After the messages already read (each in a turn of its own).
    this.#schedule();
  }

  #tellClosed(): void {
    this.#ended = false;
    if (this.#onclose) this.#onclose();
    else this.#closedEarly = true;
  }

  close(): void {
    if (this.#closed) return;
    // What was sent before the close goes out (Browser.close, sent just before).
    this.#flush();
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

const EMPTY = Buffer.alloc(0);

/** The message begins with these (ASCII) characters. */
function startsWith(message: Buffer, prefix: string): boolean {
  return message.length >= prefix.length && message.toString('latin1', 0, prefix.length) === prefix;
}

/** The protocol error that answers a dropped response, for its call alone. */
export function oversizedAnswer(d: DroppedMessage, maxBytes: number): string {
  return JSON.stringify({
    id: d.id,
    error: { code: -32000, message: `${OVERSIZED_MESSAGE} (${d.bytes} bytes; at most ${maxBytes})` },
    ...(d.sessionId === undefined ? {} : { sessionId: d.sessionId }),
  });
}
