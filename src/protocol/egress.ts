// What the egress process and a slot both know of the guard: a check's
// decision, a request's counts through it, the error names it reports and the
// header that marks a refusal. Data and types only.
import type { EgressRefusalKind } from './security.js';

/** What can go wrong with a request's upstream proxy: each a label of pagescript_proxy_failures_total. */
export const PROXY_FAILURE_KINDS = ['unreachable', 'auth', 'refused', 'socks', 'protocol'] as const;
export type ProxyFailureKind = (typeof PROXY_FAILURE_KINDS)[number];

/** Where a request's egress stats count each kind of proxy failure (present once one happened). */
export const PROXY_FAILURE_STATS = {
  unreachable: 'proxyUnreachable',
  auth: 'proxyAuthRefused',
  refused: 'proxyRefusedTarget',
  socks: 'proxySocksError',
  protocol: 'proxyBadAnswer',
} as const satisfies Record<ProxyFailureKind, string>;
export type ProxyFailureStat = (typeof PROXY_FAILURE_STATS)[ProxyFailureKind];

/**
 * Whether the browser may connect to host:port, and to which address.
 * `allowlisted`: an answer is local (loopback, private, this machine's) and
 * passed by the allow-list alone; such a target is dialled directly, never
 * through an upstream proxy (the allow-list names this machine's network).
 */
export type EgressDecision =
  | { ok: true; address: string; family: 4 | 6; allowlisted: boolean }
  | {
      ok: false;
      reason: string;
      code: 'NOT_ALLOWED' | 'NAME_NOT_RESOLVED';
      /** What kind of address a NOT_ALLOWED refused (a security event's class); absent: the key's hosts refused it. */
      kind?: EgressRefusalKind;
    };

/** Asks the egress policy about host:port (the guard's checker, or a slot's client of it). */
export interface EgressCheck {
  check(host: string, port: number): Promise<EgressDecision>;
}

/** What one request's context did through the guard. */
export type EgressStats = {
  /** Upstream connections opened (tunnels and plain requests). */
  connections: number;
  /** Connections and requests refused (by policy, or because the name did not resolve). */
  refused: number;
  /** Bytes from the page to upstreams, and from upstreams to the page. */
  bytesSent: number;
  bytesReceived: number;
} & { [K in ProxyFailureStat]?: number };

export type SessionState = 'spare' | 'live' | 'ended';

/** A request's egress checks (name lookups) in flight at once; the next wait their turn in that request. */
export const MAX_LOOKUPS_IN_FLIGHT_PER_REQUEST = 4;

/** Failures remembered per request, so one request never sees another's. */
export const MAX_FAILURES = 256;
/** A failure is used to name an error within this time (a navigation's lifetime). */
export const FAILURE_TTL_MS = 60_000;

/** Chromium's net error names for upstream failures, by Node error code. */
export const NET_ERRORS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'net::ERR_CONNECTION_REFUSED',
  ECONNRESET: 'net::ERR_CONNECTION_RESET',
  EMPTY_RESPONSE: 'net::ERR_EMPTY_RESPONSE',
  ETIMEDOUT: 'net::ERR_CONNECTION_TIMED_OUT',
  INVALID_RESPONSE: 'net::ERR_INVALID_HTTP_RESPONSE',
  EHOSTUNREACH: 'net::ERR_ADDRESS_UNREACHABLE',
  ENETUNREACH: 'net::ERR_ADDRESS_UNREACHABLE',
  NAME_NOT_RESOLVED: 'net::ERR_NAME_NOT_RESOLVED',
  NOT_ALLOWED: 'net::ERR_ACCESS_DENIED',
};

export const REFUSED_HEADER = 'x-pagescript-egress';
/**
 * The most a plain http:// request's head (request line and headers) may take at
 * the guard: the documented options at their maximum (32 headers of 8 KiB and
 * 50 cookies of 4 KiB, ~456 KiB) and Chromium's own headers fit. Past it the
 * guard answers 431, never an empty response. SECURITY: each connection being
 * parsed may hold this much; Chromium opens at most 256 connections per browser.
 */
export const MAX_REQUEST_HEAD_BYTES = 512 * 1024;
/** How many distinct host:port a request's failure details name as refused by its key's hosts; the rest are counted. */
export const MAX_REFUSED_HOSTS = 16;

/** How many of one request's egress refusals are logged one by one; the rest are counted (EgressStats.refused). */
export const MAX_REFUSALS_LOGGED_PER_REQUEST = 20;

/** The egress guard's time and size limits per connection (tests shorten them through the seam). */
export interface GuardLimits {
  readonly connectTimeoutMs: number;
  readonly idleTimeoutMs: number;
  readonly totalTimeoutMs: number;
  readonly maxBytesPerConnection: number;
}

/** What the egress guard has counted (tests read it through the seam). */
export interface GuardCounts {
  /** TCP connections accepted from the browser. */
  clientConnections: number;
  /** Connections and requests refused because they belonged to no live request. */
  unclaimed: number;
  /** Upstream connections opened. */
  upstreamConnections: number;
  /** Connections to a context's port from a process of another user than the slot processes' (closed unread). */
  otherUsers: number;
}
