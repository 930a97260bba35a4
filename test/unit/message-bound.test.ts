// What a child can make the front hold or throw through its IPC channel
// (src/front/children/message-bound.ts), with real children forked the way the
// front forks its slot and egress processes ('advanced' serialization), doing
// what code that escaped into one could: writing the channel's descriptor past
// Node's framing, sending Node's own messages, sending descriptors.
import assert from 'node:assert/strict';
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { HELD_CHUNK_COST, boundChildMessages } from '../../src/front/children/message-bound.js';

const dir = mkdtempSync(join(tmpdir(), 'pagescript-message-bound-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Writes chunks to the channel's descriptor as they are, one after the other; `gapMs` between writes. */
const PRELUDE = `import { writeSync } from 'node:fs';
const fd = process.channel.fd;
const writeRaw = (chunks, gapMs = -1) => {
  let off = 0;
  const next = () => {
    while (chunks.length) {
      try { off += writeSync(fd, chunks[0], off); } catch (e) { if (e.code === 'EAGAIN') setTimeout(next, 1); return; }
      if (off >= chunks[0].length) { chunks.shift(); off = 0; }
      if (gapMs >= 0) return void setTimeout(next, gapMs);
    }
  };
  next();
};
setInterval(() => {}, 1000);
`;

function child(name: string, body: string): ChildProcess {
  const file = join(dir, `${name}.mjs`);
  writeFileSync(file, PRELUDE + body);
  return fork(file, [], { serialization: 'advanced', stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
}

/** Sends `first` the normal way; once it is written whole (raw bytes in its midst would break it), `raw` (hex) and `thenMiB` MiB of filler. */
const firstThenRaw = (first: unknown, raw: string, thenMiB = 0): string =>
  `const chunks = [Buffer.from(${JSON.stringify(raw)}, 'hex')];
for (let i = 0; i < ${thenMiB}; i++) chunks.push(Buffer.alloc(1 << 20, 0x41));
process.send(${JSON.stringify(first)}, () => writeRaw(chunks));`;

/** Bounds `c` at `max`; resolves with the messages it delivered and why it was cut (if it was). */
function watched(c: ChildProcess, max: number, until: (seen: unknown[]) => boolean) {
  const seen: unknown[] = [];
  return new Promise<{ seen: unknown[]; reason?: string }>((resolve) => {
    boundChildMessages(c, max, (reason) => {
      c.kill('SIGKILL');
      resolve({ seen, reason });
    });
    c.on('message', (m) => {
      seen.push(m);
      if (until(seen)) {
        c.kill('SIGKILL');
        resolve({ seen });
      }
    });
  });
}

const heldOf = (reason: string | undefined): number => Number(/\((\d+) held when it was cut/.exec(reason ?? '')?.[1]);

test('messages within the bound reach the front as they are', async () => {
  const big = 'x'.repeat(256 * 1024);
  // A second, whole message written raw: a 4-byte length, V8's header, a one-byte string of 3 characters.
  const c = child('within', firstThenRaw({ type: 'note', big }, '00000007' + 'ff0f' + '2203616263'));
  const { seen, reason } = await watched(c, 512 * 1024, (s) => s.length === 2);
  assert.equal(reason, undefined);
  assert.deepEqual(seen, [{ type: 'note', big }, 'abc']);
});

test('a message without end is cut at the bound: the front holds no more of it, and the child is ended', async () => {
  // A length of 2 GiB, then 64 MiB of it: Node alone would hold every byte until the last.
  const c = child('endless', firstThenRaw({ type: 'first' }, '7fffffff', 64));
  const max = 4 * 2 ** 20;
  const { seen, reason } = await watched(c, max, () => false);
  assert.deepEqual(seen, [{ type: 'first' }], 'what came before it was delivered');
  const held = heldOf(reason);
  assert.ok(held > max && held <= max + 2 ** 20, `cut within a read of the bound: ${reason}`);
  assert.equal(c.connected, false, 'the channel is closed');
});

test('a message dripped one byte a read is cut by what its reads cost the front, not by its few bytes', async () => {
  const c = child(
    'drip',
    firstThenRaw({ type: 'first' }, '7fffffff').replace(
      'writeRaw(chunks)',
      'writeRaw([...chunks, ...Array.from({ length: 100000 }, () => Buffer.from([0x41]))], 0)',
    ),
  );
  const max = 64 * 1024;
  const { reason } = await watched(c, max, () => false);
  const held = heldOf(reason);
  assert.ok(held > max, String(reason));
  // Each read cost HELD_CHUNK_COST: cut after ~max / HELD_CHUNK_COST reads, at a few hundred bytes of the message.
  assert.ok(held - Math.floor(held / HELD_CHUNK_COST) * HELD_CHUNK_COST < 4096, String(reason));
});

test('nine bytes V8 cannot deserialize end the child, not the front (Node throws them where nothing catches)', async () => {
  const c = child('garbage', firstThenRaw({ type: 'first' }, '00000005ff0f999999'));
  const { seen, reason } = await watched(c, 2 ** 20, () => false);
  assert.deepEqual(seen, [{ type: 'first' }]);
  assert.match(reason ?? '', /cannot be read/);
});

test("Node's own acknowledgement of a descriptor the front never sent ends the child, not the front (an assertion of Node's, uncaught)", async () => {
  for (const cmd of ['NODE_HANDLE_ACK', 'NODE_HANDLE_NACK', 'NODE_HANDLE']) {
    const c = child(
      `ack-${cmd}`,
      `process.send({ type: 'first' }, () => process.send({ cmd: ${JSON.stringify(cmd)} }));`,
    );
    const { seen, reason } = await watched(c, 2 ** 20, () => false);
    assert.deepEqual(seen, [{ type: 'first' }]);
    assert.match(reason ?? '', new RegExp(`a Node message of its own \\(${cmd}\\)`));
  }
});

test('a descriptor sent to the front is closed and ends the child (a server of it ended the front; a plain message kept it open)', async () => {
  const fds = (): number => readdirSync('/proc/self/fd').length;
  const before = fds();
  for (const [name, body] of [
    [
      'fd-server',
      `import { createServer } from 'node:net'; const s = createServer().listen(0, '127.0.0.1', () => process.send('a server', s));`,
    ],
    [
      'fd-plain',
      `import { createServer } from 'node:net'; const s = createServer().listen(0, '127.0.0.1', () => { for (let i = 0; i < 50; i++) process.send('x', s._handle); });`,
    ],
  ] as const) {
    const { reason } = await watched(child(name, body), 2 ** 20, () => false);
    assert.match(reason ?? '', /sent a descriptor/, name);
  }
  assert.ok(fds() <= before + 2, `descriptors open: ${before} before, ${fds()} after`);
});

test('a descriptor the front sends is still acknowledged by the child and taken: the front goes on', async () => {
  const server: Server = createServer((s) => s.end());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const c = child(
    'takes',
    `process.on('message', (m, socket) => { process.send({ got: m, socket: socket !== undefined }); });`,
  );
  const answered = watched(c, 2 ** 20, (s) => s.length === 1);
  c.send('a socket', server, { keepOpen: true });
  const { seen, reason } = await answered;
  server.close();
  assert.equal(reason, undefined);
  assert.deepEqual(seen, [{ got: 'a socket', socket: true }]);
});

test('a child sending small valid messages as fast as it can is read at a bounded pace, and none is lost (one held the front at 90 % of a core)', async () => {
  const c = child('many', `for (let i = 0; i < 20000; i++) process.send(i);`);
  const seen: unknown[] = [];
  const pace = boundChildMessages(c, 2 ** 20, (reason) => assert.fail(reason), { messagesPerWindow: 100 });
  await new Promise<void>((resolve) =>
    c.on('message', (m) => {
      seen.push(m);
      if (seen.length === 20000) resolve();
    }),
  );
  c.kill('SIGKILL');
  assert.ok(pace.pauses > 0, 'the front stopped reading it for a while');
  assert.deepEqual(seen.slice(0, 3), [0, 1, 2]);
  assert.equal(seen.at(-1), 19999, 'every message arrived, in order');
});

test('a child without an IPC channel Node keeps as the front knows it is refused, not run without the bound', () => {
  const c = fork(join(dir, 'within.mjs'), [], {
    serialization: 'advanced',
    stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
  });
  c.disconnect();
  assert.throws(() => boundChildMessages(c, 1024, () => undefined), /cannot bound what a child sends it/);
  c.kill('SIGKILL');
});
