// Who owns the other end of a loopback connection, read from the kernel's socket
// tables (src/egress/peer-uid.ts): the egress guard serves a context's port only
// to the slot processes' user.
import assert from 'node:assert/strict';
import { createServer, connect, type Socket } from 'node:net';
import { test } from 'node:test';
import { loopbackPeerUid, peerUidReader, procAddress, type TableReader } from '../../../src/egress/peer-uid.js';

const HEADER = '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode';

/** A table that gives `chunks` one per read (as the kernel gives a page of lines per read), counting the reads. */
function chunked(chunks: readonly string[]): TableReader & { reads: number; closed: boolean } {
  const t = {
    reads: 0,
    closed: false,
    next: async (): Promise<string | undefined> => chunks[t.reads++],
    close: async (): Promise<void> => void (t.closed = true),
  };
  return t;
}

test('addresses as /proc/net/tcp and tcp6 write them', () => {
  assert.equal(procAddress('0100007F'), '127.0.0.1');
  assert.equal(procAddress('0000000000000000FFFF00000100007F'), '127.0.0.1');
  assert.equal(procAddress('00000000000000000000000001000000'), '0:0:0:0:0:0:0:1');
  assert.equal(procAddress('xyz'), undefined);
});

test("a connection's peer is found by both its ends; the listener, the server's side and a TIME_WAIT socket are not it", async () => {
  const table = [
    HEADER,
    // The session's listener, the server's side of the connection (same ports, the other way round), a TIME_WAIT.
    '   0: 0100007F:9C40 00000000:0000 0A 00000000:00000000 00:00000000 00000000   995        0 111 1',
    '   1: 0100007F:9C40 0100007F:C350 01 00000000:00000000 00:00000000 00000000   995        0 112 1',
    '   2: 0100007F:C350 0100007F:9C40 06 00000000:00000000 03:00000000 00000000     0        0 0 3',
    '   3: 0100007F:C350 0100007F:9C40 01 00000000:00000000 00:00000000 00000000   999        0 113 1',
  ].join('\n');
  const peer = { address: '127.0.0.1', port: 0xc350 };
  const local = { address: '::ffff:127.0.0.1', port: 0x9c40 };
  const lookup = peerUidReader(async () => chunked([table]));
  assert.equal(await lookup(peer, local), 999);
  assert.equal(await lookup({ ...peer, port: 1 }, local), undefined, 'gone: nobody');
});

test("this process's own connection is found in the live tables, with this process's uid", async () => {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const accepted = new Promise<Socket>((r) => server.once('connection', r));
  const client = connect((server.address() as { port: number }).port, '127.0.0.1');
  try {
    const s = await accepted;
    const uid = await loopbackPeerUid(
      { address: s.remoteAddress ?? '', port: s.remotePort ?? 0 },
      { address: s.localAddress ?? '', port: s.localPort ?? 0 },
    );
    assert.equal(uid, process.getuid?.());
    s.destroy();
  } finally {
    client.destroy();
    server.close();
  }
});

test('a burst of lookups shares reads of the table, but none uses a read that started before it', async () => {
  const line = '   3: 0100007F:C350 0100007F:9C40 01 00000000:00000000 00:00000000 00000000   999        0 113 1';
  const reads: Array<{ path: string; done: (text: string) => void }> = [];
  const lookup = peerUidReader(
    (path) => new Promise<TableReader>((resolve) => reads.push({ path, done: (text) => resolve(chunked([text])) })),
  );
  const peer = { address: '127.0.0.1', port: 0xc350 };
  const local = { address: '127.0.0.1', port: 0x9c40 };
  const first = lookup(peer, local);
  await new Promise((r) => setImmediate(r));
  assert.equal(reads.length, 1);
  assert.equal(reads[0]?.path, '/proc/net/tcp', 'an IPv4 connection: the IPv4 table only');
  // Ten more arrive while that read is in flight: it may predate their sockets.
  const burst = Array.from({ length: 10 }, () => lookup(peer, local));
  // The first read does not list the socket yet; the next one does.
  reads[0]?.done(HEADER);
  assert.equal(await first, undefined);
  for (let i = 0; i < 5 && reads.length < 2; i++) await new Promise((r) => setImmediate(r));
  assert.equal(reads.length, 2, 'one more read, for the ten');
  reads[1]?.done(`${HEADER}\n${line}`);
  assert.deepEqual(await Promise.all(burst), Array<number>(10).fill(999));
  assert.equal(reads.length, 2);
});

