// One scrape: check the URL, lease a fresh context and page, start a fresh
// isolate meanwhile, navigate, run the script, collect logs, and dispose of
// everything on every path.
import { randomUUID } from 'node:crypto';
import { TimeoutError, type Browser, type HTTPResponse, type Page } from 'puppeteer';
import type { WatchedLease, WatchedLeases } from '../browser/watched-lease.js';
import type { Config } from '../../common/config.js';
import { defaultPort, unmaskNetError, type RecentFailure } from '../egress-client/net-errors.js';
import { ApiError, internalFailure, notPrepared, scrapingFailed, type JobPhase } from '../../common/errors.js';
import type { Logger } from '../../common/log.js';
import type { ScriptSandbox } from '../membrane/script-sandbox.js';
import { Membrane } from '../membrane/membrane.js';
import { cleanMessage } from '../membrane/wire-errors.js';
import { MembraneError } from '../membrane/options.js';
import type { SandboxPool } from '../membrane/pool.js';
import { background } from '../../common/background.js';
import { within } from '../../common/within.js';
import {
  failedJob,
  type JobOutcome,
  type JobRequest,
  type JobResult,
  type JobTelemetry,
  type JobTimings,
  type JobUsage,
} from '../../protocol/jobs.js';
import type { RequestOptions } from '../../protocol/request-options.js';
import { applyOptions, navigationWait, recheckOptions } from './page-setup.js';
import { describeFailure } from './failure.js';
import { dismissDialogs, readPage } from './page-read.js';
import { SecurityRecord } from '../../protocol/security.js';
import {
  type EgressCheck,
  MAX_REFUSALS_LOGGED_PER_REQUEST,
  NET_ERRORS,
  REFUSED_HEADER,
} from '../../protocol/egress.js';

/** What a job needs from the service; passed in, so tests can substitute parts. */
export interface ScrapeDeps {
  readonly config: Config;
  /** The slot's Chromium, one request at a time: the lease's page memory is watched (PAGE_MEMORY_MB). */
  readonly browser: WatchedLeases;
  readonly sandboxes: SandboxPool;
  /** The egress policy (the guard's own checker, in the egress process). */
  readonly checker: EgressCheck;
  readonly logger: Logger;
  /** Where navigation and script times and egress refusals are counted. */
  readonly metrics?: JobMetrics;
}

/** What a job counts; in a slot process, each count is sent to the front's metrics. */
export interface JobMetrics {
  readonly navigation: { observe(seconds: number): void };
  readonly script: { observe(seconds: number): void };
  readonly egressRefusals: { inc(): void };
}

/**
 * A page that crashed may have died of memory: Chromium writes so on its stderr
 * as the renderer dies, and the slot reads it, but the crash may be reported
 * first. How long the job waits for that line after a crash before calling it a
 * plain crash.
 */
const CRASH_REPORT_GRACE_MS = 250;

/** The page side went over PAGE_MEMORY_MB, or its key's lower limit (or a renderer of it died of memory). */
function pageMemoryExceeded(config: Config, byKey: boolean): ApiError {
  return new ApiError(
    'MEMORY_LIMIT_EXCEEDED',
    `Memory limit exceeded: the page used more than ${config.pageMemoryMb} MiB (${byKey ? "this key's page memory limit" : 'PAGE_MEMORY_MB'})`,
  );
}

const toMb = (bytes: number): number => Math.round((bytes / 2 ** 20) * 10) / 10;

/**
 * The request's peaks as this slot process measured them: the page's from
 * /proc (the watchdog's readings and one more now), the isolate's from V8's
 * heap statistics read by the host. The front adds the CPU and the guard's counts.
 */
async function measuredUsage(
  lease: WatchedLease | undefined,
  sandbox: ScriptSandbox | undefined,
): Promise<Partial<Record<keyof JobUsage, number>>> {
  return {
    ...(lease ? { pageMemoryPeakMb: toMb(lease.memoryPeakBytes()) } : {}),
    ...(sandbox ? { isolateHeapPeakMb: toMb(await sandbox.heapPeakBytes()) } : {}),
  };
}

