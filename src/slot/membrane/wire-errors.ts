// Errors as they cross the wire to the script: a host error's message and stack
// cleaned of host paths and bounded, a page's thrown primitive kept as itself, and
// the transport's refusal of an oversized DevTools answer named for the script.
import { ProtocolError } from 'puppeteer';
import type { WireError } from '../../../sandbox/wire.js';
import { errorName, specialNumber } from '../../../sandbox/wire.js';
import { MAX_CDP_MESSAGE_BYTES, OVERSIZED_MESSAGE } from '../limits.js';

const MAX_MESSAGE = 2000;

/** Error text safe to show a script: no host paths, bounded length. */
export function cleanMessage(e: unknown): string {
  const raw = e instanceof Error ? e.message : String(e);
  // Only paths that start a word (or follow "file://" or "("), so URLs such as
  // http://host/app.js in a page's error stay as they are.
  return raw
    .replace(/(?<=^|[\s(])(?:file:\/\/)?\/[\w./@-]+\.(?:js|ts|mjs|cjs)(?::\d+)*/g, '<internal>')
    .slice(0, MAX_MESSAGE);
}

/** A frame of a stack that points at the host (a file path, node: or file: URL, node_modules). */
const HOST_FRAME = /(?:^|[\s(])(?:file:|node:|\/)|node_modules|<internal>/;

/**
 * A stack safe to show a script: the message line, then only the page's frames
 * ("at fn (http://site/app.js:3:7)"). SECURITY: every frame that names a host
 * file is dropped, so a host Error (a TimeoutError made in Puppeteer) keeps only
 * its first line.
 */
export function cleanStack(e: Error, message: string): string {
  const head = `${errorName(e.name)}: ${message}`;
  const stack = typeof e.stack === 'string' ? e.stack : '';
  const frames = stack
    .split('\n')
    .filter((line) => /^\s+at /.test(line))
    .filter((line) => !HOST_FRAME.test(line.replace(/^\s+at /, '')))
    .slice(0, 32)
    .map((line) => line.slice(0, 500));
  return [head, ...frames].join('\n').slice(0, MAX_MESSAGE * 4);
}

/** A refusal the isolate turns into a rejected call or a thrown error at once. */
export function refusal(message: string): string {
  return JSON.stringify({ ok: false, e: { name: 'RangeError', message } });
}

export function toWireError(e: unknown): WireError {
  if (e instanceof Error) {
    const message = cleanMessage(e);
    return { name: errorName(e.name), message, stack: cleanStack(e, message) };
  }
  const err: WireError = { name: 'Error', message: cleanMessage(e) };
  // A page function that throws a string, a number or null: Puppeteer rejects with that value itself.
  // SECURITY: only primitives cross as themselves; any other non-Error stays a plain message.
  if (e === null || e === undefined || ['string', 'number', 'boolean', 'bigint'].includes(typeof e)) {
    err.thrown = encodePrimitive(e);
  }
  return err;
}

/**
 * The script's error for a call whose DevTools answer was over the transport's
 * limit and dropped unread (src/slot/browser/cdp-transport.ts); undefined for any
 * other error. Only the transport's own protocol error is recognised: an error
 * the page throws with the same words is a plain Error, not a ProtocolError.
 */
export function oversizedAnswerError(e: unknown, method: string): WireError | undefined {
  if (!(e instanceof ProtocolError) || !e.originalMessage.startsWith(OVERSIZED_MESSAGE)) return undefined;
  const bytes = /\((\d+) bytes;/.exec(e.originalMessage)?.[1];
  return {
    name: 'RangeError',
    message: `${method}: the page's answer is larger than ${MAX_CDP_MESSAGE_BYTES / 2 ** 20} MiB${bytes === undefined ? '' : ` (${bytes} bytes)`}; have the page return less`,
  };
}

/** A primitive as the wire carries it (special numbers and BigInt tagged). */
export function encodePrimitive(v: unknown): unknown {
  if (v === undefined) return { $ps: 'u' };
  if (typeof v === 'number') return specialNumber(v) ?? v;
  if (typeof v === 'bigint') return { $ps: 'i', v: v.toString() };
  return v;
}
