// The script's world. This file is bundled (tsup → dist/sandbox/runtime.js) and
// evaluated INSIDE the V8 isolate of each request, before the user's script.
//
// It reaches the host through one function, __ps_host(json) → json, which the
// host installs as an isolated-vm Callback and which this file takes off the
// global object before any user code runs. Everything the script sees (page,
// console, timers, URL, …) is built here from that one function and plain
// JavaScript; no host object is ever reachable from here. The only other
// callback, __ps_cheerio(), takes nothing and returns nothing: it asks the host
// to run the cheerio bundle in this isolate (the `cheerio` getter below).
//
// Nothing here is trusted by the host: a script can rewrite any of it. The host
// validates every message on its side (src/slot/membrane/membrane.ts).
import { AbortController, AbortSignal, installTimeout, isAbortSignal } from './abort.js';
import { atob, base64ToBytes, btoa, bytesToBase64 } from './base64.js';
import { format } from './inspect.js';
import { createPageApi, type Bridge } from './proxies.js';
import { TextDecoder, TextEncoder } from './textcodec.js';
import type { HandleKind, ToHost, ToIsolate, WireError } from './wire.js';
import { MAX_ERROR_MESSAGE_CHARS, bigIntText, cutText, isTagged, numberOf, specialNumber } from './wire.js';

interface Settings {
  maxLogLines: number;
  maxLogBytes: number;
  maxResultBytes: number;
  defaultTimeoutMs: number;
}

type AnyFn = (...args: unknown[]) => unknown;
const G = globalThis as unknown as Record<string, unknown>;

// SECURITY: take the host callback and settings off the global object before user
// code exists, so the only holder of the callback is this closure.
const hostFn = G.__ps_host as (json: string) => string;
const settings = JSON.parse(G.__ps_settings as string) as Settings;
const loadCheerio = G.__ps_cheerio as () => void;
delete G.__ps_host;
delete G.__ps_settings;
delete G.__ps_cheerio;

// cheerio is loaded on first use unless the host loaded it ahead (it does for a
// script whose text names it). Loading replaces this accessor with the value.
const defineProperty = Object.defineProperty;
const ownDescriptor = Object.getOwnPropertyDescriptor;
defineProperty(globalThis, 'cheerio', {
  configurable: true,
  enumerable: false,
  get(): unknown {
    loadCheerio();
    const d = ownDescriptor(globalThis, 'cheerio');
    if (d && 'value' in d) return d.value;
    throw new Error('cheerio could not be loaded');
  },
  set(value: unknown) {
    defineProperty(globalThis, 'cheerio', { value, writable: true, configurable: true, enumerable: false });
  },
});

// Captured now so that a script that replaces them changes nothing here.
const stringify = JSON.stringify;
const parse = JSON.parse;
const reflectApply = Reflect.apply;
const fnToString = Function.prototype.toString;
const NativeError = Error;
const stringSplit = String.prototype.split;
const regexpExec = RegExp.prototype.exec;
const arrayPush = Array.prototype.push;
const arrayJoin = Array.prototype.join;

/** A frame of the caller's own script (compiled as script.js, line 1 = the first line they sent). */
const SCRIPT_FRAME = /^\s+at (?:async )?(?:new )?(?:[\w$.<>[\]-]{1,200} \()?script\.js:\d+:\d+\)?$/;
/** At most this many of the script's frames are reported. */
const MAX_SCRIPT_FRAMES = 20;

/** The caller's own frames of a stack, as its lines. */
function scriptFrames(stack: unknown): string[] {
  const out: string[] = [];
  if (typeof stack !== 'string') return out;
  for (const line of reflectApply(stringSplit, stack, ['\n']) as string[]) {
    if (out.length >= MAX_SCRIPT_FRAMES) break;
    if (reflectApply(regexpExec, SCRIPT_FRAME, [line]) !== null) reflectApply(arrayPush, out, [line]);
  }
  return out;
}

/** Where in the script a host call was made: its frames, read only if the call fails. */
function callSite(): Error | undefined {
  try {
    return new NativeError();
  } catch {
    return undefined;
  }
}

function send(msg: ToHost): string {
  return hostFn(stringify(msg));
}

