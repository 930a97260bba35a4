// The bounded DevTools pipe transport with synthetic chunks: messages split
// across chunks, the limit exactly, the id and sessionId of an oversized answer
// read from its two ends, NULs in odd places, and page data that imitates them.
import assert from 'node:assert/strict';
import { PassThrough, Writable } from 'node:stream';
import { test } from 'node:test';
import {
  BACKLOG_RECENT_MS,
  BoundedPipeTransport,
  CdpFramer,
  EDGE_BYTES,
  QUEUE_PAUSE_BYTES,
  type DroppedMessage,
} from '../../../src/slot/browser/cdp-transport.js';
import { OVERSIZED_MESSAGE } from '../../../src/slot/limits.js';

function framer(max: number): {
  push: (s: string | Buffer) => void;
  got: string[];
  dropped: DroppedMessage[];
  f: CdpFramer;
} {
  const got: string[] = [];
  const dropped: DroppedMessage[] = [];
  const f = new CdpFramer(
    max,
    (t) => got.push(t.toString('utf8')),
    (d) => dropped.push(d),
  );
  return { push: (s) => f.push(typeof s === 'string' ? Buffer.from(s) : s), got, dropped, f };
}

test('a message split across many chunks arrives whole, once its NUL comes', () => {
  const m = framer(1000);
  const msg = '{"id":1,"result":{"v":"héllo"}}';
  const bytes = Buffer.from(msg + '\0');
  // One byte at a time: a UTF-8 character split between chunks too.
  for (let i = 0; i < bytes.length; i++) m.push(bytes.subarray(i, i + 1));
  assert.deepEqual(m.got, [msg]);
});

test('several messages in one chunk, a NUL first, two NULs together and a NUL last: no empty messages', () => {
  const m = framer(1000);
  m.push('\0{"id":1}\0\0{"id":2}');
  m.push('\0');
  assert.deepEqual(m.got, ['{"id":1}', '{"id":2}']);
  assert.deepEqual(m.dropped, []);
});

test('a message of exactly the limit is delivered; one byte more is dropped', () => {
  const max = 64;
  const exact = `{"id":7,"result":"${'x'.repeat(max - 20)}"}`;
  assert.equal(Buffer.byteLength(exact), max);
  const over = `{"id":8,"result":"${'x'.repeat(max - 19)}"}`;
  const m = framer(max);
  m.push(exact + '\0' + over + '\0');
  assert.deepEqual(m.got, [exact]);
  assert.deepEqual(m.dropped, [{ bytes: max + 1, id: 8, sessionId: undefined, method: undefined }]);
});

test('an oversized answer of a session: its id from the start, its sessionId from the end, read across chunks', () => {
  const m = framer(1024);
  const body = `{"id":4242,"result":{"result":{"type":"string","value":"${'y'.repeat(100_000)}"}},"sessionId":"3C6CA95612EE84B0014530F971C5B2CB"}`;
  const bytes = Buffer.from(body + '\0{"id":5}\0');
  for (let i = 0; i < bytes.length; i += 777) m.push(bytes.subarray(i, i + 777));
  assert.deepEqual(m.dropped, [
    { bytes: Buffer.byteLength(body), id: 4242, sessionId: '3C6CA95612EE84B0014530F971C5B2CB', method: undefined },
  ]);
  assert.deepEqual(m.got, ['{"id":5}'], 'the next message is read normally');
});

test('while dropping, at most the limit is ever held, then only the two ends', () => {
  const m = framer(4096);
  m.push('{"id":1,"result":"');
  let maxHeld = 0;
  for (let i = 0; i < 100; i++) {
    m.push('z'.repeat(1000));
    maxHeld = Math.max(maxHeld, m.f.heldBytes);
  }
  assert.ok(maxHeld <= 4096, `held ${maxHeld}`);
  assert.ok(m.f.heldBytes <= 2 * EDGE_BYTES);
  m.push('"}\0');
  assert.equal(m.dropped[0]?.id, 1);
});

test('an oversized event is reported with its name and session, no id', () => {
  const m = framer(100);
  m.push(
    `{"method":"Runtime.consoleAPICalled","params":{"args":[{"value":"${'z'.repeat(500)}"}]},"sessionId":"AB12"}\0`,
  );
  assert.deepEqual(m.dropped, [
    { bytes: m.dropped[0]?.bytes, id: undefined, sessionId: 'AB12', method: 'Runtime.consoleAPICalled' },
  ]);
});

