// The request's `options` (docs/api.md "Request options"): how the page is set up
// before its first load. Checked here, on both sides of the process boundary:
// the front refuses a bad value with 400 INVALID_OPTIONS before any job is
// queued, and the slot process checks the same object again with the same code
// before it applies it (src/slot/scrape/page-setup.ts), so the two never disagree.
// Plain functions and data only: the front imports this module, so it imports
// nothing of the slot process. The bounds the membrane also applies (viewport) are
// defined here and imported by src/slot/membrane/options.ts.
import { PROXY_NAME } from '../common/config.js';
import { HOP_BY_HOP_HEADERS } from './http-headers.js';

/** A viewport a page may have, in the request's options and through page.setViewport alike. */
export const VIEWPORT_BOUNDS = {
  minSide: 1,
  maxSide: 4096,
  minScale: 0.1,
  maxScale: 16,
  /** A side in device pixels (CSS pixels × deviceScaleFactor): Chromium's largest texture. */
  maxDevicePixelsPerSide: 16_384,
} as const;

/**
 * Puppeteer's resource types (HTTPRequest.resourceType()) a request may block.
 * Not "document" (it would block the page itself), nor "websocket" and
 * "preflight", which request interception does not pause in Chromium (a block
 * we could not keep is not offered).
 */
export const BLOCKABLE_RESOURCE_TYPES = [
  'stylesheet',
  'image',
  'media',
  'font',
  'script',
  'texttrack',
  'xhr',
  'fetch',
  'prefetch',
  'eventsource',
  'manifest',
  'signedexchange',
  'ping',
  'cspviolationreport',
  'other',
] as const;
export type BlockableResourceType = (typeof BLOCKABLE_RESOURCE_TYPES)[number];

export const WAIT_UNTIL_EVENTS = ['load', 'domcontentloaded', 'networkidle0', 'networkidle2'] as const;
export type WaitUntilEvent = (typeof WAIT_UNTIL_EVENTS)[number];
export const MEDIA_TYPES = ['screen', 'print'] as const;

export const MAX_HEADERS = 32;
export const MAX_HEADER_CHARS = 8192;
export const MAX_COOKIES = 50;
/** A cookie's name and value together, as browsers bound them. */
export const MAX_COOKIE_CHARS = 4096;
export const MAX_USER_AGENT_CHARS = 1024;
/** As the membrane's MAX_SELECTOR_CHARS (src/slot/membrane/budgets.ts), which the slot process applies to the selector again. */
export const MAX_WAIT_SELECTOR_CHARS = 2048;

/**
 * Request headers nobody may set: the proxy's and the connection's own (the
 * egress guard reads and strips them), Host (which names the site the guard
 * checked), the body's framing, and Cookie (cookies go in `cookies`, which
 * keeps them to the target's site; a header would go to every site the page
 * loads from).
 */
const FORBIDDEN_HEADERS: ReadonlySet<string> = new Set([
  ...HOP_BY_HOP_HEADERS,
  'host',
  'content-length',
  'expect',
  'cookie',
]);
/** Header names reserved for the service itself (the guard marks its refusals with one). */
const RESERVED_HEADER_PREFIXES = ['proxy-', 'x-pagescript-'];

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** A header value Chromium sends as it is: no CR, LF or NUL, no other control character but tab. */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\uffff]*$/;
const COOKIE_TEXT = /^[\x21-\x7e\x80-\uffff][\x20-\x7e\x80-\uffff]*$|^$/;

/** Why a request header may not be set, or undefined when it may. */
export function refusedHeader(name: string): string | undefined {
  const n = name.toLowerCase();
  if (!TOKEN.test(name)) return 'is not a valid header name';
  if (n === 'cookie') return 'cannot be set (send cookies in options.cookies, which keeps them to the target site)';
  // SECURITY: the egress guard relies on these (proxy credentials, framing, the connection); Host names the checked site.
  if (FORBIDDEN_HEADERS.has(n) || RESERVED_HEADER_PREFIXES.some((p) => n.startsWith(p)))
    return 'cannot be set (the service sets it)';
  return undefined;
}

