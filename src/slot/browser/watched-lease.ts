// The slot's one request at a time on its Chromium, so that every process
// under that browser is the request's (or the host's own, from before the
// request) and its memory can be counted and bounded (PAGE_MEMORY_MB; see
// page-memory.ts for why).
//
// Attribution: the Chromium is leased to one request from lease() until its
// context is closed; its renderers (frames of other sites, popups, workers
// included) are the zygotes' children under its browser process, and nothing
// of another request is ever there. It does not depend on timing.
import type { PageLease } from './lease.js';
import type { Logger } from '../../common/log.js';
import type { PageMemoryUse, PageMemoryWatchdog, Watch } from './page-memory.js';

/** Chromium's own words when a renderer dies of memory (V8's heap limit, Oilpan, PartitionAlloc). */
const OOM_OUTPUT = /V8 javascript OOM|Oilpan: Out of memory|Out of memory\. size=|OOM_CRASH|ran out of memory/i;

export interface WatchedLease extends PageLease {
  /** Set once the request's Chromium went over PAGE_MEMORY_MB or a renderer of it died of memory. */
  readonly memoryExceeded: PageMemoryUse | undefined;
  /** The most memory the request's Chromium processes held, read once more now (page-memory.ts), in bytes. */
  memoryPeakBytes(): number;
  /** Called at most once, when memoryExceeded is set. */
  onMemoryExceeded(fn: () => void): void;
}

export interface WatchedLeasesOptions {
  /** A fresh context and page of the slot's browser host for the request (BrowserHost.lease). */
  open(requestId: string, proxy?: string): Promise<PageLease>;
  readonly watchdog: PageMemoryWatchdog;
  readonly logger: Logger;
}

/** The slot's browser host's leases, one at a time, each watched for memory until it is closed. */
export class WatchedLeases {
  readonly #opts: WatchedLeasesOptions;
  /** Leased: from lease() until the context is closed. */
  #busy = false;
  /** The running request's watch; undefined while its context is made (or nothing is leased). */
  #watch: Watch | undefined;
  /** The request leased, told when its Chromium writes an out-of-memory line. */
  #onOom: (() => void) | undefined;
  /** The end of the Chromium's output so far: a line may arrive in two chunks. */
  #tail = '';
  #memoryKills = 0;

  constructor(opts: WatchedLeasesOptions) {
    this.#opts = opts;
  }

  /** Where the Chromium's stderr goes (BrowserHost's onOutput). */
  chromiumOutput(text: string): void {
    const seen = this.#tail + text;
    this.#tail = seen.slice(-200);
    if (!OOM_OUTPUT.test(seen)) return;
    // Matched once: kept, the line would match again with the next chunk, perhaps in the next request.
    this.#tail = '';
    this.#onOom?.();
  }

  /** Page memory of the request running now, in bytes. */
  get pageMemoryBytes(): number {
    return this.#watch?.use.bytes ?? 0;
  }

  /** Requests ended for going over PAGE_MEMORY_MB (or a renderer dying of memory). */
  get memoryKills(): number {
    return this.#memoryKills;
  }

  /**
   * A fresh context and page for the request, watched for memory until it is
   * closed (at limitBytes when given: its key's page memory, below the
   * watchdog's); its traffic leaves through `proxy` (a name) when one is given.
   * Refused while another request's context is leased: the front gives a slot
   * one job at a time, and closes it before the next.
   */
  async lease(requestId: string, proxy?: string, limitBytes?: number): Promise<WatchedLease> {
    if (this.#busy) throw new Error('the browser is leased to another request (a slot serves one at a time)');
    this.#busy = true;
    let lease: PageLease;
    try {
      lease = await this.#opts.open(requestId, proxy);
    } catch (e) {
      this.#release();
      throw e;
    }
    return this.#watched(lease, limitBytes);
  }

  #release(): void {
    this.#onOom = undefined;
    this.#busy = false;
  }

  #watched(lease: PageLease, limitBytes = this.#opts.watchdog.limitBytes): WatchedLease {
    const pid = lease.pid;
    const listeners: (() => void)[] = [];
    let exceeded: PageMemoryUse | undefined;
    const fire = (use: PageMemoryUse): void => {
      if (exceeded) return;
      exceeded = use;
      this.#memoryKills++;
      this.#opts.logger.warn(
        { mb: Math.round(use.bytes / 2 ** 20), renderers: use.renderers },
        'page memory limit exceeded',
      );
      for (const fn of listeners.splice(0)) fn();
    };
    const watch = this.#opts.watchdog.watch(pid, fire, limitBytes);
    this.#watch = watch;
    // A renderer that died of memory before the watchdog saw it (V8's own heap limit).
    this.#onOom = () => fire(watch.use);
    let closing: Promise<void> | undefined;
    return {
      page: lease.page,
      pid: lease.pid,
      context: lease.context,
      egress: lease.egress,
      get memoryExceeded() {
        return exceeded;
      },
      memoryPeakBytes: () => watch.readPeak(),
      onMemoryExceeded(fn) {
        if (exceeded) fn();
        else listeners.push(fn);
      },
      close: () => {
        // The request's own renderers are killed first: closing a context waits
        // on a busy renderer (a loop, a flood) for seconds, and the next
        // request's blank page, made once this context is gone, is not among them.
        watch.stop(true);
        if (this.#watch === watch) this.#watch = undefined;
        closing ??= lease.close().finally(() => this.#release());
        return closing;
      },
    };
  }

  /** No more readings of the running request's Chromium (the slot is closing). */
  close(): void {
    this.#watch?.stop();
    this.#watch = undefined;
  }
}
