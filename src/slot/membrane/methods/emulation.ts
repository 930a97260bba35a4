// What a page says about itself that Puppeteer keeps for the rest of the request
// and sends again to each frame of another site: viewport, user agent and its
// metadata, extra headers, credentials, media, time zone, CPU and network
// emulation. Every kept string and list is bounded.
import type { Page } from 'puppeteer';
import type { Protocol } from 'devtools-protocol';
import { budgetError } from '../budgets.js';
import {
  MAX_HEADERS,
  MAX_HEADER_CHARS,
  MAX_USER_AGENT_CHARS,
  VIEWPORT_BOUNDS,
  refusedHeader,
} from '../../../protocol/request-options.js';
import { VIEWPORT } from '../option-schemas.js';
import { MembraneError, isPlainObject, num, options, str, stringRecord, type Schema } from '../options.js';
import type { MethodContext, Table } from './context.js';

/**
 * SECURITY: a string Puppeteer keeps on the host for the rest of the request and
 * sends again to each frame of another site the page attaches (extra headers,
 * the user agent, the time zone, media features; credentials, to each request
 * that asks for them): as long as a request's options allow, not as long as one
 * membrane message (16 Mi characters, each of them JSON-written again per frame).
 */
function kept(v: unknown, where: string, maxChars: number): string {
  const s = str(v, where);
  if (s.length > maxChars) throw budgetError(`${where} is too long (${s.length} characters; at most ${maxChars})`);
  return s;
}

/** A time zone's name (IANA names are under 40 characters) and a media feature's value, at most. */
export const MAX_EMULATION_CHARS = 256;

/** Brands, full versions and form factors one userAgentMetadata may list (a browser sends three or four). */
export const MAX_USER_AGENT_LIST = 32;

/** A bounded list of userAgentMetadata: each entry rebuilt by `item`. */
function uaList<T>(v: unknown, where: string, item: (x: unknown, where: string) => T): T[] {
  if (!Array.isArray(v) || v.length > MAX_USER_AGENT_LIST)
    throw new MembraneError(`${where} must be an array of at most ${MAX_USER_AGENT_LIST}`);
  return v.map((x, i) => item(x, `${where} ${i}`));
}

function brandVersion(v: unknown, where: string): { brand: string; version: string } {
  if (!isPlainObject(v)) throw new MembraneError(`${where} must be { brand, version }`);
  return {
    brand: kept(v.brand, `${where}: brand`, MAX_EMULATION_CHARS),
    version: kept(v.version, `${where}: version`, MAX_EMULATION_CHARS),
  };
}

/**
 * setUserAgent()'s userAgentMetadata (what navigator.userAgentData and the
 * Sec-CH-UA headers say), rebuilt from its known fields. SECURITY: Puppeteer keeps
 * it for the rest of the request and sends it to each frame of another site, as
 * the user agent itself: every string and list is bounded.
 */
type UserAgentMetadata = Protocol.Emulation.UserAgentMetadata;

function userAgentMetadata(v: unknown, where: string): UserAgentMetadata {
  if (!isPlainObject(v)) throw new MembraneError(`${where} must be an object`);
  const text = (x: unknown, w: string): string => kept(x, w, MAX_EMULATION_CHARS);
  const out: Record<string, unknown> = {};
  for (const key of ['fullVersion', 'platform', 'platformVersion', 'architecture', 'model', 'bitness'])
    if (v[key] !== undefined) out[key] = text(v[key], `${where}: ${key}`);
  for (const key of ['mobile', 'wow64'])
    if (v[key] !== undefined) {
      if (typeof v[key] !== 'boolean') throw new MembraneError(`${where}: ${key} must be true or false`);
      out[key] = v[key];
    }
  if (v.brands !== undefined) out.brands = uaList(v.brands, `${where}: brands`, brandVersion);
  if (v.fullVersionList !== undefined)
    out.fullVersionList = uaList(v.fullVersionList, `${where}: fullVersionList`, brandVersion);
  if (v.formFactors !== undefined) out.formFactors = uaList(v.formFactors, `${where}: formFactors`, text);
  // Missing required fields are Chromium's to refuse, in its own words.
  return out as unknown as UserAgentMetadata;
}

/** emulateNetworkConditions()'s conditions: Chromium's throttling of the request's own page (bytes/s, ms). */
const NETWORK_CONDITIONS: Schema = {
  download: 'number',
  upload: 'number',
  latency: 'number',
  offline: 'boolean',
};

