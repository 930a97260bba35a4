// API keys from the gateway headers, compared in constant time.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { ApiError } from '../errors.js';

function digest(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}

export class KeyStore {
  readonly #digests: readonly Buffer[];

  constructor(keys: readonly string[]) {
    this.#digests = keys.map(digest);
  }

  /** True when the key is one of ours. Every key is compared, so timing says nothing. */
  verify(candidate: string): boolean {
    const d = digest(candidate);
    let found = false;
    for (const k of this.#digests) found = timingSafeEqual(d, k) || found;
    return found;
  }
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  const s = Array.isArray(v) ? v[0] : v;
  return s === undefined || s.trim() === '' ? undefined : s.trim();
}

/** Returns the caller's key, or throws the SPEC's 401s. */
export function authenticate(req: IncomingMessage, keys: KeyStore, gatewayHost: string | undefined): string {
  const key = header(req, 'x-gateway-key');
  if (key === undefined) throw new ApiError('MISSING_API_KEY');
  if (!keys.verify(key)) throw new ApiError('INVALID_API_KEY');
  if (gatewayHost !== undefined && header(req, 'x-gateway-host')?.toLowerCase() !== gatewayHost) {
    throw new ApiError('INVALID_GATEWAY_HOST');
  }
  return key;
}
