// Chromium: launched once with the flags below, relaunched if it dies. Every
// request gets a fresh incognito browser context and page, closed afterwards.
import type { Browser, BrowserContext, Page } from 'puppeteer';
import type { ChromiumMode } from '../../common/config.js';
import type { Logger } from '../../common/log.js';
import type { ContextEgress } from '../egress-client/remote.js';
import { background } from '../../common/background.js';
import type { DroppedMessage } from './cdp-transport.js';
import { startChromium, type ChromiumProcess } from './chromium-process.js';

/** How long closing a context may take before the browser is considered stuck. */
export const CONTEXT_CLOSE_TIMEOUT_MS = 5_000;
/** Dropped DevTools messages logged one by one per lane; past that, every 1000th. */
const DROPPED_LOGGED = 20;
/** Wait between relaunch attempts after Chromium dies. */
export const RELAUNCH_BACKOFF_MS = 500;
/** How long the clipboard janitor's page is kept after the last request ended (see #closeJanitorWhenIdle). */
export const JANITOR_IDLE_MS = 5_000;
/** How long a lease waits for the clipboard emptying after the previous request (see #clipboardEmptied). */
export const CLIPBOARD_WAIT_MS = 5_000;
/**
 * What a heavy request's backed-up Chromium may send of the request's events
 * (dropped unread) before it answers the closing of the context, before it is
 * killed and replaced instead (#discard). Measured: the e2e console flood had
 * 5-9 MB left to send then; a burst that is over has nothing left. Small
 * beside what a launch costs (~500 ms of CPU).
 */
export const BACKLOG_DRAIN_BYTES = 2 * 2 ** 20;
/** How often that is looked at while the context closes. */
const BACKLOG_CHECK_MS = 20;

/**
 * The V8 heap of each renderer, in MiB, when no page memory limit says otherwise.
 * With PAGE_MEMORY_MB the heap limit is set above it (see rendererHeapMb): near its
 * own limit V8 collects garbage for a long time before it gives up (a 64 MiB heap
 * took 112 s to die, measured), while the page memory watchdog ends the page within
 * a poll once the lane's memory passes PAGE_MEMORY_MB.
 */
export const RENDERER_HEAP_MB = 512;

/** The renderers' V8 heap limit for a page memory limit: twice it, so the watchdog acts first. */
export function rendererHeapMb(pageMemoryMb: number): number {
  return Math.max(RENDERER_HEAP_MB, 2 * pageMemoryMb);
}

/**
 * Chromium features that cost every new context work no one sees (each measured
 * with npm run bench):
 * - WebUIOmniboxPopup, WebUIOmniboxAimPopup: every new context opens a window,
 *   and each window loaded the address bar's two popups (chrome://omnibox-popup.
 *   top-chrome) in a renderer of its own, ~400 ms of CPU per context. Without
 *   them a fresh context costs one renderer.
 * - SpareRendererForSitePerProcess: Chromium keeps a renderer started ahead for
 *   the browser context used last, which here is the one about to be closed, so
 *   it is started and thrown away per request. Off: ~12% more requests per
 *   second at 4 clients, and the count of Chromium processes at rest is steady.
 */
export const PER_CONTEXT_FEATURES_OFF = [
  'WebUIOmniboxPopup',
  'WebUIOmniboxAimPopup',
  'SpareRendererForSitePerProcess',
] as const;

/**
 * Run in a blank page: a copy whose only data is an empty text replaces every
 * format on the clipboard. Puppeteer's evaluate carries a user gesture, which
 * execCommand('copy') needs.
 */
const CLEAR_CLIPBOARD = `(() => {
  const empty = (e) => { e.clipboardData.setData('text/plain', ''); e.preventDefault(); };
  document.addEventListener('copy', empty, true);
  try { return document.execCommand('copy'); } finally { document.removeEventListener('copy', empty, true); }
})()`;

/** A bypass list that removes Chromium's implicit loopback bypass, and adds none. */
const PROXY_BYPASS_NONE = '<-loopback>';

/** A context's proxy: the guard's port for that context alone, and no bypass. */
export function contextProxy(port: number): { proxyServer: string; proxyBypassList: string[] } {
  return { proxyServer: `http://127.0.0.1:${port}`, proxyBypassList: [PROXY_BYPASS_NONE] };
}

