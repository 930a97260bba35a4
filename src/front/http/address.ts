// Client addresses as the per-address limits count them: one address per
// subscriber, whatever form it arrives in.
import { isIP } from 'node:net';

/** The eight 16-bit groups of an IPv6 address (zone and embedded IPv4 tail allowed), or undefined. */
function ipv6Groups(address: string): number[] | undefined {
  let text = address.split('%')[0] ?? '';
  const v4 = /^(.*:)(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4.slice(2).map(Number) as [number, number, number, number];
    text = `${v4[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const groups = (part: string | undefined): number[] =>
    part === undefined || part === '' ? [] : part.split(':').map((h) => parseInt(h, 16));
  const head = groups(halves[0]);
  const tail = groups(halves[1]);
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 0) return undefined;
  const all = [...head, ...new Array<number>(halves.length === 2 ? missing : 0).fill(0), ...tail];
  return all.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? all : undefined;
}

/**
 * The address a per-address limit counts: IPv4 as it is; an IPv4-mapped IPv6
 * address (::ffff:a.b.c.d) as its IPv4 address; any other IPv6 address as its
 * /64 ("2001:db8:1:2::/64"). Anything else (no address) is returned unchanged.
 * SECURITY: a subscriber is given a whole /64 (often more), so counting single
 * IPv6 addresses would let one client rotate through 2^64 of them; and the same
 * IPv4 client must not count apart in its two spellings.
 */
export function normalizeAddress(address: string): string {
  const family = isIP(address.split('%')[0] ?? '');
  if (family !== 6) return address;
  const g = ipv6Groups(address);
  if (g === undefined) return address;
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) {
    const hi = g[6] ?? 0;
    const lo = g[7] ?? 0;
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return `${g
    .slice(0, 4)
    .map((x) => x.toString(16))
    .join(':')}::/64`;
}
