// The host side of the membrane. It owns the request's handle table (id → real
// Puppeteer object), answers the isolate's one callback, and forwards page events,
// timers and call results back into the isolate as JSON. Nothing it holds is ever
// handed to the isolate: values are copied out as JSON, objects as handle ids.
import type { Locator, Page } from 'puppeteer';
import type { HandleKind, ToHost, ToIsolate, WireError } from '../../../sandbox/wire.js';
import { unmaskNetError, type RecentFailure } from '../egress-client/net-errors.js';
import {
  MAX_ABANDONED_CALLS,
  MAX_CALLS_IN_FLIGHT,
  MAX_IN_FLIGHT_CHARS,
  MAX_LOG_LINE_CHARS,
  MAX_MESSAGE_CHARS,
  MAX_TRANSFER_CHARS,
  budgetError,
} from './budgets.js';
import { pageFunction } from './page-function.js';
import { CallLog } from './call-log.js';
import { Delivery } from './delivery.js';
import { HandleTable } from './handles.js';
import { HostCpuBudget } from './host-cpu.js';
import { guardKeyboard, lookupMethod, type MethodContext } from './methods.js';
import { cut } from './outcome.js';
import { Registrations } from './registrations.js';
import { ScriptTimers } from './timers.js';
import { MembraneError, PUPPETEER_DEFAULT_TIMEOUT_MS, str, timeoutMs, type Clock } from './options.js';
import { oversizedAnswerError, refusal, toWireError } from './wire-errors.js';

export interface MembraneLimits {
  readonly maxHandles: number;
  readonly maxTimers: number;
  readonly maxLogLines: number;
  readonly maxLogBytes: number;
  /** Host CPU budget of the request's calls (MAX_HOST_CPU_MS when absent). */
  readonly maxHostCpuMs?: number;
}

export interface MembraneDeps {
  readonly page: Page;
  readonly clock: Clock;
  readonly limits: MembraneLimits;
  /** The egress policy for a URL a script navigates to; rejects with a readable reason. */
  checkUrl(url: URL): Promise<void>;
  /** The guard's memory of upstream failures (see ../egress-client/net-errors.ts). */
  recentFailure?: RecentFailure;
  /** True once the script's deadline has passed: no call starts after it. */
  expired?(): boolean;
  /** Milliseconds for the host CPU budget's accounting: the main thread's CPU time unless a test gives its own clock. */
  now?(): number;
  /** Delivers a message (JSON text) to the isolate's receive(); resolves with its (JSON) answer. */
  toIsolate(json: string, wantAnswer: boolean): Promise<string | undefined>;
  /** While the request's Chromium is paused (past its CPU budget, beside others): when it runs again. */
  whenRunning?(): Promise<void> | undefined;
}

const NAVIGABLE_SCHEMES = new Set(['http:', 'https:', 'data:']);

export class Membrane implements MethodContext {
  readonly page: Page;
  readonly clock: Clock;
  readonly logs: string[] = [];
  /** The script's last calls to the host, for the error body of a failed request. */
  readonly calls = new CallLog();
  #logBytes = 0;
  #dropped = { lines: 0, bytes: 0 };
  readonly #deps: MembraneDeps;
  readonly #handles: HandleTable;
  readonly #cpu: HostCpuBudget;
  readonly #delivery: Delivery;
  readonly #registrations: Registrations;
  readonly #timers: ScriptTimers;
  #disposed = false;
  /** Calls in flight, by the isolate's call id: how to end each one's wait and give its budget back. */
  readonly #calls = new Map<number, { controller: AbortController; abandon(): void; end(): void }>();
  /** The signal of the call whose method is building its options right now. */
  #startingSignal: AbortSignal | undefined;
  /** The script's page.setDefaultTimeout / setDefaultNavigationTimeout (Puppeteer's defaults until set). */
  #defaultTimeoutMs = PUPPETEER_DEFAULT_TIMEOUT_MS;
  #defaultNavigationTimeoutMs: number | undefined;
  /** Calls started and not yet settled, and the characters of their arguments. */
  #callsInFlight = 0;
  #inFlightChars = 0;
  /** Calls the script aborted that have not settled on the host yet. */
  #abandonedCalls = 0;