/** setExtraHTTPHeaders()'s object: string values, refused otherwise in Puppeteer's own words. */
function extraHeaders(v: unknown): Record<string, string> {
  if (!isPlainObject(v)) throw new MembraneError('page.setExtraHTTPHeaders: headers must be an object of strings');
  // As a request's options.extraHTTPHeaders are bounded (request-options.ts).
  if (Object.keys(v).length > MAX_HEADERS)
    throw budgetError(`page.setExtraHTTPHeaders: at most ${MAX_HEADERS} headers`);
  for (const [k, x] of Object.entries(v))
    if (typeof x !== 'string')
      throw new MembraneError(`Expected value of header "${k}" to be String, but "${typeof x}" is found.`);
  for (const k of Object.keys(v)) {
    // SECURITY: the same headers are refused as in the request's options.extraHTTPHeaders (the guard relies on them).
    const why = refusedHeader(k);
    if (why !== undefined) throw new MembraneError(`page.setExtraHTTPHeaders: header "${k.slice(0, 64)}" ${why}`);
    kept(k, 'page.setExtraHTTPHeaders: a header name', MAX_HEADER_CHARS);
    kept(v[k], `page.setExtraHTTPHeaders: header "${k.slice(0, 64)}"`, MAX_HEADER_CHARS);
  }
  return stringRecord(v, 'page.setExtraHTTPHeaders');
}

/** A renderer slowed more than this only waits: the request's time runs out either way. */
export const MAX_CPU_THROTTLING = 100;
/** Media features one call may set; CSS knows about a dozen. */
export const MAX_MEDIA_FEATURES = 32;
const IDLE_STATE: Schema = { isUserActive: 'boolean', isScreenUnlocked: 'boolean' };

function mediaFeatures(v: unknown): { name: string; value: string }[] {
  if (!Array.isArray(v) || v.length > MAX_MEDIA_FEATURES)
    throw new MembraneError(`page.emulateMediaFeatures: features must be an array of at most ${MAX_MEDIA_FEATURES}`);
  return v.map((f, i) => {
    if (!isPlainObject(f)) throw new MembraneError(`page.emulateMediaFeatures: feature ${i} must be { name, value }`);
    return {
      name: kept(f.name, `page.emulateMediaFeatures: feature ${i} name`, MAX_EMULATION_CHARS),
      value: kept(f.value, `page.emulateMediaFeatures: feature ${i} value`, MAX_EMULATION_CHARS),
    };
  });
}

/** A viewport side in device pixels (CSS pixels × deviceScaleFactor), as Chromium's largest texture. */
const MAX_DEVICE_PIXELS_PER_SIDE = VIEWPORT_BOUNDS.maxDevicePixelsPerSide;

/** A viewport, bounded: CSS pixels 1–4096 a side, and at most MAX_DEVICE_PIXELS_PER_SIDE device pixels. */
function viewport(vp: unknown, c: MethodContext, where: string): { width: number; height: number } {
  const o = options(vp, VIEWPORT, c.clock, where);
  if (o.width === undefined || o.height === undefined)
    throw new MembraneError(`${where}: width and height are required`);

  // SECURITY: the page's memory grows with its device pixels; at most Chromium's
  // own texture limit a side, whatever the scale factor.
  const scale = typeof o.deviceScaleFactor === 'number' ? o.deviceScaleFactor : 1;
  if (Math.max(Number(o.width), Number(o.height)) * scale > MAX_DEVICE_PIXELS_PER_SIDE)
    throw new MembraneError(
      `${where}: width and height times deviceScaleFactor must be at most ${MAX_DEVICE_PIXELS_PER_SIDE}`,
    );
  return o as { width: number; height: number };
}

