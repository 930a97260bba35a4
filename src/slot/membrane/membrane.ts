// The host side of the membrane: one request's answer to its isolate. The isolate
// calls one function (onHost) with JSON text; the membrane routes it to the calls
// (dispatch.ts), the script's timers and log, and holds what the request keeps on
// the host: the handle table (handles.ts), page registrations (registrations.ts),
// what waits to go into the isolate (delivery.ts) and the host CPU budget. Nothing
// it holds is ever handed to the isolate: values are copied out as JSON, objects
// as handle ids.
import type { Locator, Page } from 'puppeteer';
import type { HandleKind, ToHost } from '../../../sandbox/wire.js';
import type { RecentFailure } from '../egress-client/net-errors.js';
import { MAX_LOG_LINE_CHARS, MAX_MESSAGE_CHARS } from './budgets.js';
import { CallLog } from './call-log.js';
import { Delivery } from './delivery.js';
import { Dispatch } from './dispatch.js';
import { HandleTable } from './handles.js';
import { HostCpuBudget } from './host-cpu.js';
import { guardKeyboard, type MethodContext } from './methods/index.js';
import { cut } from './outcome.js';
import { PUPPETEER_DEFAULT_TIMEOUT_MS, type Clock } from './deadline.js';
import { MembraneError, str, timeoutMs } from './options.js';
import { pageFunction } from './page-function.js';
import { Registrations } from './registrations.js';
import { ScriptTimers } from './timers.js';
import { refusal } from './wire-errors.js';

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
  /**
   * A security event the membrane saw: a refused scheme of a navigation, or a
   * method the isolate's stubs refused (reported by the isolate: it can only
   * raise the request's own key's score).
   */
  securityEvent?(cls: 'scheme-or-port' | 'refused-method', detail: string): void;
  /** The guard's memory of upstream failures (see ../egress-client/net-errors.ts). */
  recentFailure?: RecentFailure;
  /** True once the script's deadline has passed: no call starts after it. */
  expired?(): boolean;
  /** Milliseconds for the host CPU budget's accounting: the main thread's CPU time unless a test gives its own clock. */
  now?(): number;
  /** Delivers a message (JSON text) to the isolate's receive(); resolves with its (JSON) answer. */
  toIsolate(json: string, wantAnswer: boolean): Promise<string | undefined>;
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
  readonly #dispatch: Dispatch;
  readonly #registrations: Registrations;
  readonly #timers: ScriptTimers;
  #disposed = false;
  /** The script's page.setDefaultTimeout / setDefaultNavigationTimeout (Puppeteer's defaults until set). */
  #defaultTimeoutMs = PUPPETEER_DEFAULT_TIMEOUT_MS;
  #defaultNavigationTimeoutMs: number | undefined;

  constructor(deps: MembraneDeps) {
    this.#deps = deps;
    this.page = deps.page;
    this.clock = {
      remainingMs: () => deps.clock.remainingMs(),
      defaultTimeoutMs: (navigation) =>
        navigation ? (this.#defaultNavigationTimeoutMs ?? this.#defaultTimeoutMs) : this.#defaultTimeoutMs,
      signal: () => this.#dispatch.startingSignal,
    };
    const disposed = (): boolean => this.#disposed;
    this.#handles = new HandleTable(deps.page, deps.limits.maxHandles);
    this.#cpu = new HostCpuBudget(deps, () => this.#dispatch.endAll());
    this.#delivery = new Delivery({
      handles: this.#handles,
      cpu: this.#cpu,
      disposed,
      toIsolate: (json, wantAnswer) => deps.toIsolate(json, wantAnswer),
    });
    this.#dispatch = new Dispatch({
      handles: this.#handles,
      cpu: this.#cpu,
      delivery: this.#delivery,
      callLog: this.calls,
      context: this,
      disposed,
      expired: () => deps.expired?.() ?? false,
      recentFailure: deps.recentFailure,
      refusedOption: (detail) => deps.securityEvent?.('refused-method', detail),
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
        return this.#dispatch.call(msg.id, msg.h, msg.m, msg.a, json.length);
      case 'sync':
        return this.#dispatch.sync(msg.h, msg.m, msg.a);
      case 'log':
        this.#log(msg.level, msg.text);
        return '';
      case 'timer':
        return this.#timers.set(msg.id, msg.ms);
      case 'cancel':
        this.#dispatch.cancel(msg.id);
        return '';
      case 'clearTimer':
        this.#timers.clear(msg.id);
        return '';
      case 'refused':
        // The isolate's stub refused a method; the name is cut, whatever the isolate sent.
        if (typeof msg.m === 'string') this.#deps.securityEvent?.('refused-method', cut(msg.m, 100));
        return '';
      default:
        return '{"ok":false}';
    }
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
      this.#deps.securityEvent?.('scheme-or-port', `${where}: ${url.href.slice(0, 200)}`);
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
    this.#dispatch.abortAll();
    this.#timers.dispose();
    this.#registrations.dispose();
    this.#handles.clear();
  }
}
