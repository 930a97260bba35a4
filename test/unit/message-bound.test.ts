// What a child can make the front hold or throw through its IPC channel
// (src/front/children/message-bound.ts), with real children forked the way the
// front forks its slot and egress processes ('advanced' serialization), writing
// to the channel's descriptor past Node's framing as code that escaped into
// one could.
import assert from 'node:assert/strict';
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { boundChildMessages } from '../../src/front/children/message-bound.js';

const dir = mkdtempSync(join(tmpdir(), 'pagescript-message-bound-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A child that sends `first` the normal way, then writes `raw` (hex) and `thenMiB` MiB of filler to the channel. */
function child(name: string, first: unknown, raw: string, thenMiB: number): ChildProcess {
  const file = join(dir, `${name}.mjs`);
  writeFileSync(
    file,
    `import { writeSync } from 'node:fs';
// Once the first is written whole: raw bytes written in its midst would break it.
process.send(${JSON.stringify(first)}, () => next());
const fd = process.channel.fd;
const chunks = [Buffer.from(${JSON.stringify(raw)}, 'hex')];
for (let i = 0; i < ${thenMiB}; i++) chunks.push(Buffer.alloc(1 << 20, 0x41));
let off = 0;
const next = () => {
  while (chunks.length) {
    try { off += writeSync(fd, chunks[0], off); } catch (e) { if (e.code === 'EAGAIN') setTimeout(next, 1); return; }
    if (off >= chunks[0].length) { chunks.shift(); off = 0; }
  }
};
setInterval(() => {}, 1000);
`,
  );
  return fork(file, [], { serialization: 'advanced', stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
}

/** Forks, bounds at `max`, and resolves with the messages it delivered and why it was cut (if it was). */
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

test('messages within the bound reach the front as they are', async () => {
  const big = 'x'.repeat(256 * 1024);
  // A second, whole message written raw: a 4-byte length, V8's header, a one-byte string of 3 characters.
  const c = child('within', { type: 'note', big }, '00000007' + 'ff0f' + '2203616263', 0);
  const { seen, reason } = await watched(c, 512 * 1024, (s) => s.length === 2);
  assert.equal(reason, undefined);
  assert.deepEqual(seen, [{ type: 'note', big }, 'abc']);
});

test('a message without end is cut at the bound: the front holds no more of it, and the child is ended', async () => {
  // A length of 2 GiB, then 64 MiB of it: Node alone would hold every byte until the last.
  const c = child('endless', { type: 'first' }, '7fffffff', 64);
  const max = 4 * 2 ** 20;
  const { seen, reason } = await watched(c, max, () => false);
  assert.deepEqual(seen, [{ type: 'first' }], 'what came before it was delivered');
  const held = Number(/\((\d+) held when it was cut\)/.exec(reason ?? '')?.[1]);
  assert.ok(held > max && held <= max + 2 ** 20, `cut within a read of the bound: ${reason}`);
  assert.equal(c.connected, false, 'the channel is closed');
});

test('nine bytes V8 cannot deserialize end the child, not the front (Node throws them where nothing catches)', async () => {
  const c = child('garbage', { type: 'first' }, '00000005ff0f999999', 0);
  const { seen, reason } = await watched(c, 2 ** 20, () => false);
  assert.deepEqual(seen, [{ type: 'first' }]);
  assert.match(reason ?? '', /cannot be read/);
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
