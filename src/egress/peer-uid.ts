// Which user owns the other end of a loopback TCP connection, read from the
// kernel's socket tables (/proc/net/tcp and /proc/net/tcp6: one line per socket
// of this network namespace, with its owner's uid). The egress process uses it
// to take connections on a context's port only from the slot processes' user (their
// Chromium), not from any other local process.
import { open } from 'node:fs/promises';
import { background } from '../common/background.js';

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

/** What a lookup wants: the peer's socket (its local end `peer`, its remote end `local`), in procAddress's form. */
interface Wanted {
  readonly a: string;
  readonly p: number;
  readonly ra: string;
  readonly rp: number;
  /** The socket's own port as the kernel writes it after an address (`:%04X `): every line of that socket has it. */
  readonly portTag: string;
}

function wanted(peer: Endpoint, local: Endpoint): Wanted {
  const portTag = `:${peer.port.toString(16).toUpperCase().padStart(4, '0')} `;
  return { a: plain(peer.address), p: peer.port, ra: plain(local.address), rp: local.port, portTag };
}

/** The owner's uid when `line` (of a socket table) is the wanted socket; null when it is another (or no socket). */
function ownerOnLine(line: string, want: Wanted): number | undefined | null {
  // Most lines are other sockets (TIME_WAIT ones pile up under load), and parsing
  // them would be most of a pass's CPU: a line without the port is not parsed.
  if (!line.includes(want.portTag)) return null;
  const f = line.trim().split(/\s+/);
  if (f.length < 10) return null;
  const [la = '', lp = ''] = (f[1] ?? '').split(':');
  const [ra = '', rp = ''] = (f[2] ?? '').split(':');
  if (Number.parseInt(lp, 16) !== want.p || Number.parseInt(rp, 16) !== want.rp) return null;
  // A socket without inode (TIME_WAIT) is owned by nobody any more.
  if (f[9] === '0') return null;
  if (procAddress(la) !== want.a || procAddress(ra) !== want.ra) return null;
  const uid = Number(f[7]);
  return Number.isSafeInteger(uid) ? uid : undefined;
}

/** A socket table read in chunks as the kernel gives them; next() is undefined at its end. */
export interface TableReader {
  next(): Promise<string | undefined>;
  close(): Promise<void>;
}

/** The real table: the kernel gives one page of lines per read. */
async function openTable(path: string): Promise<TableReader> {
  const handle = await open(path, 'r');
  const buffer = Buffer.alloc(64 * 1024);
  return {
    async next() {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
      return bytesRead === 0 ? undefined : buffer.toString('latin1', 0, bytesRead);
    },
    close: () => handle.close(),
  };
}

interface Lookup {
  readonly want: Wanted;
  readonly done: (uid: number | undefined) => void;
  readonly fail: (e: unknown) => void;
}

/**
 * One pass over a table for a batch of lookups, stopping as soon as each has
 * found its line. SECURITY-neutral, for cost: the kernel lists a table by
 * walking its whole connection hash, a little more with each page read, so the
 * walk to the end and the read that finds the end cost most (docs/performance.md,
 * "What makes it fast"). A connection's socket is somewhere in that walk; the
 * rest of the table is not read. Each lookup is answered once, with its line's
 * owner, or undefined at the end of the table.
 */
async function scan(reader: TableReader, lookups: Lookup[]): Promise<void> {
  let pending = lookups;
  try {
    let rest = '';
    let header = true;
    const match = (line: string): void => {
      if (header) {
        header = false;
        return;
      }
      pending = pending.filter((l) => {
        const uid = ownerOnLine(line, l.want);
        if (uid === null) return true;
        l.done(uid);
        return false;
      });
    };
    while (pending.length > 0) {
      const chunk = await reader.next();
      if (chunk === undefined) break;
      const lines = (rest + chunk).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) if (pending.length > 0) match(line);
    }
    if (pending.length > 0 && rest !== '') match(rest);
    for (const l of pending) l.done(undefined);
  } catch (e) {
    for (const l of pending) l.fail(e);
  } finally {
    // SECURITY (availability): a close that throws, even synchronously, must not
    // end the loop in sharedScans with lookups still queued (they would wait, and
    // their connections stay paused, until some later lookup started a pass).
    try {
      await reader.close();
    } catch {
      // The table's handle is gone either way.
    }
  }
}

/**
 * Lookups share passes over a table, but never one that started before the
 * lookup (it might have passed the place of a socket accepted just before):
 * a lookup while a pass runs waits for the next, shared by all that came meanwhile.
 */
function sharedScans(
  path: string,
  openReader: (path: string) => Promise<TableReader>,
): (want: Wanted) => Promise<number | undefined> {
  let queued: Lookup[] = [];
  let running = false;
  const run = async (): Promise<void> => {
    try {
      while (queued.length > 0) {
        const batch = queued;
        queued = [];
        let reader: TableReader;
        try {
          reader = await openReader(path);
        } catch (e) {
          for (const l of batch) l.fail(e);
          continue;
        }
        await scan(reader, batch);
      }
    } finally {
      running = false;
    }
  };
  return (want) =>
    new Promise<number | undefined>((done, fail) => {
      queued.push({ want, done, fail });
      // Started a turn later: the connections accepted in one turn (a burst) share the pass.
      if (!running) {
        running = true;
        setImmediate(() => background(run(), 'reading the socket table'));
      }
    });
}

/**
 * Only the table of the connection's family is read (a context's port listens
 * on 127.0.0.1: an IPv4 peer's socket is in /proc/net/tcp; a peer that came as
 * IPv4-mapped IPv6 is not found there and is refused), and one pass serves
 * every lookup waiting for it: Chromium opens its connections in bursts.
 */
export function peerUidReader(
  openReader: (path: string) => Promise<TableReader> = openTable,
): (peer: Endpoint, local: Endpoint) => Promise<number | undefined> {
  const v4 = sharedScans(TABLES[0], openReader);
  const v6 = sharedScans(TABLES[1], openReader);
  return async (peer, local) => {
    const want = wanted(peer, local);
    if (want.ra.includes('.')) return await v4(want);
    // An IPv6 listener: its peer may be in either table; a table that cannot be read lists nothing.
    return (await v6(want).catch(() => undefined)) ?? (await v4(want).catch(() => undefined));
  };
}

/** The owner of a loopback peer, from this network namespace's tables (passes shared, see peerUidReader). */
export const loopbackPeerUid = peerUidReader();