export const EMULATION: Table<Page> = {
  setViewport: (p, [vp], c) => (vp === null ? p.setViewport(null) : p.setViewport(viewport(vp, c, 'page.setViewport'))),
  // A device preset (KnownDevices): its user agent and viewport, checked as setUserAgent and setViewport.
  emulate: (p, [device], c) => {
    if (!isPlainObject(device)) throw new MembraneError('page.emulate: device must be { userAgent, viewport }');
    return p.emulate({
      userAgent: kept(device.userAgent, 'page.emulate: userAgent', MAX_USER_AGENT_CHARS),
      viewport: viewport(device.viewport, c, 'page.emulate: viewport'),
    });
  },
  setUserAgent: (p, [ua, metadata]) => {
    if (!isPlainObject(ua))
      return p.setUserAgent(
        kept(ua, 'page.setUserAgent', MAX_USER_AGENT_CHARS),
        metadata === undefined ? undefined : userAgentMetadata(metadata, 'page.setUserAgent: userAgentMetadata'),
      );
    // The options form; a missing userAgent is the browser's own, as Puppeteer reads it.
    return p.setUserAgent({
      ...(ua.userAgent === undefined
        ? {}
        : { userAgent: kept(ua.userAgent, 'page.setUserAgent: userAgent', MAX_USER_AGENT_CHARS) }),
      ...(ua.userAgentMetadata === undefined
        ? {}
        : { userAgentMetadata: userAgentMetadata(ua.userAgentMetadata, 'page.setUserAgent: userAgentMetadata') }),
      ...(ua.platform === undefined
        ? {}
        : { platform: kept(ua.platform, 'page.setUserAgent: platform', MAX_EMULATION_CHARS) }),
    });
  },
  setExtraHTTPHeaders: (p, [h]) => p.setExtraHTTPHeaders(extraHeaders(h)),
  setJavaScriptEnabled: (p, [on]) => p.setJavaScriptEnabled(on === true),
  emulateMediaType: (p, [type]) =>
    p.emulateMediaType(type === undefined || type === null ? undefined : str(type, 'page.emulateMediaType')),
  emulateTimezone: (p, [tz]) =>
    p.emulateTimezone(tz === undefined ? undefined : kept(tz, 'page.emulateTimezone', MAX_EMULATION_CHARS)),
  emulateMediaFeatures: (p, [features]) =>
    p.emulateMediaFeatures(features === undefined || features === null ? undefined : mediaFeatures(features)),
  // Puppeteer checks the names (its message comes through); the host checks only the kind.
  emulateVisionDeficiency: (p, [type]) =>
    p.emulateVisionDeficiency(
      type === undefined || type === null ? undefined : (str(type, 'page.emulateVisionDeficiency') as never),
    ),
  // Below 1 Puppeteer refuses with its own message; above MAX_CPU_THROTTLING the renderer would only wait.
  emulateCPUThrottling: (p, [factor]) =>
    p.emulateCPUThrottling(
      factor === undefined || factor === null
        ? null
        : num(factor, 'page.emulateCPUThrottling: factor', -1e9, MAX_CPU_THROTTLING),
    ),
  emulateIdleState: (p, [state], c) =>
    p.emulateIdleState(
      state === undefined || state === null
        ? undefined
        : (options(state, IDLE_STATE, c.clock, 'page.emulateIdleState') as {
            isUserActive: boolean;
            isScreenUnlocked: boolean;
          }),
    ),
  // Numbers only: Puppeteer checks the ranges itself, in its own words ("Invalid longitude").
  setGeolocation: (p, [g], c) =>
    p.setGeolocation(
      options(g, { latitude: 'number', longitude: 'number', accuracy: 'number' }, c.clock, 'page.setGeolocation') as {
        latitude: number;
        longitude: number;
      },
    ),
  emulateNetworkConditions: (p, [conditions], c) =>
    p.emulateNetworkConditions(
      conditions === undefined || conditions === null
        ? null
        : (options(conditions, NETWORK_CONDITIONS, c.clock, 'page.emulateNetworkConditions') as never),
    ),
  setOfflineMode: (p, [on]) => p.setOfflineMode(on === true),
  setCacheEnabled: (p, [on]) => p.setCacheEnabled(on !== false),
  setBypassCSP: (p, [on]) => p.setBypassCSP(on === true),
  setBypassServiceWorker: (p, [on]) => p.setBypassServiceWorker(on === true),
  authenticate: (p, [creds], c) => {
    if (creds === null) return p.authenticate(null);
    const o = options(creds, { username: 'string', password: 'string' }, c.clock, 'page.authenticate') as {
      username?: unknown;
      password?: unknown;
    };
    if (o.username !== undefined) kept(o.username, 'page.authenticate: username', MAX_HEADER_CHARS);
    if (o.password !== undefined) kept(o.password, 'page.authenticate: password', MAX_HEADER_CHARS);
    return p.authenticate(o as never);
  },
};
