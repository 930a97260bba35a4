// The request's options applied to its fresh page before the first navigation,
// and that navigation with the options' waitUntil, timeout and selector. The
// options were checked by the front; they are checked again here with the same
// function (src/protocol/request-options.ts), and the selector with the membrane's own
// cost check, so a value the membrane would refuse is refused here too.
import type { CDPSession, Page } from 'puppeteer';
import { ApiError } from '../../common/errors.js';
import {
  clampNavigationTimeoutMs,
  parseRequestOptions,
  type BlockableResourceType,
  type RequestOptions,
} from '../../protocol/request-options.js';
import { checkSelectorCost } from '../membrane/budgets.js';

/** The options, checked again in the slot process: a bad one is the same 400 INVALID_OPTIONS the front gives. */
export function recheckOptions(options: unknown, url: string): RequestOptions | undefined {
  if (options === undefined || options === null) return undefined;
  try {
    const checked = parseRequestOptions(options, url);
    // SECURITY: Puppeteer parses the selector on the host's main thread: the membrane's cost check applies.
    if (checked.waitForSelector !== undefined) checkSelectorCost(checked.waitForSelector, 'options.waitForSelector');
    return checked;
  } catch (e) {
    if (e instanceof Error) throw new ApiError('INVALID_OPTIONS', `Invalid options: ${e.message}`);
    throw e;
  }
}

/** The Chrome DevTools Protocol's name of each resource type Puppeteer names in lower case. */
const CDP_RESOURCE_TYPE: Readonly<Record<BlockableResourceType, string>> = {
  stylesheet: 'Stylesheet',
  image: 'Image',
  media: 'Media',
  font: 'Font',
  script: 'Script',
  texttrack: 'TextTrack',
  xhr: 'XHR',
  fetch: 'Fetch',
  prefetch: 'Prefetch',
  eventsource: 'EventSource',
  manifest: 'Manifest',
  signedexchange: 'SignedExchange',
  ping: 'Ping',
  cspviolationreport: 'CSPViolationReport',
  other: 'Other',
};

/**
 * Blocks the page's requests of the given types before they are sent: a CDP
 * session of our own with the Fetch domain paused on those types only, each
 * paused request failed as BlockedByClient. Requests of other types are never
 * paused (Puppeteer's request interception would pause every request and turn
 * the cache off), and the script's own page.setRequestInterception works on
 * Puppeteer's session, independently of this one.
 */
async function blockResourceTypes(session: CDPSession, types: readonly BlockableResourceType[]): Promise<void> {
  session.on('Fetch.requestPaused', (ev) => {
    // The session ends with the page; a request already gone is nothing to fail.
    session
      .send('Fetch.failRequest', { requestId: ev.requestId, errorReason: 'BlockedByClient' })
      .catch(() => undefined);
  });
  await session.send('Fetch.enable', {
    patterns: types.map((t) => ({
      urlPattern: '*',
      resourceType: CDP_RESOURCE_TYPE[t] as never,
      requestStage: 'Request' as const,
    })),
  });
}

/**
 * Applies the options to a page that has not navigated yet. Every call here is
 * Puppeteer's (or CDP's) own; the values are those checked above. Cookies are
 * set for the target's URL (host-only) or a domain it belongs to.
 */
export async function applyOptions(page: Page, options: RequestOptions, url: string): Promise<void> {
  const needsSession = options.blockResourceTypes?.length || options.locale !== undefined;
  const session = needsSession ? await page.createCDPSession() : undefined;
  if (options.blockResourceTypes?.length && session) await blockResourceTypes(session, options.blockResourceTypes);
  if (options.viewport) await page.setViewport(options.viewport);
  if (options.locale !== undefined && session) {
    // navigator.language(s) and Accept-Language, and Intl's default locale in the page.
    await session.send('Network.setUserAgentOverride', {
      userAgent: options.userAgent ?? (await page.browser().userAgent()),
      acceptLanguage: options.locale,
    });
    await session.send('Emulation.setLocaleOverride', { locale: options.locale });
  } else if (options.userAgent !== undefined) {
    await page.setUserAgent({ userAgent: options.userAgent });
  }
  if (options.extraHTTPHeaders) await page.setExtraHTTPHeaders({ ...options.extraHTTPHeaders });
  if (options.javaScriptEnabled === false) await page.setJavaScriptEnabled(false);
  if (options.emulateMediaType !== undefined) await page.emulateMediaType(options.emulateMediaType);
  if (options.timezoneId !== undefined) await page.emulateTimezone(options.timezoneId);
  if (options.cookies?.length) {
    // SECURITY: a cookie with no domain is host-only for the target; a domain was checked to contain the target's host.
    await page.setCookie(...options.cookies.map((c) => (c.domain === undefined ? { ...c, url } : { ...c })));
  }
}

/** What the navigation waits for, and how long at most (the server's limit or less). */
export function navigationWait(
  options: RequestOptions | undefined,
  serverLimitMs: number,
): { waitUntil: NonNullable<RequestOptions['waitUntil']>; timeoutMs: number } {
  return {
    waitUntil: options?.waitUntil ?? 'load',
    timeoutMs: clampNavigationTimeoutMs(options?.navigationTimeoutMs, serverLimitMs),
  };
}