/** Limits of the membrane that have no setting of their own. */
const MAX_HANDLES = 50_000;
const MAX_TIMERS = 10_000;

/** Distinct refused methods one request counts (the isolate's refusal stubs are fewer). */
const MAX_REFUSED_METHODS = 64;

const EGRESS_UNAVAILABLE = 'Internal server error: the egress process did not answer; the request was not completed';

/** Refuses a URL the browser may not reach, before the browser tries. */
async function checkUrl(
  deps: ScrapeDeps,
  url: URL,
  requestId: string,
  refusals = { count: 0 },
  security?: SecurityRecord,
): Promise<void> {
  let d;
  try {
    d = await deps.checker.check(url.hostname, defaultPort(url));
  } catch (e) {
    // The egress process could not be asked (it stopped, or did not answer): the service's failure, not the URL's.
    throw internalFailure('egress-unavailable', EGRESS_UNAVAILABLE, e);
  }
  if (d.ok) return;
  if (d.code === 'NAME_NOT_RESOLVED') throw new MembraneError(`${NET_ERRORS.NAME_NOT_RESOLVED} at ${url.href}`);
  // SECURITY: a script chooses how often it is refused: past the first few, its refusals are only counted.
  if (++refusals.count <= MAX_REFUSALS_LOGGED_PER_REQUEST)
    deps.logger.warn({ requestId, host: url.hostname, port: defaultPort(url), reason: d.reason }, 'egress refused');
  deps.metrics?.egressRefusals.inc();
  // A navigation the request or its script chose: weighs much in its key's score.
  security?.add(d.kind ?? 'reserved', 'navigation', `${url.href.slice(0, 200)}: ${d.reason}`);
  throw new MembraneError(d.reason);
}

async function navigate(
  page: Page,
  url: URL,
  deps: ScrapeDeps,
  recentFailure: RecentFailure,
  options: RequestOptions | undefined,
): Promise<HTTPResponse | null> {
  const { waitUntil, timeoutMs } = navigationWait(options, deps.config.navigationTimeoutMs);
  const started = performance.now();
  let response: HTTPResponse | null;
  try {
    response = await page.goto(url.href, { waitUntil: waitUntil as never, timeout: timeoutMs });
  } catch (e) {
    if (!page.browser().connected) throw browserGone(e);
    throw scrapingFailed(
      `navigation to ${url.href} failed: ${unmaskNetError(cleanMessage(e), url.href, recentFailure)}`,
      e,
      e instanceof TimeoutError ? { timeout: 'navigation' } : {},
    );
  }
  // A redirect to a refused address ends at the guard's 403.
  if (response?.headers()[REFUSED_HEADER] === 'NOT_ALLOWED') {
    throw scrapingFailed(`navigation to ${url.href} failed: address not allowed (${response.url()})`);
  }
  const selector = options?.waitForSelector;
  if (selector !== undefined) {
    // Within the navigation's own time: what is left of it once the page loaded.
    const leftMs = Math.max(1, Math.round(timeoutMs - (performance.now() - started)));
    try {
      await page.waitForSelector(selector, { timeout: leftMs });
    } catch (e) {
      if (!page.browser().connected) throw browserGone(e);
      throw scrapingFailed(
        `waiting for options.waitForSelector "${selector.slice(0, 200)}" after loading ${url.href} failed: ${cleanMessage(e)}`,
        e,
        e instanceof TimeoutError ? { timeout: 'navigation' } : {},
      );
    }
  }
  return response;
}

/** Chromium died under the request; it is relaunched for the next one. */
function browserGone(cause?: unknown): ApiError {
  return internalFailure(
    'browser-gone',
    'Internal server error: the browser closed unexpectedly; it is being relaunched',
    cause,
  );
}

/**
 * Calls `gone` when the Chromium disconnects; returns the function that stops
 * watching. on(), not once(): Puppeteer's once() registers a wrapper, so off()
 * with the function given to once() removes nothing: each request's listener
 * would stay on the slot's Browser, and with it the request's page, membrane and
 * sandbox, until the slot process is retired.
 */