// ---------------------------------------------------------------- errors
const hasOwn = Object.hasOwn;

/** The error a failed host call rejects with: what was thrown when it was not an Error, else an Error. */
function thrownValue(e: WireError, site?: Error): unknown {
  if (typeof e === 'object' && e !== null && hasOwn(e, 'thrown')) return decode(e.thrown);
  return makeError(e, site);
}

function makeError(e: WireError, site?: Error): Error {
  const err =
    e.name === 'TypeError'
      ? new TypeError(e.message)
      : e.name === 'RangeError'
        ? new RangeError(e.message)
        : new Error(e.message);
  if (err.name !== e.name)
    Object.defineProperty(err, 'name', { value: e.name, writable: true, configurable: true, enumerable: false });
  // The page's frames, as Puppeteer gives them (the host kept no frame of its own).
  // Then the script's frames where it made the call, so a failed call names the caller's line.
  let stack = typeof e.stack === 'string' ? e.stack : `${String(e.name)}: ${String(e.message)}`;
  try {
    const frames = site === undefined ? [] : scriptFrames(site.stack);
    if (frames.length > 0) stack += '\n' + (reflectApply(arrayJoin, frames, ['\n']) as string);
  } catch {
    // a stack the script tampered with: the host's own stack only
  }
  Object.defineProperty(err, 'stack', { value: stack, writable: true, configurable: true, enumerable: false });
  return err;
}

// ---------------------------------------------------------------- values
/** The source text of a function, with a toString captured before user code ran. */
function sourceOf(fn: AnyFn): string {
  return reflectApply(fnToString, fn, []) as string;
}

let bridge: Bridge;

/** A primitive JSON cannot carry as itself (NaN, -0, ±Infinity, BigInt) as its tag; others unchanged. */
function encodeNumber(v: unknown): unknown {
  if (typeof v === 'number') return specialNumber(v) ?? v;
  if (typeof v === 'bigint') return { $ps: 'i', v: String(v) };
  return v;
}

/** Encodes one argument of a host call: handles, bytes, functions, undefined and special numbers get tags. */
function encodeArg(v: unknown): unknown {
  if (v === undefined) return { $ps: 'u' };
  if (typeof v === 'function') return { $ps: 'f', src: sourceOf(v as AnyFn) };
  if (typeof v !== 'object' || v === null) return encodeNumber(v);
  const id = bridge.idOf(v);
  if (id !== undefined) return { $ps: 'h', id };
  if (v instanceof Uint8Array) return { $ps: 'b', d: bytesToBase64(v) };
  // Plain data: JSON semantics, but handles nested in it still become tags, and
  // the script's own objects with a "$ps" key are wrapped so they stay data.
  const wrapped = new WeakSet<object>();
  return parse(
    stringify(v, function (this: unknown, _k, x: unknown) {
      if (typeof x === 'object' && x !== null) {
        const hid = bridge.idOf(x);
        if (hid !== undefined) return { $ps: 'h', id: hid };
        if (x instanceof Uint8Array) return { $ps: 'b', d: bytesToBase64(x) };
        // The wrapper's "v" is a fresh copy, marked so that it is not wrapped again.
        if (!Array.isArray(x) && hasOwn(x, '$ps') && !wrapped.has(x)) {
          const copy = { ...(x as Record<string, unknown>) };
          wrapped.add(copy);
          return { $ps: 'o', v: copy };
        }
        return x;
      }
      return encodeNumber(x);
    }) ?? 'null',
  );
}

const createObject = Object.create;

/**
 * Sets a key of page data as an own property, as JSON.parse does in Puppeteer:
 * SECURITY: `out[k] = …` with k "__proto__" would let the page choose the
 * object's prototype, and a setter the script put on Object.prototype would run.
 */
function setOwn(obj: Record<string, unknown>, k: string, value: unknown): void {
  // A descriptor without a prototype: a "get" on Object.prototype is not read as part of it.
  const d = createObject(null) as PropertyDescriptor;
  d.value = value;
  d.writable = true;
  d.enumerable = true;
  d.configurable = true;
  defineProperty(obj, k, d);
}

