// SECURITY: what a child can make the front hold or throw through its IPC
// channel. Node's reader of a channel ('advanced' serialization) keeps every
// byte of a message until its last one arrives, whatever length its 4-byte
// header claims (up to 4 GiB), and a message V8 cannot deserialize throws in
// the channel's read callback, where nothing catches it: the front would exit.
// A slot process runs hostile scripts and pages, and code that escaped into one
// holds the channel's descriptor: measured on Node 24.21, 356 MB held by the
// front after one second of one message without end, and the front ended by
// nine bytes. Node has no option for either, so this wraps the channel's read
// callback, reached through Node's own symbols: a message held past its bound,
// or one that cannot be read, stops the reading and is dropped, and `bad`
// ends the child. Where Node no longer has those symbols, it throws: no child
// runs without the bound.
import type { ChildProcess } from 'node:child_process';

/** The channel's pipe, as Node's child_process keeps it. */
interface ChannelPipe {
  onread: (...args: unknown[]) => unknown;
  readStop(): number;
  buffering: boolean;
  [key: symbol]: unknown;
}

function symbolNamed(o: object, name: string): symbol | undefined {
  return Object.getOwnPropertySymbols(o).find((s) => s.description === name);
}

/**
 * Bounds what the front holds of one message `child` has not finished
 * sending to `maxBytes`, and turns a message that cannot be deserialized into
 * `bad(reason)` instead of an exception nobody catches. Call it in the tick the
 * child was forked in (before anything was read). After `bad`, nothing more is
 * read from the channel and it is closed; the caller kills the child.
 */
export function boundChildMessages(child: ChildProcess, maxBytes: number, bad: (reason: string) => void): void {
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
    typeof pipe.readStop !== 'function'
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
    if (child.connected) child.disconnect();
    bad(reason);
  };
  pipe.onread = function (this: unknown, ...args: unknown[]): unknown {
    if (stopped) return undefined;
    let out: unknown;
    try {
      out = read.apply(this, args);
    } catch (e) {
      stop(`it sent a message that cannot be read (${e instanceof Error ? e.message : String(e)})`);
      return undefined;
    }
    const held = pipe[sizeKey];
    if (typeof held === 'number' && held > maxBytes)
      stop(`it sent a message longer than ${maxBytes} bytes (${held} held when it was cut)`);
    return out;
  };
}
