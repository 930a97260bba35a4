// AbortController and AbortSignal for the isolate (bundled into it with the
// runtime): plain JavaScript, as in a browser, so that a script can cancel a
// wait with `{ signal }` as it does under Puppeteer. A signal never crosses to
// the host: sandbox/runtime.ts takes it out of a call's options and rejects the
// call in the isolate when it aborts (the host's wait ends at its own timeout).

type Listener = ((this: AbortSignal, ev: { type: string; target: AbortSignal }) => unknown) | { handleEvent: unknown };

/** The reason of an abort without one, as a browser's DOMException("…", "AbortError"). */
function abortError(message = 'This operation was aborted'): Error {
  const e = new Error(message);
  Object.defineProperty(e, 'name', { value: 'AbortError', writable: true, configurable: true, enumerable: false });
  return e;
}

const internal = new WeakMap<AbortSignal, { listeners: Listener[] }>();
let constructing = false;

export class AbortSignal {
  aborted = false;
  reason: unknown = undefined;
  onabort: ((this: AbortSignal, ev: { type: string; target: AbortSignal }) => unknown) | null = null;

  constructor() {
    if (!constructing) throw new TypeError('Illegal constructor');
    internal.set(this, { listeners: [] });
  }

  addEventListener(type: unknown, listener: unknown, options?: unknown): void {
    const state = internal.get(this);
    if (!state || type !== 'abort' || listener === null || listener === undefined) return;
    const once = typeof options === 'object' && options !== null && (options as { once?: unknown }).once === true;
    const l = listener as Listener;
    if (state.listeners.includes(l)) return;
    if (once) {
      const wrapper: Listener = function (this: AbortSignal, ev) {
        removeListener(state.listeners, wrapper);
        return call(l, this, ev);
      };
      state.listeners.push(wrapper);
    } else state.listeners.push(l);
  }

  removeEventListener(type: unknown, listener: unknown): void {
    const state = internal.get(this);
    if (state && type === 'abort') removeListener(state.listeners, listener as Listener);
  }

  throwIfAborted(): void {
    if (this.aborted) throw this.reason;
  }

  static abort(reason?: unknown): AbortSignal {
    const s = newSignal();
    signalAbort(s, reason);
    return s;
  }

  static any(signals: Iterable<AbortSignal>): AbortSignal {
    const out = newSignal();
    const list = [...signals];
    const done = list.find((s) => s.aborted);
    if (done) {
      signalAbort(out, done.reason);
      return out;
    }
    for (const s of list) s.addEventListener('abort', () => signalAbort(out, s.reason), { once: true });
    return out;
  }

  get [Symbol.toStringTag](): string {
    return 'AbortSignal';
  }
}

/** AbortSignal.timeout(ms) needs the runtime's timers; the runtime installs it. */
export function installTimeout(setTimer: (fn: () => void, ms: number) => unknown): void {
  Object.defineProperty(AbortSignal, 'timeout', {
    value: (ms: unknown): AbortSignal => {
      const s = newSignal();
      setTimer(() => {
        const e = new Error('The operation was aborted due to timeout');
        Object.defineProperty(e, 'name', { value: 'TimeoutError', writable: true, configurable: true });
        signalAbort(s, e);
      }, Number(ms));
      return s;
    },
    writable: true,
    configurable: true,
  });
}

function call(l: Listener, target: AbortSignal, ev: { type: string; target: AbortSignal }): void {
  try {
    if (typeof l === 'function') l.call(target, ev);
    else if (typeof (l as { handleEvent?: unknown }).handleEvent === 'function')
      (l as { handleEvent: (e: unknown) => void }).handleEvent(ev);
  } catch {
    // As in a browser: a listener that throws does not stop the others.
  }
}

function removeListener(list: Listener[], l: Listener): void {
  const i = list.indexOf(l);
  if (i >= 0) list.splice(i, 1);
}

function newSignal(): AbortSignal {
  constructing = true;
  try {
    return new AbortSignal();
  } finally {
    constructing = false;
  }
}

function signalAbort(s: AbortSignal, reason: unknown): void {
  if (s.aborted) return;
  s.aborted = true;
  s.reason = reason === undefined ? abortError() : reason;
  const ev = { type: 'abort', target: s };
  if (typeof s.onabort === 'function') call(s.onabort as Listener, s, ev);
  for (const l of [...(internal.get(s)?.listeners ?? [])]) call(l, s, ev);
}

export class AbortController {
  readonly signal: AbortSignal = newSignal();

  abort(reason?: unknown): void {
    signalAbort(this.signal, reason);
  }

  get [Symbol.toStringTag](): string {
    return 'AbortController';
  }
}

/** The signal in a call's options, if any (a plain object with a `signal` that is one of ours). */
export function isAbortSignal(v: unknown): v is AbortSignal {
  return typeof v === 'object' && v !== null && internal.has(v as AbortSignal);
}
