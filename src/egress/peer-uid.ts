// Which user owns the other end of a loopback TCP connection, read from the
// kernel's socket tables (/proc/net/tcp and /proc/net/tcp6: one line per socket
// of this network namespace, with its owner's uid). The egress process uses it
// to take connections on a context's port only from the executors' user (their
// Chromium), not from any other local process (issue 23, B3).
import { readFile } from 'node:fs/promises';

export interface Endpoint {
  readonly address: string;
  readonly port: number;
}

const TABLES = ['/proc/net/tcp', '/proc/net/tcp6'] as const;

/** An address as /proc/net/tcp{,6} writes it (hex, 32-bit words in host order: little-endian here). */
export function procAddress(hex: string): string | undefined {
  const words = hex.match(/.{8}/g);
  if (!words || (words.length !== 1 && words.length !== 4)) return undefined;
  const bytes: number[] = [];
  for (const w of words) {
    const n = Number.parseInt(w, 16);
    if (!Number.isFinite(n)) return undefined;
    bytes.push(n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, (n >>> 24) & 0xff);
  }
  if (bytes.length === 4) return bytes.join('.');
  // An IPv4-mapped IPv6 address is the IPv4 address (Node writes it ::ffff:a.b.c.d).
  if (bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff)
    return bytes.slice(12).join('.');
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((((bytes[i] ?? 0) << 8) | (bytes[i + 1] ?? 0)).toString(16));
  return groups.join(':');
}

/** The IPv4 form of an IPv4-mapped address, other addresses as they are (lower case, zeros not compressed). */
function plain(address: string): string {
  const a = address.toLowerCase().replace(/^::ffff:/, '');
  if (a.includes('.') || !a.includes(':')) return a;
  // Expand "::" so that it compares with procAddress's form.
  const [head = '', tail = ''] = a.split('::');
  const h = head === '' ? [] : head.split(':');
  const t = tail === '' ? [] : tail.split(':');
  const middle = a.includes('::') ? Array<string>(8 - h.length - t.length).fill('0') : [];
  return [...h, ...middle, ...t].map((g) => Number.parseInt(g, 16).toString(16)).join(':');
}

/**
 * The uid that owns the socket at `peer` connected to `local` (the peer's own
 * view: its local end is `peer`, its remote end `local`), from the text of the
 * socket tables; undefined when no such socket is listed (it is gone already).
 */
export function ownerIn(tables: readonly string[], peer: Endpoint, local: Endpoint): number | undefined {
  const want = { a: plain(peer.address), p: peer.port, ra: plain(local.address), rp: local.port };
  for (const text of tables)
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10) continue;
      const [la = '', lp = ''] = (f[1] ?? '').split(':');
      const [ra = '', rp = ''] = (f[2] ?? '').split(':');
      if (Number.parseInt(lp, 16) !== want.p || Number.parseInt(rp, 16) !== want.rp) continue;
      // A socket without inode (TIME_WAIT) is owned by nobody any more.
      if (f[9] === '0') continue;
      if (procAddress(la) !== want.a || procAddress(ra) !== want.ra) continue;
      const uid = Number(f[7]);
      return Number.isSafeInteger(uid) ? uid : undefined;
    }
  return undefined;
}

/**
 * Reading a table costs the kernel a walk of its whole connection hash (measured
 * here: ~5.5 ms of system CPU per read, whether it lists 300 sockets or one), so
 * only the table of the connection's family is read (a context's port listens on
 * 127.0.0.1: an IPv4 peer's socket is in /proc/net/tcp; a peer that came as
 * IPv4-mapped IPv6 is not found there and is refused), and one read serves every
 * lookup waiting for it: Chromium opens its connections in bursts.
 */
export function peerUidReader(
  read: (path: string) => Promise<string> = (path) => readFile(path, 'utf8'),
): (peer: Endpoint, local: Endpoint) => Promise<number | undefined> {
  const readers = new Map<string, () => Promise<string>>();
  const fresh = (path: string): Promise<string> => {
    let reader = readers.get(path);
    if (!reader) {
      reader = coalesced(() => read(path));
      readers.set(path, reader);
    }
    return reader();
  };
  return async (peer, local) => {
    const v4 = plain(local.address).includes('.');
    const tables = v4 ? [await fresh(TABLES[0])] : await Promise.all(TABLES.map((t) => fresh(t).catch(() => '')));
    return ownerIn(tables, peer, local);
  };
}

/**
 * Calls of the result share reads of `read`, but never one that started before
 * the call (it might not list a socket accepted just before the call): a call
 * while a read is in flight waits for the next, shared by all that came meanwhile.
 */
function coalesced(read: () => Promise<string>): () => Promise<string> {
  let inFlight: Promise<string> | undefined;
  let queued: Promise<string> | undefined;
  const next = (): Promise<string> => {
    if (!inFlight) {
      inFlight = read().finally(() => (inFlight = undefined));
      return inFlight;
    }
    queued ??= inFlight
      .catch(() => '')
      .then(() => {
        queued = undefined;
        return next();
      });
    return queued;
  };
  return next;
}

/** The owner of a loopback peer, from this network namespace's tables (reads shared, see peerUidReader). */
export const loopbackPeerUid = peerUidReader();
