// Decides whether the browser may open a connection to host:port, and to which
// address. Names are resolved here, once; the caller connects to the address
// returned and never resolves the name again (no DNS rebinding).
import { lookup, Resolver as DnsResolver } from 'node:dns/promises';
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { EgressAllowEntry } from '../common/config.js';
import { embedded4, format4, isLocalName, judgeAddress, parse6 } from './policy.js';
import { type EgressDecision } from '../protocol/egress.js';
import type { EgressRefusalKind } from '../protocol/security.js';
import { within } from '../common/within.js';

export interface ResolvedAddress {
  readonly address: string;
  readonly family: 4 | 6;
}

/** Resolves a host name to all of its addresses. Injectable so tests never use DNS. */
export type Resolver = (host: string) => Promise<readonly ResolvedAddress[]>;

/**
 * The system's getaddrinfo (reads /etc/hosts), on libuv's shared 4-thread pool
 * with no deadline: for the operator's own names only (the upstream proxies'),
 * never for names a page chooses (see dnsResolver).
 */
export const systemResolver: Resolver = async (host) => {
  const answers = await lookup(host, { all: true, verbatim: true });
  return answers.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

/** How long one DNS query waits for an answer before it is asked again (c-ares doubles it each try). */
export const DNS_TRY_TIMEOUT_MS = 1_500;
/** How many times a DNS query is sent to each server. */
export const DNS_TRIES = 2;
/** The most a page's name lookup takes, A and AAAA together, whatever the servers do. */
export const LOOKUP_DEADLINE_MS = 5_000;

/**
 * Names a page chooses, resolved by c-ares (node:dns Resolver): queries wait on
 * sockets in the event loop, not on libuv's 4 shared threads, so names whose
 * servers never answer cannot hold what every other tenant's lookups need; each
 * lookup ends by LOOKUP_DEADLINE_MS. Asks `servers` (DNS_SERVERS), or those of
 * /etc/resolv.conf. Unlike getaddrinfo it does not read /etc/hosts.
 */
export function dnsResolver(servers: readonly string[]): Resolver {
  const resolver = new DnsResolver({ timeout: DNS_TRY_TIMEOUT_MS, tries: DNS_TRIES });
  if (servers.length > 0) resolver.setServers([...servers]);
  return async (host) => {
    const [v4, v6] = await within(
      Promise.allSettled([resolver.resolve4(host), resolver.resolve6(host)]),
      LOOKUP_DEADLINE_MS,
      () => {
        throw Object.assign(new Error(`lookup of ${host} timed out`), { code: 'ETIMEOUT' });
      },
    );
    const out: ResolvedAddress[] = [];
    if (v4.status === 'fulfilled') for (const address of v4.value) out.push({ address, family: 4 });
    if (v6.status === 'fulfilled') for (const address of v6.value) out.push({ address, family: 6 });
    if (out.length === 0) throw v4.status === 'rejected' ? v4.reason : new Error(`ENOTFOUND ${host}`);
    return out;
  };
}

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
  /**
   * Every address of this machine (all interfaces, and the service's own listening
   * addresses), asked again at each check so an interface that comes up later is
   * covered. Injectable: tests pass a list; the default reads the interfaces.
   */
  readonly localAddresses?: () => readonly string[];
  /** Tests only (the egress test seam): loopback address:port pairs judged as public servers. */
  readonly publicTargets?: readonly { readonly address: string; readonly port: number }[];
}

/**
 * How long a reading of the interfaces is used. Each reading is a getifaddrs
 * call, and a page opens dozens of connections; an address that appears is
 * refused within this time (docs/performance.md, "Why the constants are what they are").
 */
export const LOCAL_ADDRESSES_TTL_MS = 1_000;

/** The addresses of every interface of this machine, read at most once per ttlMs. */
export function systemAddresses(ttlMs = LOCAL_ADDRESSES_TTL_MS): () => readonly string[] {
  let read: { at: number; addresses: readonly string[] } | undefined;
  return () => {
    const now = performance.now();
    if (read === undefined || now - read.at >= ttlMs) {
      const addresses: string[] = [];
      for (const list of Object.values(networkInterfaces())) for (const i of list ?? []) addresses.push(i.address);
      read = { at: now, addresses };
    }
    return read.addresses;
  };
}

/**
 * One key per address however it is spelt: an IPv4 address and its IPv4-mapped
 * IPv6 form (::ffff:a.b.c.d) are the same host, as a connection to either shows.
 * The allow-list compares these keys: only the address as dialled.
 */
export function addressKey(ip: string): string | undefined {
  const bare = normalizeHost(ip);
  const family = isIP(bare.split('%')[0] ?? '');
  if (family === 4) return `4:${bare}`;
  if (family !== 6) return undefined;
  const n = parse6(bare);
  if (n === undefined) return undefined;
  if (n >> 32n === 0xffffn) return `4:${format4(Number(n & 0xffffffffn))}`;
  return `6:${n.toString(16)}`;
}

