// Who is calling: the API key from the gateway headers, and the client address.
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { ApiError } from '../../common/errors.js';
import type { Client, KeyRing } from '../tenancy/keyring.js';
import { normalizeAddress } from './address.js';

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  const s = Array.isArray(v) ? v[0] : v;
  return s === undefined || s.trim() === '' ? undefined : s.trim();
}

export type AuthResult =
  | { readonly ok: true; readonly client: Client }
  /** guess: the request presented one key and it was wrong; only those count towards AUTH_FAILURE_LIMIT. */
  | { readonly ok: false; readonly error: ApiError; readonly guess: boolean };

/**
 * The caller's client (name and limits), or the 401 to answer. The
 * presented key is always looked up (in constant time); nothing about the
 * client address is consulted here.
 */
export function authenticate(req: IncomingMessage, keys: KeyRing, gatewayHost: string | undefined): AuthResult {
  const given = (req.headersDistinct['x-gateway-key'] ?? []).filter((v) => v.trim() !== '');
  // Node joins repeated unknown headers with ", "; two keys are neither key, and no guess.
  if (given.length > 1)
    return {
      ok: false,
      error: new ApiError('INVALID_API_KEY', 'Invalid API key: send exactly one X-Gateway-Key header'),
      guess: false,
    };
  const key = given[0]?.trim();
  if (key === undefined) return { ok: false, error: new ApiError('MISSING_API_KEY'), guess: false };
  const client = keys.verify(key);
  if (client === undefined) return { ok: false, error: new ApiError('INVALID_API_KEY'), guess: true };
  if (gatewayHost !== undefined && header(req, 'x-gateway-host')?.toLowerCase() !== gatewayHost) {
    return { ok: false, error: new ApiError('INVALID_GATEWAY_HOST'), guess: false };
  }
  return { ok: true, client };
}

/**
 * The client's address as the per-address limit counts it (see
 * normalizeAddress): the socket's peer, or, behind trustedProxies balancers
 * (TRUST_PROXY), the address the outermost trusted one saw in X-Forwarded-For.
 * SECURITY: entries further left were written by the client and are ignored.
 */
export function clientAddress(req: IncomingMessage, trustedProxies: number): string {
  const peer = req.socket.remoteAddress ?? 'unknown';
  if (trustedProxies === 0) return normalizeAddress(peer);
  const raw = req.headers['x-forwarded-for'];
  const hops = (Array.isArray(raw) ? raw.join(',') : (raw ?? ''))
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const seen = hops[hops.length - trustedProxies];
  return normalizeAddress(seen !== undefined && isIP(seen) !== 0 ? seen : peer);
}
