// The slot's Chromium host: its generations (launched, relaunched if it dies,
// recycled after so many contexts, discarded when a heavy request left it
// backed up), and a lease per request: a fresh incognito context and page,
// closed afterwards. The parts: launch.ts, chromium-flags.ts, lease.ts,
// spares.ts, clipboard.ts; watched-lease.ts gives its leases to the slot's
// requests one at a time, their page memory watched.
import { background } from '../../common/background.js';
import { ApiError, notPrepared } from '../../common/errors.js';
import { emptyClipboard, type EmptyClipboard } from './clipboard.js';
import type { ContextEgress } from '../egress-client/remote.js';
import { Launcher, RELAUNCH_BACKOFF_MS, type Generation, type LaunchOptions } from './launch.js';
import { openLease, type LeaseHooks, type PageLease } from './lease.js';
import { Spares } from './spares.js';

export interface BrowserHostOptions extends LaunchOptions {
  /** A guard port for one new context, bound to the request that leases it. */
  readonly openEgress: () => Promise<ContextEgress>;
  /** Fresh contexts (each with a blank page) kept ready ahead of demand; each is used once. */
  readonly prewarmedContexts: number;
  /** Chromium is replaced after this many contexts (0: never), without failing requests in flight. */
  readonly recycleAfterContexts: number;
  /** A context made ahead began to be made, or is ready (or failed): contextsReady may have changed. */
  readonly onSpares?: () => void;
  /** How a leased page empties its Chromium's clipboard (clipboard.ts); tests inject a failing one. */
  readonly emptyClipboard?: EmptyClipboard;
}

export class BrowserHost {
  readonly #opts: BrowserHostOptions;
  readonly #launcher: Launcher;
  readonly #spares: Spares;
  readonly #leaseHooks: LeaseHooks;
  #current: Generation | undefined;
  #launching: Promise<Generation> | undefined;
  readonly #retiring = new Set<Generation>();
  #closed = false;
  #restarts = 0;
  #recycles = 0;