test('page data that imitates an id or a sessionId is not taken for them (anchored at the real ends)', () => {
  const m = framer(100);
  // A browser-level event (no session) whose page string ends like a sessionId, escaped as JSON escapes it.
  const fake = JSON.stringify({ method: 'Page.x', params: { v: `${'a'.repeat(300)}","sessionId":"EVIL"}` } });
  m.push(fake + '\0');
  // An answer whose value starts like another id.
  const nested = `{"id":9,"result":{"value":"{\\"id\\":1,"}${' '.repeat(300)}}`;
  m.push(nested + '\0');
  assert.equal(m.dropped[0]?.sessionId, undefined);
  assert.equal(m.dropped[0]?.id, undefined);
  assert.equal(m.dropped[1]?.id, 9);
});

test('the transport answers a dropped response with a protocol error for its id and session; events are only reported', async () => {
  const fromChromium = new PassThrough();
  const toChromium = new PassThrough();
  const dropped: DroppedMessage[] = [];
  const t = new BoundedPipeTransport(toChromium, fromChromium, {
    maxMessageBytes: 50,
    onDropped: (d) => dropped.push(d),
  });
  const got: Record<string, unknown>[] = [];
  t.onmessage = (s) => got.push(JSON.parse(s) as Record<string, unknown>);
  fromChromium.write(`{"id":3,"result":"${'x'.repeat(100)}","sessionId":"S1"}\0`);
  fromChromium.write(`{"method":"Runtime.exceptionThrown","params":"${'x'.repeat(100)}"}\0`);
  fromChromium.write('{"id":4,"result":{}}\0');
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
  assert.equal(got.length, 2);
  assert.equal(got[0]?.id, 3);
  assert.equal(got[0]?.sessionId, 'S1');
  assert.match(
    String((got[0]?.error as { message: string }).message),
    new RegExp(`^${OVERSIZED_MESSAGE} \\(\\d+ bytes; at most 50\\)`),
  );
  assert.deepEqual(got[1], { id: 4, result: {} });
  assert.equal(dropped.length, 2);
  assert.equal(dropped[1]?.method, 'Runtime.exceptionThrown');
});

test('a pipe closed before Puppeteer listens is still reported to onclose, once', async () => {
  const fromChromium = new PassThrough();
  const t = new BoundedPipeTransport(new PassThrough(), fromChromium);
  fromChromium.destroy();
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
  let closes = 0;
  t.onclose = () => closes++;
  await new Promise((r) => setImmediate(r));
  assert.equal(closes, 1);
  t.send('{"id":1}'); // after close: ignored, no throw
});

/** Turns of the event loop until `done` or `max` turns. */
async function turns(done: () => boolean, max = 100_000): Promise<void> {
  for (let i = 0; i < max && !done(); i++) await new Promise((r) => setImmediate(r));
}

test('a Chromium that floods its pipe takes turns: another Chromium’s message is handed on between two of the flood’s', async () => {
  const floodPipe = new PassThrough();
  const otherPipe = new PassThrough();
  const flood = new BoundedPipeTransport(new PassThrough(), floodPipe);
  const other = new BoundedPipeTransport(new PassThrough(), otherPipe);
  let floodSeen = 0;
  let floodSeenWhenOtherArrived = -1;
  flood.onmessage = () => void floodSeen++;
  other.onmessage = () => (floodSeenWhenOtherArrived = floodSeen);
  // 1000 events in one chunk, then one message on the other pipe.
  floodPipe.write(Buffer.from('{"method":"Runtime.consoleAPICalled","params":{}}\0'.repeat(1000)));
  await new Promise((r) => setImmediate(r));
  otherPipe.write('{"id":1,"result":{}}\0');
  await turns(() => floodSeen === 1000);
  assert.equal(floodSeen, 1000);
  assert.ok(
    floodSeenWhenOtherArrived >= 0 && floodSeenWhenOtherArrived < 20,
    `the other pipe waited for ${floodSeenWhenOtherArrived} of the flood's messages`,
  );
});