/**
 * The headless shell's GPU process (the display compositor; --disable-gpu: no
 * GPU) and its network service run as the browser process does: the same user,
 * its namespaces, no seccomp filter (read in /proc here; only renderers are
 * sandboxed). Run in the browser process, they cross no privilege boundary and
 * save two processes per lane: ~45 MB of PSS and ~12 ms of CPU per request
 * (their IPC with the browser; measured under 4 clients). The cost is crash
 * isolation: a crash in either is the lane's Chromium crashing, which fails its
 * one request and is relaunched (docs/chromium.md). The full browser keeps them apart.
 */
export const SHELL_IN_PROCESS_ARGS = ['--in-process-gpu', '--enable-features=NetworkServiceInProcess2'] as const;

/**
 * `sandboxed`: Chromium's own sandbox (seccomp-bpf, namespaces) is on. It is
 * off only where it cannot start (as root, or a kernel or container without user
 * namespaces); see BrowserHost#launch.
 */
export function chromiumArgs(guardPort: number, sandboxed = true, heapMb: number = RENDERER_HEAP_MB): string[] {
  return [
    ...(sandboxed ? [] : ['--no-sandbox']),
    // Keep Chromium from calling home on a closed network.
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run',
    '--no-default-browser-check',
    '--disable-domain-reliability',
    '--disable-breakpad',
    '--metrics-recording-only',
    // SECURITY: no QUIC/UDP around the proxy.
    '--disable-quic',
    // SECURITY: all traffic through the egress guard; "<-loopback>" removes the
    // implicit bypass, so loopback and link-local go through the guard too. This
    // browser-wide port carries only Chromium's own requests, and the guard lets
    // none of them out; each request's context has a proxy port of its own (see
    // contextProxy below).
    `--proxy-server=http://127.0.0.1:${guardPort}`,
    `--proxy-bypass-list=${PROXY_BYPASS_NONE}`,
    // SECURITY: Chromium resolves no names itself (the guard does); the proxy is an IP literal.
    '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
    // SECURITY: WebRTC may not send UDP around the proxy (STUN to internal hosts).
    // The full browser reads the first (a Chrome preference); the headless shell,
    // which has no preferences, knows only the second (content's switch) and
    // without it sent STUN to any address a page named (egress.test.ts, webrtc).
    '--webrtc-ip-handling-policy=disable_non_proxied_udp',
    '--force-webrtc-ip-handling-policy=disable_non_proxied_udp',
    `--disable-features=WebRtcHideLocalIpsWithMdns,DnsOverHttps,AsyncDns,MediaRouter,OptimizationHints,Translate,${PER_CONTEXT_FEATURES_OFF.join(',')}`,
    // A page's JavaScript heap is bounded (a backstop: PAGE_MEMORY_MB's watchdog,
    // src/slot/browser/page-memory.ts, acts first and bounds all of a page's memory).
    `--js-flags=--max-old-space-size=${heapMb}`,
    // SECURITY: screen and tab capture (getDisplayMedia) are refused at once. The
    // full browser has no picker to ask with: it hung the page or crashed the whole
    // browser (every tenant's request) trying to list screens without a display.
    '--auto-reject-capture',
    '--auto-reject-this-tab-capture',
    // SECURITY: the full browser keeps one picture-in-picture window for all
    // contexts: one request opening a document picture-in-picture window closed
    // another's (a bit between requests), and the window is one more page. Off.
    '--disable-blink-features=DocumentPictureInPictureAPI',
    // SECURITY: a video's picture-in-picture is the same one window (on the full
    // browser B's video closed A's); no feature switch removes it, but this Blink
    // setting is the one the embedder forbids it with: applied by the browser to
    // every page it makes (frames of other sites, about:blank and sandboxed frames,
    // popups), kept through emulation changes, it makes pictureInPictureEnabled
    // false and requestPictureInPicture() reject (NotSupportedError), before any
    // user-activation check. docs/security.md, "Tenants and the shared browser". Chromium keeps
    // only the last of a repeated switch: any other Blink setting goes into this one
    // (test/unit/chromium-args.test.ts).
    '--blink-settings=pictureInPictureEnabled=false',
    '--disable-gpu',
    '--disable-dev-shm-usage',
    '--mute-audio',
    '--hide-scrollbars',
    // SECURITY: the headless shell has no popup blocker (that is the full browser's,
    // kept on below): a page could open hundreds of windows per request. Scripts
    // are never given popups, so the shell opens none (window.open returns null).
    // The full browser does not know this switch.
    '--block-new-web-contents',
    // The headless shell sends no Accept-Language and gives navigator.languages
    // ['en-US'] without it; with it both Chromiums say en-US, en (docs/chromium.md).
    '--accept-lang=en-US,en',
  ];
}