  constructor(opts: BrowserHostOptions) {
    this.#opts = opts;
    this.#launcher = new Launcher(opts);
    this.#spares = new Spares({
      count: opts.prewarmedContexts,
      make: () => this.#newLease(),
      current: () => this.#current,
      closed: () => this.#closed,
      ...(opts.onSpares ? { onChange: opts.onSpares } : {}),
      logger: opts.logger,
    });
    this.#leaseHooks = {
      openEgress: opts.openEgress,
      logger: opts.logger,
      contextGone: (gen) => this.#contextGone(gen),
      discard: (gen) => this.#discard(gen),
      refill: () => this.#spares.fill(),
    };
  }

  /** Chromium runs with its own sandbox on (false only where it could not start with it). */
  get sandboxed(): boolean {
    return this.#launcher.sandboxed;
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
    return this.#spares.ready;
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

  async start(): Promise<void> {
    await this.#get();
  }

  /** Starts Chromium and makes its spares: resolves once they are ready (or failed). */
  async warm(): Promise<void> {
    await this.#get();
    this.#spares.fill();
    await this.#spares.settled();
  }

  #get(): Promise<Generation> {
    if (this.#closed) return Promise.reject(new Error('the browser is shut down'));
    if (this.#current?.browser.connected) return Promise.resolve(this.#current);
    this.#launching ??= this.#launch()
      .then((gen) => {
        this.#current = gen;
        setImmediate(() => this.#spares.fill());
        return gen;
      })
      .finally(() => {
        this.#launching = undefined;
      });
    return this.#launching;
  }

  #launch(): Promise<Generation> {
    return this.#launcher.launch((gen) => {
      this.#retiring.delete(gen);
      if (this.#current === gen) this.#current = undefined;
      this.#spares.drop((g) => g === gen);
      if (this.#closed || gen.retiring) return;
      this.#restarts++;
      this.#opts.logger.error({ restarts: this.#restarts }, 'chromium disconnected; relaunching');
      setTimeout(() => {
        this.#get().catch((e: unknown) => this.#relaunchFailed(e));
      }, RELAUNCH_BACKOFF_MS).unref();
    });
  }

  /**
   * A fresh incognito context with one blank page, for one request: one made
   * ahead of demand if there is one, else a new one (spares.ts). Spares are
   * replaced when a request's context is closed (lease.ts).
   */
  async lease(requestId: string, proxy?: string): Promise<PageLease> {
    // The spare taken is replaced once this request's context is closed (lease.ts),
    // not now: made beside the request, its renderer counted as the request's
    // (CPU, memory) and died with the request's memory kill.
    const lease = await this.#emptied(await this.#spares.take());
    // SECURITY: the context's traffic is the request's from here; before (a spare)
    // the guard carried none of it, and after close() it carries none again. It
    // leaves through the request's upstream proxy (a name; the egress process
    // holds the rest). The guard (another process) holds it so before the page
    // makes a connection.
    try {
      await lease.egress.bind(requestId, proxy);
    } catch (e) {
      background(lease.close(), 'closing a context', this.#opts.logger);
      throw notPrepared('egress-bind', e);
    }
    return lease;
  }

  /**
   * SECURITY: every context of a Chromium shares its clipboard, where the
   * request before may have copied something. A page is given to a request only
   * once the clipboard has been emptied from it (still blank, before the
   * request's navigation). Done in the request's own page, not in a page of the
   * service's kept for it, so no other request's clean-up is waited on. A
   * Chromium where that fails or is late is replaced (a new one's clipboard is
   * empty), and the page comes from the next one. Where that fails too, the
   * request is answered 503 (notPrepared), never 500: nothing of it ran, and the
   * front gives it to another prepared slot within its queue time if it can.
   */
  async #emptied(lease: PageLease): Promise<PageLease> {
    const empty = this.#opts.emptyClipboard ?? emptyClipboard;
    const genOf = (l: PageLease): Generation | undefined =>
      [this.#current, ...this.#retiring].find((g) => g?.chromium.pid === l.pid);
    // SECURITY: the selection clipboard is replaced too after a request that sent input (the
    // only thing that writes it), or when the Chromium is not known; the emptying's own key is forgotten.
    const emptyIn = async (l: PageLease): Promise<boolean> => {
      const gen = genOf(l);
      const ok = await empty(l.page, gen?.chromium.takeInputSent() ?? true);
      gen?.chromium.takeInputSent();
      return ok;
    };
    if (await emptyIn(lease)) return lease;
    background(lease.close(), 'closing a context', this.#opts.logger);
    const gen = genOf(lease);
    if (gen) this.#replace(gen, 'its clipboard could not be emptied in a leased page');
    const next = await this.#spares.take();
    if (await emptyIn(next)) return next;
    background(next.close(), 'closing a context', this.#opts.logger);
    const gen2 = genOf(next);
    if (gen2) this.#replace(gen2, 'its clipboard could not be emptied in a leased page');
    throw notPrepared('clipboard', new Error("Chromium's clipboard could not be emptied before the request"));
  }

  /**
   * Closes every context made ahead (their egress sessions are gone) and makes
   * new ones: a spare whose session was still being opened has no context to
   * close, and nothing else would replace it until a request came.
   */
  dropSpares(): void {
    this.#spares.drop();
    this.#spares.refillSoon();
  }

  /** A new context and page; the service's own work, so its failure is a 503 of the request's (notPrepared). */
  async #newLease(): Promise<PageLease> {
    let gen: Generation;
    try {
      gen = await this.#get();
    } catch (e) {
      throw notPrepared('chromium-launch', e);
    }
    gen.served++;
    gen.live++;
    this.#maybeRecycle(gen);
    try {
      return await openLease(gen, this.#leaseHooks);
    } catch (e) {
      throw e instanceof ApiError ? e : notPrepared('lease', e);
    }
  }

  /**
   * Kills a Chromium at once (its process group) and launches the next, when
   * no other context than the closing request's is open in it: the next
   * context comes from the new one. Counted as a recycle, not a restart.
   */
  #discard(gen: Generation): void {
    if (this.#requestContexts(gen) > 1) return;
    this.#replace(gen, 'it had more DevTools messages queued than the transport holds');
  }

  /**
   * A relaunch made ahead of any request failed: nothing waited on it, and the
   * next lease launches again (its failure is the request's 503, counted as
   * `chromium-launch`); a warning, not an error.
   */
  #relaunchFailed(e: unknown): void {
    this.#opts.logger.warn({ err: String(e) }, 'chromium relaunch failed; the next lease launches again');
  }

  /** Kills gen at once (its process group) and launches the next; its contexts die with it. */
  #replace(gen: Generation, reason: string): void {
    if (gen.retiring || this.#closed) return;
    this.#retire(gen);
    this.#recycles++;
    this.#opts.logger.info({ recycles: this.#recycles, pid: gen.chromium.pid, reason }, 'chromium discarded');
    gen.chromium.kill();
    this.#get().catch((e: unknown) => this.#relaunchFailed(e));
  }

  /** Contexts open in gen for requests (its spares not counted). */
  #requestContexts(gen: Generation): number {
    return gen.live - this.#spares.countIn(gen);
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
    this.#spares.drop((g) => g === gen);
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
        this.#spares.fill();
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
    this.#spares.drop();
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
