// The request body of POST /api/scrape, checked in a fixed order (url, then
// outputFormat, then the script fields), so one body always gets one code.
import { ApiError } from '../../common/errors.js';
import type { JobRequest as ScrapeRequest } from '../../protocol/jobs.js';
import type { UpstreamProxy } from '../../common/config.js';
import {
  OptionsError,
  chooseProxy,
  parseRequestOptions,
  type ProxyGrant,
  type RequestOptions,
} from '../../protocol/request-options.js';

type OutputFormat = ScrapeRequest['outputFormat'];

const MAX_URL_LENGTH = 8192;
const BASE64 = /^[A-Za-z0-9+/\-_]*={0,2}$/;

function present(v: unknown): boolean {
  return v !== undefined && v !== null;
}

/** A url the service will load: absolute http: or https: with a host. */
export function validUrl(v: string): boolean {
  if (v.length > MAX_URL_LENGTH) return false;
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    return false;
  }
  return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
}

export function decodeScriptBase64(v: string): string {
  const compact = v.replace(/\s+/g, '');
  if (compact.length === 0 || !BASE64.test(compact) || compact.replace(/=+$/, '').length % 4 === 1) {
    throw new ApiError('INVALID_SCRIPT_ENCODING');
  }
  const bytes = Buffer.from(compact, compact.includes('-') || compact.includes('_') ? 'base64url' : 'base64');
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new ApiError('INVALID_SCRIPT_ENCODING', 'scriptBase64 does not decode to UTF-8 text');
  }
}

export function parseScrapeRequest(raw: Buffer): ScrapeRequest {
  let body: unknown;
  try {
    // A UTF-8 byte-order mark some editors and tools put first is not part of the JSON: skipped.
    const text = raw.toString('utf8').replace(/^\uFEFF/, '');
    body = text.length === 0 ? undefined : JSON.parse(text);
  } catch {
    body = undefined;
  }
  // Empty body, malformed JSON and non-objects all lack a url.
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new ApiError('MISSING_REQUIRED_FIELD');
  const b = body as Record<string, unknown>;

  if (!present(b.url) || b.url === '') throw new ApiError('MISSING_REQUIRED_FIELD');
  if (typeof b.url !== 'string' || !validUrl(b.url)) throw new ApiError('INVALID_URL_FORMAT');

  let outputFormat: OutputFormat = 'json';
  if (present(b.outputFormat)) {
    if (b.outputFormat !== 'json' && b.outputFormat !== 'html') throw new ApiError('INVALID_OUTPUT_FORMAT');
    outputFormat = b.outputFormat;
  }

  if (present(b.script) && present(b.scriptBase64)) throw new ApiError('CONFLICTING_SCRIPT_FIELDS');
  let script: string | undefined;
  if (present(b.script)) {
    if (typeof b.script !== 'string')
      throw new ApiError('INVALID_FIELD_TYPE', 'Invalid field type: script must be a string');
    script = b.script;
  } else if (present(b.scriptBase64)) {
    if (typeof b.scriptBase64 !== 'string')
      throw new ApiError('INVALID_FIELD_TYPE', 'Invalid field type: scriptBase64 must be a string');
    script = decodeScriptBase64(b.scriptBase64);
  }
  // An empty script is the reachability check, like no script.
  if (script !== undefined && script.trim() === '') script = undefined;
  const options = present(b.options) ? checkedOptions(b.options, b.url) : undefined;
  return {
    url: b.url,
    ...(script === undefined ? {} : { script }),
    outputFormat,
    ...(options === undefined ? {} : { options }),
  };
}

/** The body's `options`, checked as the slot process checks them again (src/protocol/request-options.ts). */
export function checkedOptions(v: unknown, url: string): RequestOptions {
  try {
    return parseRequestOptions(v, url);
  } catch (e) {
    if (e instanceof OptionsError) throw new ApiError('INVALID_OPTIONS', `Invalid options: ${e.message}`);
    throw e;
  }
}

/**
 * The job as it goes to a slot process: the proxy the request leaves through
 * (options.proxy, else the key's default), by name, beside the options. Throws
 * 400 INVALID_OPTIONS naming options.proxy when the key may not use the name.
 */
export function requestProxy(
  parsed: ScrapeRequest,
  grant: ProxyGrant,
  proxies: readonly UpstreamProxy[],
): ScrapeRequest {
  const { proxy: requested, ...options } = parsed.options ?? {};
  let proxy: string | undefined;
  try {
    proxy = chooseProxy(
      requested,
      grant,
      proxies.map((p) => p.name),
    );
  } catch (e) {
    if (e instanceof OptionsError) throw new ApiError('INVALID_OPTIONS', `Invalid options: ${e.message}`);
    throw e;
  }
  const { options: _given, ...rest } = parsed;
  return {
    ...rest,
    ...(parsed.options === undefined ? {} : { options }),
    ...(proxy === undefined ? {} : { proxy }),
  };
}