test('the pipe is not read while more than QUEUE_PAUSE_BYTES wait for their turn; then read again, nothing lost, in order', async () => {
  const fromChromium = new PassThrough();
  const t = new BoundedPipeTransport(new PassThrough(), fromChromium);
  const got: number[] = [];
  t.onmessage = (s) => got.push((JSON.parse(s) as { params: { n: number } }).params.n);
  const pad = 'p'.repeat(1000);
  const total = Math.ceil((3 * QUEUE_PAUSE_BYTES) / 1000);
  let text = '';
  for (let n = 0; n < total; n++) text += `{"method":"Runtime.consoleAPICalled","params":{"n":${n},"p":"${pad}"}}\0`;
  fromChromium.write(text);
  await new Promise((r) => setImmediate(r));
  assert.equal(fromChromium.isPaused(), true, 'the pipe is paused while the queue is over the bound');
  assert.ok(got.length < total);
  await turns(() => got.length === total);
  assert.equal(fromChromium.isPaused(), false, 'read again once the queue drained');
  assert.deepEqual(
    got,
    Array.from({ length: total }, (_, n) => n),
  );
});

test('after retireContext, the events of that context’s sessions (and of their children) are dropped unread; responses, Target messages and other contexts’ events still arrive', async () => {
  const fromChromium = new PassThrough();
  const t = new BoundedPipeTransport(new PassThrough(), fromChromium);
  const got: string[] = [];
  t.onmessage = (s) => got.push(s);
  const send = async (...messages: string[]): Promise<void> => {
    fromChromium.write(messages.map((m) => `${m}\0`).join(''));
    await turns(() => false, 50);
  };
  const attached = (session: string, context: string | undefined, parent?: string): string =>
    JSON.stringify({
      method: 'Target.attachedToTarget',
      params: {
        sessionId: session,
        targetInfo: { targetId: session, type: 'page', ...(context ? { browserContextId: context } : {}) },
      },
      ...(parent ? { sessionId: parent } : {}),
    });
  const event = (session: string, n: number): string =>
    `{"method":"Runtime.consoleAPICalled","params":{"n":${n}},"sessionId":"${session}"}`;
  await send(attached('PA', 'CA'), attached('PB', 'CB'), attached('WA', undefined, 'PA'));
  await send(event('PA', 1), event('WA', 2), event('PB', 3));
  assert.equal(got.length, 6, 'before retiring, everything arrives');
  t.retireContext('CA');
  got.length = 0;
  await send(
    event('PA', 4),
    event('WA', 5),
    '{"id":7,"result":{},"sessionId":"PA"}',
    event('PB', 6),
    attached('FA', 'CA', 'PA'),
    event('FA', 8),
    '{"method":"Target.detachedFromTarget","params":{"sessionId":"WA"},"sessionId":"PA"}',
  );
  assert.deepEqual(
    got.map((s) => {
      const m = JSON.parse(s) as { id?: number; method?: string; params?: { n?: number; sessionId?: string } };
      return m.id ?? m.params?.n ?? m.method;
    }),
    [7, 6, 'Target.attachedToTarget', 'Target.detachedFromTarget'],
  );
  assert.equal(t.droppedEvents, 3);
  assert.equal(t.droppedEventBytes, event('PA', 4).length + event('WA', 5).length + event('FA', 8).length);
});

/** A transport on its own clock (clock.now, moved by the test), counting the messages it hands on. */
function clockedTransport(): {
  t: BoundedPipeTransport;
  fromChromium: PassThrough;
  clock: { now: number };
  got: () => number;
} {
  const clock = { now: 0 };
  const fromChromium = new PassThrough();
  const t = new BoundedPipeTransport(new PassThrough(), fromChromium, { now: () => clock.now });
  let got = 0;
  t.onmessage = () => void got++;
  return { t, fromChromium, clock, got: () => got };
}

/** n console events of 1 kB each, as Chromium writes them. */
const consoleEvents = (n: number): string =>
  `{"method":"Runtime.consoleAPICalled","params":{"p":"${'p'.repeat(1000)}"}}\0`.repeat(n);