function decode(v: unknown): unknown {
  if (typeof v !== 'object' || v === null) return v;
  if (Array.isArray(v)) return v.map(decode);
  if (isTagged(v)) {
    switch (v.$ps) {
      case 'u':
        return undefined;
      case 'b':
        return base64ToBytes(v.d);
      case 'h':
        return bridge.proxyFor(v.id, v.k as HandleKind, v.s);
      case 'm':
        return new Map(v.e.map(([k, x]) => [decode(k), decode(x)]));
      case 'o': {
        // Page data with a "$ps" key of its own: data, never a tag.
        const inner = v.v as Record<string, unknown>;
        const obj: Record<string, unknown> = {};
        for (const k of Object.keys(inner)) setOwn(obj, k, decode(inner[k]));
        return obj;
      }
      case 'n':
        return numberOf(v.v);
      case 'i': {
        const text = bigIntText(v.v);
        return text === undefined ? undefined : BigInt(text);
      }
      case 'e':
        return makeError({ name: String(v.n), message: String(v.m), stack: typeof v.s === 'string' ? v.s : undefined });
      default:
        return undefined;
    }
  }
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v)) setOwn(out, k, decode((v as Record<string, unknown>)[k]));
  return out;
}

// ---------------------------------------------------------------- host calls
let nextCallId = 1;
const pending = new Map<
  number,
  { site?: Error | undefined; resolve: (v: unknown) => void; reject: (e: unknown) => void }
>();

/** The `{ signal }` in a call's options, taken out: a signal stays in the isolate. */
function takeSignal(args: readonly unknown[]): { args: unknown[]; signal?: AbortSignal } {
  let signal: AbortSignal | undefined;
  const out = args.map((a) => {
    if (typeof a !== 'object' || a === null || Array.isArray(a) || bridge.idOf(a) !== undefined) return a;
    const s = (a as { signal?: unknown }).signal;
    if (!isAbortSignal(s)) return a;
    signal = s;
    const { signal: _taken, ...rest } = a as Record<string, unknown>;
    return rest;
  });
  return { args: out, signal };
}

function callAsync(h: number, m: string, args: readonly unknown[]): Promise<unknown> {
  const taken = takeSignal(args);
  const signal = taken.signal;
  // As Puppeteer: an aborted signal rejects the wait with its reason.
  if (signal?.aborted) return Promise.reject(signal.reason);
  return startCall(h, m, taken.args, signal);
}

/** Methods whose arguments Puppeteer hands to the page as an evaluation's (ExecutionContext.evaluate). */
const EVALUATING = new Set(['evaluate', 'evaluateHandle', '$eval', '$$eval', 'waitForFunction']);

