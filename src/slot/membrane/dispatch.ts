// The isolate's calls to the host: each one looked up in the allow-list (the
// method table), started within the request's budgets (calls and argument
// characters in flight, calls the script aborted, host CPU, its time), and
// settled back into the isolate; a synchronous call is answered at once.
import type { WireError, ToIsolate } from '../../../sandbox/wire.js';
import { unmaskNetError, type RecentFailure } from '../egress-client/net-errors.js';
import {
  MAX_ABANDONED_CALLS,
  MAX_CALLS_IN_FLIGHT,
  MAX_IN_FLIGHT_CHARS,
  MAX_TRANSFER_CHARS,
  budgetError,
} from './budgets.js';
import type { CallLog } from './call-log.js';
import type { Delivery } from './delivery.js';
import type { HandleTable } from './handles.js';
import type { HostCpuBudget } from './host-cpu.js';
import { lookupMethod, type MethodContext } from './methods/index.js';
import { MembraneError, RefusedOptionError } from './options.js';
import { oversizedAnswerError, refusal, toWireError } from './wire-errors.js';

export interface DispatchDeps {
  readonly handles: HandleTable;
  readonly cpu: HostCpuBudget;
  readonly delivery: Delivery;
  readonly callLog: CallLog;
  /** What a method implementation is given to work with (the membrane). */
  readonly context: MethodContext;
  /** True once the request has ended: no call starts after it. */
  disposed(): boolean;
  /** True once the script's deadline has passed: no call starts after it. */
  expired?(): boolean;
  /** The guard's memory of upstream failures (see ../egress-client/net-errors.ts). */
  recentFailure?: RecentFailure;
  /** An option was refused for what it would do on the server (`path`, `userDataDir`…): a security event. */
  refusedOption?(detail: string): void;
}

export class Dispatch {
  readonly #deps: DispatchDeps;
  /** Calls in flight, by the isolate's call id: how to end each one's wait and give its budget back. */
  readonly #calls = new Map<number, { controller: AbortController; abandon(): void; end(): void }>();
  /** The signal of the call whose method is building its options right now. */
  #startingSignal: AbortSignal | undefined;
  /** Calls started and not yet settled, and the characters of their arguments. */
  #callsInFlight = 0;
  #inFlightChars = 0;
  /** Calls the script aborted that have not settled on the host yet. */
  #abandonedCalls = 0;

  constructor(deps: DispatchDeps) {
    this.#deps = deps;
  }

  /** The signal of the call whose method is building its options right now (the option schemas read it). */
  get startingSignal(): AbortSignal | undefined {
    return this.#startingSignal;
  }

