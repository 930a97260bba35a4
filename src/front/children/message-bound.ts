// SECURITY: what a child can make the front hold or throw through its IPC
// channel. A slot process runs hostile scripts and pages, and code that
// escaped into one holds the channel's descriptor. Node's reader of a channel
// ('advanced' serialization) trusts the other end:
// - it keeps every byte of a message until its last one arrives, whatever
//   length its 4-byte header claims (up to 4 GiB): measured on Node 24.21,
//   356 MB held after one second of one endless message; one byte a read cost
//   the front ~450 bytes more (a chunk each);
// - a message V8 cannot deserialize throws in the read callback, where
//   nothing catches it: nine bytes ended the front;
// - Node's own messages (cmd 'NODE_…') are obeyed: a NODE_HANDLE_ACK with no
//   descriptor of the front's in flight fails an assertion, uncaught (one
//   process.send ended the front);
// - a descriptor sent along is kept (a plain message's is never closed: 10,000
//   arrived in 22 ms and stayed open) or made into a socket or a server (a
//   `net.Server` one ended the front).
// Node has no option for any of it, so this wraps the channel's read callback
// and the child's emit, reached through Node's own symbols. The front takes no
// descriptor and no Node message from a child but the acknowledgement of one
// it sent; a message held past its bound, or one that cannot be read, stops
// the reading and is dropped, and `bad` ends the child. Where Node no longer
// has those symbols it throws: no child runs without the bound.
import type { ChildProcess } from 'node:child_process';

/** The channel's pipe, as Node's child_process keeps it. */
interface ChannelPipe {
  onread: (...args: unknown[]) => unknown;
  readStop(): number;
  readStart(): number;
  close(): void;
  buffering: boolean;
  /** A descriptor that arrived with the data being read (SCM_RIGHTS), for the message it came with. */
  pendingHandle?: { close?: () => void } | null;
  [key: symbol]: unknown;
}

/** What a chunk read and held costs the front beyond its bytes (its ArrayBuffer, its view, the list's slot): ~450 B measured. */
export const HELD_CHUNK_COST = 512;

/** The window in which a child's messages are counted (MESSAGES_PER_WINDOW). */
export const MESSAGE_WINDOW_MS = 100;
/** How many messages of a child the front reads in a window: 10,000 a second (a slot process sends a few dozen a request). */
export const MESSAGES_PER_WINDOW = 1_000;

/** How often the front stopped reading a child for sending too many messages (tests). */
export interface MessagePace {
  pauses: number;
}

/** Whether a descriptor the front sent is waiting for the child's acknowledgement (Node's own field). */
function handleInFlight(child: ChildProcess): boolean {
  return Array.isArray((child as unknown as { _handleQueue?: unknown })._handleQueue);
}

function symbolNamed(o: object, name: string): symbol | undefined {
  return Object.getOwnPropertySymbols(o).find((s) => s.description === name);
}

/**
 * Bounds what the front holds of one message `child` has not finished sending
 * to `maxBytes` (each read held counted at HELD_CHUNK_COST more), and turns a
 * message that cannot be deserialized, a descriptor, or a Node message other
 * than the acknowledgement of a descriptor in flight into `bad(reason)`
 * instead of an exception nobody catches. Call it in the tick the child was
 * forked in (before anything was read). After `bad`, nothing more is read
 * from the channel and it is closed; the caller kills the child.
 */
