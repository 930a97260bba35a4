// Which addresses the service's browser may reach: only public ones. Addresses
// are judged as numbers against CIDR ranges, never as text; IPv6 forms that
// embed an IPv4 address are unwrapped and judged by that address.
import { isIP } from 'node:net';
import type { EgressRefusalKind } from '../protocol/security.js';

export type Verdict = { ok: true } | { ok: false; reason: string; kind: EgressRefusalKind };

/** The kind of a refused range by its name (src/protocol/security.ts); any other is 'reserved'. */
const KIND_OF: Readonly<Record<string, EgressRefusalKind>> = {
  'this network': 'loopback',
  loopback: 'loopback',
  unspecified: 'loopback',
  'private network': 'private',
  'carrier-grade NAT': 'private',
  'unique local (private)': 'private',
  'site-local': 'private',
  'link-local (cloud metadata)': 'link-local',
  'link-local': 'link-local',
};
const kindOf = (name: string): EgressRefusalKind => KIND_OF[name] ?? 'reserved';

interface Range4 {
  base: number;
  bits: number;
  name: string;
}
interface Range6 {
  base: bigint;
  bits: number;
  name: string;
}

function parse4(ip: string): number | undefined {
  const parts = ip.split('.');
  if (parts.length !== 4) return undefined;
  let n = 0;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p)) return undefined;
    const v = Number(p);
    if (v > 255) return undefined;
    n = n * 256 + v;
  }
  return n;
}

/** Parses any IPv6 spelling (with :: and a trailing dotted IPv4) into a 128-bit number. */
export function parse6(ip: string): bigint | undefined {
  let s = ip.toLowerCase();
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  let tail: number[] = [];
  const lastColon = s.lastIndexOf(':');
  if (s.includes('.', lastColon)) {
    const v4 = parse4(s.slice(lastColon + 1));
    if (v4 === undefined) return undefined;
    tail = [v4 >>> 16, v4 & 0xffff];
    s = `${s.slice(0, lastColon + 1)}${tail.length ? '0:0' : ''}`;
  }
  const halves = s.split('::');
  if (halves.length > 2) return undefined;
  const head = halves[0] ? halves[0].split(':') : [];
  const rest = halves.length === 2 && halves[1] ? halves[1].split(':') : [];
  const groups =
    halves.length === 2 ? [...head, ...Array<string>(8 - head.length - rest.length).fill('0'), ...rest] : head;
  if (groups.length !== 8) return undefined;
  let n = 0n;
  for (const g of groups) {
    if (!/^[0-9a-f]{1,4}$/.test(g)) return undefined;
    n = (n << 16n) | BigInt(parseInt(g, 16));
  }
  if (tail.length) n = (n & ~0xffffffffn) | (BigInt(tail[0] ?? 0) << 16n) | BigInt(tail[1] ?? 0);
  return n;
}

const V4_RANGES: readonly Range4[] = [
  ['0.0.0.0', 8, 'this network'],
  ['10.0.0.0', 8, 'private network'],
  ['100.64.0.0', 10, 'carrier-grade NAT'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local (cloud metadata)'],
  ['172.16.0.0', 12, 'private network'],
  ['192.0.0.0', 24, 'IETF protocol assignments'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.88.99.0', 24, '6to4 relay anycast'],
  ['192.168.0.0', 16, 'private network'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
].map(([ip, bits, name]) => ({ base: parse4(ip as string) as number, bits: bits as number, name: name as string }));

const V6_RANGES: readonly Range6[] = [
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['100::', 64, 'discard-only'],
  ['2001::', 32, 'Teredo'],
  ['2001:2::', 48, 'benchmarking'],
  ['2001:10::', 28, 'ORCHID'],
  ['2001:20::', 28, 'ORCHIDv2'],
  ['2001:db8::', 32, 'documentation'],
  ['3fff::', 20, 'documentation'],
  ['5f00::', 16, 'segment routing'],
  ['fc00::', 7, 'unique local (private)'],
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'site-local'],
  ['ff00::', 8, 'multicast'],
].map(([ip, bits, name]) => ({ base: parse6(ip as string) as bigint, bits: bits as number, name: name as string }));

function in4(n: number, r: Range4): boolean {
  const mask = r.bits === 0 ? 0 : (0xffffffff << (32 - r.bits)) >>> 0;
  return (n & mask) >>> 0 === (r.base & mask) >>> 0;
}

function in6(n: bigint, base: bigint, bits: number): boolean {
  const shift = BigInt(128 - bits);
  return n >> shift === base >> shift;
}

export function format4(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

function judge4(n: number): Verdict {
  for (const r of V4_RANGES)
    if (in4(n, r)) return { ok: false, reason: `${format4(n)} is ${r.name}`, kind: kindOf(r.name) };
  return { ok: true };
}

/** IPv6 forms that carry an IPv4 address, unwrapped (the IPv4 address as a number). */
export function embedded4(n: bigint): number | undefined {
  const low32 = Number(n & 0xffffffffn);
  if (n >> 32n === 0xffffn) return low32; // ::ffff:a.b.c.d (IPv4-mapped)
  if (n >> 32n === 0n) return low32; // ::a.b.c.d (IPv4-compatible, deprecated)
  if (n >> 32n === 0xffff0000n) return low32; // ::ffff:0:a.b.c.d (SIIT)
  if (n >> 32n === 0x0064ff9b0000000000000000n) return low32; // 64:ff9b::/96 (NAT64)
  if (n >> 80n === 0x0064ff9b0001n) return low32; // 64:ff9b:1::/48 (local NAT64)
  if (n >> 112n === 0x2002n) return Number((n >> 80n) & 0xffffffffn); // 2002::/16 (6to4)
  return undefined;
}

/** Is this IP address (v4 or v6, any spelling Node accepts) one the browser may reach? */
export function judgeAddress(ip: string): Verdict {
  const bare = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  const family = isIP(bare.split('%')[0] ?? '');
  if (family === 4) {
    const n = parse4(bare);
    return n === undefined ? { ok: false, reason: `${ip} is not an address`, kind: 'reserved' } : judge4(n);
  }
  if (family === 6) {
    const n = parse6(bare);
    if (n === undefined) return { ok: false, reason: `${ip} is not an address`, kind: 'reserved' };
    for (const r of V6_RANGES)
      if (in6(n, r.base, r.bits)) return { ok: false, reason: `${bare} is ${r.name}`, kind: kindOf(r.name) };
    const v4 = embedded4(n);
    if (v4 !== undefined) {
      const inner = judge4(v4);
      return inner.ok ? inner : { ok: false, reason: `${bare} embeds ${inner.reason}`, kind: inner.kind };
    }
    return { ok: true };
  }
  return { ok: false, reason: `${ip} is not an address`, kind: 'reserved' };
}

/** Names that always mean this machine, whatever DNS says. */
export function isLocalName(host: string): boolean {
  const h = host.toLowerCase().replace(/\.+$/, '');
  return h === 'localhost' || h.endsWith('.localhost') || h === 'localhost.localdomain' || h === '';
}
