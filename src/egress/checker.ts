// Decides whether the browser may open a connection to host:port, and to which
// address. Names are resolved here, once; the caller connects to the address
// returned and never resolves the name again (no DNS rebinding).
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { EgressAllowEntry } from '../config.js';
import { isLocalName, judgeAddress } from './policy.js';

export interface ResolvedAddress {
  readonly address: string;
  readonly family: 4 | 6;
}

/** Resolves a host name to all of its addresses. Injectable so tests never use DNS. */
export type Resolver = (host: string) => Promise<readonly ResolvedAddress[]>;

export type EgressDecision =
  | { ok: true; address: string; family: 4 | 6; allowlisted: boolean }
  | { ok: false; reason: string; code: 'NOT_ALLOWED' | 'NAME_NOT_RESOLVED' };

export const systemResolver: Resolver = async (host) => {
  const answers = await lookup(host, { all: true, verbatim: true });
  return answers.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

/**
 * The host as a browser reads it: "[::1]" → "::1", "Example.COM." → "example.com",
 * and the numeric spellings of IPv4 ("127.1", "2130706433", "0x7f000001",
 * "0177.0.0.1") → "127.0.0.1", by the WHATWG URL parser that Chromium follows.
 */
export function normalizeHost(host: string): string {
  let h = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  try {
    h = new URL(`http://${h.includes(':') ? `[${h}]` : h}/`).hostname;
  } catch {
    // not a host a URL can carry: judged as given, and refused by the resolver
  }
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  return h.toLowerCase().replace(/\.+$/, '');
}

export interface EgressCheckerOptions {
  readonly allowlist: readonly EgressAllowEntry[];
  /** Ports on this machine that no page may reach, allow-list or not (the service's, the guard's). */
  readonly protectedPorts: () => readonly number[];
  readonly resolve: Resolver;
}

export class EgressChecker {
  readonly #opts: EgressCheckerOptions;

  constructor(opts: EgressCheckerOptions) {
    this.#opts = opts;
  }

  #allowlisted(host: string, addresses: readonly ResolvedAddress[], port: number): boolean {
    return this.#opts.allowlist.some(
      (e) => e.port === port && (e.host === host || addresses.some((a) => normalizeHost(a.address) === e.host)),
    );
  }

  async check(rawHost: string, port: number): Promise<EgressDecision> {
    const host = normalizeHost(rawHost);
    if (!(port >= 1 && port <= 65535)) return { ok: false, reason: `port ${port} is not allowed`, code: 'NOT_ALLOWED' };
    let addresses: readonly ResolvedAddress[];
    if (isIP(host)) {
      addresses = [{ address: host, family: isIP(host) === 6 ? 6 : 4 }];
    } else if (isLocalName(host)) {
      // SECURITY: "localhost" and *.localhost are this machine whatever DNS answers.
      addresses = [{ address: '127.0.0.1', family: 4 }];
    } else {
      try {
        addresses = await this.#opts.resolve(host);
      } catch {
        return { ok: false, reason: `${host} could not be resolved`, code: 'NAME_NOT_RESOLVED' };
      }
      if (addresses.length === 0)
        return { ok: false, reason: `${host} could not be resolved`, code: 'NAME_NOT_RESOLVED' };
    }
    const verdicts = addresses.map((a) => judgeAddress(a.address));
    const local = verdicts.find((v) => !v.ok);
    if (local && !local.ok) {
      // SECURITY: the service's own port and the guard's are never reachable, allow-list or not.
      if (this.#opts.protectedPorts().includes(port)) {
        return { ok: false, reason: `address not allowed: ${host}:${port} is this service`, code: 'NOT_ALLOWED' };
      }
      if (!this.#allowlisted(host, addresses, port)) {
        // SECURITY: one non-public answer refuses the name: a rebinding name that
        // answers a public and a private address is refused, not half-allowed.
        return { ok: false, reason: `address not allowed: ${host} (${local.reason})`, code: 'NOT_ALLOWED' };
      }
    }
    const first = addresses[0] as ResolvedAddress;
    return { ok: true, address: first.address, family: first.family, allowlisted: local !== undefined };
  }
}
