// Through a proxy, Chromium reports every upstream failure as
// ERR_TUNNEL_CONNECTION_FAILED (https) or ERR_EMPTY_RESPONSE (http). The guard
// remembers what really happened, so a script sees the error a direct
// connection would have given (net::ERR_CONNECTION_REFUSED, …).

export type RecentFailure = (host: string, port: number) => string | undefined;

const PROXY_MASKED = /net::ERR_(?:TUNNEL_CONNECTION_FAILED|EMPTY_RESPONSE)/;

export function defaultPort(u: URL): number {
  return Number(u.port || (u.protocol === 'https:' ? 443 : 80));
}

/** The error message with the proxy's generic net error replaced by the real one, when known. */
export function unmaskNetError(message: string, url: string, recentFailure: RecentFailure | undefined): string {
  if (!recentFailure || !PROXY_MASKED.test(message)) return message;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return message;
  }
  const real = recentFailure(u.hostname, defaultPort(u));
  return real ? message.replace(PROXY_MASKED, real) : message;
}
