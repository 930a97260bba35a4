// A lease: a fresh incognito context with one blank page in a generation's
// Chromium, behind its own egress session, and how it is closed after its
// request (a Chromium left backed up, or slow to close it, is discarded).
import type { BrowserContext, Page } from 'puppeteer';
import { background } from '../../common/background.js';
import type { Logger } from '../../common/log.js';
import type { ContextEgress } from '../egress-client/remote.js';
import { contextProxy } from './chromium-flags.js';
import type { Generation } from './launch.js';

/** How long closing a context may take before the browser is considered stuck. */
export const CONTEXT_CLOSE_TIMEOUT_MS = 5_000;
/**
 * What a backed-up Chromium may send of the request's events (dropped unread)
 * before it answers the closing of the context, before it is killed and
 * replaced instead (LeaseHooks.discard): a burst that is over has nothing
 * left, a flood has megabytes (docs/performance.md).
 */
export const BACKLOG_DRAIN_BYTES = 2 * 2 ** 20;
/**
 * How long closing a context may take before its Chromium is killed and
 * replaced instead (LeaseHooks.discard): its slot serves nobody meanwhile, and
 * a launch is cheaper than a flood's backlog over the size limit, which
 * BACKLOG_DRAIN_BYTES does not count.
 */
export const SLOW_CLOSE_MS = 1_000;
/** How often that is looked at while the context closes. */
const BACKLOG_CHECK_MS = 20;

export interface PageLease {
  readonly page: Page;
  /** The process id of the Chromium (browser process) the page is in. */
  readonly pid: number;
  readonly context: BrowserContext;
  /** The context's identity at the egress guard: what it did, and the errors it met. */
  readonly egress: ContextEgress;
  /** Closes the context (and its page); safe to call more than once. */
  close(): Promise<void>;
}

/** What a lease asks of the host that made it. */
export interface LeaseHooks {
  /** A guard port for one new context, bound to the request that leases it. */
  readonly openEgress: () => Promise<ContextEgress>;
  readonly logger: Logger;
  /** A context of gen is gone: closed, or never made. */
  contextGone(gen: Generation): void;
  /** gen sent more than BACKLOG_DRAIN_BYTES of a request's events while its context closed, or was slow to: replace it. */
  discard(gen: Generation): void;
  /** A context is closed: the spare that replaces it may be made now, between requests. */
  refill(): void;
}

/** A new context and page in gen, counted in gen.live by the caller before. */
export async function openLease(gen: Generation, hooks: LeaseHooks): Promise<PageLease> {
  let context: BrowserContext;
  let egress: ContextEgress | undefined;
  try {
    egress = await hooks.openEgress();
    context = await gen.browser.createBrowserContext({
      downloadBehavior: { policy: 'deny' },
      ...contextProxy(egress.port),
    });
  } catch (e) {
    if (egress) background(egress.close(), 'closing an egress session', hooks.logger);
    hooks.contextGone(gen);
    throw e;
  }
  const session = egress;
  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => {
    if (closed) return closed;
    // SECURITY: what the request's pages still send (a flood of console events
    // queued in Chromium) is dropped unread rather than parsed on the slot process's
    // one thread, where other requests wait for their turn.
    if (context.id !== undefined) gen.chromium.retireContext(context.id);
    // SECURITY: a Chromium that still has more for us than the transport queues
    // (a page's console flood) would send all of it before the answer to closing
    // the context, on this process's one thread: past BACKLOG_DRAIN_BYTES it is
    // killed and another launched. Counted in bytes, not time: a slow machine
    // does not turn a short backlog that is over into a launch.
    const drainedFrom = gen.chromium.backedUp ? gen.chromium.droppedEventBytes : undefined;
    const draining =
      drainedFrom === undefined
        ? undefined
        : setInterval(() => {
            if (gen.chromium.droppedEventBytes - drainedFrom <= BACKLOG_DRAIN_BYTES) return;
            clearInterval(draining);
            hooks.discard(gen);
          }, BACKLOG_CHECK_MS).unref();
    // SECURITY: the request is over: its connections are cut at once, and the
    // port stays held (refusing) until the context is really gone, so no later
    // request's context can be given the same port while this one may use it.
    session.end();
    const contextClosed = context.close();
    background(
      contextClosed.catch(() => undefined).finally(() => session.close()),
      'closing an egress session',
      hooks.logger,
    );
    const slow = setTimeout(() => hooks.discard(gen), SLOW_CLOSE_MS).unref();
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
        clearTimeout(slow);
        clearInterval(draining);
        hooks.contextGone(gen);
        // The replacement is made once this request's context is gone, between
        // requests, rather than beside the next request's navigation.
        hooks.refill();
      });
    return closed;
  };
  try {
    const page = await context.newPage();
    // The page is the focused one whatever else Chromium shows: emptying the clipboard (clipboard.ts) needs
    // a focused document, and a page made beside another, under load, was not always given focus. Set here,
    // by the host; no method of the membrane reaches it.
    await page.emulateFocusedPage(true);
    return {
      page,
      pid: gen.chromium.pid,
      context,
      egress: session,
      close,
    };
  } catch (e) {
    await close();
    throw e;
  }
}