/** Closes the pages Chromium opened at launch (its default context's blank page). */
async function closeStartupPages(browser: Browser, logger: Logger): Promise<void> {
  try {
    await Promise.all((await browser.pages()).map((p) => p.close()));
  } catch (e) {
    // Only memory is lost: the page stays blank.
    logger.warn({ err: String(e) }, "closing Chromium's startup page failed");
  }
}

/** The warning that Chromium runs without its sandbox was logged in this process. */
let warnedUnsandboxed = false;

export interface BrowserHostOptions {
  readonly executablePath: string;
  /** `shell`: chromium-headless-shell, launched in Puppeteer's `headless: 'shell'`; `full`: the new headless mode. */
  readonly chromium: ChromiumMode;
  /** The guard's browser-wide port, for Chromium's own requests (all refused). */
  readonly guardPort: number;
  /** A guard port for one new context, bound to the request that leases it. */
  readonly openEgress: () => Promise<ContextEgress>;
  readonly protocolTimeoutMs: number;
  /** Fresh contexts (each with a blank page) kept ready ahead of demand; each is used once. */
  readonly prewarmedContexts: number;
  /** Chromium is replaced after this many contexts (0: never), without failing requests in flight. */
  readonly recycleAfterContexts: number;
  /** The renderers' V8 heap limit (RENDERER_HEAP_MB when absent). */
  readonly rendererHeapMb?: number;
  /** Chromium's stderr (where a renderer's out-of-memory death is written), as it comes. */
  readonly onOutput?: (text: string) => void;
  /** How long the clipboard janitor's page outlives the last emptying; JANITOR_IDLE_MS unless told (tests). */
  readonly janitorIdleMs?: number;
  /** A context made ahead began to be made, or is ready (or failed): makingSpares may have changed. */
  readonly onSpares?: () => void;
  readonly logger: Logger;
  /**
   * Tests only, never from configuration: SPKI hashes (base64 SHA-256) of test
   * certificates Chromium takes as valid, so an https fixture on loopback can
   * show what Chromium keeps of a secure origin (HSTS, shared dictionaries).
   */
  readonly testTrustedSpki?: readonly string[];
}

export interface PageLease {
  readonly page: Page;
  /** The process id of the Chromium (browser process) the page is in. */
  readonly pid: number;
  readonly context: BrowserContext;
  /** The context's identity at the egress guard: what it did, and the errors it met. */
  readonly egress: ContextEgress;
  /** Holds the DevTools messages of the page's Chromium, or lets them go on (while its lane is paused: lanes.ts). */
  holdMessages(held: boolean): void;
  /**
   * Closes the context (and its page); safe to call more than once. heavy: the
   * request used more than its CPU budget (lanes.ts), so a Chromium it left
   * backed up is replaced rather than drained.
   */
  close(heavy?: boolean): Promise<void>;
}

/** A context made ahead of demand; ready once its page is open. */
interface Spare {
  readonly gen: Generation;
  readonly lease: Promise<PageLease>;
  ready: boolean;
}

/** One Chromium process and what it has served. */
interface Generation {
  readonly chromium: ChromiumProcess;
  readonly browser: Browser;
  /** Contexts made in it, spares included. */
  served: number;
  /** Contexts open in it now, spares included. */
  live: number;
  /** Replaced: it makes no new contexts and is closed when its last one closes. */
  retiring: boolean;
  successor: Promise<void> | undefined;
  /** A blank page of the service's own (no request's), from which the clipboard is emptied. */
  janitor: Promise<Page> | undefined;
  /** Closes the janitor's context once no request has ended for JANITOR_IDLE_MS. */
  janitorIdle: NodeJS.Timeout | undefined;
  /** A clipboard emptying is running; `again` asks for one more after it; `done` settles when it ends. */
  clearing: { again: boolean; done: Promise<void> | undefined } | undefined;
}