export function whenDisconnected(browser: Pick<Browser, 'on' | 'off' | 'connected'>, gone: () => void): () => void {
  browser.on('disconnected', gone);
  // A Chromium that died before anyone listened (while the isolate was attached) fired its event already.
  if (!browser.connected) gone();
  return () => browser.off('disconnected', gone);
}

/** Resolves to the promise's value and records how long it took. */
async function timed<T>(p: Promise<T>, record: (ms: number) => void): Promise<T> {
  const t0 = performance.now();
  try {
    return await p;
  } finally {
    record(performance.now() - t0);
  }
}

/**
 * Runs one job: its outcome, the result or the error, with what it measured either way. The context is
 * closed after the job on every path; with `deferClose`, the caller receives that closing instead of
 * waiting for it, so the reply need not wait for Chromium to tear the context down. A defect of ours
 * (anything but an ApiError) is thrown.
 */
export async function runScrape(
  req: JobRequest,
  deps: ScrapeDeps,
  signal?: AbortSignal,
  deferClose?: (closing: Promise<void>) => void,
  onPhase?: (phase: JobPhase) => void,
): Promise<JobOutcome> {
  const job = new ScrapeJob(req, deps, signal, onPhase);
  const refused = await job.checkTarget();
  if (refused) {
    if (deferClose) deferClose(job.checking);
    else await job.checking;
    return refused;
  }
  const onAbort = (): void => job.cancel();
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    return await job.run();
  } catch (e) {
    return await job.failed(e);
  } finally {
    signal?.removeEventListener('abort', onAbort);
    const closing = job.dispose();
    if (deferClose) deferClose(closing);
    else await closing;
  }
}

/** One job's state across its phases: check, lease, load, then read the page or run the script; or fail. */
class ScrapeJob {
  readonly #started = performance.now();
  readonly #timings: JobTimings = {};
  readonly #req: JobRequest;
  readonly #deps: ScrapeDeps;
  readonly #config: Config;
  readonly #signal: AbortSignal | undefined;
  readonly #onPhase: ((phase: JobPhase) => void) | undefined;
  /** Whether the page memory limit is the key's own. */
  readonly #byKey: boolean;
  readonly #url: URL;
  readonly #requestId: string;
  readonly #options: RequestOptions | undefined;
  /** This request's refusals by the URL check (the guard counts its own). */
  readonly #refusals = { count: 0 };
  /** What the request tried that looks like a probe, as this slot sees it (the front adds the guard's). */
  readonly #security = new SecurityRecord();
  readonly #refusedMethods = new Set<string>();
  #lease: WatchedLease | undefined;
  #sandbox: ScriptSandbox | undefined;
  #membrane: Membrane | undefined;
  /** Rejects when the page goes over its memory, so that nothing waits on a page that is gone. */
  #memoryGone: Promise<never> | undefined;
  /** Set when the page crashed; settles once it is known whether it died of memory. */
  #crashed: Promise<void> | undefined;
  #phase: 'navigation' | 'script' = 'navigation';
  /** Stop watching the browser, and dismissing the dialogs of a page no script answers. */
  readonly #stops: (() => void)[] = [];
  #checking: Promise<void> = Promise.resolve();

  constructor(req: JobRequest, deps: ScrapeDeps, signal?: AbortSignal, onPhase?: (phase: JobPhase) => void) {
    // The key's limits, each at most the service's (the front cut them): this request runs under them.
    this.#config = { ...deps.config, ...req.limits };
    this.#deps = { ...deps, config: this.#config };
    this.#req = req;
    this.#signal = signal;
    this.#onPhase = onPhase;
    this.#byKey = req.limits?.pageMemoryMb !== undefined;
    this.#url = new URL(req.url);
    this.#requestId = req.requestId ?? randomUUID();
    this.#options = recheckOptions(req.options, req.url);
  }

  #memoryExceeded(): ApiError {
    return pageMemoryExceeded(this.#config, this.#byKey);
  }

