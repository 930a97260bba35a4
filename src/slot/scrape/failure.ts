// What a failed request's error body says about where and why it failed
// (docs/api.md "When a script fails"): the phase, the page's URL, the script's last
// calls and, when asked, a screenshot of the page as it was. Line, column and
// the caller's stack come from the isolate (src/slot/membrane/script-errors.ts).
import type { Page } from 'puppeteer';
import { MAX_ERROR_SCREENSHOT_BYTES, type ApiError, type PageCall } from '../../common/errors.js';
import { within } from '../../common/within.js';

/** How long the screenshot of a failed page may take; a page that does not answer gets none. */
export const ERROR_SCREENSHOT_TIMEOUT_MS = 3_000;

/** The codes whose body says where and why: the script or the page failed, not the service or the request. */
const DESCRIBED = new Set(['SCRAPING_FAILED', 'MEMORY_LIMIT_EXCEEDED']);

export interface FailureContext {
  readonly phase: 'navigation' | 'script';
  readonly page?: Page;
  /** The script's last page calls, read before its membrane closed. */
  readonly calls?: readonly PageCall[];
  /** host:port the guard refused for being outside the key's hosts. */
  readonly refusedHosts?: readonly string[];
  readonly screenshot: boolean;
}

/** The page as it is, PNG in Base64, or why there is none. Every path ends within the timeout. */
async function screenshotOf(page: Page): Promise<{ screenshot: string } | { screenshotOmitted: string }> {
  if (page.isClosed() || !page.browser().connected) return { screenshotOmitted: 'the page is closed' };
  const taking = page.screenshot({ type: 'png', encoding: 'base64', captureBeyondViewport: false });
  // A screenshot still running at the timeout ends with the context; its failure then is nobody's.
  taking.catch(() => undefined);
  try {
    const shot = await within(taking, ERROR_SCREENSHOT_TIMEOUT_MS, () => 'late' as const);
    if (shot === 'late')
      return { screenshotOmitted: `the page did not answer within ${ERROR_SCREENSHOT_TIMEOUT_MS} ms` };
    const bytes = Buffer.byteLength(shot, 'base64');
    if (bytes > MAX_ERROR_SCREENSHOT_BYTES)
      return { screenshotOmitted: `the screenshot is ${bytes} bytes; at most ${MAX_ERROR_SCREENSHOT_BYTES}` };
    return { screenshot: shot };
  } catch {
    return { screenshotOmitted: 'the page could not be captured (it may have crashed)' };
  }
}

/**
 * The failed request's error with where and why added (its line, column and stack are already there, if
 * known): a new error; one whose code is not a failed script or page is returned as it is.
 */
export async function describeFailure(e: ApiError, ctx: FailureContext): Promise<ApiError> {
  if (!DESCRIBED.has(e.code)) return e;
  const page = ctx.page;
  let finalUrl: string | undefined;
  try {
    finalUrl = page && !page.isClosed() ? page.url() : undefined;
  } catch {
    finalUrl = undefined;
  }
  return e.with({
    failure: {
      phase: ctx.phase,
      ...(finalUrl === undefined ? {} : { finalUrl }),
      ...e.failure,
      ...(ctx.calls ? { pageCalls: ctx.calls } : {}),
      ...(ctx.refusedHosts && ctx.refusedHosts.length > 0 ? { refusedHosts: ctx.refusedHosts } : {}),
      ...(ctx.screenshot && page ? await screenshotOf(page) : {}),
    },
  });
}