const LINE = '   3: 0100007F:C350 0100007F:9C40 01 00000000:00000000 00:00000000 00000000   999        0 113 1';
const OTHER = (i: number): string =>
  `   ${i}: 0100007F:${(0x1000 + i).toString(16).toUpperCase()} 0100007F:9C40 01 00000000:00000000 00:00000000 00000000   999        0 ${200 + i} 1`;
const PEER = { address: '127.0.0.1', port: 0xc350 };
const LOCAL = { address: '127.0.0.1', port: 0x9c40 };

test("a lookup stops reading the table at its socket's line (the rest of the kernel's walk is not paid), and closes it", async () => {
  const table = chunked([`${HEADER}\n${OTHER(1)}\n`, `${OTHER(2)}\n${LINE}\n`, `${OTHER(4)}\n`, `${OTHER(5)}\n`]);
  const lookup = peerUidReader(async () => table);
  assert.equal(await lookup(PEER, LOCAL), 999);
  assert.equal(table.reads, 2, 'two pages read of four');
  assert.ok(table.closed);
});

test('a line split between two reads is found; a socket not listed is read to the end of the table and owned by nobody', async () => {
  const cut = 40;
  const split = chunked([`${HEADER}\n${OTHER(1)}\n${LINE.slice(0, cut)}`, `${LINE.slice(cut)}\n${OTHER(4)}\n`]);
  assert.equal(await peerUidReader(async () => split)(PEER, LOCAL), 999);
  const without = chunked([`${HEADER}\n${OTHER(1)}\n`, `${OTHER(4)}`]);
  assert.equal(await peerUidReader(async () => without)(PEER, LOCAL), undefined);
  assert.equal(without.reads, 3, 'to the end (the third read finds it)');
  assert.ok(without.closed);
});

test('lookups sharing a pass each get their own line; the pass goes on while one still looks', async () => {
  const other = { address: '127.0.0.1', port: 0x1000 + 4 };
  const tables: ReturnType<typeof chunked>[] = [];
  const lookup = peerUidReader(async () => {
    const t = chunked([`${HEADER}\n${LINE}\n`, `${OTHER(2)}\n`, `${OTHER(4)}\n`, `${OTHER(5)}\n`]);
    tables.push(t);
    return t;
  });
  const [a, b] = await Promise.all([lookup(PEER, LOCAL), lookup(other, LOCAL)]);
  assert.equal(a, 999);
  assert.equal(b, 999);
  assert.equal(tables.length, 1, 'one pass for both');
  assert.equal(tables[0]?.reads, 3, 'until the second found its line');
});

test('a table that cannot be read fails the lookups waiting for it (the guard then closes those connections)', async () => {
  const lookup = peerUidReader(() => Promise.reject(new Error('EACCES')));
  await assert.rejects(lookup(PEER, LOCAL), /EACCES/);
  const failing: TableReader = { next: () => Promise.reject(new Error('EIO')), close: async () => undefined };
  await assert.rejects(peerUidReader(async () => failing)(PEER, LOCAL), /EIO/);
});

// Fresh-eyes attack on the paged reading (issue 20): each lookup gets its own socket's owner, never a pass's
// that started before it, and an IPv6 line cut between two reads is read whole.
const owned = (i: number, uid: number): string =>
  `   ${i}: 0100007F:${(0x1000 + i).toString(16).toUpperCase()} 0100007F:9C40 01 00000000:00000000 00:00000000 00000000 ${uid}        0 ${300 + i} 1`;

test("lookups sharing a pass each get their own socket's owner, not another's on the same page", async () => {
  const lookup = peerUidReader(async () => chunked([`${HEADER}\n${owned(1, 1000)}\n${owned(2, 999)}\n`]));
  const at = (i: number): Promise<number | undefined> => lookup({ address: '127.0.0.1', port: 0x1000 + i }, LOCAL);
  assert.deepEqual(await Promise.all([at(2), at(1), at(3)]), [999, 1000, undefined]);
});