  #cancelled(): ApiError {
    const reason: unknown = this.#signal?.reason;
    return reason instanceof ApiError ? reason : new ApiError('SERVICE_UNAVAILABLE', 'The request was cancelled');
  }

  #checkUrl(url: URL): Promise<void> {
    return checkUrl(this.#deps, url, this.#requestId, this.#refusals, this.#security);
  }

  /** The request's URL, checked before anything is leased: a failed outcome when it may not be reached. */
  async checkTarget(): Promise<JobOutcome | undefined> {
    // SECURITY: the URL's name lookup is the request's own navigation, within its navigation limit. Past the
    // front's deadline it would count as the service's preparation: answered as such and retried in another
    // slot, each of whose processes is killed, while the key's own name server holds them.
    const { timeoutMs } = navigationWait(this.#req.options, this.#config.navigationTimeoutMs);
    const checked = this.#checkUrl(this.#url);
    // SECURITY: a check answered by the limit still runs in the egress process (up to LOOKUP_DEADLINE_MS): the
    // slot is not offered again before it ends, so that no key piles its lookups up in the slot's channel, whose
    // checks in flight are bounded, and makes the next tenant's checks refused.
    this.#checking = checked.then(
      () => undefined,
      () => undefined,
    );
    try {
      await within(checked, timeoutMs, () => {
        throw scrapingFailed(
          `navigation to ${this.#url.href} failed: its address was not found within the navigation limit (${timeoutMs} ms)`,
          undefined,
          { timeout: 'navigation' },
        );
      });
      return undefined;
    } catch (e) {
      if (e instanceof ApiError && e.timeout === 'navigation')
        return failedJob(await describeFailure(e, { phase: 'navigation', screenshot: false }));
      // Nothing of the request ran: the egress process's silence is the service's own preparation failing.
      if (e instanceof ApiError && e.internal === 'egress-unavailable')
        return failedJob(notPrepared('egress-check', e.cause), { phase: 'lease' });
      if (e instanceof ApiError && e.status >= 500) return failedJob(e);
      const refused = scrapingFailed(cleanMessage(e), e);
      return failedJob(
        await describeFailure(refused, { phase: 'navigation', screenshot: false }),
        this.#security.empty ? {} : { security: this.#security.report() },
      );
    }
  }

  /** The URL check, settled (whatever it answered): what the slot waits for before it is offered again. */
  get checking(): Promise<void> {
    return this.#checking;
  }

  /** The caller went away or the service ends the job: the script is stopped and the context closed. */
  cancel(): void {
    this.#sandbox?.abort(this.#cancelled());
    if (this.#lease) background(this.#lease.close(), 'closing a cancelled context', this.#deps.logger);
  }

  /** Lease, load, then read the page or run the script: the success outcome (a failure is thrown). */
  async run(): Promise<JobOutcome> {
    const lease = await this.#leaseAndIsolate();
    if (this.#signal?.aborted) throw this.#cancelled();
    this.#onPhase?.('navigation');
    const recentFailure = this.#watchPage(lease);
    const response = await this.#load(lease.page, recentFailure);
    const result = this.#sandbox
      ? await this.#runScript(lease, this.#sandbox, recentFailure)
      : await this.#readPage(lease, response);
    return { ok: true, result, telemetry: await this.#measured() };
  }

  /** The context and the isolate, made at the same time; their failure is the service's own (a 503). */
  async #leaseAndIsolate(): Promise<WatchedLease> {
    const { browser, sandboxes } = this.#deps;
    const pageLimit = this.#byKey ? this.#config.pageMemoryMb * 2 ** 20 : undefined;
    const [leased, made] = await Promise.allSettled([
      timed(browser.lease(this.#requestId, this.#req.proxy, pageLimit), (ms) => (this.#timings.lease = ms)),
      this.#req.script === undefined
        ? Promise.resolve(undefined)
        : timed(sandboxes.take(this.#req.limits?.scriptMemoryMb), (ms) => (this.#timings.isolate = ms)),
    ]);
    if (made.status === 'fulfilled') this.#sandbox = made.value;
    if (leased.status === 'fulfilled') this.#lease = leased.value;
    // The service's own work before the request: its failure is a 503 another slot may make good, never a 500.
    if (leased.status === 'rejected')
      throw leased.reason instanceof ApiError ? leased.reason : notPrepared('lease', leased.reason);
    if (made.status === 'rejected') throw notPrepared('isolate', made.reason);
    return leased.value;
  }

  /** Ends the script (and what waits on the page) when the page goes over its memory or crashes. */
  #watchPage(lease: WatchedLease): RecentFailure {
    const { page, egress } = lease;
    // Over PAGE_MEMORY_MB the watchdog has killed the renderers already: end the script now...
    lease.onMemoryExceeded(() => this.#sandbox?.abort(this.#memoryExceeded()));
    // ...and whatever the job waits on in the page (a navigation to a page that died
    // as it loaded waits otherwise for the protocol timeout).
    this.#memoryGone = new Promise<never>((_resolve, reject) =>
      lease.onMemoryExceeded(() => reject(this.#memoryExceeded())),
    );
    this.#memoryGone.catch(() => undefined);
    // A crashed renderer rejects pending calls only at the protocol timeout: end
    // the script now, as a plain crash unless the slot learns (within the grace)
    // that the renderer died of memory.
    page.once('error', () => {
      this.#crashed = new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          this.#sandbox?.abort(scrapingFailed('the page crashed'));
          resolve();
        }, CRASH_REPORT_GRACE_MS);
        timer.unref();
        lease.onMemoryExceeded(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    });
    // cheerio goes into the isolate during the navigation when the script names it
    // (else on first use, see ScriptSandbox.create); execute() waits for it.
    if (this.#sandbox && this.#req.script?.includes('cheerio'))
      background(this.#sandbox.loadCheerio(), 'loading cheerio ahead', this.#deps.logger);
    // A dialog blocks the page: without a script to answer it, it is dismissed (the membrane does so for a script).
    if (this.#sandbox === undefined) this.#stops.push(dismissDialogs(page));
    // SECURITY: the guard's memory of failures is this request's alone.
    return (h, p) => egress.recentFailure(h, p);
  }

  /** Resolves as `p` does, unless the page went over its memory first. */
  #unlessMemoryGone<T>(p: Promise<T>): Promise<T> {
    return this.#memoryGone ? Promise.race([p, this.#memoryGone]) : p;
  }

  /** The request's options applied to the page, then its navigation (and options.waitForSelector). */
  async #load(page: Page, recentFailure: RecentFailure): Promise<HTTPResponse | null> {
    const options = this.#options;
    if (options) {
      try {
        await applyOptions(page, options, this.#req.url);
      } catch (e) {
        if (!page.browser().connected) throw browserGone(e);
        throw scrapingFailed(`applying the request's options failed: ${cleanMessage(e)}`, e);
      }
    }
    const navigating = navigate(page, this.#url, this.#deps, recentFailure, options);
    return await timed(this.#unlessMemoryGone(navigating), (ms) => {
      this.#timings.navigation = ms;
      this.#deps.metrics?.navigation.observe(ms / 1000);
    });
  }

  /** Without a script: the page's HTML, or its summary. */
  async #readPage(lease: WatchedLease, response: HTTPResponse | null): Promise<JobResult> {
    const { page } = lease;
    const config = this.#config;
    const req = this.#req;
    // The page may navigate itself, spin or grow under the read: the page's doing, never a 500 (page-read.ts).
    const read = <T>(what: string, r: () => Promise<T>): Promise<T> =>
      this.#unlessMemoryGone(
        readPage(r, what, config.scriptTimeoutMs).catch((e: unknown) => {
          throw page.browser().connected ? e : browserGone(e);
        }),
      );
    let value: string | Record<string, unknown>;
    if (req.outputFormat === 'html') value = await read('HTML', () => page.content());
    else {
      const title = await read('title', () => page.title());
      // Read after the title: where the page went if it navigated itself.
      const finalUrl = page.url();
      value = { url: req.url, finalUrl, status: response?.status() ?? null, ok: response?.ok() ?? false, title };
    }
    // A frame's or a worker's renderer was ended for memory while the page loaded.
    if (lease.memoryExceeded) throw this.#memoryExceeded();
    // SECURITY: the page chooses the size of its HTML (and title); what crosses to the front is capped as a script's result is.
    const bytes = Buffer.byteLength(typeof value === 'string' ? value : JSON.stringify(value), 'utf8');
    if (bytes > config.maxResultBytes)
      throw new ApiError(
        'RESULT_TOO_LARGE',
        `Result too large: the page's ${req.outputFormat === 'html' ? 'HTML' : 'summary'} is larger than ${config.maxResultBytes} bytes`,
      );
    return { value, logs: [], executionTimeMs: Math.round(performance.now() - this.#started) };
  }

  /** The script, in its isolate, against the page through the membrane; its console lines go with its error. */
  async #runScript(lease: WatchedLease, box: ScriptSandbox, recentFailure: RecentFailure): Promise<JobResult> {
    const { page } = lease;
    const config = this.#config;
    const scriptDeadline = performance.now() + config.scriptTimeoutMs;
    page.setDefaultTimeout(config.scriptTimeoutMs);
    page.setDefaultNavigationTimeout(config.scriptTimeoutMs);
    const m = (this.#membrane = this.#makeMembrane(page, box, scriptDeadline, recentFailure));
    try {
      await box.attach((json) => m.onHost(json), this.#req.url);
    } catch (e) {
      // Chromium died as the script was being set up: that cause, not a defect of ours.
      throw page.browser().connected ? e : browserGone(e);
    }
    const pageClosed = () =>
      box.abort(internalFailure('page-closed', 'Internal server error: the browser page closed unexpectedly'));
    page.once('close', pageClosed);
    // A page that closed during attach() fired its event before anyone listened.
    if (page.isClosed()) pageClosed();
    // A Chromium that dies does not close its pages one by one: end the script now, not at its time limit.
    this.#stops.push(whenDisconnected(page.browser(), () => box.abort(browserGone())));

    let result;
    this.#phase = 'script';
    this.#onPhase?.('script');
    try {
      const running = box.execute(this.#req.script as string, config.scriptTimeoutMs, config.maxResultBytes);
      result = await timed(running, (ms) => {
        this.#timings.script = ms;
        this.#deps.metrics?.script.observe(ms / 1000);
      });
    } catch (e) {
      throw e instanceof ApiError ? e.with({ logs: collectLogs(box, m) }) : e;
    }
    // A frame's or a worker's renderer was ended for memory while the script went on.
    if (lease.memoryExceeded) throw this.#memoryExceeded().with({ logs: collectLogs(box, m) });
    return {
      ...(result.json === undefined ? {} : { json: result.json }),
      logs: collectLogs(box, m),
      executionTimeMs: Math.round(performance.now() - this.#started),
    };
  }

  /** The host side of the script's page: every call it makes is checked there. */
  #makeMembrane(page: Page, box: ScriptSandbox, scriptDeadline: number, recentFailure: RecentFailure): Membrane {
    const config = this.#config;
    return new Membrane({
      page,
      clock: { remainingMs: () => Math.max(1, Math.round(scriptDeadline - performance.now())) },
      limits: {
        maxHandles: MAX_HANDLES,
        maxTimers: MAX_TIMERS,
        maxLogLines: config.maxLogLines,
        maxLogBytes: config.maxLogBytes,
      },
      checkUrl: (u) => this.#checkUrl(u),
      securityEvent: (cls, detail) => {
        // Each refused method counts once per request: a script that retries one in a loop is one attempt.
        if (cls === 'refused-method') {
          if (this.#refusedMethods.has(detail) || this.#refusedMethods.size >= MAX_REFUSED_METHODS) return;
          this.#refusedMethods.add(detail);
        }
        this.#security.add(cls, cls === 'refused-method' ? 'script' : 'navigation', detail);
      },
      recentFailure,
      // SECURITY: no membrane call starts once the script's time is up.
      expired: () => performance.now() >= scriptDeadline,
      toIsolate: (json, wantAnswer) => box.toIsolate(json, wantAnswer),
    });
  }

  /** What the job measured so far: its timings, its egress (the guard's bill), its peaks, its probes. */
  async #measured(): Promise<JobTelemetry> {
    return {
      timings: { ...this.#timings },
      // The bill: the guard cuts what the page left open, then counts, so bytes read on a kept connection are in it.
      ...(this.#lease ? { egress: await this.#lease.egress.finish() } : {}),
      usage: await measuredUsage(this.#lease, this.#sandbox),
      ...(this.#security.empty ? {} : { security: this.#security.report() }),
    };
  }

  /** What `caught` ended the job with, where and why, and what the job measured until then. */
  async failed(caught: unknown): Promise<JobOutcome> {
    // The page crashed (a navigation or a call failed of it): whether it died of memory is known within the grace.
    if (this.#crashed) await this.#crashed;
    let e = caught;
    // Whatever failed once the page went over its memory failed because of it.
    if (this.#lease?.memoryExceeded && !(e instanceof ApiError && e.code === 'MEMORY_LIMIT_EXCEEDED'))
      e = this.#memoryExceeded().with(e instanceof ApiError && e.logs ? { logs: e.logs } : {});
    // Nothing of the request's page was reached while leasing; a housekeeping failure is always the lease's.
    const phase = this.#lease === undefined || (e instanceof ApiError && e.housekeeping) ? 'lease' : this.#phase;
    // Whatever failed once the request was cancelled (client gone, shutdown) failed because of it.
    const cancelled = this.#signal?.aborted === true && !(e instanceof ApiError && e.code === 'SERVICE_UNAVAILABLE');
    // SECURITY: a cancelled job keeps what it measured whatever ended it: its bill, and its probes for the key's score.
    const telemetry: JobTelemetry = e instanceof ApiError || cancelled ? { ...(await this.#measured()), phase } : {};
    if (cancelled) return failedJob(this.#cancelled(), telemetry);
    if (!(e instanceof ApiError)) throw e;
    const calls = this.#membrane?.calls.recent();
    // SECURITY: the failed script reaches nothing more while its failure is described (a screenshot takes time).
    this.#membrane?.dispose();
    const lease = this.#lease;
    const described = await describeFailure(e, {
      phase: this.#phase,
      ...(lease ? { page: lease.page } : {}),
      ...(calls ? { calls } : {}),
      ...(lease?.egress.refusedHosts ? { refusedHosts: lease.egress.refusedHosts() } : {}),
      screenshot: this.#options?.screenshotOnError === true,
    });
    return failedJob(described, telemetry);
  }

  /**
   * Stops the job's watchers at once; the isolate is disposed a turn later, after the reply is written:
   * nothing of the script runs meanwhile (the membrane is closed at once, and a script still spinning gets
   * only refusals from the host), and disposing takes milliseconds. Resolves once the context is closed.
   */
  dispose(): Promise<void> {
    for (const stop of this.#stops) stop();
    const membrane = this.#membrane;
    membrane?.dispose();
    if (membrane && (membrane.droppedEvents > 0 || membrane.droppedExposedCalls > 0))
      this.#deps.logger.warn(
        {
          requestId: this.#requestId,
          droppedEvents: membrane.droppedEvents,
          droppedExposedCalls: membrane.droppedExposedCalls,
        },
        'page events dropped',
      );
    const box = this.#sandbox;
    const lease = this.#lease;
    return new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
      box?.dispose();
      await lease?.close();
      // SECURITY: the slot is freed (its job closed) only once the isolate's thread stopped: one stuck in a
      // builtin spins on for up to ISOLATE_STOP_GRACE_MS, billed to the next job of the slot, another key's.
      await box?.stopped();
    });
  }
}

/**
 * The script's console lines, with a last line saying how many were dropped beyond the caps, and one
 * saying how many page events and exposed-function calls the host dropped (see docs/budgets.md).
 */
function collectLogs(box: ScriptSandbox, m: Membrane): string[] {
  const dropped = box.droppedLogs() ?? m.dropped;
  const logs = [...m.logs];
  if (dropped.lines > 0) logs.push(`... ${dropped.lines} more log lines dropped (${dropped.bytes} characters)`);
  if (m.droppedEvents > 0 || m.droppedExposedCalls > 0) logs.push(droppedFromPage(m));
  return logs;
}

/** What the host did not hand the script of its page's events and calls. */
function droppedFromPage(m: Membrane): string {
  return `... ${m.droppedEvents} page events and ${m.droppedExposedCalls} exposed-function calls from the page dropped (the script was busy, or they were too large)`;
}
