// The hosts a key's requests may reach (docs/keys-and-limits.md, the key
// policy's `hosts`): patterns the front checks the page's URL against and the
// egress guard checks every connection of the page against. A pattern only
// narrows: the address policy is applied first, so no pattern opens a private
// address.

/** At most this many patterns per key. */
export const MAX_HOST_PATTERNS = 256;
/** The longest pattern: a DNS name (253) with a wildcard label and a port. */
const MAX_PATTERN_CHARS = 262;
const LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
// SECURITY: lower-case ASCII names only (IDNs in their xn-- form) or an IP
// literal, so a pattern is matched as the guard sees the name, never as text
// another parser reads differently.
const PATTERN = new RegExp(`^(\\*\\.)?(${LABEL}(?:\\.${LABEL})*|\\[[0-9a-f:.]+\\])(?::([0-9]{1,5}))?$`);

export interface HostPattern {
  /** `*.example.com`: any name below example.com, not example.com itself. */
  readonly wildcard: boolean;
  /** The name or the IP literal (IPv6 in brackets), lower case. */
  readonly host: string;
  /** Absent: any port. */
  readonly port?: number;
}

/** Parses one pattern ("example.com", "*.example.com", "example.com:8443", "[2001:db8::1]:443"); undefined when it is not one. */
export function parseHostPattern(text: string): HostPattern | undefined {
  if (text.length > MAX_PATTERN_CHARS) return undefined;
  const m = PATTERN.exec(text);
  if (!m) return undefined;
  const host = m[2] as string;
  if (host.length > 253) return undefined;
  const port = m[3] === undefined ? undefined : Number(m[3]);
  if (port !== undefined && (port < 1 || port > 65_535)) return undefined;
  return { wildcard: m[1] !== undefined, host, ...(port === undefined ? {} : { port }) };
}

/**
 * Whether `host` (as the WHATWG URL parser gives it: lower case, punycode,
 * IPv6 in brackets) on `port` is one of `patterns`.
 */
export function hostAllowed(patterns: readonly HostPattern[], host: string, port: number): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  return patterns.some(
    (p) => (p.port === undefined || p.port === port) && (p.wildcard ? name.endsWith(`.${p.host}`) : name === p.host),
  );
}

/** The patterns as written in a key file ("*.acme.example", "acme.example:443"). */
export function formatHostPattern(p: HostPattern): string {
  return `${p.wildcard ? '*.' : ''}${p.host}${p.port === undefined ? '' : `:${p.port}`}`;
}