test('a lookup that arrives while a pass is part way through the table is not answered by the rest of that pass', async () => {
  // The pass's second page lists the socket (as the kernel would once it exists): still, the late lookup
  // must wait for a pass of its own, which here does not list it.
  let release: () => void = () => undefined;
  const gate = new Promise<void>((r) => (release = r));
  const pages = [`${HEADER}\n${OTHER(1)}\n`, `${LINE}\n`];
  let passes = 0;
  const lookup = peerUidReader(async () => {
    passes++;
    if (passes > 1) return chunked([`${HEADER}\n${OTHER(1)}\n`]);
    let n = 0;
    return {
      next: async () => {
        if (n === 1) await gate;
        return pages[n++];
      },
      close: async () => undefined,
    };
  });
  const early = lookup({ address: '127.0.0.1', port: 0x1000 + 9 }, LOCAL);
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  const late = lookup(PEER, LOCAL);
  release();
  assert.equal(await early, undefined);
  assert.equal(await late, undefined, 'answered from a pass that started before it');
  assert.equal(passes, 2);
});

test('an IPv6 line cut between two reads is found whole (a listener on ::1)', async () => {
  const v6Header =
    '  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode';
  // Peer [::1]:50000 connected to [::1]:40000, owned by 999.
  const v6Line =
    '   0: 00000000000000000000000001000000:C350 00000000000000000000000001000000:9C40 01 00000000:00000000 00:00000000 00000000   999        0 4242 1 0000000000000000 20 4 30 10 -1';
  for (const cut of [10, 45, 90, 130]) {
    const paths: string[] = [];
    const lookup = peerUidReader(async (path) => {
      paths.push(path);
      return path.endsWith('tcp6')
        ? chunked([`${v6Header}\n${v6Line.slice(0, cut)}`, `${v6Line.slice(cut)}\n`])
        : chunked([`${HEADER}\n`]);
    });
    assert.equal(
      await lookup({ address: '::1', port: 0xc350 }, { address: '::1', port: 0x9c40 }),
      999,
      `cut at ${cut}`,
    );
    assert.deepEqual(paths, ['/proc/net/tcp6']);
  }
});

test('a table whose closing throws does not leave the lookups that came meanwhile waiting for ever', async () => {
  let release: () => void = () => undefined;
  const gate = new Promise<void>((r) => (release = r));
  let passes = 0;
  const lookup = peerUidReader(async () => {
    passes++;
    const t = chunked([`${HEADER}\n${LINE}\n`]);
    return {
      next: async () => {
        await gate;
        return await t.next();
      },
      close: () => {
        throw new Error('EBADF');
      },
    };
  });
  const first = lookup(PEER, LOCAL);
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  assert.equal(passes, 1, 'the first pass is under way');
  const second = lookup(PEER, LOCAL);
  release();
  assert.equal(await first, 999);
  assert.equal(await second, 999);
  assert.equal(passes, 2);
});

test('a port written with letters and leading zeros (":0A1B ") is found among thousands of other sockets', async () => {
  const other = (i: number): string =>
    `${String(i).padStart(4)}: 0100007F:${(20_000 + i).toString(16).toUpperCase()} 0100007F:0A1C 06 00000000:00000000 03:00000000 00000000     0        0 0 3`;
  const lines = [HEADER, ...Array.from({ length: 3000 }, (_, i) => other(i))];
  // The peer's socket, and before it the same port in another socket's remote field (the server's side).
  lines.push('3000: 0100007F:0A1C 0100007F:0A1B 01 00000000:00000000 00:00000000 00000000   995        0 112 1');
  lines.push('3001: 0100007F:0A1B 0100007F:0A1C 01 00000000:00000000 00:00000000 00000000   999        0 113 1');
  const lookup = peerUidReader(async () => chunked([lines.join('\n')]));
  assert.equal(await lookup({ address: '127.0.0.1', port: 0x0a1b }, { address: '127.0.0.1', port: 0x0a1c }), 999);
  assert.equal(await lookup({ address: '127.0.0.1', port: 0x0a1d }, { address: '127.0.0.1', port: 0x0a1c }), undefined);
});