/**
 * The host an address reaches, for the own-address check: every IPv6 form that
 * embeds an IPv4 address (IPv4-compatible, SIIT, NAT64, 6to4, as policy.ts
 * unwraps them) is keyed as that IPv4 address. SECURITY: not for the allow-list,
 * where unwrapping would widen an entry (64:ff9b::7f00:1 is dialled off the machine).
 */
export function ownAddressKey(ip: string): string | undefined {
  const key = addressKey(ip);
  if (key === undefined || !key.startsWith('6:')) return key;
  const n = BigInt(`0x${key.slice(2)}`);
  // :: and ::1 are IPv6's own unspecified and loopback addresses, not IPv4-compatible forms.
  if (n <= 1n) return key;
  const v4 = embedded4(n);
  return v4 === undefined ? key : `4:${format4(v4)}`;
}

export class EgressChecker {
  readonly #opts: EgressCheckerOptions;
  readonly #localAddresses: () => readonly string[];

  constructor(opts: EgressCheckerOptions) {
    this.#opts = opts;
    this.#localAddresses = opts.localAddresses ?? systemAddresses();
  }

  /** The allow-list opens exact host:port pairs: by name (any answer of that name), or by address. */
  #allowlisted(host: string, address: string, port: number): boolean {
    const key = addressKey(address);
    return this.#opts.allowlist.some(
      (e) => e.port === port && (e.host === host || (key !== undefined && addressKey(e.host) === key)),
    );
  }

  #standsInForPublic(address: string, port: number): boolean {
    const key = addressKey(address);
    return (this.#opts.publicTargets ?? []).some((t) => t.port === port && addressKey(t.address) === key);
  }

  /** An answer that is not a public server elsewhere: loopback, private, this machine's (allow-listed, or refused). */
  #local(address: string, port: number, self: ReadonlySet<string>): boolean {
    if (this.#standsInForPublic(address, port)) return false;
    return !judgeAddress(address).ok || self.has(ownAddressKey(address) ?? '');
  }

  /**
   * Judges one answer for host:port on its own: allowed when it is public and not
   * this machine, or allow-listed. Returns why it is refused, and the kind of address, or undefined.
   */
  #refusal(
    host: string,
    address: string,
    port: number,
    self: ReadonlySet<string>,
  ): { reason: string; kind: EgressRefusalKind } | undefined {
    if (this.#standsInForPublic(address, port)) return undefined;
    const verdict = judgeAddress(address);
    if (verdict.ok && !self.has(ownAddressKey(address) ?? '')) return undefined;
    // SECURITY: the service's own port and the guard's are never reachable, allow-list or not.
    if (this.#opts.protectedPorts().includes(port))
      return { reason: `address not allowed: ${host}:${port} is this service`, kind: 'own-address' };
    if (this.#allowlisted(host, address, port)) return undefined;
    return verdict.ok
      ? { reason: `address not allowed: ${host} (${address} is an address of this machine)`, kind: 'own-address' }
      : { reason: `address not allowed: ${host} (${verdict.reason})`, kind: verdict.kind };
  }

  async check(rawHost: string, port: number): Promise<EgressDecision> {
    const host = normalizeHost(rawHost);
    if (!(Number.isInteger(port) && port >= 1 && port <= 65535))
      return { ok: false, reason: `port ${port} is not allowed`, code: 'NOT_ALLOWED', kind: 'scheme-or-port' };
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
    const self = new Set<string>();
    for (const a of this.#localAddresses()) {
      const k = ownAddressKey(a);
      if (k !== undefined) self.add(k);
    }
    // SECURITY: every answer is judged on its own (an allow-listed answer vouches
    // for no other), and one refused answer refuses the name: a rebinding name that
    // answers a public and a private address is refused, not half-allowed.
    let allowlisted = false;
    let refused: { reason: string; kind: EgressRefusalKind } | undefined;
    let publicAnswer = false;
    for (const a of addresses) {
      const r = this.#refusal(host, a.address, port, self);
      if (r !== undefined) refused ??= r;
      else if (this.#local(a.address, port, self)) allowlisted = true;
      else publicAnswer = true;
    }
    // A name that answers a public address beside a refused one is a rebinding attempt, whatever the refused one is.
    if (refused !== undefined)
      return {
        ok: false,
        code: 'NOT_ALLOWED',
        reason: refused.reason,
        kind: publicAnswer ? 'rebinding' : refused.kind,
      };
    // SECURITY: the address dialled is one that was judged above, never the name.
    const first = addresses[0] as ResolvedAddress;
    return { ok: true, address: first.address, family: first.family, allowlisted };
  }
}
