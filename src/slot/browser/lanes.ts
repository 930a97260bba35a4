// Lanes: one Chromium per request slot of the slot process, each serving one request
// at a time, so that every process under a lane's browser is that request's (or
// the lane's own, from before the request) and its memory can be counted and
// bounded (PAGE_MEMORY_MB; see page-memory.ts for why).
//
// Attribution: a lane is leased to one request from lease() until its context is
// closed; its renderers (frames of other sites, popups, workers included) are
// the zygotes' children under that lane's browser process, and nothing of
// another request is ever there. It holds with any number of requests at once
// and does not depend on timing.
import type { BrowserHost } from './browser-host.js';
import type { PageLease } from './lease.js';
import type { Logger } from '../../common/log.js';
import type { PageMemoryUse, PageMemoryWatchdog, Watch } from './page-memory.js';

/** How long a request waits for a lane whose previous context is still being closed. */
export const LANE_WAIT_TIMEOUT_MS = 15_000;

/** Chromium's own words when a renderer dies of memory (V8's heap limit, Oilpan, PartitionAlloc). */
const OOM_OUTPUT = /V8 javascript OOM|Oilpan: Out of memory|Out of memory\. size=|OOM_CRASH|ran out of memory/i;

export interface LaneLease extends PageLease {
  /** Set once the request's Chromium went over PAGE_MEMORY_MB or a renderer of it died of memory. */
  readonly memoryExceeded: PageMemoryUse | undefined;
  /** Memory of the request's Chromium processes now, in bytes. */
  readonly memoryBytes: number;
  /** The most memory the request's Chromium processes held, read once more now (page-memory.ts), in bytes. */
  memoryPeakBytes(): number;
  /** Called at most once, when memoryExceeded is set. */
  onMemoryExceeded(fn: () => void): void;
}

interface Lane {
  readonly index: number;
  readonly host: BrowserHost;
  busy: boolean;
  /** The running request's watch; undefined while its context is made (or the lane is free). */
  watch: Watch | undefined;
  /** The request on the lane, told when its Chromium writes an out-of-memory line. */
  onOom: (() => void) | undefined;
}

export interface BrowserLanesOptions {
  readonly count: number;
  /** Makes lane i's BrowserHost; onOutput is where its Chromium's stderr goes. */
  makeHost(index: number, onOutput: (text: string) => void, onSpares: () => void): BrowserHost;
  readonly watchdog: PageMemoryWatchdog;
  /**
   * After this long with every lane free, the Chromiums of lanes past the first
   * are closed (each is relaunched when a request needs its lane); 0 or absent: never.
   */
  readonly idleCloseMs?: number;
  /** Told when a lane's spares or Chromium changed (contexts made ahead, a launch): its status may have. */
  readonly onChange?: () => void;
  readonly logger: Logger;
}

export class BrowserLanes {
  readonly #lanes: Lane[];
  readonly #watchdog: PageMemoryWatchdog;
  readonly #log: Logger;
  readonly #waiters: ((lane: Lane | undefined) => void)[] = [];
  readonly #watches = new Set<Watch>();
  readonly #idleCloseMs: number;
  #idleTimer: NodeJS.Timeout | undefined;
  #memoryKills = 0;