export interface ViewportOption {
  readonly width: number;
  readonly height: number;
  readonly deviceScaleFactor?: number;
  readonly isMobile?: boolean;
  readonly hasTouch?: boolean;
  readonly isLandscape?: boolean;
}

export interface CookieOption {
  readonly name: string;
  readonly value: string;
  /** Absent: a host-only cookie of the target's host. */
  readonly domain?: string;
  readonly path?: string;
  readonly secure?: boolean;
  readonly httpOnly?: boolean;
  readonly sameSite?: 'Strict' | 'Lax' | 'None';
  /** Seconds since the epoch (Puppeteer's unit); absent: a session cookie. */
  readonly expires?: number;
}

export interface RequestOptions {
  readonly viewport?: ViewportOption;
  readonly userAgent?: string;
  readonly extraHTTPHeaders?: Readonly<Record<string, string>>;
  readonly cookies?: readonly CookieOption[];
  readonly blockResourceTypes?: readonly BlockableResourceType[];
  readonly javaScriptEnabled?: boolean;
  readonly waitUntil?: WaitUntilEvent | readonly WaitUntilEvent[];
  readonly waitForSelector?: string;
  /** Clamped to NAVIGATION_TIMEOUT_MS when the job runs; 0 means that limit. */
  readonly navigationTimeoutMs?: number;
  readonly emulateMediaType?: (typeof MEDIA_TYPES)[number];
  readonly locale?: string;
  readonly timezoneId?: string;
  readonly screenshotOnError?: boolean;
  /** An upstream proxy by the name the operator gave it in PROXIES (never a URL); see chooseProxy. */
  readonly proxy?: string;
}

