// Chromium: launched once with the flags below, relaunched if it dies. Every
// request gets a fresh incognito browser context and page, closed afterwards.
import puppeteer, { type Browser, type BrowserContext, type Page } from 'puppeteer';
import type { Logger } from '../log.js';

/** How long closing a context may take before the browser is considered stuck. */
export const CONTEXT_CLOSE_TIMEOUT_MS = 5_000;
/** Wait between relaunch attempts after Chromium dies. */
export const RELAUNCH_BACKOFF_MS = 500;

/** The V8 heap of each renderer, in MiB. */
export const RENDERER_HEAP_MB = 512;

export function chromiumArgs(guardPort: number): string[] {
  return [
    // As root Chromium refuses to start without this; the isolation we rely on is
    // the incognito context per request, the egress guard and the V8 isolate.
    '--no-sandbox',
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
    // implicit bypass, so loopback and link-local go through the guard too.
    `--proxy-server=http://127.0.0.1:${guardPort}`,
    '--proxy-bypass-list=<-loopback>',
    // SECURITY: Chromium resolves no names itself (the guard does); the proxy is an IP literal.
    '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
    // SECURITY: WebRTC may not send UDP around the proxy (STUN to internal hosts).
    '--webrtc-ip-handling-policy=disable_non_proxied_udp',
    '--disable-features=WebRtcHideLocalIpsWithMdns,DnsOverHttps,AsyncDns,MediaRouter,OptimizationHints,Translate',
    // A page's JavaScript heap is bounded, so a page that eats memory crashes its
    // renderer (the request fails fast) instead of taking the machine's memory.
    `--js-flags=--max-old-space-size=${RENDERER_HEAP_MB}`,
    '--disable-gpu',
    '--disable-dev-shm-usage',
    '--mute-audio',
    '--hide-scrollbars',
  ];
}

export interface BrowserHostOptions {
  readonly executablePath: string;
  readonly guardPort: number;
  readonly protocolTimeoutMs: number;
  /** Fresh contexts (each with a blank page) kept ready ahead of demand; each is used once. */
  readonly prewarmedContexts: number;
  readonly logger: Logger;
}

export interface PageLease {
  readonly page: Page;
  readonly context: BrowserContext;
  /** Closes the context (and its page); safe to call more than once. */
  close(): Promise<void>;
}

export class BrowserHost {
  readonly #opts: BrowserHostOptions;
  #browser: Browser | undefined;
  #launching: Promise<Browser> | undefined;
  #closed = false;
  #restarts = 0;
  readonly #spares: Promise<PageLease>[] = [];

  constructor(opts: BrowserHostOptions) {
    this.#opts = opts;
  }

  get ready(): boolean {
    return this.#browser?.connected === true;
  }

  get restarts(): number {
    return this.#restarts;
  }

  /** The Chromium process id, for tests and health checks. */
  get pid(): number | undefined {
    return this.#browser?.process()?.pid;
  }

  async start(): Promise<void> {
    await this.#get();
  }

  #get(): Promise<Browser> {
    if (this.#closed) return Promise.reject(new Error('the browser is shut down'));
    if (this.#browser?.connected) return Promise.resolve(this.#browser);
    this.#launching ??= this.#launch().finally(() => {
      this.#launching = undefined;
    });
    return this.#launching;
  }

  async #launch(): Promise<Browser> {
    const t0 = Date.now();
    const browser = await puppeteer.launch({
      executablePath: this.#opts.executablePath,
      headless: true,
      pipe: true,
      args: chromiumArgs(this.#opts.guardPort),
      // SECURITY: keep Chromium's popup blocker on.
      ignoreDefaultArgs: ['--disable-popup-blocking'],
      protocolTimeout: this.#opts.protocolTimeoutMs,
      handleSIGINT: false,
      handleSIGTERM: false,
      handleSIGHUP: false,
      defaultViewport: { width: 1280, height: 800 },
    });
    this.#browser = browser;
    browser.once('disconnected', () => {
      if (this.#browser === browser) this.#browser = undefined;
      this.#dropSpares();
      if (this.#closed) return;
      this.#restarts++;
      this.#opts.logger.error({ restarts: this.#restarts }, 'chromium disconnected; relaunching');
      setTimeout(() => {
        this.#get().catch((e: unknown) => this.#opts.logger.error({ err: String(e) }, 'chromium relaunch failed'));
      }, RELAUNCH_BACKOFF_MS).unref();
    });
    this.#opts.logger.info({ ms: Date.now() - t0, pid: browser.process()?.pid }, 'chromium started');
    setImmediate(() => this.#fillSpares());
    return browser;
  }

  /**
   * A fresh incognito context with one blank page, for one request: one made
   * ahead of demand if there is one, else a new one. Spares are replaced when a
   * request's context is closed (see #newLease).
   */
  async lease(): Promise<PageLease> {
    while (this.#spares.length > 0) {
      const spare = this.#spares.shift() as Promise<PageLease>;
      const lease = await spare.catch(() => undefined);
      if (lease && !lease.page.isClosed() && this.#browser?.connected) return lease;
      if (lease) void lease.close();
    }
    return await this.#newLease();
  }

  #fillSpares(): void {
    if (this.#closed || !this.#browser?.connected) return;
    while (this.#spares.length < this.#opts.prewarmedContexts) {
      const spare = this.#newLease();
      spare.catch(() => undefined);
      this.#spares.push(spare);
    }
  }

  #dropSpares(): void {
    for (const spare of this.#spares.splice(0)) void spare.then((l) => l.close(), () => undefined);
  }

  async #newLease(): Promise<PageLease> {
    const browser = await this.#get();
    const context = await browser.createBrowserContext({ downloadBehavior: { policy: 'deny' } });
    let closed: Promise<void> | undefined;
    const close = (): Promise<void> => {
      closed ??= Promise.race([
        context.close(),
        new Promise<void>((resolve) => setTimeout(resolve, CONTEXT_CLOSE_TIMEOUT_MS).unref()),
      ])
        .catch(() => undefined)
        // The replacement is made once this request's context is gone, between
        // requests, rather than beside the next request's navigation.
        .finally(() => this.#fillSpares());
      return closed;
    };
    try {
      const page = await context.newPage();
      return { page, context, close };
    } catch (e) {
      await close();
      throw e;
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#dropSpares();
    const b = this.#browser ?? (await this.#launching?.catch(() => undefined));
    this.#browser = undefined;
    await b?.close().catch(() => b.process()?.kill('SIGKILL'));
  }
}