  constructor(opts: BrowserLanesOptions) {
    this.#lanes = Array.from({ length: Math.max(1, opts.count) }, (_, index) => {
      let lane: Lane | undefined = undefined;
      let tail = '';
      const host = opts.makeHost(
        index,
        (text) => {
          // A line may arrive in two chunks: the end of the last one is kept.
          const seen = tail + text;
          tail = seen.slice(-200);
          if (OOM_OUTPUT.test(seen)) lane?.onOom?.();
        },
        () => opts.onChange?.(),
      );
      lane = { index, host, busy: false, watch: undefined, onOom: undefined };
      return lane;
    });
    this.#watchdog = opts.watchdog;
    this.#idleCloseMs = opts.idleCloseMs ?? 0;
    this.#log = opts.logger;
  }

  /** Closes every lane's contexts made ahead (their egress process stopped). */
  dropSpares(): void {
    for (const lane of this.#lanes) lane.host.dropSpares();
  }

  get lanes(): number {
    return this.#lanes.length;
  }

  /** A lane's Chromium is up (the others may be relaunching): requests are served. */
  get ready(): boolean {
    return this.#lanes.some((l) => l.host.ready);
  }

  get restarts(): number {
    return this.#lanes.reduce((n, l) => n + l.host.restarts, 0);
  }

  get recycles(): number {
    return this.#lanes.reduce((n, l) => n + l.host.recycles, 0);
  }

  get contextsReady(): number {
    return this.#lanes.reduce((n, l) => n + l.host.contextsReady, 0);
  }

  /** The first lane's Chromium process id (the one a lone request uses), for tests. */
  get pid(): number | undefined {
    return this.#lanes[0]?.host.pid;
  }

  /** Every lane's Chromiums (a retiring one still serving a request included), for the front to see. */
  get pids(): number[] {
    return this.#lanes.flatMap((l) => l.host.pids);
  }

  /** Page memory of the requests running now, in bytes. */
  get pageMemoryBytes(): number {
    let n = 0;
    for (const w of this.#watches) n += w.use.bytes;
    return n;
  }

  /** Requests ended for going over PAGE_MEMORY_MB (or a renderer dying of memory). */
  get memoryKills(): number {
    return this.#memoryKills;
  }

  /** All the lanes' Chromium processes (anonymous + shared memory), in bytes; read now from /proc. */
  memoryBytes(): number {
    let n = 0;
    for (const l of this.#lanes) {
      const pid = l.host.pid;
      if (pid !== undefined) n += this.#watchdog.totalBytes(pid);
    }
    return n;
  }

  /** Whether Chromium runs with its own sandbox in every lane. */
  get sandboxed(): boolean {
    return this.#lanes.every((l) => l.host.sandboxed);
  }

  async start(): Promise<void> {
    await Promise.all(this.#lanes.map((l) => l.host.start()));
  }

  /** Every lane's Chromium started and its spares made (ready or failed). */
  async warm(): Promise<void> {
    await Promise.all(this.#lanes.map((l) => l.host.warm()));
  }

  /**
   * A free lane's fresh context and page for the request, watched for memory
   * until it is closed (at limitBytes when given: its key's page memory, below
   * the watchdog's); its traffic leaves through `proxy` (a name) when one is given.
   */
  async lease(requestId: string, proxy?: string, limitBytes?: number): Promise<LaneLease> {
    clearTimeout(this.#idleTimer);
    this.#idleTimer = undefined;
    const lane = this.#free() ?? (await this.#waitForLane());
    lane.busy = true;
    let lease: PageLease;
    try {
      lease = await lane.host.lease(requestId, proxy);
    } catch (e) {
      this.#release(lane);
      throw e;
    }
    return this.#watched(lane, lease, limitBytes);
  }

  /**
   * The lowest free lane with a context ready for the request, else the lowest
   * free lane whose Chromium is up (a lone request on an idle service takes lane
   * 0), else any free one. A lane just released may still be closing its last
   * context and making the next: after a page's console flood, whose backlog
   * Chromium sends before the answer to closing it, that can take seconds.
   */
  #free(): Lane | undefined {
    const free = this.#lanes.filter((l) => !l.busy);
    return free.find((l) => l.host.ready && l.host.contextsReady > 0) ?? free.find((l) => l.host.ready) ?? free[0];
  }

  #waitForLane(): Promise<Lane> {
    return new Promise<Lane>((resolve, reject) => {
      const waiter = (lane: Lane | undefined): void => {
        clearTimeout(timer);
        if (lane) resolve(lane);
        else reject(new Error('the browser is shut down'));
      };
      const timer = setTimeout(() => {
        const i = this.#waiters.indexOf(waiter);
        if (i >= 0) this.#waiters.splice(i, 1);
        reject(new Error(`no browser lane became free within ${LANE_WAIT_TIMEOUT_MS} ms`));
      }, LANE_WAIT_TIMEOUT_MS);
      this.#waiters.push(waiter);
    });
  }

  #release(lane: Lane): void {
    lane.onOom = undefined;
    const next = this.#waiters.shift();
    if (next) next(lane);
    else {
      lane.busy = false;
      this.#closeWhenIdle();
    }
  }

  /**
   * Once every lane has been free for idleCloseMs, the Chromiums of lanes past
   * the first are closed: with its context made ahead, each is most of the
   * service's memory at rest (docs/performance.md). Lane 0 stays up, so a lone
   * request is served as before; a request that needs another lane later waits
   * for its Chromium's launch, once per idle spell.
   */
  #closeWhenIdle(): void {
    if (this.#idleCloseMs <= 0 || this.#lanes.some((l) => l.busy)) return;
    clearTimeout(this.#idleTimer);
    this.#idleTimer = setTimeout(() => {
      this.#idleTimer = undefined;
      for (const lane of this.#lanes.slice(1))
        if (!lane.busy && lane.host.closeIdle()) this.#log.info({ lane: lane.index }, 'chromium closed while idle');
    }, this.#idleCloseMs);
    this.#idleTimer.unref();
  }

  #watched(lane: Lane, lease: PageLease, limitBytes = this.#watchdog.limitBytes): LaneLease {
    const pid = lease.pid;
    const listeners: (() => void)[] = [];
    let exceeded: PageMemoryUse | undefined;
    const fire = (use: PageMemoryUse): void => {
      if (exceeded) return;
      exceeded = use;
      this.#memoryKills++;
      this.#log.warn(
        { lane: lane.index, mb: Math.round(use.bytes / 2 ** 20), renderers: use.renderers },
        'page memory limit exceeded',
      );
      for (const fn of listeners.splice(0)) fn();
    };
    const watch = this.#watchdog.watch(pid, fire, limitBytes);
    this.#watches.add(watch);
    lane.watch = watch;
    // A renderer that died of memory before the watchdog saw it (V8's own heap limit).
    lane.onOom = () => fire(watch.use);
    let closing: Promise<void> | undefined;
    return {
      page: lease.page,
      pid: lease.pid,
      context: lease.context,
      egress: lease.egress,
      get memoryExceeded() {
        return exceeded;
      },
      get memoryBytes() {
        return watch.use.bytes;
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
        this.#watches.delete(watch);
        if (lane.watch === watch) lane.watch = undefined;
        closing ??= lease.close().finally(() => this.#release(lane));
        return closing;
      },
    };
  }

  async close(): Promise<void> {
    clearTimeout(this.#idleTimer);
    for (const w of this.#waiters.splice(0)) w(undefined);
    await Promise.all(this.#lanes.map((l) => l.host.close()));
    for (const w of this.#watches) w.stop();
    this.#watches.clear();
  }
}