  /** Starts a call; '' when started, else the refusal (the isolate rejects the call with it at once). */
  call(callId: unknown, h: unknown, m: unknown, a: unknown, chars: number): string {
    if (typeof callId !== 'number') return '{"ok":false}';
    // SECURITY: a script that does not await its calls may not pile them up on the host.
    if (this.#abandonedCalls >= MAX_ABANDONED_CALLS)
      return refusal(
        `too many aborted calls are still running on the host (at most ${MAX_ABANDONED_CALLS}); wait for them to end`,
      );
    if (this.#callsInFlight >= MAX_CALLS_IN_FLIGHT)
      return refusal(`too many calls in flight (at most ${MAX_CALLS_IN_FLIGHT}); await some before making more`);
    if (this.#inFlightChars + chars > MAX_IN_FLIGHT_CHARS)
      return refusal(
        `the arguments of the calls in flight are too large together (at most ${MAX_IN_FLIGHT_CHARS} characters); await some first`,
      );
    this.#callsInFlight++;
    this.#inFlightChars += chars;
    let settled = false;
    let abandoned = false;
    // The call's place is given back when it settles or when the script stops waiting for it;
    // SECURITY: its characters only when it settles on the host: an aborted evaluate still holds
    // and sends its arguments.
    const abandon = (): void => {
      if (abandoned || settled) return;
      abandoned = true;
      this.#callsInFlight--;
      this.#abandonedCalls++;
    };
    const controller = new AbortController();
    // Ends the call for the script now (the host CPU budget ran out while it ran), set below.
    let end: () => void = () => undefined;
    this.#calls.set(callId, { controller, abandon, end: () => end() });
    const ended = this.#deps.callLog.start(this.#kindOfId(h), typeof m === 'string' ? m : '?');
    const settle = (msg: ToIsolate): void => {
      if (settled) return;
      settled = true;
      ended(msg.op === 'settle' && !msg.ok ? msg.e : undefined);
      this.#calls.delete(callId);
      this.#inFlightChars -= chars;
      if (abandoned) {
        // A call the script stopped waiting for has no one to tell.
        this.#abandonedCalls--;
        return;
      }
      this.#callsInFlight--;
      this.#deps.delivery.toIsolate(msg, false);
    };
    const fail = (e: unknown): void => {
      if (e instanceof RefusedOptionError) this.#deps.refusedOption?.(e.message.slice(0, 100));
      const oversized = oversizedAnswerError(e, typeof m === 'string' ? m : '?');
      if (oversized) {
        settle({ op: 'settle', id: callId, ok: false, e: oversized });
        return;
      }
      const err = toWireError(e);
      // goto('https://…') through the guard: name the real network error.
      err.message = unmaskNetError(err.message, /\bat (\S+)$/.exec(err.message)?.[1] ?? '', this.#deps.recentFailure);
      settle({ op: 'settle', id: callId, ok: false, e: err });
    };
    end = (): void => fail(budgetError(`${String(m)}: ${this.#deps.cpu.cpuBudgetMessage()}`));
    // Started at a later turn, as every call is: a call the script aborted meanwhile is never started.
    Promise.resolve()
      .then(() => {
        controller.signal.throwIfAborted();
        // Option schemas read it while the method builds its options (synchronously; options.ts).
        this.#startingSignal = controller.signal;
        try {
          return this.#invoke(false, h, m, a);
        } finally {
          this.#startingSignal = undefined;
        }
      })
      .then((v) => {
        if (settled) return;
        // Encoding the result is this call's host work too: counted, and past the budget it is the budget's error.
        const msg = this.#deps.cpu.charged(
          () => ({ op: 'settle', id: callId, ok: true, v: this.#deps.handles.encode(v) }) as const,
        );
        this.#deps.cpu.refuseOverBudget(typeof m === 'string' ? m : '?');
        settle(msg);
      }, fail)
      .catch(fail);
    return '';
  }

  /**
   * The script's AbortSignal aborted a call: the isolate has rejected it already;
   * here Puppeteer's wait is ended (waits take the signal; other methods run to
   * their end). Its place among the calls in flight is given back at once, its
   * arguments' characters when it settles on the host (MAX_ABANDONED_CALLS bounds
   * the calls in between).
   */
  cancel(callId: unknown): void {
    const call = typeof callId === 'number' ? this.#calls.get(callId) : undefined;
    if (call === undefined) return;
    call.abandon();
    call.controller.abort(new MembraneError('the script aborted the call'));
  }

  /** The kind of a handle id the script sent, for the call log ('unknown' for one that is not valid). */
  #kindOfId(h: unknown): string {
    return (typeof h === 'number' ? this.#deps.handles.entry(h)?.kind : undefined) ?? 'unknown';
  }

  sync(h: unknown, m: unknown, a: unknown): string {
    const ended = this.#deps.callLog.start(this.#kindOfId(h), typeof m === 'string' ? m : '?');
    const reply = this.#syncReply(h, m, a);
    ended(reply.startsWith('{"ok":false') ? (JSON.parse(reply) as { e: WireError }).e : undefined);
    return reply;
  }

  #syncReply(h: unknown, m: unknown, a: unknown): string {
    try {
      const v = this.#invoke(true, h, m, a);
      if (v instanceof Promise) {
        v.catch(() => undefined);
        throw new MembraneError(`${String(m)} is not synchronous`);
      }
      const json = this.#deps.cpu.charged(() => JSON.stringify({ ok: true, v: this.#deps.handles.encode(v) }));
      this.#deps.cpu.refuseOverBudget(String(m));
      if (json.length > MAX_TRANSFER_CHARS)
        throw budgetError(
          `${String(m)}: the result is too large to give to the script (${json.length} characters; at most ${MAX_TRANSFER_CHARS})`,
        );
      return json;
    } catch (e) {
      if (e instanceof RefusedOptionError) this.#deps.refusedOption?.(e.message.slice(0, 100));
      return JSON.stringify({ ok: false, e: toWireError(e) });
    }
  }

  #invoke(sync: boolean, h: unknown, m: unknown, a: unknown): unknown {
    if (typeof h !== 'number' || typeof m !== 'string' || !Array.isArray(a)) throw new MembraneError('malformed call');
    const entry = this.#deps.handles.entry(h);
    if (!entry) throw new MembraneError(`${m}: this handle is no longer valid`);
    const impl = lookupMethod(sync, entry.kind, m);
    if (!impl) throw new MembraneError(`${entry.kind}.${m}() is not available in pagescript`);
    // SECURITY: nothing starts for a request that has ended or run out of time or host CPU.
    if (this.#deps.disposed()) throw new MembraneError(`${m}: the script has ended`);
    if (this.#deps.expired?.()) throw new MembraneError(`${m}: the script's time is up`);
    this.#deps.cpu.refuseOverBudget(m);
    // Arguments stay as the isolate sent them (JSON); each method decodes what it accepts.
    return this.#deps.cpu.charged(() => impl(entry.obj as never, a, this.#deps.context));
  }

  /** The host CPU budget ran out: every call in flight ends now with its error. */
  endAll(): void {
    for (const call of [...this.#calls.values()]) {
      call.end();
      call.controller.abort(budgetError(this.#deps.cpu.cpuBudgetMessage()));
    }
  }

  /** The request ended: Puppeteer's waits for it end now, not at their own timeouts. */
  abortAll(): void {
    for (const call of [...this.#calls.values()]) call.controller.abort(new MembraneError('the script has ended'));
  }
}