test('backed up: a flood of events past the queue bound is, for BACKLOG_RECENT_MS after; one large answer is not', async () => {
  const { t, fromChromium, clock, got } = clockedTransport();
  // One answer of 2 MiB: the pipe is paused for it until its turn, but it is one message.
  fromChromium.write(`{"id":1,"result":{"value":"${'a'.repeat(2 * QUEUE_PAUSE_BYTES)}"}}\0`);
  assert.equal(fromChromium.isPaused(), true);
  assert.equal(t.backedUp, false, 'one large answer');
  await turns(() => got() === 1);
  // 3 MiB of 1 kB events.
  const total = Math.ceil((3 * QUEUE_PAUSE_BYTES) / 1000);
  fromChromium.write(consoleEvents(total));
  await new Promise((r) => setImmediate(r));
  assert.equal(t.backedUp, true, 'a flood');
  await turns(() => got() === total + 1);
  clock.now += BACKLOG_RECENT_MS - 1;
  assert.equal(t.backedUp, true, 'still, just after it was drained');
  clock.now += 1;
  assert.equal(t.backedUp, false, 'not once BACKLOG_RECENT_MS have passed');
});

test('backed up: a flood still queued in a paused pipe is, however long ago the pipe paused', async () => {
  const { t, fromChromium, clock, got } = clockedTransport();
  // 2 MiB of 1 kB events at once: the pipe pauses with them queued (one is handed on a turn).
  const total = Math.ceil((2 * QUEUE_PAUSE_BYTES) / 1000);
  fromChromium.write(consoleEvents(total));
  assert.equal(fromChromium.isPaused(), true);
  clock.now += 10 * BACKLOG_RECENT_MS;
  assert.equal(t.backedUp, true, 'still paused with the flood queued');
  await turns(() => got() === total, 5000);
  assert.equal(t.backedUp, false, 'drained, and the pause long past');
});

test('a long backlog of a retired context is dropped whole, over many turns: none of its events is handed on', async () => {
  const fromChromium = new PassThrough();
  const t = new BoundedPipeTransport(new PassThrough(), fromChromium);
  const got: string[] = [];
  t.onmessage = (s) => got.push(s);
  fromChromium.write(
    `${JSON.stringify({ method: 'Target.attachedToTarget', params: { sessionId: 'PA', targetInfo: { targetId: 'PA', type: 'page', browserContextId: 'CA' } } })}\0`,
  );
  await turns(() => got.length === 1);
  t.retireContext('CA');
  const n = 5000;
  fromChromium.write(`{"method":"Runtime.consoleAPICalled","params":{},"sessionId":"PA"}\0`.repeat(n));
  fromChromium.write('{"id":1,"result":{}}\0');
  await turns(() => got.length === 2);
  assert.equal(t.droppedEvents, n);
  assert.deepEqual(got.slice(1), ['{"id":1,"result":{}}']);
});

/** A pipe to Chromium that keeps each write's text, in order. */
function recordingPipe(): { pipe: Writable; writes: string[] } {
  const writes: string[] = [];
  const pipe = new Writable({
    write(chunk: Buffer, _enc, done) {
      writes.push(chunk.toString());
      done();
    },
  });
  return { pipe, writes };
}

test('messages sent in one turn reach Chromium in one write, in order, each ended by NUL; a close writes what was sent before it', async () => {
  const { pipe: toChromium, writes } = recordingPipe();
  const t = new BoundedPipeTransport(toChromium, new PassThrough());
  t.send('{"id":1}');
  t.send('{"id":2}');
  await Promise.resolve();
  t.send('{"id":3}');
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(writes, ['{"id":1}\0{"id":2}\0{"id":3}\0']);
  t.send('{"id":4,"method":"Browser.close"}');
  t.close();
  t.send('{"id":5}');
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(writes.slice(1), ['{"id":4,"method":"Browser.close"}\0']);
});

/** A pipe to Chromium that keeps only the count of bytes written to it and the write calls. */
function countingPipe(): { pipe: Writable; bytes: () => number; writes: () => number } {
  let bytes = 0;
  let writes = 0;
  const pipe = new Writable({
    write(chunk: Buffer, _enc, done) {
      bytes += chunk.length;
      writes++;
      done();
    },
  });
  return { pipe, bytes: () => bytes, writes: () => writes };
}