export function boundChildMessages(
  child: ChildProcess,
  maxBytes: number,
  bad: (reason: string) => void,
  opts: { messagesPerWindow?: number } = {},
): MessagePace {
  const perWindow = opts.messagesPerWindow ?? MESSAGES_PER_WINDOW;
  const handleKey = symbolNamed(child, 'kChannelHandle');
  const pipe =
    handleKey === undefined
      ? undefined
      : ((child as unknown as Record<symbol, unknown>)[handleKey] as ChannelPipe | null);
  const sizeKey = pipe ? symbolNamed(pipe, 'kMessageBufferSize') : undefined;
  const bufferKey = pipe ? symbolNamed(pipe, 'kMessageBuffer') : undefined;
  if (
    !pipe ||
    sizeKey === undefined ||
    bufferKey === undefined ||
    typeof pipe.onread !== 'function' ||
    typeof pipe.readStop !== 'function' ||
    typeof pipe.readStart !== 'function' ||
    typeof pipe.close !== 'function' ||
    !('_handleQueue' in child)
  )
    throw new Error(
      `this Node (${process.version}) keeps a child's IPC channel in a way the front does not know: ` +
        'it cannot bound what a child sends it (src/front/children/message-bound.ts)',
    );
  const read = pipe.onread;
  let stopped = false;
  const stop = (reason: string): void => {
    stopped = true;
    pipe.readStop();
    // What was held of the message goes now; and with nothing left half-read, disconnect() closes the channel at once.
    pipe[bufferKey] = [];
    pipe[sizeKey] = 0;
    pipe.buffering = false;
    // Node postpones a disconnect until the child acknowledges a descriptor in flight, which it will not now.
    const waiting = handleInFlight(child);
    if (child.connected) child.disconnect();
    if (waiting) pipe.close();
    bad(reason);
  };
  pipe.onread = function (this: unknown, ...args: unknown[]): unknown {
    if (stopped) return undefined;
    const handle = pipe.pendingHandle;
    if (handle) {
      pipe.pendingHandle = null;
      try {
        handle.close?.();
      } catch {
        // Closed already.
      }
      stop('it sent a descriptor');
      return undefined;
    }
    let out: unknown;
    try {
      out = read.apply(this, args);
    } catch (e) {
      stop(`it sent a message that cannot be read (${e instanceof Error ? e.message : String(e)})`);
      return undefined;
    }
    const bytes = pipe[sizeKey];
    const chunks = pipe[bufferKey];
    const held =
      (typeof bytes === 'number' ? bytes : 0) + (Array.isArray(chunks) ? chunks.length : 0) * HELD_CHUNK_COST;
    if (held > maxBytes)
      stop(`it sent a message longer than ${maxBytes} bytes (${held} held when it was cut, ${HELD_CHUNK_COST} a read)`);
    return out;
  };
  // SECURITY: the front reads at most `perWindow` messages of a child each MESSAGE_WINDOW_MS; past that, the
  // channel is not read until the window ends, and the child's sends wait in the child. One slot process sent
  // 1.4 million small valid messages a second, which held the front at ~90 % of a core (helper-31).
  const pace: MessagePace = { pauses: 0 };
  let windowStart = performance.now();
  let inWindow = 0;
  let paused = false;
  const count = (): void => {
    const now = performance.now();
    if (now - windowStart >= MESSAGE_WINDOW_MS) {
      windowStart = now;
      inWindow = 0;
    }
    if (++inWindow <= perWindow || paused || stopped) return;
    paused = true;
    pace.pauses++;
    pipe.readStop();
    setTimeout(
      () => {
        paused = false;
        windowStart = performance.now();
        inWindow = 0;
        if (!stopped && child.connected) pipe.readStart();
      },
      Math.max(1, MESSAGE_WINDOW_MS - (now - windowStart)),
    ).unref();
  };
  const emit = child.emit;
  child.emit = function (this: ChildProcess, event: string | symbol, ...rest: unknown[]): boolean {
    if (event === 'message' || event === 'internalMessage') count();
    if (event === 'internalMessage') {
      const cmd = (rest[0] as { cmd?: unknown } | null | undefined)?.cmd;
      const ack = cmd === 'NODE_HANDLE_ACK' || cmd === 'NODE_HANDLE_NACK';
      if (!(ack && handleInFlight(child))) {
        if (!stopped) stop(`it sent a Node message of its own (${String(cmd).slice(0, 40)})`);
        return false;
      }
    }
    return Reflect.apply(emit, this, [event, ...rest]) as boolean;
  } as typeof child.emit;
  return pace;
}