export class BrowserHost {
  readonly #opts: BrowserHostOptions;
  #current: Generation | undefined;
  #launching: Promise<Generation> | undefined;
  readonly #retiring = new Set<Generation>();
  #closed = false;
  #restarts = 0;
  #recycles = 0;
  #dropped = 0;
  readonly #spares: Spare[] = [];
  /** SECURITY: Chromium runs in its own sandbox unless it cannot (as root it refuses to). */
  #sandboxed = process.getuid?.() !== 0;
  /** Chromium started once: whether it can run sandboxed here is known. */
  #sandboxTried = false;

  constructor(opts: BrowserHostOptions) {
    this.#opts = opts;
  }

  /** Chromium runs with its own sandbox on (false only where it could not start with it). */
  get sandboxed(): boolean {
    return this.#sandboxed;
  }

  get ready(): boolean {
    return this.#current?.browser.connected === true;
  }

  /** Relaunches after Chromium died. */
  get restarts(): number {
    return this.#restarts;
  }

  /** Planned replacements after recycleAfterContexts contexts. */
  get recycles(): number {
    return this.#recycles;
  }

  /** Contexts made ahead of demand, open and not yet used. */
  get contextsReady(): number {
    return this.#spares.filter((s) => s.ready).length;
  }

  /** A context is being made ahead of demand now: work for the next request, not for one running. */
  get makingSpares(): boolean {
    return this.#spares.some((s) => !s.ready);
  }

  /** The current Chromium process id, for tests and health checks. */
  get pid(): number | undefined {
    return this.#current?.chromium.pid;
  }