function startCall(h: number, m: string, args: readonly unknown[], signal?: AbortSignal): Promise<unknown> {
  const id = nextCallId++;
  const site = callSite();
  let a: unknown[];
  try {
    a = args.map(encodeArg);
  } catch (e) {
    // As Puppeteer: an argument that cannot be written rejects the call, and a circular one says so.
    if (e instanceof TypeError && EVALUATING.has(m) && e.message.startsWith('Converting circular structure to JSON'))
      e.message += ' Recursive objects are not allowed.';
    return Promise.reject(e);
  }
  return new Promise((resolve, reject) => {
    let onAbort: (() => void) | undefined;
    const done = (): void => {
      if (onAbort) signal?.removeEventListener('abort', onAbort);
    };
    pending.set(id, {
      site,
      resolve: (v) => {
        done();
        resolve(v);
      },
      reject: (e) => {
        done();
        reject(e);
      },
    });
    // '' when the host started the call; else its refusal (too many calls in flight, too large).
    const refused = send({ op: 'call', id, h, m, a });
    if (refused !== '') {
      pending.delete(id);
      const r = parse(refused) as { e?: WireError };
      reject(makeError(r.e ?? { name: 'Error', message: 'the host refused the call' }, site));
      return;
    }
    if (signal === undefined) return;
    onAbort = (): void => {
      // The host ends its wait and gives the call's budget back; its late answer finds nothing pending.
      pending.delete(id);
      send({ op: 'cancel', id });
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

function callSync(h: number, m: string, args: readonly unknown[]): unknown {
  const site = callSite();
  const reply = parse(send({ op: 'sync', h, m, a: args.map(encodeArg) })) as {
    ok: boolean;
    v?: unknown;
    e?: WireError;
  };
  if (!reply.ok) throw thrownValue(reply.e ?? { name: 'Error', message: 'host call failed' }, site);
  return decode(reply.v);
}

// ---------------------------------------------------------------- console
let logLines = 0;
let logBytes = 0;
let droppedLines = 0;
let droppedBytes = 0;

function writeLog(level: string, args: unknown[]): void {
  let text: string;
  try {
    text = format(args);
  } catch (e) {
    text = `[unprintable value: ${e instanceof Error ? e.message : String(e)}]`;
  }
  if (logLines >= settings.maxLogLines || logBytes + text.length > settings.maxLogBytes) {
    droppedLines++;
    droppedBytes += text.length;
    // The host learns of drops now and then, not once per line: a logging loop
    // must not keep the host's event loop busy.
    if (droppedLines === 1 || droppedLines % 1000 === 0)
      send({ op: 'log', level: 'dropped', text: `${droppedLines} ${droppedBytes}` });
    return;
  }
  logLines++;
  logBytes += text.length;
  send({ op: 'log', level, text });
}

const consoleObject = Object.freeze({
  log: (...a: unknown[]) => writeLog('log', a),
  info: (...a: unknown[]) => writeLog('info', a),
  debug: (...a: unknown[]) => writeLog('debug', a),
  warn: (...a: unknown[]) => writeLog('warn', a),
  error: (...a: unknown[]) => writeLog('error', a),
  trace: (...a: unknown[]) => writeLog('trace', a),
});

function reportUncaught(e: unknown, where: string): void {
  writeLog('error', [`Uncaught ${where}:`, e]);
}

// ---------------------------------------------------------------- timers
interface Timer {
  fn: AnyFn;
  args: unknown[];
  repeatMs?: number;
}
const timers = new Map<number, Timer>();
let nextTimerId = 1;

function clampDelay(ms: unknown): number {
  const n = Number(ms);
  return Number.isFinite(n) && n > 0 ? Math.min(n, 2 ** 31 - 1) : 0;
}

function schedule(id: number, ms: number): void {
  const reply = parse(send({ op: 'timer', id, ms })) as { ok: boolean; e?: WireError };
  if (!reply.ok) {
    timers.delete(id);
    throw makeError(reply.e ?? { name: 'RangeError', message: 'too many timers' });
  }
}

function addTimer(fn: unknown, ms: unknown, args: unknown[], repeat: boolean): number {
  if (typeof fn !== 'function') throw new TypeError('The "callback" argument must be of type function');
  const id = nextTimerId++;
  const delay = clampDelay(ms);
  timers.set(id, { fn: fn as AnyFn, args, repeatMs: repeat ? Math.max(delay, 1) : undefined });
  schedule(id, delay);
  return id;
}

function clearTimer(id: unknown): void {
  if (typeof id === 'number' && timers.delete(id)) send({ op: 'clearTimer', id });
}

function fireTimer(id: number): void {
  const t = timers.get(id);
  if (!t) return;
  if (t.repeatMs === undefined) timers.delete(id);
  else schedule(id, t.repeatMs);
  try {
    const r = reflectApply(t.fn, undefined, t.args) as unknown;
    if (r instanceof Promise) r.catch((e: unknown) => reportUncaught(e, 'in timer callback'));
  } catch (e) {
    reportUncaught(e, 'in timer callback');
  }
}

// ---------------------------------------------------------------- page API
bridge = createPageApi({
  callAsync,
  callSync,
  send,
  defaultTimeoutMs: settings.defaultTimeoutMs,
  setTimer: addTimer,
  clearTimer,
  reportUncaught,
});

// ---------------------------------------------------------------- globals
function defineGlobal(name: string, value: unknown): void {
  Object.defineProperty(G, name, { value, writable: true, configurable: true, enumerable: false });
}
defineGlobal('page', bridge.page);
defineGlobal('Locator', bridge.Locator);
// targetUrl is set by the host for the request that takes this isolate.
defineGlobal('targetUrl', undefined);
defineGlobal('console', consoleObject);
defineGlobal('setTimeout', (fn: unknown, ms?: unknown, ...a: unknown[]) => addTimer(fn, ms, a, false));
defineGlobal('setInterval', (fn: unknown, ms?: unknown, ...a: unknown[]) => addTimer(fn, ms, a, true));
defineGlobal('clearTimeout', clearTimer);
defineGlobal('clearInterval', clearTimer);
/**
 * A global made on first use: core-js's URL, URLSearchParams and structuredClone
 * cost ~6 ms to load in every isolate, and most scripts use none of them.
 * Reading the name loads it and puts the value in place of the getter; a script
 * may also assign the name first, as with any other global.
 */
function defineLazyGlobal(name: string, load: () => unknown): void {
  Object.defineProperty(G, name, {
    configurable: true,
    enumerable: false,
    get() {
      const value = load();
      defineGlobal(name, value);
      return value;
    },
    set(value: unknown) {
      defineGlobal(name, value);
    },
  });
}
// require() of a CommonJS module inside a function: the bundler wraps the module
// so that it runs at the first call, not when the isolate starts.
/* eslint-disable @typescript-eslint/no-require-imports -- resolved by the bundler (tsup), not at run time */
defineLazyGlobal('URL', () => require('core-js-pure/stable/url/index.js'));
defineLazyGlobal('URLSearchParams', () => require('core-js-pure/stable/url-search-params/index.js'));
defineLazyGlobal('structuredClone', () => require('core-js-pure/stable/structured-clone.js'));
// Puppeteer's device presets (data only, no code), for page.emulate(KnownDevices['iPhone 15']):
// a script cannot import them.
defineLazyGlobal(
  'KnownDevices',
  () => (require('puppeteer-core/internal/common/Device.js') as { KnownDevices: unknown }).KnownDevices,
);
// And its network presets (numbers only), for page.emulateNetworkConditions(PredefinedNetworkConditions['Slow 3G']).
defineLazyGlobal(
  'PredefinedNetworkConditions',
  () =>
    (require('puppeteer-core/internal/cdp/PredefinedNetworkConditions.js') as { PredefinedNetworkConditions: unknown })
      .PredefinedNetworkConditions,
);
/* eslint-enable @typescript-eslint/no-require-imports */
installTimeout((fn, ms) => addTimer(fn, ms, [], false));
defineGlobal('AbortController', AbortController);
defineGlobal('AbortSignal', AbortSignal);
defineGlobal('TextEncoder', TextEncoder);
defineGlobal('TextDecoder', TextDecoder);
defineGlobal('atob', atob);
defineGlobal('btoa', btoa);
defineGlobal('queueMicrotask', (fn: unknown) => {
  if (typeof fn !== 'function') throw new TypeError('The "callback" argument must be of type function');
  // As in a browser, a callback that throws does not stop the script; nothing here can report it.
  Promise.resolve()
    .then(() => (fn as AnyFn)())
    .catch(() => undefined);
});

// ---------------------------------------------------------------- entry points for the host
/** Messages from the host: call results, timers, page events, exposed-function calls. */
function receive(json: string): unknown {
  const msg = parse(json) as ToIsolate;
  switch (msg.op) {
    case 'settle': {
      const p = pending.get(msg.id);
      if (!p) return undefined;
      pending.delete(msg.id);
      if (msg.ok) p.resolve(decode(msg.v));
      else p.reject(thrownValue(msg.e, p.site));
      return undefined;
    }
    case 'timer':
      fireTimer(msg.id);
      return undefined;
    case 'event':
      bridge.emit(msg.h, msg.event, decode(msg.v));
      return undefined;
    case 'exposed':
      return bridge
        .invokeExposed(msg.fid, (msg.a as unknown[]).map(decode))
        .then((v) => stringify({ ok: true, v: encodeArg(v) }))
        .catch((e: unknown) => stringify(exposedFailure(e)));
  }
}

/**
 * What an exposed function threw, for the page: an Error as its message (Puppeteer makes a new
 * Error of it in the page), any other value as itself (null, a string, an object), as Puppeteer
 * rejects the page's promise with it.
 */
function exposedFailure(e: unknown): { ok: false; e: WireError; thrown?: unknown } {
  const isErrorLike = typeof e === 'object' && e !== null && 'name' in e && 'message' in e;
  if (isErrorLike) return { ok: false, e: describeError(e) };
  try {
    return { ok: false, e: describeError(e), thrown: encodeArg(e) };
  } catch {
    return { ok: false, e: describeError(e) };
  }
}

function describeError(e: unknown): WireError & { line?: number; column?: number } {
  if (e instanceof Error) {
    const out: WireError & { line?: number; column?: number } = { name: String(e.name), message: String(e.message) };
    // The caller's frames only (the host checks them again); the first names the line: "at script.js:3:7".
    const frames = scriptFrames(e.stack);
    const m = frames.length > 0 ? /script\.js:(\d+):(\d+)\)?$/.exec(frames[0] as string) : null;
    if (m) {
      out.line = Number(m[1]);
      out.column = Number(m[2]);
    }
    if (frames.length > 0) out.stack = reflectApply(arrayJoin, frames, ['\n']) as string;
    return out;
  }
  let message: string;
  try {
    message = typeof e === 'string' ? e : format([e]);
  } catch {
    message = 'a non-Error value was thrown';
  }
  return { name: 'Error', message: `Uncaught ${message}` };
}

function resultReplacer(_k: string, v: unknown): unknown {
  if (typeof v === 'object' && v !== null) {
    if (v instanceof Uint8Array) return bytesToBase64(v);
    const kind = bridge.kindOf(v);
    if (kind !== undefined) {
      throw new TypeError(`a ${kind} cannot be returned; return plain values instead (e.g. await handle.jsonValue())`);
    }
  }
  return v;
}

/**
 * Runs the user's function and serialises its result here, inside the isolate,
 * under its memory limit; only the finished JSON text is copied to the host.
 * The outcome is a string, built from captured functions: a promise resolved
 * with an object would look up "then" (a script can put one on
 * Object.prototype), and JSON.stringify of an object calls an inherited
 * toJSON. The host checks it anyway (src/slot/membrane/outcome.ts).
 */
async function run(fn: AnyFn): Promise<string> {
  let value: unknown;
  try {
    value = await reflectApply(fn, undefined, []);
  } catch (e) {
    return failed(describeError(e));
  }
  let json: string | undefined;
  try {
    json = value === undefined ? undefined : stringify(value, resultReplacer);
  } catch (e) {
    const d = describeError(e);
    return failed({ name: d.name, message: `the result cannot be serialised as JSON: ${d.message}` });
  }
  if (typeof json === 'string' && json.length > settings.maxResultBytes) {
    return failed(
      { name: 'RangeError', message: `the result is larger than ${settings.maxResultBytes} bytes` },
      'RESULT_TOO_LARGE',
    );
  }
  // A string (never an object) given to stringify: no toJSON is looked up.
  return typeof json === 'string' ? '{"ok":true,"json":' + stringify(json) + '}' : '{"ok":true}';
}

function failed(e: WireError & { line?: number; column?: number }, code?: 'RESULT_TOO_LARGE'): string {
  return (
    '{"ok":false' +
    (code === undefined ? '' : ',"code":"RESULT_TOO_LARGE"') +
    ',"error":{"name":' +
    stringify(String(e.name).slice(0, 64)) +
    ',"message":' +
    // Cut here so that a huge message is not copied to the host (which cuts it again).
    stringify(cutText(String(e.message), MAX_ERROR_MESSAGE_CHARS)) +
    (typeof e.line === 'number' ? ',"line":' + String(e.line) : '') +
    (typeof e.column === 'number' ? ',"column":' + String(e.column) : '') +
    (typeof e.stack === 'string' ? ',"stack":' + stringify(cutText(e.stack, MAX_ERROR_MESSAGE_CHARS * 4)) : '') +
    '}}'
  );
}

/** Counters the host reads at the end of a finished run. */
function stats(): string {
  return stringify({ droppedLines, droppedBytes });
}

// The host takes these three (as references) and then deletes the property, before any user code runs.
Object.defineProperty(globalThis, '__ps_runtime', {
  value: { receive, run, stats },
  configurable: true,
  writable: false,
  enumerable: false,
});
