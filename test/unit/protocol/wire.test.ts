// What a child can make the front hold or throw through its wire (src/protocol/wire.ts, read by
// awaitReady in src/front/child-guard/child-start.ts), with real children spawned the way the front
// spawns its slot and egress processes (spawnChild), doing what code that escaped into one could:
// writing hostile bytes to the wire's descriptor (FRONT_WIRE_FD) past any framing of ours.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { awaitReady, spawnChild, sendToChild, wirePace } from '../../../src/front/child-guard/child-start.js';
import { createLogger } from '../../../src/common/log.js';
import { MAX_SLOT_MESSAGE_TOKENS } from '../../../src/protocol/slot-wire.js';
import { FRONT_WIRE_FD, PACE_WINDOW_MS } from '../../../src/protocol/wire.js';

const dir = mkdtempSync(join(tmpdir(), 'pagescript-wire-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Writes chunks to the wire's descriptor as they are, one after the other; `gapMs` between writes. */
const PRELUDE = `import { writeSync } from 'node:fs';
const fd = ${FRONT_WIRE_FD};
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
const line = (m) => Buffer.from(JSON.stringify(m) + '\\n');
setInterval(() => {}, 1000);
`;

type Msg = { readonly type: 'ready' } | { readonly type: 'note'; readonly n?: number; readonly big?: string };

function child(name: string, body: string): ChildProcess {
  const file = join(dir, `${name}.mjs`);
  writeFileSync(file, PRELUDE + body);
  return spawnChild(file, [], { PATH: process.env.PATH ?? '' }, undefined);
}

/** The front's pace of a child, where a test sets it (the defaults of awaitReady otherwise). */
interface Pace {
  readonly messagesPerWindow?: number;
  readonly bytesPerWindow?: number;
  readonly tokensPerWindow?: number;
  readonly clock?: () => number;
}

/**
 * A clock that stands still: every message falls in one window, so a pace trips at its count whatever the
 * machine's speed (on a loaded machine a reader slower than the pace never trips it, which is no failure).
 */
const STOPPED = { clock: () => 0 } as const;

/**
 * Reads `c` as the front reads a slot (awaitReady), its messages bounded at `max` bytes; resolves with
 * the messages it delivered and, when it was killed for what it sent, why.
 */
function watched(c: ChildProcess, max: number, until: (seen: Msg[]) => boolean, pace: Pace = {}) {
  const seen: Msg[] = [];
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger('info', {
    write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>),
  });
  return new Promise<{ seen: Msg[]; reason?: string; err?: string }>((resolve) => {
    awaitReady<Msg>(c, {
      logger,
      timeoutMs: 60_000,
      maxMessageBytes: max,
      maxMessageTokens: MAX_SLOT_MESSAGE_TOKENS,
      ...pace,
      begin: () => undefined,
      check: (raw) => {
        const m = raw as Msg;
        if (
          typeof m !== 'object' ||
          m === null ||
          !(m.type === 'ready' || m.type === 'note') ||
          Object.keys(m).some((k) => !['type', 'n', 'big'].includes(k))
        )
          throw new Error('a message of no known type');
        return m;
      },
      onMessage: (m) => {
        seen.push(m);
        if (until(seen)) {
          c.kill('SIGKILL');
          resolve({ seen });
        }
      },
      kill: () => {
        c.kill('SIGKILL');
        const bad = lines.find((l) => l.msg === 'bad');
        resolve({
          seen,
          reason: String(bad?.reason ?? ''),
          err: String((bad?.err as { message?: string } | undefined)?.message ?? ''),
        });
      },
      wasReady: () => false,
      onExit: () => undefined,
      words: { timeout: 'late', badMessage: 'bad', error: 'error', who: 'the child' },
    }).catch(() => undefined);
  });
}

const heldOf = (reason: string | undefined): number => Number(/\((\d+) held when it was cut/.exec(reason ?? '')?.[1]);

test('messages within the bound reach the front as they are, however their bytes are split', async () => {
  const big = 'x€'.repeat(128 * 1024);
  const bytes = `${JSON.stringify({ type: 'note', big })}\n${JSON.stringify({ type: 'note', n: 2 })}\n`;
  // Split inside a character and inside a line: the reader joins the bytes before it reads them.
  const c = child(
    'within',
    `const b = Buffer.from(${JSON.stringify(bytes)}); writeRaw([b.subarray(0, 1001), b.subarray(1001, 5000), b.subarray(5000)], 5);`,
  );
  const { seen, reason } = await watched(c, 1024 * 1024, (s) => s.length === 2);
  assert.equal(reason, undefined);
  assert.deepEqual(seen, [
    { type: 'note', big },
    { type: 'note', n: 2 },
  ]);
});

test('the front sends a child JSON lines on the same wire', async () => {
  const c = child(
    'echo',
    `import { Socket } from 'node:net';
const s = new Socket({ fd, readable: true, writable: true });
s.setEncoding('utf8');
s.on('data', (d) => { for (const l of d.split('\\n')) if (l) s.write(JSON.stringify({ type: 'note', big: l }) + '\\n'); });`,
  );
  const answered = watched(c, 2 ** 20, (s) => s.length === 1);
  sendToChild(c, { type: 'hello', n: undefined, v: null });
  const { seen } = await answered;
  // An undefined field is left out, a null kept.
  assert.deepEqual(seen, [{ type: 'note', big: '{"type":"hello","v":null}' }]);
});

test('a message without end is cut at the bound: the front holds no more of it, and the child is ended', async () => {
  const c = child(
    'endless',
    `const chunks = [line({ type: 'note', n: 1 }), Buffer.from('{"type":"note","big":"')];
for (let i = 0; i < 64; i++) chunks.push(Buffer.alloc(1 << 20, 0x41));
writeRaw(chunks);`,
  );
  const max = 4 * 2 ** 20;
  const { seen, reason } = await watched(c, max, () => false);
  assert.deepEqual(seen, [{ type: 'note', n: 1 }], 'what came before it was delivered');
  const held = heldOf(reason);
  assert.ok(held > max && held <= max + 2 ** 20, `cut within a read of the bound: ${reason}`);
});

test('a message dripped one byte a write (each its own write) is cut at the bound too: a read held costs the front its bytes alone', async () => {
  const c = child(
    'drip',
    `writeRaw([line({ type: 'note', n: 1 }), ...Array.from({ length: 100000 }, () => Buffer.from([0x41]))]);`,
  );
  const max = 4 * 1024;
  const { seen, reason } = await watched(c, max, () => false);
  assert.deepEqual(seen, [{ type: 'note', n: 1 }]);
  const held = heldOf(reason);
  assert.ok(held > max && held <= max + 64 * 1024, String(reason));
});

test('bytes that are not JSON (what V8 deserialized before: nine of them ended the front) end the child, not the front', async () => {
  const c = child('garbage', `writeRaw([line({ type: 'note', n: 1 }), Buffer.from('00000005ff0f9999990a', 'hex')]);`);
  const { seen, err } = await watched(c, 2 ** 20, () => false);
  assert.deepEqual(seen, [{ type: 'note', n: 1 }]);
  assert.match(err ?? '', /JSON/);
});

test("forged kinds end the child: Node's own messages mean nothing here, and a kind of no known shape is refused", async () => {
  for (const forged of [{ cmd: 'NODE_HANDLE_ACK' }, { type: 'constructor' }, { type: 'note', n: 1, extra: [{}] }, 42]) {
    const c = child(
      `forged-${JSON.stringify(forged).length}`,
      `writeRaw([line({ type: 'note', n: 1 }), line(${JSON.stringify(forged)})]);`,
    );
    const { seen, err } = await watched(c, 2 ** 20, () => false);
    assert.deepEqual(seen, [{ type: 'note', n: 1 }], JSON.stringify(forged));
    assert.match(err ?? '', /no known type/, JSON.stringify(forged));
  }
});

test('a child sending small valid messages as fast as it can is read at a bounded pace, and none is lost (one held the front at 90 % of a core)', async () => {
  const c = child(
    'many',
    `const all = []; for (let i = 0; i < 20000; i++) all.push(line({ type: 'note', n: i })); writeRaw([Buffer.concat(all)]);`,
  );
  const { seen, reason } = await watched(c, 2 ** 20, (s) => s.length === 20000, {
    messagesPerWindow: 100,
    ...STOPPED,
  });
  assert.equal(reason, undefined);
  assert.ok(wirePace(c).pauses > 0, 'the front stopped reading it for a while');
  assert.deepEqual(
    seen.slice(0, 3),
    [0, 1, 2].map((n) => ({ type: 'note', n })),
  );
  assert.deepEqual(seen.at(-1), { type: 'note', n: 19999 }, 'every message arrived, in order');
});

test('a line of a million empty arrays (V8 makes ~14 times its bytes of heap of it) ends the child before it is parsed', async () => {
  // 3 MiB of `[],`: 40 MiB of the front's heap once parsed; at the slot's bound, gigabytes.
  const c = child(
    'arrays',
    `writeRaw([line({ type: 'note', n: 1 }), Buffer.from('{"type":"note","big":[' + '[],'.repeat(1e6) + '[]]}\\n')]);`,
  );
  const { seen, reason } = await watched(c, 4 * 2 ** 20, (s) => s.length === 2);
  // Its length only: a failure's diff of a million arrays would take the test runner's heap.
  assert.equal(seen.length, 1, 'it was not delivered');
  assert.match(reason ?? '', new RegExp(`more than ${MAX_SLOT_MESSAGE_TOKENS} JSON values`));
});

test('what JSON.parse takes but JSON.stringify never writes (whitespace, a number of a thousand digits) ends the child', async () => {
  for (const [name, text] of [
    ['spaces', `{"type":"note",${' '.repeat(2 ** 20)}"n":1}`],
    ['digits', `{"type":"note","n":${'9'.repeat(1000)}}`],
  ] as const) {
    const c = child(name, `writeRaw([line({ type: 'note', n: 1 }), Buffer.from(${JSON.stringify(`${text}\n`)})]);`);
    const { seen, reason } = await watched(c, 4 * 2 ** 20, (s) => s.length === 2);
    assert.deepEqual(seen, [{ type: 'note', n: 1 }], name);
    assert.match(reason ?? '', /not compact JSON|longer than \d+ bytes/, name);
  }
});

test('a child sending large valid messages back to back is read at a bounded pace in bytes, and none is lost', async () => {
  // 24 messages of 1 MiB, each a string (cheap to parse, ~9 ms a MiB): far under the message pace.
  const c = child(
    'large',
    `const big = 'x'.repeat(2 ** 20); const all = []; for (let i = 0; i < 24; i++) all.push(line({ type: 'note', n: i, big })); writeRaw(all);`,
  );
  const { seen, reason } = await watched(c, 2 * 2 ** 20, (s) => s.length === 24, {
    bytesPerWindow: 4 * 2 ** 20,
    ...STOPPED,
  });
  assert.equal(reason, undefined);
  assert.ok(wirePace(c).pauses > 0, 'the front stopped reading it for a while');
  assert.deepEqual(
    seen.map((m) => (m.type === 'note' ? m.n : -1)),
    Array.from({ length: 24 }, (_, i) => i),
  );
});

test('a message larger than a window of bytes is read whole, and the child waits the windows it took', async () => {
  const c = child(
    'larger',
    `writeRaw([line({ type: 'note', n: 0, big: 'x'.repeat(3 * 2 ** 20) }), line({ type: 'note', n: 1 })], 5);`,
  );
  const { seen, reason } = await watched(c, 4 * 2 ** 20, (s) => s.length === 2, {
    bytesPerWindow: 2 ** 20,
    ...STOPPED,
  });
  assert.equal(reason, undefined);
  assert.equal(seen.length, 2);
  // Over three windows' bytes in one line (3 MiB and its JSON): the reader pauses the four windows it took, not one.
  assert.deepEqual(wirePace(c), { pauses: 1, pausedMs: 4 * PACE_WINDOW_MS });
});

test('a child sending valid messages as fast as it can is read at a bounded pace in JSON values too, and none is lost', async () => {
  const c = child(
    'valued',
    `const all = []; for (let i = 0; i < 200; i++) all.push(line({ type: 'note', n: i })); writeRaw(all);`,
  );
  const { seen, reason } = await watched(c, 2 ** 20, (s) => s.length === 200, {
    messagesPerWindow: Number.POSITIVE_INFINITY,
    tokensPerWindow: 100,
    ...STOPPED,
  });
  assert.equal(reason, undefined);
  assert.ok(wirePace(c).pauses > 0, 'the front stopped reading it for a while');
  assert.deepEqual(seen.at(-1), { type: 'note', n: 199 });
});
