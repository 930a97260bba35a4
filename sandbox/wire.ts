// The wire format between the isolate and the host. Both sides import this
// file: it holds only types and pure functions, no state.
//
// Every message is a JSON string. Values that JSON cannot carry are tagged
// objects with a "$ps" key:
//   {"$ps":"h","id":7,"k":"ElementHandle","s":{...}}  a handle in the request's table (s: snapshot)
//   {"$ps":"b","d":"<base64>"}                          bytes (Uint8Array in the isolate)
//   {"$ps":"u"}                                          undefined
//   {"$ps":"m","e":[[k, v], …]}                          a Map (getProperties())
//   {"$ps":"f","src":"(el) => el.textContent"}         a function, as source text, for the page only
//   {"$ps":"o","v":{"$ps":…,…}}                         page data that has a "$ps" key of its own: plain data
//   {"$ps":"n","v":"NaN"}                                a number JSON cannot carry: NaN, -0, Infinity, -Infinity
//   {"$ps":"i","v":"42"}                                 a BigInt, as its decimal text
//   {"$ps":"e","n":"TypeError","m":"…","s":"…"}          an Error: name, message, stack (page frames only, never a host path)

export type HandleKind =
  | 'Page'
  | 'Frame'
  | 'ElementHandle'
  | 'JSHandle'
  | 'HTTPRequest'
  | 'HTTPResponse'
  | 'Dialog'
  | 'ConsoleMessage'
  | 'Locator'
  | 'TouchHandle';

export interface WireHandle {
  $ps: 'h';
  id: number;
  k: HandleKind;
  /** Values the isolate answers synchronously (request.url(), response.status(), …). */
  s?: Record<string, unknown>;
}
export interface WireBytes {
  $ps: 'b';
  d: string;
}
export interface WireUndefined {
  $ps: 'u';
}
export interface WireFunction {
  $ps: 'f';
  src: string;
}
export interface WireMap {
  $ps: 'm';
  e: [unknown, unknown][];
}
export interface WireObject {
  $ps: 'o';
  v: Record<string, unknown>;
}
export interface WireNumber {
  $ps: 'n';
  v: string;
}
export interface WireBigInt {
  $ps: 'i';
  v: string;
}
export interface WireErrorValue {
  $ps: 'e';
  n: string;
  m: string;
  s?: string;
}
export type WireTagged =
  | WireHandle
  | WireBytes
  | WireUndefined
  | WireFunction
  | WireMap
  | WireObject
  | WireNumber
  | WireBigInt
  | WireErrorValue;

/** The tag of a number JSON cannot carry (NaN, -0, ±Infinity), or undefined for one it can. */
export function specialNumber(n: number): WireNumber | undefined {
  if (Number.isFinite(n) && !Object.is(n, -0)) return undefined;
  return { $ps: 'n', v: Object.is(n, -0) ? '-0' : String(n) };
}

/** The number a 'n' tag stands for; NaN for anything else. */
export function numberOf(text: unknown): number {
  switch (text) {
    case '-0':
      return -0;
    case 'Infinity':
      return Infinity;
    case '-Infinity':
      return -Infinity;
    default:
      return NaN;
  }
}

/** A BigInt's decimal text from a 'i' tag; undefined when it is not one (never evaluated, only parsed). */
export function bigIntText(text: unknown): string | undefined {
  return typeof text === 'string' && /^-?\d{1,10000}$/.test(text) ? text : undefined;
}

/** Messages from the isolate to the host (the argument of the one host callback). */
export type ToHost =
  | { op: 'call'; id: number; h: number; m: string; a: unknown[] }
  | { op: 'sync'; h: number; m: string; a: unknown[] }
  | { op: 'log'; level: string; text: string }
  | { op: 'timer'; id: number; ms: number }
  | { op: 'clearTimer'; id: number }
  | { op: 'cancel'; id: number }
  /** A refused method's stub was called (`page.browser()`): the host counts it as a security event. */
  | { op: 'refused'; m: string };

/** Messages from the host to the isolate (the argument of the isolate's receive()). */
export type ToIsolate =
  | { op: 'settle'; id: number; ok: true; v: unknown }
  | { op: 'settle'; id: number; ok: false; e: WireError }
  | { op: 'timer'; id: number }
  | { op: 'event'; h: number; event: string; v: unknown }
  | { op: 'exposed'; fid: number; a: unknown[] };

export interface WireError {
  name: string;
  message: string;
  /** The stack: the message line, then page frames only (never a host path). */
  stack?: string;
  /** Present when what was thrown is not an Error (a string, a number, null…): the value itself, encoded. */
  thrown?: unknown;
}

/** An error name that may cross: an identifier (TypeError, DOMException, a page's own class), else 'Error'. */
export function errorName(name: unknown): string {
  return typeof name === 'string' && /^[A-Za-z_$][\w$]{0,63}$/.test(name) ? name : 'Error';
}

/** What the isolate's run() resolves to. */
export type RunOutcome =
  | { ok: true; json?: string }
  | { ok: false; code?: 'RESULT_TOO_LARGE'; error: WireError & { line?: number; column?: number } };

/** An error message crossing the membrane is cut to this many characters (both sides cut; the host's cut is the one that counts). */
export const MAX_ERROR_MESSAGE_CHARS = 2_000;

/** Cuts text to max characters, saying how much was cut. */
export function cutText(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`;
}

export function isTagged(v: unknown): v is WireTagged {
  return typeof v === 'object' && v !== null && typeof (v as { $ps?: unknown }).$ps === 'string';
}

/** Node's own error names that Puppeteer uses, kept when errors cross the boundary. */
export const KNOWN_ERROR_NAMES: ReadonlySet<string> = new Set([
  'Error',
  'TypeError',
  'RangeError',
  'SyntaxError',
  'ReferenceError',
  'TimeoutError',
  'TargetCloseError',
  'ProtocolError',
  'UnsupportedOperation',
  'AbortError',
]);
