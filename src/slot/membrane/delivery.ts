// What the host hands to the isolate: call results, timers, page events and the
// page's calls of exposed functions, as JSON text within the budgets of what waits
// to be taken (MAX_QUEUED_CHARS, MAX_WAITING_EVENTS, …). An event or a call that
// finds no room is dropped and counted, never queued without bound.
import type { ToIsolate, WireError } from '../../../sandbox/wire.js';
import {
  MAX_MESSAGE_CHARS,
  MAX_QUEUED_CHARS,
  MAX_TRANSFER_CHARS,
  MAX_WAITING_EVENTS,
  MAX_WAITING_EVENT_CHARS,
  MAX_WAITING_EXPOSED_CALLS,
} from './budgets.js';
import type { HandleTable } from './handles.js';
import type { HostCpuBudget } from './host-cpu.js';

/** Messages this small are always delivered, over the queue budget or not (errors, timers). */
const SMALL_MESSAGE_CHARS = 4096;

export interface DeliveryDeps {
  readonly handles: HandleTable;
  readonly cpu: HostCpuBudget;
  /** True once the request has ended: nothing more is handed to the isolate. */
  disposed(): boolean;
  /** Delivers a message (JSON text) to the isolate's receive(); resolves with its (JSON) answer. */
  toIsolate(json: string, wantAnswer: boolean): Promise<string | undefined>;
}

export class Delivery {
  readonly #deps: DeliveryDeps;
  /** Characters handed to the isolate and not yet taken by it. */
  #queuedChars = 0;
  /** Page events and exposed-function calls handed to the isolate and not yet taken by it. */
  #waitingEvents = 0;
  #waitingEventChars = 0;
  #waitingExposedCalls = 0;
  /** Page events not delivered: the isolate had no room for them (busy, or too much waiting), or too many handles. */
  droppedEvents = 0;
  /** Exposed-function calls from the page failed at once for the same reasons. */
  droppedExposedCalls = 0;

  constructor(deps: DeliveryDeps) {
    this.#deps = deps;
  }

  /**
   * Hands a message to the isolate, within the budgets: one message at most
   * MAX_TRANSFER_CHARS, and at most MAX_QUEUED_CHARS waiting to be taken. A
   * result over them becomes an error for its call (page events: deliverEvent).
   */
  toIsolate(msg: ToIsolate, wantAnswer: boolean): void {
    if (this.#deps.disposed()) return;
    let json = JSON.stringify(msg);
    if (json.length > SMALL_MESSAGE_CHARS && msg.op === 'settle' && msg.ok) {
      const why =
        json.length > MAX_TRANSFER_CHARS
          ? `the result is too large to give to the script (${json.length} characters; at most ${MAX_TRANSFER_CHARS})`
          : this.#queuedChars + json.length > MAX_QUEUED_CHARS
            ? `too much data is waiting for the script (at most ${MAX_QUEUED_CHARS} characters); await fewer results at once`
            : undefined;
      if (why !== undefined)
        json = JSON.stringify({ op: 'settle', id: msg.id, ok: false, e: { name: 'RangeError', message: why } });
    } else if (
      json.length > SMALL_MESSAGE_CHARS &&
      (json.length > MAX_TRANSFER_CHARS || this.#queuedChars + json.length > MAX_QUEUED_CHARS)
    ) {
      return;
    }
    this.#send(json, wantAnswer).catch(() => undefined);
  }

  /** Hands JSON text to the isolate, counted in MAX_QUEUED_CHARS until the isolate has taken it. */
  #send(json: string, wantAnswer: boolean): Promise<string | undefined> {
    const chars = json.length;
    this.#queuedChars += chars;
    return this.#deps
      .toIsolate(json, wantAnswer)
      .catch(() => undefined)
      .finally(() => (this.#queuedChars -= chars));
  }

  /**
   * Delivers a page event (h: the handle it is on) if the isolate has room for it.
   * SECURITY: decided before the event is encoded: with events waiting or the queue
   * full, it is never encoded and registers no handle. One that does not fit once
   * encoded has the handles it registered taken out again at once: a dropped event
   * keeps nothing of the page's on the host, however long a flood lasts.
   */
  deliverEvent(h: number, event: string, payload: unknown): void {
    if (this.#deps.disposed()) return;
    if (
      this.#waitingEvents >= MAX_WAITING_EVENTS ||
      this.#waitingEventChars >= MAX_WAITING_EVENT_CHARS ||
      this.#queuedChars >= MAX_QUEUED_CHARS
    ) {
      this.droppedEvents++;
      return;
    }
    const staged: number[] = [];
    let json: string | undefined;
    try {
      json = this.#deps.handles.staging(staged, () =>
        this.#deps.cpu.charged(() =>
          JSON.stringify({ op: 'event', h, event, v: this.#deps.handles.encode(payload) } satisfies ToIsolate),
        ),
      );
    } catch {
      json = undefined; // too many handles, or too much of their data
    }
    if (
      json === undefined ||
      json.length > MAX_TRANSFER_CHARS ||
      // One event up to MAX_TRANSFER_CHARS still goes when none waits.
      (this.#waitingEvents > 0 && this.#waitingEventChars + json.length > MAX_WAITING_EVENT_CHARS) ||
      this.#queuedChars + json.length > MAX_QUEUED_CHARS
    ) {
      for (const id of staged) this.#deps.handles.unregister(id);
      this.droppedEvents++;
      return;
    }
    const chars = json.length;
    this.#waitingEvents++;
    this.#waitingEventChars += chars;
    this.#send(json, false)
      .finally(() => {
        this.#waitingEvents--;
        this.#waitingEventChars -= chars;
      })
      .catch(() => undefined);
  }

  /**
   * Calls a function the script keeps in the isolate (fid: its id there) with host
   * values (page arguments, handles), and waits for its answer. Only JSON crosses.
   */
  async callScript(
    fid: number,
    args: readonly unknown[],
  ): Promise<{ ok: boolean; v?: unknown; e?: WireError; thrown?: unknown }> {
    if (this.#deps.disposed()) throw new Error('the script has ended');
    // SECURITY: decided before the arguments are encoded, else each call of a page calling in a loop
    // while the script is busy would wait on the host; past the bound a call fails at once.
    if (this.#waitingExposedCalls >= MAX_WAITING_EXPOSED_CALLS || this.#queuedChars >= MAX_QUEUED_CHARS) {
      this.droppedExposedCalls++;
      throw new Error(`too many calls are waiting for the script (at most ${MAX_WAITING_EXPOSED_CALLS})`);
    }
    const json = this.#deps.cpu.charged(() =>
      JSON.stringify({ op: 'exposed', fid, a: args.map((x) => this.#deps.handles.encode(x)) } satisfies ToIsolate),
    );
    if (json.length > MAX_TRANSFER_CHARS || this.#queuedChars + json.length > MAX_QUEUED_CHARS) {
      this.droppedExposedCalls++;
      throw new Error('the arguments are too large to give to the script');
    }
    this.#waitingExposedCalls++;
    const answer = await this.#send(json, true).finally(() => this.#waitingExposedCalls--);
    if (answer !== undefined && answer.length > MAX_MESSAGE_CHARS)
      throw new Error('the exposed function returned too much data');
    return JSON.parse(answer ?? '{"ok":false}') as { ok: boolean; v?: unknown; e?: WireError; thrown?: unknown };
  }
}