  /**
   * Every Chromium of the host now: the current one and those retiring, which
   * may still serve a request (each leads a process group of its own).
   */
  get pids(): number[] {
    const all = [...this.#retiring, ...(this.#current ? [this.#current] : [])];
    return [...new Set(all.map((g) => g.chromium.pid))];
  }

  /** DevTools messages dropped for being over MAX_CDP_MESSAGE_BYTES (see cdp-transport.ts). */
  get droppedMessages(): number {
    return this.#dropped;
  }

  async start(): Promise<void> {
    await this.#get();
  }

  #get(): Promise<Generation> {
    if (this.#closed) return Promise.reject(new Error('the browser is shut down'));
    if (this.#current?.browser.connected) return Promise.resolve(this.#current);
    this.#launching ??= this.#launch()
      .then((gen) => {
        this.#current = gen;
        setImmediate(() => this.#fillSpares());
        return gen;
      })
      .finally(() => {
        this.#launching = undefined;
      });
    return this.#launching;
  }

  async #launch(): Promise<Generation> {
    const t0 = Date.now();
    if (!this.#sandboxed) this.#warnUnsandboxed('running as root');
    let chromium: ChromiumProcess;
    try {
      chromium = await this.#launchBrowser();
    } catch (e) {
      if (!this.#sandboxed || this.#sandboxTried) throw e;
      // Chromium that cannot set up its sandbox (no user namespaces, as in a
      // container without a seccomp profile that allows them) exits at once; over
      // a pipe Puppeteer then reports only "Target closed". So: one more try with
      // the sandbox, and if that fails too, a try without it. If that one starts,
      // Chromium runs unsandboxed (the egress guard, the fresh context and the
      // executor's user still hold), a warning is logged once, and /health says so.
      try {
        chromium = await this.#launchBrowser();
      } catch {
        chromium = await this.#launchBrowser(false).catch(() => {
          throw e;
        });
        this.#sandboxed = false;
        this.#warnUnsandboxed(`Chromium did not start with its sandbox: ${String(e).split('\n')[0]}`);
      }
    }
    this.#sandboxTried = true;
    const browser = chromium.browser;
    // Chromium opens a blank page in its default context at launch (Puppeteer's
    // launch arguments ask for one); nothing uses it, and its renderer is ~18 MB
    // of PSS per lane at rest (measured): it is closed.
    await closeStartupPages(browser, this.#opts.logger);
    const gen: Generation = {
      chromium,
      browser,
      served: 0,
      live: 0,
      retiring: false,
      successor: undefined,
      janitor: undefined,
      janitorIdle: undefined,
      clearing: undefined,
    };
    browser.once('disconnected', () => {
      this.#retiring.delete(gen);
      if (this.#current === gen) this.#current = undefined;
      this.#dropSpares((s) => s.gen === gen);
      if (this.#closed || gen.retiring) return;
      this.#restarts++;
      this.#opts.logger.error({ restarts: this.#restarts }, 'chromium disconnected; relaunching');
      setTimeout(() => {
        this.#get().catch((e: unknown) => this.#opts.logger.error({ err: String(e) }, 'chromium relaunch failed'));
      }, RELAUNCH_BACKOFF_MS).unref();
    });
    this.#opts.logger.info({ ms: Date.now() - t0, pid: chromium.pid, sandboxed: this.#sandboxed }, 'chromium started');
    return gen;
  }

  async #launchBrowser(sandboxed = this.#sandboxed): Promise<ChromiumProcess> {
    // Started by us rather than puppeteer.launch, for a DevTools pipe with a bound
    // on one message's size (src/slot/browser/chromium-process.ts, cdp-transport.ts).
    return await startChromium({
      executablePath: this.#opts.executablePath,
      // The shell knows only the old headless mode (--headless); the full browser runs the new one.
      headless: this.#opts.chromium === 'shell' ? 'shell' : true,
      args: [
        ...chromiumArgs(this.#opts.guardPort, sandboxed, this.#opts.rendererHeapMb),
        ...(this.#opts.chromium === 'shell' ? SHELL_IN_PROCESS_ARGS : []),
        ...(this.#opts.testTrustedSpki?.length
          ? [`--ignore-certificate-errors-spki-list=${this.#opts.testTrustedSpki.join(',')}`]
          : []),
      ],
      // SECURITY: keep Chromium's popup blocker on.
      ignoreDefaultArgs: ['--disable-popup-blocking'],
      protocolTimeoutMs: this.#opts.protocolTimeoutMs,
      defaultViewport: { width: 1280, height: 800 },
      ...(this.#opts.onOutput ? { onOutput: this.#opts.onOutput } : {}),
      onDropped: (d) => this.#droppedMessage(d),
    });
  }

  /**
   * A DevTools message over MAX_CDP_MESSAGE_BYTES was dropped (a response was
   * answered with an error for its call). Logged up to DROPPED_LOGGED times per
   * lane, then counted only: a page can make such messages in a loop.
   */
  #droppedMessage(d: DroppedMessage): void {
    this.#dropped++;
    if (this.#dropped <= DROPPED_LOGGED || this.#dropped % 1000 === 0)
      this.#opts.logger.warn(
        { bytes: d.bytes, ...(d.method ? { event: d.method } : { call: d.id ?? 'unknown' }), dropped: this.#dropped },
        'devtools message over the size limit dropped',
      );
  }

  /** Once per process: Chromium runs without its own sandbox, and why. */
  #warnUnsandboxed(reason: string): void {
    // One warning for the executor, whichever of its lanes' Chromium tells it first.
    if (warnedUnsandboxed) return;
    warnedUnsandboxed = true;
    this.#opts.logger.warn(
      { reason },
      "chromium runs without its own sandbox (see docs/container.md, Chromium's sandbox in a container); /health says chromiumSandbox: false",
    );
  }

  /**
   * A fresh incognito context with one blank page, for one request: one made
   * ahead of demand if there is one, else a new one. Spares are replaced when a
   * request's context is closed (see #newLease).
   *
   * The newest ready spare is taken, not the oldest (measured when Chromium
   * still kept its own spare renderer for the context used last: p50 ~80 → ~63
   * ms with two spares, 300 ms apart; not measured again since that renderer
   * and the omnibox popups were turned off, see PER_CONTEXT_FEATURES_OFF).
   */
  async lease(requestId: string, proxy?: string): Promise<PageLease> {
    // SECURITY: the previous request's end empties the clipboard in the
    // background; the next request does not start before that is done. The
    // janitor's page is made again after an idle spell (#closeJanitorWhenIdle),
    // so that emptying can take a renderer's launch, during which a page given
    // at once (a context made ahead) held what the request before had copied.
    await this.#clipboardEmptied();
    const lease = await this.#take();
    // SECURITY: the context's traffic is the request's from here; before (a spare)
    // the guard carried none of it, and after close() it carries none again. It
    // leaves through the request's upstream proxy (a name; the egress process
    // holds the rest). The guard (another process) holds it so before the page
    // makes a connection.
    try {
      await lease.egress.bind(requestId, proxy);
    } catch (e) {
      background(lease.close(), 'closing a context', this.#opts.logger);
      throw e;
    }
    return lease;
  }

  async #take(): Promise<PageLease> {
    while (this.#spares.length > 0) {
      const readyAt = this.#spares.findLastIndex((s) => s.ready);
      // None ready (under load): the oldest one being made is the nearest to ready.
      const spare = this.#spares.splice(readyAt >= 0 ? readyAt : 0, 1)[0] as Spare;
      const lease = await spare.lease.catch(() => undefined);
      // SECURITY: a spare whose egress session is gone (its egress process stopped) is never leased.
      if (
        lease &&
        !lease.page.isClosed() &&
        spare.gen.browser.connected &&
        !spare.gen.retiring &&
        lease.egress.state === 'spare'
      )
        return lease;
      if (lease) background(lease.close(), 'closing a context', this.#opts.logger);
    }
    return await this.#newLease();
  }

  #fillSpares(): void {
    const gen = this.#current;
    if (this.#closed || !gen?.browser.connected) return;
    while (this.#spares.length < this.#opts.prewarmedContexts) {
      const spare: Spare = { gen, lease: this.#newLease(), ready: false };
      spare.lease.then(
        () => {
          spare.ready = true;
          this.#opts.onSpares?.();
        },
        () => {
          // A spare that could not be made (its egress session was refused: the egress
          // process stopped meanwhile) would hold its place for ever: another is made.
          const i = this.#spares.indexOf(spare);
          if (i >= 0) this.#spares.splice(i, 1);
          this.#opts.onSpares?.();
          this.#refillSoon();
        },
      );
      this.#spares.push(spare);
      this.#opts.onSpares?.();
    }
  }

  /** Spares again after a moment (a failure that repeats at once must not spin). */
  #refillSoon(): void {
    if (this.#closed) return;
    setTimeout(() => this.#fillSpares(), RELAUNCH_BACKOFF_MS).unref();
  }

  /**
   * Closes every context made ahead (their egress sessions are gone) and makes
   * new ones: a spare whose session was still being opened has no context to
   * close, and nothing else would replace it until a request came (seen: a test
   * waited 30 s for a spare after the egress process was killed twice in a row).
   */
  dropSpares(): void {
    this.#dropSpares();
    this.#refillSoon();
  }

  #dropSpares(which: (s: Spare) => boolean = () => true): void {
    for (let i = this.#spares.length - 1; i >= 0; i--) {
      const spare = this.#spares[i] as Spare;
      if (!which(spare)) continue;
      this.#spares.splice(i, 1);
      void spare.lease.then(
        (l) => l.close(),
        () => undefined,
      );
    }
    this.#opts.onSpares?.();
  }

  async #newLease(): Promise<PageLease> {
    const gen = await this.#get();
    gen.served++;
    gen.live++;
    this.#maybeRecycle(gen);
    let context: BrowserContext;
    let egress: ContextEgress | undefined;
    try {
      egress = await this.#opts.openEgress();
      context = await gen.browser.createBrowserContext({
        downloadBehavior: { policy: 'deny' },
        ...contextProxy(egress.port),
      });
    } catch (e) {
      if (egress) background(egress.close(), 'closing an egress session', this.#opts.logger);
      this.#contextGone(gen);
      throw e;
    }
    const session = egress;
    let closed: Promise<void> | undefined;
    const close = (heavy = false): Promise<void> => {
      if (closed) return closed;
      // SECURITY: what the request's pages still send (a flood of console events
      // queued in Chromium) is dropped unread rather than parsed on the executor's
      // one thread, where other requests wait for their turn.
      if (context.id !== undefined) gen.chromium.retireContext(context.id);
      // SECURITY: a Chromium that still has more for us than the transport queues
      // (a page's console flood, held back while it was paused) would send all of
      // it before the answer to closing the context: ~25 MB, ~2 s of its browser
      // process and of the executor's thread after the request (measured), beside
      // the other lanes' requests. It is killed instead, and another launched.
      // Only after a request past its CPU budget, and only once it has sent more
      // than BACKLOG_DRAIN_BYTES of the request's events since: a launch and its
      // contexts cost ~500 ms of CPU (measured), which a request must not buy with
      // a burst of console lines that is over (it did: a burst all read before
      // the request ended, in a request just past its budget, relaunched its
      // Chromium whenever the burst had paused the pipe within the last second).
      // Counted in bytes, not time: a slow machine does not turn a short backlog
      // into a launch.
      const drainedFrom = heavy && gen.chromium.backedUp ? gen.chromium.droppedEventBytes : undefined;
      const draining =
        drainedFrom === undefined
          ? undefined
          : setInterval(() => {
              if (gen.chromium.droppedEventBytes - drainedFrom <= BACKLOG_DRAIN_BYTES) return;
              clearInterval(draining);
              this.#discard(gen);
            }, BACKLOG_CHECK_MS).unref();
      // SECURITY: the request is over: its connections are cut at once, and the
      // port stays held (refusing) until the context is really gone, so no later
      // request's context can be given the same port while this one may use it.
      session.end();
      const contextClosed = context.close();
      background(
        contextClosed.catch(() => undefined).finally(() => session.close()),
        'closing an egress session',
        this.#opts.logger,
      );
      let timer: NodeJS.Timeout | undefined;
      closed = Promise.race([
        contextClosed,
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, CONTEXT_CLOSE_TIMEOUT_MS).unref();
        }),
      ])
        .catch(() => undefined)
        .finally(() => {
          clearTimeout(timer);
          clearInterval(draining);
          this.#contextGone(gen);
          this.#clearClipboard(gen);
          // The replacement is made once this request's context is gone, between
          // requests, rather than beside the next request's navigation.
          this.#fillSpares();
        });
      return closed;
    };
    try {
      const page = await context.newPage();
      return {
        page,
        pid: gen.chromium.pid,
        context,
        egress: session,
        holdMessages: (held) => gen.chromium.holdMessages(held),
        close,
      };
    } catch (e) {
      await close();
      throw e;
    }
  }

  /**
   * Empties Chromium's clipboard, which every context shares, after a request:
   * what a page copied does not outlive its request. Done from a blank page of
   * the service's own, where no tenant's page can interfere; requests that end
   * together share one emptying.
   */
  #clearClipboard(gen: Generation): void {
    if (!gen.browser.connected) return;
    if (gen.clearing) {
      gen.clearing.again = true;
      return;
    }
    const state: NonNullable<Generation['clearing']> = { again: false, done: undefined };
    gen.clearing = state;
    clearTimeout(gen.janitorIdle);
    const run = async (): Promise<void> => {
      do {
        state.again = false;
        gen.janitor ??= gen.browser
          .createBrowserContext({ downloadBehavior: { policy: 'deny' } })
          .then((c) => c.newPage());
        const page = await gen.janitor;
        await page.evaluate(CLEAR_CLIPBOARD);
      } while (state.again && gen.browser.connected);
    };
    state.done = run()
      .catch((e: unknown) => {
        gen.janitor = undefined;
        if (gen.browser.connected) this.#opts.logger.warn({ err: String(e) }, 'emptying the clipboard failed');
      })
      .finally(() => {
        gen.clearing = undefined;
        this.#closeJanitorWhenIdle(gen);
      });
    background(state.done, 'emptying the clipboard', this.#opts.logger);
  }

  /**
   * The clipboard emptying running in the current Chromium (where the lease
   * comes from; a retiring one makes no more contexts, and each Chromium has a
   * clipboard of its own) has ended, or CLIPBOARD_WAIT_MS has passed: each step
   * of one is a DevTools call, bounded by the protocol timeout, but a lease does
   * not wait that long.
   */
  async #clipboardEmptied(): Promise<void> {
    const running = this.#current?.clearing?.done;
    if (running === undefined) return;
    let timer: NodeJS.Timeout | undefined;
    const late = await Promise.race([
      running.then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), CLIPBOARD_WAIT_MS).unref();
      }),
    ]);
    clearTimeout(timer);
    if (late)
      this.#opts.logger.warn({ ms: CLIPBOARD_WAIT_MS }, 'a lease did not wait longer for the clipboard to be emptied');
  }

  /**
   * The janitor's page is a renderer of its own (~20 MB of PSS, measured): kept
   * while requests come (making it for each would cost a renderer's launch per
   * request), closed once none has ended for JANITOR_IDLE_MS, and made again by
   * the next emptying.
   */
  #closeJanitorWhenIdle(gen: Generation): void {
    clearTimeout(gen.janitorIdle);
    gen.janitorIdle = setTimeout(() => {
      gen.janitorIdle = undefined;
      const janitor = gen.janitor;
      if (gen.clearing || janitor === undefined) return;
      gen.janitor = undefined;
      background(
        janitor.then((page) => page.browserContext().close()).catch(() => undefined),
        'closing the clipboard janitor',
        this.#opts.logger,
      );
    }, this.#opts.janitorIdleMs ?? JANITOR_IDLE_MS).unref();
  }

  /**
   * Closes this host's Chromium while no request's context is open in it (its
   * contexts made ahead are dropped); the next lease launches another. Not a
   * restart and not a recycle. Returns whether it was closed.
   */
  closeIdle(): boolean {
    const gen = this.#current;
    if (gen === undefined || this.#closed || this.#launching || gen.retiring || gen.successor) return false;
    if (this.#requestContexts(gen) > 0) return false;
    this.#retire(gen);
    if (gen.live <= 0) background(this.#closeGeneration(gen), 'closing an idle Chromium', this.#opts.logger);
    return true;
  }

  /**
   * Kills a Chromium at once (its process group) and launches the next, when
   * no other context than the closing request's is open in it: the next
   * context comes from the new one. Counted as a recycle, not a restart.
   */
  #discard(gen: Generation): void {
    if (gen.retiring || this.#requestContexts(gen) > 1 || this.#closed) return;
    this.#retire(gen);
    this.#recycles++;
    this.#opts.logger.info(
      { recycles: this.#recycles, pid: gen.chromium.pid },
      'chromium discarded: it had more DevTools messages queued than the transport holds',
    );
    gen.chromium.kill();
    this.#get().catch((e: unknown) => this.#opts.logger.error({ err: String(e) }, 'chromium relaunch failed'));
  }

  /** Contexts open in gen for requests (its spares not counted). */
  #requestContexts(gen: Generation): number {
    return gen.live - this.#spares.filter((s) => s.gen === gen).length;
  }

  /**
   * gen makes no more contexts: it is no longer the current Chromium, its
   * contexts made ahead are closed, and it is closed once its last context is
   * (#contextGone; the caller closes it now if none is open).
   */
  #retire(gen: Generation): void {
    gen.retiring = true;
    this.#retiring.add(gen);
    if (this.#current === gen) this.#current = undefined;
    clearTimeout(gen.janitorIdle);
    this.#dropSpares((s) => s.gen === gen);
  }

  #contextGone(gen: Generation): void {
    gen.live--;
    if (gen.retiring && gen.live <= 0)
      background(this.#closeGeneration(gen), 'closing a retired Chromium', this.#opts.logger);
  }

  /**
   * After recycleAfterContexts contexts, a successor is launched beside the
   * current Chromium; once it is up, new contexts come from it, and the old one
   * is closed when its last context closes. Requests in flight are not touched.
   */
  #maybeRecycle(gen: Generation): void {
    const after = this.#opts.recycleAfterContexts;
    if (after <= 0 || gen.served < after || gen.successor !== undefined || gen.retiring) return;
    gen.successor = this.#launch().then(
      (next) => {
        if (this.#closed || this.#current !== gen) {
          return next.chromium.close();
        }
        this.#current = next;
        this.#retire(gen);
        this.#recycles++;
        this.#opts.logger.info(
          { recycles: this.#recycles, contexts: gen.served, pid: next.chromium.pid },
          'chromium recycled',
        );
        if (gen.live <= 0) background(this.#closeGeneration(gen), 'closing a retired Chromium', this.#opts.logger);
        this.#fillSpares();
        return undefined;
      },
      (e: unknown) => {
        // Keep serving from the current one; try again at the next context.
        gen.successor = undefined;
        this.#opts.logger.error({ err: String(e) }, 'chromium successor failed to launch');
      },
    );
  }

  async #closeGeneration(gen: Generation): Promise<void> {
    this.#retiring.delete(gen);
    await gen.chromium.close();
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#dropSpares();
    const current = this.#current ?? (await this.#launching?.catch(() => undefined));
    this.#current = undefined;
    const all = [...this.#retiring, ...(current ? [current] : [])];
    // A successor being launched is closed by #maybeRecycle when it arrives (closed is set).
    await Promise.all([
      ...all.map((g) => this.#closeGeneration(g)),
      ...all.map((g) => g.successor?.catch(() => undefined)),
    ]);
  }
}
