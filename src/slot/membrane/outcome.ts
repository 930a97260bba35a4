// What the isolate reports at the end of a script, checked on the host before
// it is believed: the runtime inside the isolate can be subverted by the script
// (prototypes, toJSON), so its outcome is untrusted text whose kind and size
// are checked here.
import type { RunOutcome, WireError } from '../../../sandbox/wire.js';
import { KNOWN_ERROR_NAMES, MAX_ERROR_MESSAGE_CHARS, cutText } from '../../../sandbox/wire.js';

export { MAX_ERROR_MESSAGE_CHARS };

/** An error name longer than this is not a name; it is replaced by "Error". */
export const MAX_ERROR_NAME_CHARS = 64;
/** Room for "… (N more characters)". */
const CUT_NOTE_CHARS = 40;
/** The outcome's own fields around the result, in characters. */
const OUTCOME_OVERHEAD_CHARS = 64 * 1024;

export const cut = cutText;

/** A frame of the caller's script, exactly; any other line (a host path, a page URL) is dropped. */
const SCRIPT_FRAME = /^\s+at (?:async )?(?:new )?(?:[\w$.<>[\]-]{1,200} \()?script\.js:\d+:\d+\)?$/;
export const MAX_STACK_FRAMES = 20;

/**
 * The caller's frames of a stack the isolate reports, re-checked here:
 * SECURITY: the runtime can be subverted, so only lines shaped exactly as a
 * frame of script.js are kept, at most MAX_STACK_FRAMES of them.
 */
export function scriptFramesOf(stack: unknown): string[] {
  if (typeof stack !== 'string') return [];
  return stack
    .slice(0, 64 * 1024)
    .split('\n')
    .filter((line) => SCRIPT_FRAME.test(line))
    .slice(0, MAX_STACK_FRAMES)
    .map((line) => `    ${line.trim()}`);
}

function errorOf(v: unknown): WireError & { line?: number; column?: number } {
  const e = (typeof v === 'object' && v !== null ? v : {}) as Record<string, unknown>;
  const name = typeof e.name === 'string' && e.name.length <= MAX_ERROR_NAME_CHARS ? e.name : 'Error';
  // The runtime cuts too, adding a note of what it cut: that note is let through.
  const message =
    typeof e.message !== 'string'
      ? 'unknown error'
      : e.message.length <= MAX_ERROR_MESSAGE_CHARS + CUT_NOTE_CHARS
        ? e.message
        : cut(e.message, MAX_ERROR_MESSAGE_CHARS);
  const out: WireError & { line?: number; column?: number } = {
    // A name the script made up is kept only if it is a plain identifier.
    name: KNOWN_ERROR_NAMES.has(name) || /^[A-Za-z_$][\w$]*$/.test(name) ? name : 'Error',
    message,
  };
  if (typeof e.line === 'number' && Number.isInteger(e.line) && e.line > 0) out.line = e.line;
  if (typeof e.column === 'number' && Number.isInteger(e.column) && e.column > 0) out.column = e.column;
  const frames = scriptFramesOf(e.stack);
  if (frames.length > 0) out.stack = frames.join('\n');
  return out;
}

export type CheckedOutcome =
  RunOutcome | { ok: false; code: 'UNREADABLE'; error: WireError & { line?: number; column?: number } };

/**
 * Reads the runtime's outcome. Over maxResultBytes (the result's UTF-8 bytes,
 * whatever the isolate counted) it is RESULT_TOO_LARGE; anything not shaped
 * as an outcome is UNREADABLE.
 */
export function readOutcome(raw: unknown, maxResultBytes: number): CheckedOutcome {
  const tooLarge: RunOutcome = {
    ok: false,
    code: 'RESULT_TOO_LARGE',
    error: { name: 'RangeError', message: `the result is larger than ${maxResultBytes} bytes` },
  };
  const unreadable = (why: string): CheckedOutcome => ({
    ok: false,
    code: 'UNREADABLE',
    error: { name: 'Error', message: `the script's outcome could not be read (${why})` },
  });
  if (typeof raw !== 'string') return unreadable('not text');
  // SECURITY: sized before it is parsed; the isolate's own check may have been subverted.
  if (raw.length > maxResultBytes + OUTCOME_OVERHEAD_CHARS) return tooLarge;
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    return unreadable('not JSON');
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return unreadable('not an object');
  const o = v as Record<string, unknown>;
  if (o.ok === true) {
    if (o.json === undefined) return { ok: true };
    if (typeof o.json !== 'string') return unreadable('the result is not JSON text');
    if (Buffer.byteLength(o.json, 'utf8') > maxResultBytes) return tooLarge;
    return { ok: true, json: o.json };
  }
  if (o.ok !== false) return unreadable('no ok field');
  if (o.code === 'RESULT_TOO_LARGE') return tooLarge;
  return { ok: false, error: errorOf(o.error) };
}