test('messages sent in one turn that together pass the longest string V8 makes all reach Chromium, none throws', async () => {
  // SECURITY: joining a turn's messages into one string failed with "RangeError:
  // Invalid string length" once they passed 2^29-24 characters together, though
  // each is far below it: Puppeteer sends a page's preload scripts
  // (evaluateOnNewDocument, each up to the membrane's 16 Mi characters, kept on
  // the host after their calls end) to every out-of-process frame the page
  // attaches, all in one turn, and a send that throws there rejects where
  // nobody catches it (the slot process ends on an unhandled rejection).
  const big = `{"id":1,"method":"Page.addScriptToEvaluateOnNewDocument","params":{"source":"${'x'.repeat(16 * 2 ** 20)}"}}`;
  const n = 33;
  const { pipe, bytes } = countingPipe();
  const t = new BoundedPipeTransport(pipe, new PassThrough());
  let thrown: unknown;
  try {
    for (let i = 0; i < n; i++) t.send(big);
  } catch (e) {
    thrown = e;
    pipe.destroy(); // the joined half-gigabyte is not written (this test's memory)
  }
  assert.equal(thrown, undefined);
  await new Promise((r) => setImmediate(r));
  assert.equal(bytes(), n * (big.length + 1));
});

test('a large message is not held for the end of its turn: it is written when sent, after the small ones sent before it', async () => {
  const { pipe, writes } = recordingPipe();
  const t = new BoundedPipeTransport(pipe, new PassThrough());
  const large = `{"id":2,"params":"${'y'.repeat(2 ** 20)}"}`;
  t.send('{"id":1}');
  t.send(large);
  // Written already, in order: the small one before it, then the large one and its NUL.
  assert.equal(writes.join(''), `{"id":1}\0${large}\0`);
  t.send('{"id":3}');
  await new Promise((r) => setImmediate(r));
  assert.equal(writes.join(''), `{"id":1}\0${large}\0{"id":3}\0`);
});

test('a write that fails (Chromium gone: EPIPE) is no unhandled error: onclose comes, and later sends are dropped without throwing', async () => {
  let failed = 0;
  const pipe = new Writable({
    write(_chunk: Buffer, _enc, done) {
      failed++;
      done(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
    },
  });
  const t = new BoundedPipeTransport(pipe, new PassThrough());
  const closed = new Promise<void>((resolve) => {
    t.onclose = resolve;
  });
  t.send('{"id":1}');
  t.send(`{"id":2,"params":"${'y'.repeat(2 ** 20)}"}`);
  t.send('{"id":3}');
  await closed;
  assert.ok(failed >= 1);
  t.send('{"id":4}');
  t.send(`{"id":5,"params":"${'y'.repeat(2 ** 20)}"}`);
  await new Promise((r) => setImmediate(r));
});

test('what was sent before close() is written by the close itself, not left for the end of the turn (the pipe may be gone by then)', () => {
  const { pipe, writes } = recordingPipe();
  const t = new BoundedPipeTransport(pipe, new PassThrough());
  t.send('{"id":1,"method":"Browser.close"}');
  t.close();
  // Destroyed in the same turn (a kill after the close): the message is already on its way.
  assert.equal(pipe.writableLength + writes.length, 1);
  pipe.destroy();
});

test('an Input.* command is noticed (the selection clipboard is then replaced at the next lease); others are not', () => {
  const t = new BoundedPipeTransport(new PassThrough(), new PassThrough());
  assert.equal(t.takeInputSent(), false);
  // As Puppeteer's Connection writes them: method first.
  t.send(JSON.stringify({ method: 'Runtime.evaluate', params: { expression: '"Input.dispatchKeyEvent"' }, id: 1 }));
  assert.equal(t.takeInputSent(), false, 'a message that only mentions Input is not input');
  t.send(
    JSON.stringify({ method: 'Input.dispatchMouseEvent', params: { type: 'mousePressed' }, id: 2, sessionId: 'S' }),
  );
  assert.equal(t.takeInputSent(), true);
  assert.equal(t.takeInputSent(), false, 'asking forgets it');
  t.send(JSON.stringify({ method: 'Input.insertText', params: { text: 'x' }, id: 3 }));
  assert.equal(t.takeInputSent(), true);
  t.close();
});
