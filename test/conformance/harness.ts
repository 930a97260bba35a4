// The conformance harness: each case is a script, run once through pagescript
// (POST /api/scrape) and once through raw Puppeteer on the same Chromium and the
// same fixture pages, and the two outcomes compared.
//
// A case's script is the body of an async function that sees `page`, `server`
// (the fixture URLs, as in Puppeteer's own tests) and `targetUrl`; both sides
// wrap it the same way, so what is compared is what the script itself saw: the
// value it returned (as JSON), or the error it caught (its name and message).
import type { Browser } from 'puppeteer';

export interface Case {
  /** Puppeteer's spec file the case comes from (queryselector, evaluation, ...). */
  readonly area: string;
  /** Puppeteer's test title, or a short description of the assertion. */
  readonly name: string;
  /** The fixture page loaded before the script runs (pagescript always loads one). */
  readonly path?: string;
  /** The script: the body of an async function; `return` what the test asserts on. */
  readonly script: string;
  /**
   * The upstream tests it translates ("area: describe… title", as in upstream/*.json),
   * where that is not `area: name` itself (see upstream.ts).
   */
  readonly upstream?: string | readonly string[];
}

export interface Urls {
  /** http://127.0.0.1:<port> of the main fixture server. */
  readonly PREFIX: string;
  /** Another origin (a second fixture server), as Puppeteer's CROSS_PROCESS_PREFIX. */
  readonly CROSS_PROCESS_PREFIX: string;
  readonly EMPTY_PAGE: string;
}

/** What a script saw: its returned value as JSON text, or the error it caught. */
export type Outcome = { ok: true; json: string } | { ok: false; name: string; message: string };

export const caseId = (c: Case): string => `${c.area}: ${c.name}`;

/** The same wrapper on both sides: the script's value, or its error, as plain data. */
export function wrap(c: Case, urls: Urls): string {
  return `const server = ${JSON.stringify(urls)};
try {
  const value = await (async () => {
${c.script}
  })();
  return { ok: true, json: value === undefined ? 'undefined' : JSON.stringify(value) };
} catch (e) {
  return { ok: false, name: String(e && e.name), message: String(e && e.message !== undefined ? e.message : e) };
}`;
}

const AsyncFunction = Object.getPrototypeOf(async () => undefined).constructor as new (
  ...args: string[]
) => (...a: unknown[]) => Promise<unknown>;

/** Raw Puppeteer: a fresh incognito context, the fixture page loaded, then the same script. */
export async function runRaw(
  browser: Browser,
  c: Case,
  urls: Urls,
  timeoutMs: number,
  globals: Record<string, unknown>,
): Promise<Outcome> {
  const context = await browser.createBrowserContext();
  try {
    const page = await context.newPage();
    page.setDefaultTimeout(timeoutMs);
    const url = urls.PREFIX + (c.path ?? '/empty.html');
    await page.goto(url, { waitUntil: 'load' });
    // Test oracle only: our own case text, run in the test process against raw Puppeteer.
    // What pagescript offers as globals, a Puppeteer user imports (KnownDevices, Locator).
    const fn = new AsyncFunction('page', 'targetUrl', ...Object.keys(globals), wrap(c, urls));
    // The script's own time limit, as pagescript's: a script that does not finish gets the timeout error.
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<Outcome>((resolve) => {
      timer = setTimeout(
        () =>
          resolve({ ok: false, name: 'SCRAPING_FAILED', message: 'raw Puppeteer: the script did not finish in time' }),
        timeoutMs,
      );
    });
    try {
      return await Promise.race([fn(page, url, ...Object.values(globals)) as Promise<Outcome>, deadline]);
    } finally {
      clearTimeout(timer);
    }
  } catch (e) {
    return { ok: false, name: 'HarnessError', message: e instanceof Error ? e.message : String(e) };
  } finally {
    await context.close().catch(() => undefined);
  }
}

/** A short text of an outcome for reports. */
export function describeOutcome(o: Outcome): string {
  const s = o.ok ? o.json : `${o.name}: ${o.message}`;
  return s.length > 160 ? `${s.slice(0, 160)}…` : s;
}

/** The same answer: equal JSON, or an error both ways. */
export function same(a: Outcome, b: Outcome): boolean {
  if (a.ok && b.ok) return a.json === b.json;
  return !a.ok && !b.ok;
}