  constructor(deps: MembraneDeps) {
    this.#deps = deps;
    this.page = deps.page;
    this.clock = {
      remainingMs: () => deps.clock.remainingMs(),
      defaultTimeoutMs: (navigation) =>
        navigation ? (this.#defaultNavigationTimeoutMs ?? this.#defaultTimeoutMs) : this.#defaultTimeoutMs,
      signal: () => this.#startingSignal,
    };
    this.#handles = new HandleTable(deps.page, deps.limits.maxHandles);
    this.#cpu = new HostCpuBudget(deps, () => {
      for (const call of [...this.#calls.values()]) {
        call.end();
        call.controller.abort(budgetError(this.#cpu.cpuBudgetMessage()));
      }
    });
    this.#delivery = new Delivery({
      handles: this.#handles,
      cpu: this.#cpu,
      disposed: () => this.#disposed,
      toIsolate: (json, wantAnswer) => deps.toIsolate(json, wantAnswer),
    });
    this.#timers = new ScriptTimers(
      deps.limits,
      () => this.clock.remainingMs(),
      (id) => this.#delivery.toIsolate({ op: 'timer', id }, false),
    );
    // SECURITY: every key event the page is sent is judged as it goes out (clipboard shortcuts).
    guardKeyboard(deps.page);
    this.#handles.register(deps.page, 'Page'); // id 1, as sandbox/proxies.ts expects
    this.#registrations = new Registrations(deps.page, this.#handles, this.#delivery);
  }

  /** Handles in the table, and the characters counted for them (MAX_HANDLE_CHARS). */
  get handleCount(): number {
    return this.#handles.count;
  }
  get handleChars(): number {
    return this.#handles.chars;
  }

  /** Dropped log lines, as the isolate last reported them. */
  get dropped(): { lines: number; bytes: number } {
    return this.#dropped;
  }

  /** Page events not delivered: the isolate had no room for them (busy, or too much waiting), or too many handles. */
  get droppedEvents(): number {
    return this.#delivery.droppedEvents;
  }
  /** Exposed-function calls from the page failed at once for the same reasons. */
  get droppedExposedCalls(): number {
    return this.#delivery.droppedExposedCalls;
  }

  // ---------------------------------------------------------------- the isolate's callback
  /** The one function the isolate can call. Takes and returns JSON text; never throws. */
  onHost(json: unknown): string {
    if (this.#disposed || typeof json !== 'string') return '{"ok":false}';
    if (json.length > MAX_MESSAGE_CHARS) {
      return refusal(
        `the arguments are too large to give to the host (${json.length} characters; at most ${MAX_MESSAGE_CHARS})`,
      );
    }
    let msg: ToHost;
    try {
      msg = JSON.parse(json) as ToHost;
    } catch {
      return '{"ok":false}';
    }
    switch (msg.op) {
      case 'call':
        return this.#call(msg.id, msg.h, msg.m, msg.a, json.length);
      case 'sync':
        return this.#sync(msg.h, msg.m, msg.a);
      case 'log':
        this.#log(msg.level, msg.text);
        return '';
      case 'timer':
        return this.#timers.set(msg.id, msg.ms);
      case 'cancel':
        this.#cancel(msg.id);
        return '';
      case 'clearTimer':
        this.#timers.clear(msg.id);
        return '';
      default:
        return '{"ok":false}';
    }
  }

  /** Starts a call; '' when started, else the refusal (the isolate rejects the call with it at once). */
  #call(callId: unknown, h: unknown, m: unknown, a: unknown, chars: number): string {
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
    // and sends its arguments (measured: 60 aborted 12 MiB calls held 1.3 GB after the request).
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
    const ended = this.calls.start(this.#kindOfId(h), typeof m === 'string' ? m : '?');
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
      this.#delivery.toIsolate(msg, false);
    };
    const fail = (e: unknown): void => {
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
    end = (): void => fail(budgetError(`${String(m)}: ${this.#cpu.cpuBudgetMessage()}`));
    // SECURITY: while the request's Chromium is paused (past its CPU budget, beside
    // other requests), its next calls wait for it to run again rather than cost the
    // executor's one thread now: a flood of calls with 1 MB arguments is serialized
    // and written to a stopped pipe otherwise. The script's deadline still runs.
    (this.#deps.whenRunning?.() ?? Promise.resolve())
      .then(() => {
        // SECURITY: a call the script aborted while it waited is not started when the lane runs again
        // (its arguments are never serialized: the lane's run window is not spent on them).
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
        const msg = this.#cpu.charged(() => ({ op: 'settle', id: callId, ok: true, v: this.encode(v) }) as const);
        this.#cpu.refuseOverBudget(typeof m === 'string' ? m : '?');
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
  #cancel(callId: unknown): void {
    const call = typeof callId === 'number' ? this.#calls.get(callId) : undefined;
    if (call === undefined) return;
    call.abandon();
    call.controller.abort(new MembraneError('the script aborted the call'));
  }

  /** The kind of a handle id the script sent, for the call log ('unknown' for one that is not valid). */
  #kindOfId(h: unknown): string {
    return (typeof h === 'number' ? this.#handles.entry(h)?.kind : undefined) ?? 'unknown';
  }

  #sync(h: unknown, m: unknown, a: unknown): string {
    const ended = this.calls.start(this.#kindOfId(h), typeof m === 'string' ? m : '?');
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
      const json = this.#cpu.charged(() => JSON.stringify({ ok: true, v: this.encode(v) }));
      this.#cpu.refuseOverBudget(String(m));
      if (json.length > MAX_TRANSFER_CHARS)
        throw budgetError(
          `${String(m)}: the result is too large to give to the script (${json.length} characters; at most ${MAX_TRANSFER_CHARS})`,
        );
      return json;
    } catch (e) {
      return JSON.stringify({ ok: false, e: toWireError(e) });
    }
  }

  #invoke(sync: boolean, h: unknown, m: unknown, a: unknown): unknown {
    if (typeof h !== 'number' || typeof m !== 'string' || !Array.isArray(a)) throw new MembraneError('malformed call');
    const entry = this.#handles.entry(h);
    if (!entry) throw new MembraneError(`${m}: this handle is no longer valid`);
    const impl = lookupMethod(sync, entry.kind, m);
    if (!impl) throw new MembraneError(`${entry.kind}.${m}() is not available in pagescript`);
    // SECURITY: nothing starts for a request that has ended or run out of time or host CPU.
    if (this.#disposed) throw new MembraneError(`${m}: the script has ended`);
    if (this.#deps.expired?.()) throw new MembraneError(`${m}: the script's time is up`);
    this.#cpu.refuseOverBudget(m);
    // Arguments stay as the isolate sent them (JSON); each method decodes what it accepts.
    return this.#cpu.charged(() => impl(entry.obj as never, a, this));
  }

  #log(level: unknown, text: unknown): void {
    if (typeof text !== 'string') return;
    if (level === 'dropped') {
      const [lines, bytes] = text.split(' ').map(Number);
      if (Number.isFinite(lines) && Number.isFinite(bytes)) this.#dropped = { lines: lines ?? 0, bytes: bytes ?? 0 };
      return;
    }
    // SECURITY: one line is cut on the host, whatever the isolate sent.
    const line = cut(text, MAX_LOG_LINE_CHARS);
    const { maxLogLines, maxLogBytes } = this.#deps.limits;
    // SECURITY: the isolate counts too, but the host does not trust its count.
    if (this.logs.length >= maxLogLines || this.#logBytes + line.length > maxLogBytes) return;
    this.logs.push(line);
    this.#logBytes += line.length;
  }

  /** Host value → JSON-ready value; Puppeteer objects become handle tags. */
  encode(v: unknown, depth = 0): unknown {
    return this.#handles.encode(v, depth);
  }

  // ---------------------------------------------------------------- MethodContext
  pageFunction(v: unknown, where: string): string | ((...a: never[]) => unknown) {
    return pageFunction(v, where);
  }

  pageArgs(list: readonly unknown[], where: string): unknown[] {
    return this.#handles.pageArgs(list, where);
  }

  handle<T>(v: unknown, kinds: readonly HandleKind[], where: string): T {
    return this.#handles.handle<T>(v, kinds, where);
  }

  async navigationUrl(v: unknown, where: string): Promise<string> {
    const raw = str(v, `${where}: url`);
    if (raw === 'about:blank') return raw;
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new MembraneError(`${where}: invalid URL "${raw.slice(0, 200)}"`);
    }
    // SECURITY: file:, view-source:, chrome:, devtools:, javascript: and the rest are refused here.
    if (!NAVIGABLE_SCHEMES.has(url.protocol)) {
      throw new MembraneError(
        `${where}: the ${url.protocol} scheme is not allowed (only http:, https:, data: and about:blank)`,
      );
    }
    if (url.protocol !== 'data:') await this.#deps.checkUrl(url);
    return url.href;
  }

  subscribe(event: unknown): void {
    this.#registrations.subscribe(event);
  }

  subscribeLocator(locator: Locator<unknown>, event: unknown): void {
    this.#registrations.subscribeLocator(locator, event);
  }

  exposeFunction(name: unknown, fid: unknown): Promise<void> {
    return this.#registrations.exposeFunction(name, fid);
  }

  filterHandle(locator: Locator<unknown>, fid: unknown): Locator<unknown> {
    return this.#registrations.filterHandle(locator, fid);
  }

  removeExposedFunction(name: unknown): Promise<void> {
    return this.#registrations.removeExposedFunction(name);
  }

  evaluateOnNewDocument(fn: unknown, args: readonly unknown[]): Promise<unknown> {
    return this.#registrations.evaluateOnNewDocument(fn, args);
  }

  removeScriptToEvaluateOnNewDocument(id: unknown): Promise<void> {
    return this.#registrations.removeScriptToEvaluateOnNewDocument(id);
  }

  setDefaultTimeout(v: unknown, navigation: boolean): void {
    const ms = timeoutMs(v, navigation ? 'page.setDefaultNavigationTimeout' : 'page.setDefaultTimeout');
    // Applied by the option schemas to every wait given no timeout (options.ts), capped by the time left.
    if (navigation) this.#defaultNavigationTimeoutMs = ms;
    else this.#defaultTimeoutMs = ms;
  }

  // ---------------------------------------------------------------- end
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    // Puppeteer's waits for this request end now, not at their own timeouts.
    for (const call of [...this.#calls.values()]) call.controller.abort(new MembraneError('the script has ended'));
    this.#timers.dispose();
    this.#registrations.dispose();
    this.#handles.clear();
  }
}