/** A bad `options` value; `field` is its path in the body ("options.viewport.width"). */
export class OptionsError extends Error {
  override name = 'OptionsError';
  constructor(
    readonly field: string,
    why: string,
  ) {
    super(`${field} ${why}`);
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Only the named keys; an unknown one is refused, by name. */
function onlyKeys(v: Record<string, unknown>, keys: readonly string[], where: string): void {
  for (const k of Object.keys(v)) {
    if (!keys.includes(k)) throw new OptionsError(`${where}.${k.slice(0, 64)}`, 'is not a known option');
  }
}

function number(v: unknown, where: string, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max)
    throw new OptionsError(where, `must be a number from ${min} to ${max}`);
  return v;
}

function boolean(v: unknown, where: string): boolean {
  if (typeof v !== 'boolean') throw new OptionsError(where, 'must be true or false');
  return v;
}

function text(v: unknown, where: string, maxChars: number, pattern = HEADER_VALUE): string {
  if (typeof v !== 'string') throw new OptionsError(where, 'must be a string');
  if (v.length > maxChars) throw new OptionsError(where, `must be at most ${maxChars} characters`);
  if (!pattern.test(v)) throw new OptionsError(where, 'contains characters that are not allowed');
  return v;
}

function oneOf<T extends string>(v: unknown, allowed: readonly T[], where: string): T {
  if (typeof v !== 'string' || !(allowed as readonly string[]).includes(v))
    throw new OptionsError(where, `must be one of ${allowed.join(', ')}`);
  return v as T;
}

function viewport(v: unknown, where: string): ViewportOption {
  if (!isObject(v)) throw new OptionsError(where, 'must be an object { width, height, ... }');
  onlyKeys(v, ['width', 'height', 'deviceScaleFactor', 'isMobile', 'hasTouch', 'isLandscape'], where);
  const b = VIEWPORT_BOUNDS;
  const out: { -readonly [K in keyof ViewportOption]: ViewportOption[K] } = {
    width: number(v.width, `${where}.width`, b.minSide, b.maxSide),
    height: number(v.height, `${where}.height`, b.minSide, b.maxSide),
  };
  if (v.deviceScaleFactor !== undefined)
    out.deviceScaleFactor = number(v.deviceScaleFactor, `${where}.deviceScaleFactor`, b.minScale, b.maxScale);
  for (const k of ['isMobile', 'hasTouch', 'isLandscape'] as const) {
    if (v[k] !== undefined) out[k] = boolean(v[k], `${where}.${k}`);
  }
  // SECURITY: the page's memory grows with its device pixels (as page.setViewport in the membrane).
  if (Math.max(out.width, out.height) * (out.deviceScaleFactor ?? 1) > b.maxDevicePixelsPerSide)
    throw new OptionsError(
      where,
      `width and height times deviceScaleFactor must be at most ${b.maxDevicePixelsPerSide}`,
    );
  return out;
}

function headers(v: unknown, where: string): Record<string, string> {
  if (!isObject(v)) throw new OptionsError(where, 'must be an object of strings');
  const entries = Object.entries(v);
  if (entries.length > MAX_HEADERS) throw new OptionsError(where, `must have at most ${MAX_HEADERS} headers`);
  const seen = new Set<string>();
  const out: [string, string][] = [];
  for (const [name, value] of entries) {
    const field = `${where}.${name.slice(0, 64)}`;
    const why = refusedHeader(name);
    if (why !== undefined) throw new OptionsError(field, why);
    if (seen.has(name.toLowerCase())) throw new OptionsError(field, 'is given twice');
    seen.add(name.toLowerCase());
    out.push([name, text(value, field, MAX_HEADER_CHARS)]);
  }
  // fromEntries defines own properties: a header named "__proto__" stays a header (and is refused by Chromium).
  return Object.fromEntries(out);
}

/** A host name as the URL parser writes it, or undefined when `url` has none. */
export function targetHost(url: string): string | undefined {
  try {
    return new URL(url).hostname.toLowerCase();
  } catch {
    return undefined;
  }
}

function isIpHost(host: string): boolean {
  return host.startsWith('[') || /^\d+\.\d+\.\d+\.\d+$/.test(host);
}

/**
 * A cookie domain the target's host belongs to: the host itself, or one of
 * its parent domains with at least two labels (never a top-level domain; a
 * public suffix such as co.uk is refused by Chromium itself). An IP address
 * only as itself. SECURITY: cookies are for the target's site, never another.
 */
function cookieDomain(v: unknown, host: string, where: string): string {
  const d = text(v, where, 253).toLowerCase().replace(/^\./, '');
  const ok = d === host || (!isIpHost(host) && d.includes('.') && host.endsWith(`.${d}`));
  if (!ok) throw new OptionsError(where, `must be the target's host (${host}) or a parent domain of it`);
  return d;
}

function cookie(v: unknown, host: string, where: string): CookieOption {
  if (!isObject(v)) throw new OptionsError(where, 'must be an object { name, value, ... }');
  onlyKeys(v, ['name', 'value', 'domain', 'path', 'secure', 'httpOnly', 'sameSite', 'expires'], where);
  const name = text(v.name, `${where}.name`, MAX_COOKIE_CHARS, COOKIE_TEXT);
  if (name === '' || /[=;]/.test(name)) throw new OptionsError(`${where}.name`, 'must be a cookie name (no = or ;)');
  const value = text(v.value, `${where}.value`, MAX_COOKIE_CHARS, COOKIE_TEXT);
  if (value.includes(';')) throw new OptionsError(`${where}.value`, 'must not contain ;');
  if (name.length + value.length > MAX_COOKIE_CHARS)
    throw new OptionsError(where, `name and value must be at most ${MAX_COOKIE_CHARS} characters together`);
  const out: { -readonly [K in keyof CookieOption]: CookieOption[K] } = { name, value };
  if (v.domain !== undefined) out.domain = cookieDomain(v.domain, host, `${where}.domain`);
  if (v.path !== undefined) {
    out.path = text(v.path, `${where}.path`, 1024, COOKIE_TEXT);
    if (!out.path.startsWith('/') || out.path.includes(';'))
      throw new OptionsError(`${where}.path`, 'must be a URL path starting with /');
  }
  if (v.secure !== undefined) out.secure = boolean(v.secure, `${where}.secure`);
  if (v.httpOnly !== undefined) out.httpOnly = boolean(v.httpOnly, `${where}.httpOnly`);
  if (v.sameSite !== undefined)
    out.sameSite = oneOf(v.sameSite, ['Strict', 'Lax', 'None'] as const, `${where}.sameSite`);
  if (v.expires !== undefined) out.expires = number(v.expires, `${where}.expires`, -1, 253_402_300_799);
  return out;
}

function waitUntil(v: unknown, where: string): WaitUntilEvent | WaitUntilEvent[] {
  if (!Array.isArray(v)) return oneOf(v, WAIT_UNTIL_EVENTS, where);
  if (v.length === 0 || v.length > WAIT_UNTIL_EVENTS.length)
    throw new OptionsError(where, `must be one of ${WAIT_UNTIL_EVENTS.join(', ')}, or a non-empty array of them`);
  return [...new Set(v.map((x, i) => oneOf(x, WAIT_UNTIL_EVENTS, `${where}[${i}]`)))];
}

function resourceTypes(v: unknown, where: string): BlockableResourceType[] {
  if (!Array.isArray(v) || v.length > BLOCKABLE_RESOURCE_TYPES.length)
    throw new OptionsError(where, 'must be an array of resource types');
  return [...new Set(v.map((x, i) => oneOf(x, BLOCKABLE_RESOURCE_TYPES, `${where}[${i}]`)))];
}

function locale(v: unknown, where: string): string {
  const s = text(v, where, 64, /^[A-Za-z0-9-]+$/);
  try {
    const [canonical] = Intl.getCanonicalLocales(s);
    if (canonical !== undefined) return canonical;
  } catch {
    // refused below
  }
  throw new OptionsError(where, 'must be a BCP 47 language tag such as en-US');
}

function timezoneId(v: unknown, where: string): string {
  const s = text(v, where, 64, /^[A-Za-z0-9_+\-/]+$/);
  try {
    new Intl.DateTimeFormat('en', { timeZone: s });
    return s;
  } catch {
    throw new OptionsError(where, 'must be an IANA time zone such as Europe/Paris');
  }
}

export const REQUEST_OPTION_NAMES = [
  'viewport',
  'userAgent',
  'extraHTTPHeaders',
  'cookies',
  'blockResourceTypes',
  'javaScriptEnabled',
  'waitUntil',
  'waitForSelector',
  'navigationTimeoutMs',
  'emulateMediaType',
  'locale',
  'timezoneId',
  'screenshotOnError',
  'proxy',
] as const satisfies readonly (keyof RequestOptions)[];

/**
 * The request's options, rebuilt from known keys and checked values; throws
 * OptionsError naming the first bad field. `url` is the request's target (a
 * valid http(s) URL): cookies may be for its site only.
 */
export function parseRequestOptions(v: unknown, url: string): RequestOptions {
  const where = 'options';
  if (!isObject(v)) throw new OptionsError(where, 'must be an object');
  onlyKeys(v, REQUEST_OPTION_NAMES, where);
  const out: { -readonly [K in keyof RequestOptions]: RequestOptions[K] } = {};
  const at = (k: string): string => `${where}.${k}`;
  // null is "absent", as for the body's other fields.
  const given = (k: (typeof REQUEST_OPTION_NAMES)[number]): boolean => v[k] !== undefined && v[k] !== null;
  if (given('viewport')) out.viewport = viewport(v.viewport, at('viewport'));
  if (given('userAgent')) {
    out.userAgent = text(v.userAgent, at('userAgent'), MAX_USER_AGENT_CHARS);
    if (out.userAgent.trim() === '') throw new OptionsError(at('userAgent'), 'must not be empty');
  }
  if (given('extraHTTPHeaders')) out.extraHTTPHeaders = headers(v.extraHTTPHeaders, at('extraHTTPHeaders'));
  if (given('cookies')) {
    const host = targetHost(url);
    if (!Array.isArray(v.cookies) || v.cookies.length > MAX_COOKIES)
      throw new OptionsError(at('cookies'), `must be an array of at most ${MAX_COOKIES} cookies`);
    if (host === undefined) throw new OptionsError(at('cookies'), 'need a target URL with a host');
    out.cookies = v.cookies.map((c, i) => cookie(c, host, `${at('cookies')}[${i}]`));
  }
  if (given('blockResourceTypes'))
    out.blockResourceTypes = resourceTypes(v.blockResourceTypes, at('blockResourceTypes'));
  if (given('javaScriptEnabled')) out.javaScriptEnabled = boolean(v.javaScriptEnabled, at('javaScriptEnabled'));
  if (given('waitUntil')) out.waitUntil = waitUntil(v.waitUntil, at('waitUntil'));
  if (given('waitForSelector')) {
    out.waitForSelector = text(v.waitForSelector, at('waitForSelector'), MAX_WAIT_SELECTOR_CHARS);
    if (out.waitForSelector.trim() === '') throw new OptionsError(at('waitForSelector'), 'must not be empty');
  }
  if (given('navigationTimeoutMs')) {
    const ms = number(v.navigationTimeoutMs, at('navigationTimeoutMs'), 0, Number.MAX_SAFE_INTEGER);
    if (!Number.isInteger(ms))
      throw new OptionsError(at('navigationTimeoutMs'), 'must be a whole number of milliseconds');
    out.navigationTimeoutMs = ms;
  }
  if (given('emulateMediaType')) out.emulateMediaType = oneOf(v.emulateMediaType, MEDIA_TYPES, at('emulateMediaType'));
  if (given('locale')) out.locale = locale(v.locale, at('locale'));
  if (given('timezoneId')) out.timezoneId = timezoneId(v.timezoneId, at('timezoneId'));
  if (given('screenshotOnError')) out.screenshotOnError = boolean(v.screenshotOnError, at('screenshotOnError'));
  // SECURITY: a name the operator gave a proxy, never a URL: a caller cannot bring a proxy of its own.
  if (given('proxy')) {
    if (typeof v.proxy !== 'string' || !PROXY_NAME.test(v.proxy))
      throw new OptionsError(at('proxy'), 'must be the name of a proxy set up by the operator (not a URL)');
    out.proxy = v.proxy;
  }
  return out;
}

/** The upstream proxies one key may use (the key file's proxy and proxies; every one for API_KEYS keys). */
export interface ProxyGrant {
  /** The proxy the key's requests leave through when they name none. */
  readonly defaultProxy?: string | undefined;
  /** The proxies it may name in options.proxy ("all": every one in PROXIES); its default is always allowed. */
  readonly allowed: readonly string[] | 'all';
}

/**
 * The proxy a request leaves through, by name: the one it named in
 * options.proxy, else its key's default; undefined: none (directly). Throws
 * OptionsError naming options.proxy when the name is not one in PROXIES that
 * the key may use. SECURITY: one answer for "no such proxy" and "not yours",
 * so a key cannot list the proxies of others.
 */
export function chooseProxy(
  requested: string | undefined,
  grant: ProxyGrant,
  configured: readonly string[],
): string | undefined {
  if (requested === undefined) return grant.defaultProxy;
  const mayUse = grant.allowed === 'all' || grant.allowed.includes(requested) || grant.defaultProxy === requested;
  if (!configured.includes(requested) || !mayUse)
    throw new OptionsError('options.proxy', `"${requested}" is not a proxy this key may use`);
  return requested;
}

/** The navigation's timeout: the caller's, never beyond the server's limit (0 or absent: the limit). */
export function clampNavigationTimeoutMs(requested: number | undefined, serverLimitMs: number): number {
  return requested === undefined || requested === 0 ? serverLimitMs : Math.min(requested, serverLimitMs);
}

/** The JSON Schema of `options`, for the OpenAPI document (src/front/info/openapi.ts); the checks above are the authority. */
export function requestOptionsSchema(): Record<string, unknown> {
  const b = VIEWPORT_BOUNDS;
  const side = { type: 'number', minimum: b.minSide, maximum: b.maxSide };
  return {
    type: ['object', 'null'],
    additionalProperties: false,
    description:
      'How the page is set up before it loads (docs/api.md "Request options"). An unknown key or a bad value is 400 INVALID_OPTIONS naming the field.',
    properties: {
      viewport: {
        type: 'object',
        required: ['width', 'height'],
        additionalProperties: false,
        description: `Puppeteer's Viewport. At most ${b.maxDevicePixelsPerSide} device pixels a side (width or height × deviceScaleFactor).`,
        properties: {
          width: side,
          height: side,
          deviceScaleFactor: { type: 'number', minimum: b.minScale, maximum: b.maxScale },
          isMobile: { type: 'boolean' },
          hasTouch: { type: 'boolean' },
          isLandscape: { type: 'boolean' },
        },
      },
      userAgent: { type: 'string', minLength: 1, maxLength: MAX_USER_AGENT_CHARS },
      extraHTTPHeaders: {
        type: 'object',
        maxProperties: MAX_HEADERS,
        additionalProperties: { type: 'string', maxLength: MAX_HEADER_CHARS },
        description:
          'Sent with every request of the page. Host, Cookie, Connection, Content-Length, Expect, TE, Trailer, Transfer-Encoding, Upgrade, Keep-Alive, Proxy-* and X-Pagescript-* are refused.',
      },
      cookies: {
        type: 'array',
        maxItems: MAX_COOKIES,
        description: "Set before the first request: host-only for the url's host, or for a domain that contains it.",
        items: {
          type: 'object',
          required: ['name', 'value'],
          additionalProperties: false,
          properties: {
            name: { type: 'string', minLength: 1 },
            value: { type: 'string' },
            domain: { type: 'string', description: "The url's host or a parent domain of it." },
            path: { type: 'string' },
            secure: { type: 'boolean' },
            httpOnly: { type: 'boolean' },
            sameSite: { enum: ['Strict', 'Lax', 'None'] },
            expires: { type: 'number', description: 'Seconds since the epoch.' },
          },
        },
      },
      blockResourceTypes: {
        type: 'array',
        items: { enum: [...BLOCKABLE_RESOURCE_TYPES] },
        description:
          "Requests of these Puppeteer resource types are never sent (the page's own, from the first load on).",
      },
      javaScriptEnabled: { type: 'boolean', description: "false: the page's own scripts do not run." },
      waitUntil: {
        oneOf: [
          { enum: [...WAIT_UNTIL_EVENTS] },
          { type: 'array', minItems: 1, items: { enum: [...WAIT_UNTIL_EVENTS] } },
        ],
        default: 'load',
      },
      waitForSelector: {
        type: 'string',
        maxLength: MAX_WAIT_SELECTOR_CHARS,
        description: 'After the load, wait for this selector, within the navigation timeout.',
      },
      navigationTimeoutMs: {
        type: 'integer',
        minimum: 0,
        description: 'Clamped to the server limit NAVIGATION_TIMEOUT_MS; 0 is that limit.',
      },
      emulateMediaType: { enum: [...MEDIA_TYPES] },
      locale: { type: 'string', description: 'A BCP 47 tag: Accept-Language, navigator.language and Intl.' },
      timezoneId: { type: 'string', description: 'An IANA time zone.' },
      screenshotOnError: {
        type: 'boolean',
        description: "A failed request's error body carries a PNG screenshot of the page (Base64, capped).",
      },
      proxy: {
        type: 'string',
        pattern: PROXY_NAME.source,
        description:
          'The name of an upstream proxy the operator set up (PROXIES) that this key may use; absent: the key\'s default proxy, if any (docs/network.md "Upstream proxies"). Never a URL.',
      },
    },
  };
}
