// The channel between a slot process and the egress process (src/protocol/egress-channel.ts)
// and the pair of sockets the front makes for it (socketPair): the front never
// reads either end (a copy it still holds after handing it over would swallow
// what the children say), and each side reads the other's messages as untrusted.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { socketPair } from '../../../src/front/egress-process/egress-supervisor.js';
import {
  CHANNEL_MESSAGES_PER_WINDOW,
  CHANNEL_PAUSE_BYTES,
  ChannelEnd,
  EGRESS_END_LIMITS,
  MAX_PROXY_NAME,
  channelMac,
  checkChannelHello,
  checkFromEgressChannel,
  checkFromSlotChannel,
} from '../../../src/protocol/egress-channel.js';
import { RemoteGuard } from '../../../src/slot/egress-client/remote.js';
import { Grants, serveChannel, type Channels } from '../../../src/egress/channels.js';
import type { EgressSession } from '../../../src/egress/session.js';
import type { FromEgress } from '../../../src/protocol/egress-messages.js';
import { silentLogger } from '../../../src/common/log.js';
import { until } from '../../helpers/wait.js';

const dir = mkdtempSync(join(tmpdir(), 'pagescript-channel-test-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Until the event loop has polled for I/O (twice): a socket that reads would have read by then. */
async function polled(): Promise<void> {
  for (let i = 0; i < 2; i++) await new Promise((resolve) => setTimeout(resolve, 0));
}

test("the front reads neither end of a channel it makes: what one side writes waits for the other side's process", async () => {
  const [egressEnd, slotEnd] = await socketPair(dir);
  try {
    // Node keeps the front's copy of a sent socket until the child acknowledges it;
    // a copy that reads throws away what arrives meanwhile (the ~10 s lost question).
    await new Promise<void>((resolve, reject) =>
      slotEnd.write('{"op":"open","q":1}\n', (e) => (e ? reject(e) : resolve())),
    );
    await new Promise<void>((resolve, reject) =>
      egressEnd.write('{"op":"answer","q":1,"ok":true}\n', (e) => (e ? reject(e) : resolve())),
    );
    await polled();
    assert.equal(egressEnd.bytesRead, 0, 'the egress end was read in the front');
    assert.equal(slotEnd.bytesRead, 0, 'the slot process end was read in the front');
    // Nothing is lost: whoever takes an end reads what was written to it.
    const first = (s: typeof egressEnd): Promise<string> =>
      new Promise((resolve) => {
        s.setEncoding('utf8');
        s.once('data', (chunk: string) => resolve(chunk));
        s.resume();
      });
    assert.equal(await first(egressEnd), '{"op":"open","q":1}\n');
    assert.equal(await first(slotEnd), '{"op":"answer","q":1,"ok":true}\n');
  } finally {
    egressEnd.destroy();
    slotEnd.destroy();
  }
});

test("a channel's hello is taken only with the front's mark: another key, another slot process or uid, or no hello is refused", () => {
  const key = randomBytes(32);
  const hello = { op: 'hello', slotProcess: 7, channel: 3, uid: 1001, mac: channelMac(key, 7, 3, 1001) };
  assert.deepEqual(checkChannelHello(hello, key), hello);
  const noUid = { op: 'hello', slotProcess: 7, channel: 4, mac: channelMac(key, 7, 4, undefined) };
  assert.deepEqual(checkChannelHello(noUid, key), noUid);
  // What a slot process that connected on its own could say: it holds no key.
  assert.throws(
    () => checkChannelHello({ ...hello, mac: channelMac(randomBytes(32), 7, 3, 1001) }, key),
    /not the front/,
  );
  assert.throws(() => checkChannelHello({ ...hello, slotProcess: 8 }, key), /not the front/);
  assert.throws(() => checkChannelHello({ ...hello, uid: 1002 }, key), /not the front/);
  assert.throws(() => checkChannelHello({ ...hello, uid: undefined }, key), /not the front/);
  assert.throws(() => checkChannelHello({ ...hello, mac: 'ab' }, key), /did not begin with a hello/);
  assert.throws(() => checkChannelHello({ op: 'open', q: 1 }, key), /did not begin with a hello/);
});

test("a slot process's bind names the request's proxy by a short name, and carries nothing else", () => {
  const bind = { op: 'bind', q: 1, s: 2, requestId: 'r-1' };
  assert.deepEqual(checkFromSlotChannel(bind), bind);
  assert.deepEqual(checkFromSlotChannel({ ...bind, proxy: 'de' }), { ...bind, proxy: 'de' });
  for (const proxy of [42, null, { url: 'http://u:p@h:1' }, 'x'.repeat(MAX_PROXY_NAME + 1)])
    assert.throws(() => checkFromSlotChannel({ ...bind, proxy }), /cannot read \(bind\)/, JSON.stringify(proxy));
});

test("the egress process's counts reach the slot process with the proxy failures it counted, and nothing it did not", () => {
  const stats = { connections: 1, refused: 0, bytesSent: 10, bytesReceived: 20 };
  const ok = { op: 'stats', s: 1, stats: { ...stats, proxyAuthRefused: 1, proxyUnreachable: 2 } };
  assert.deepEqual(checkFromEgressChannel(ok), ok);
  for (const bad of [
    { ...stats, proxyAuthRefused: -1 },
    { ...stats, password: 'x' },
    { ...stats, proxyBadAnswer: 'x' },
  ])
    assert.throws(() => checkFromEgressChannel({ op: 'stats', s: 1, stats: bad }), /cannot read \(stats\)/);
});

test('a channel handed to a slot process while its channel is up replaces it without a drained report', async () => {
  const said: string[] = [];
  const remote = new RemoteGuard({
    logger: silentLogger(),
    onLost: () => said.push('lost'),
    onDrained: () => said.push('drained'),
  });
  const [egressA, slotA] = await socketPair(dir);
  const [egressB, slotB] = await socketPair(dir);
  try {
    remote.attach(slotA);
    const closedA = once(egressA, 'close');
    egressA.resume();
    remote.attach(slotB);
    // The replaced channel is closed (the egress process closes its sessions with it)...
    await closedA;
    await polled();
    // ...but nobody lost it: a drained report here is what made the front churn channels.
    assert.deepEqual(said, []);
    assert.ok(remote.attached);
    // The new channel is the one that counts: losing it is reported.
    egressB.destroy();
    await polled();
    assert.deepEqual(said, ['lost', 'drained']);
  } finally {
    remote.close();
    for (const s of [egressA, slotA, egressB, slotB]) s.destroy();
  }
});

test('a host refused for its key reaches the slot process as a host and a port, bounded, and nothing else', () => {
  const ok = { op: 'refused-host', s: 1, host: 'other.example', port: 443 };
  assert.deepEqual(checkFromEgressChannel(ok), ok);
  for (const bad of [
    { ...ok, host: 'x'.repeat(1024 * 1024) },
    { ...ok, host: 7 },
    { ...ok, port: 0 },
    { ...ok, s: -1 },
  ])
    assert.throws(() => checkFromEgressChannel(bad), /cannot read \(refused-host\)/);
});

test('a slot that asks and never reads the answers is read no further until they drain, and loses none (it grew the egress process 270 MB a second)', async () => {
  const [egressEnd, slotEnd] = await socketPair(dir);
  try {
    let bad = 0;
    let maxUnsent = 0;
    const end: ChannelEnd<{ q: number }, { op: 'answer'; q: number; pad: string }> = new ChannelEnd(
      egressEnd,
      (m) => m as { q: number },
      (m) => {
        end.send({ op: 'answer', q: m.q, pad: 'x'.repeat(100) });
        maxUnsent = Math.max(maxUnsent, egressEnd.writableLength);
      },
      () => bad++,
      // The pace apart (its own test below): 60,000 questions would take it 6 s.
      { ...EGRESS_END_LIMITS, messagesPerWindow: Number.POSITIVE_INFINITY },
    );
    const asked = 60_000;
    // Asked at once and not read: ~7 MiB of answers, more than the pause.
    slotEnd.write(Array.from({ length: asked }, (_, q) => `{"q":${q}}\n`).join(''));
    await until(() => egressEnd.isPaused(), 'the egress end to stop reading the questions');
    assert.ok(maxUnsent <= CHANNEL_PAUSE_BYTES + 2 ** 20, `unsent at most: ${maxUnsent}`);
    // The slot reads now: every question is answered, in order.
    let answered = 0;
    let buffered = '';
    slotEnd.setEncoding('utf8');
    await new Promise<void>((resolve) => {
      slotEnd.on('data', (chunk: string) => {
        buffered += chunk;
        const lines = buffered.split('\n');
        buffered = lines.pop() ?? '';
        for (const line of lines) assert.equal((JSON.parse(line) as { q: number }).q, answered++);
        if (answered === asked) resolve();
      });
      // socketPair's ends come paused.
      slotEnd.resume();
    });
    assert.equal(bad, 0);
    assert.ok(!end.closed);
  } finally {
    egressEnd.destroy();
    slotEnd.destroy();
  }
});

test('a slot that never reads what it is sent unasked is cut off past the bound', async () => {
  const [egressEnd, slotEnd] = await socketPair(dir);
  try {
    let bad: unknown;
    const end = new ChannelEnd(
      egressEnd,
      (m) => m,
      () => undefined,
      (e) => (bad = e),
      EGRESS_END_LIMITS,
    );
    // Events (stats, failures) its Chromium's traffic causes, 16 MiB of them, never read.
    for (let i = 0; i < 16 * 1024 && !end.closed; i++) end.send({ op: 'stats', pad: 'x'.repeat(1024) });
    assert.ok(end.closed, 'the channel is closed');
    assert.match(String(bad), /did not read \d+ bytes/);
  } finally {
    egressEnd.destroy();
    slotEnd.destroy();
  }
});

test('a slot flooding its channel with valid questions is read at a bounded pace, and loses none (it held the core all traffic goes through)', async () => {
  const [egressEnd, slotEnd] = await socketPair(dir);
  try {
    const seen: number[] = [];
    let bad = 0;
    const end = new ChannelEnd<{ q: number }, never>(
      egressEnd,
      (m) => m as { q: number },
      (m) => seen.push(m.q),
      () => bad++,
      EGRESS_END_LIMITS,
    );
    const asked = 3 * CHANNEL_MESSAGES_PER_WINDOW;
    slotEnd.write(Array.from({ length: asked }, (_, q) => `{"q":${q}}\n`).join(''));
    await until(() => seen.length === asked, 'every question to be read');
    assert.ok(end.pace.pauses > 0, 'the egress process stopped reading it for a while');
    assert.deepEqual(
      seen,
      Array.from({ length: asked }, (_, q) => q),
      'in order',
    );
    assert.equal(bad, 0);
  } finally {
    egressEnd.destroy();
    slotEnd.destroy();
  }
});

/** The egress process's side of a channel (serveChannel) on a socket pair, with a guard that opens fake sessions. */
async function served() {
  const [egressEnd, slotEnd] = await socketPair(dir);
  const key = randomBytes(32);
  const told: FromEgress[] = [];
  const channels: Channels = new Map();
  let port = 40_000;
  const session = (): EgressSession =>
    ({
      port: port++,
      observe: () => undefined,
      bind: () => undefined,
      end: () => undefined,
      close: () => Promise.resolve(),
      stats: () => ({ connections: 0, refused: 0, bytesSent: 0, bytesReceived: 0 }),
    }) as unknown as EgressSession;
  serveChannel(egressEnd, {
    key,
    channels,
    unnamed: { count: 0 },
    guard: { openSession: () => Promise.resolve(session()) },
    checker: { check: () => Promise.reject(new Error('no checks here')) },
    grants: new Grants(),
    log: silentLogger(),
    send: (m) => told.push(m),
  });
  const answers: Array<Record<string, unknown>> = [];
  let buffered = '';
  slotEnd.setEncoding('utf8');
  slotEnd.on('data', (chunk: string) => {
    const lines = (buffered + chunk).split('\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) answers.push(JSON.parse(line) as Record<string, unknown>);
  });
  slotEnd.resume();
  const say = (m: unknown): boolean => slotEnd.write(`${JSON.stringify(m)}\n`);
  say({ op: 'hello', slotProcess: 7, channel: 1, mac: channelMac(key, 7, 1, undefined) });
  /** Asks question `q` and waits for its answer. */
  const ask = async (m: { q: number } & Record<string, unknown>): Promise<Record<string, unknown>> => {
    say(m);
    await until(() => answers.some((a) => a.q === m.q), `the answer to ${String(m.op)}`);
    return answers.find((a) => a.q === m.q) ?? {};
  };
  const close = (): void => {
    egressEnd.destroy();
    slotEnd.destroy();
  };
  return { say, ask, told, channels, close };
}

test('a slot naming an egress session its channel never gave is cut off, and the front told to kill it', async () => {
  for (const forged of [
    { op: 'end', s: 2 },
    { op: 'end', s: 0 },
    { op: 'close', q: 3, s: 99 },
    { op: 'bind', q: 3, s: 5, requestId: 'r' },
  ]) {
    const { say, ask, told, channels, close } = await served();
    try {
      const opened = await ask({ op: 'open', q: 1 });
      assert.equal(opened.s, 1);
      say({ op: 'end', s: 1 });
      say(forged);
      await until(() => told.some((m) => m.type === 'channel-closed'), 'the channel to close');
      assert.deepEqual(
        told.map((m) => m.type),
        ['slot-misbehaved', 'channel-closed'],
        JSON.stringify(forged),
      );
      assert.equal(channels.size, 0);
    } finally {
      close();
    }
  }
});

test('a session the slot closed is its own still: naming it again is refused, not taken for an attack', async () => {
  const { say, ask, told, channels, close } = await served();
  try {
    assert.equal((await ask({ op: 'open', q: 1 })).s, 1);
    assert.equal((await ask({ op: 'close', q: 2, s: 1 })).ok, true);
    say({ op: 'end', s: 1 });
    const again = await ask({ op: 'finish', q: 3, s: 1 });
    assert.equal(again.ok, false);
    assert.match(String(again.error), /no egress session 1/);
    assert.deepEqual(told, []);
    assert.equal(channels.size, 1);
  } finally {
    close();
  }
});

test("a request's bill is its grant's session as the egress process counted it, ended first, never the slot's report", async () => {
  const grants = new Grants();
  grants.add(1, 7, 'req-1', undefined);
  const { hosts, bound } = await grants.take(7, 'req-1', undefined, () => false);
  assert.equal(hosts, undefined);
  assert.equal(grants.finish(1), undefined, 'no session bound with it yet');
  let received = 100;
  let ended = false;
  const session = {
    // Ending cuts the connections still open and counts what they moved.
    end: () => {
      ended = true;
      received += 5;
    },
    stats: () => ({ connections: 1, refused: 0, bytesSent: 10, bytesReceived: received }),
  } as unknown as EgressSession;
  bound(session);
  assert.deepEqual(grants.finish(1), { connections: 1, refused: 0, bytesSent: 10, bytesReceived: 105 });
  assert.equal(ended, true);
  grants.revoke(1);
  assert.equal(grants.finish(1), undefined, 'a revoked grant bills nothing more');
});
