// Who is calling: the API key from the gateway headers, and the client address.
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { ApiError } from '../errors.js';
import type { Client, KeyRing } from '../tenancy/keyring.js';

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  const s = Array.isArray(v) ? v[0] : v;
  return s === undefined || s.trim() === '' ? undefined : s.trim();
}

/** Returns the caller's client (name and limits), or throws MISSING_API_KEY, INVALID_API_KEY or INVALID_GATEWAY_HOST. */
export function authenticate(req: IncomingMessage, keys: KeyRing, gatewayHost: string | undefined): Client {
  const key = header(req, 'x-gateway-key');
  if (key === undefined) throw new ApiError('MISSING_API_KEY');
  const client = keys.verify(key);
  if (client === undefined) throw new ApiError('INVALID_API_KEY');
  if (gatewayHost !== undefined && header(req, 'x-gateway-host')?.toLowerCase() !== gatewayHost) {
    throw new ApiError('INVALID_GATEWAY_HOST');
  }
  return client;
}

/**
 * The client's address: the socket's peer, or, behind trustedProxies balancers
 * (TRUST_PROXY), the address the outermost trusted one saw in X-Forwarded-For.
 * SECURITY: entries further left were written by the client and are ignored.
 */
export function clientAddress(req: IncomingMessage, trustedProxies: number): string {
  const peer = req.socket.remoteAddress ?? 'unknown';
  if (trustedProxies === 0) return peer;
  const raw = req.headers['x-forwarded-for'];
  const hops = (Array.isArray(raw) ? raw.join(',') : (raw ?? ''))
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const seen = hops[hops.length - trustedProxies];
  return seen !== undefined && isIP(seen) !== 0 ? seen : peer;
}
