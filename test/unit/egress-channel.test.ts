// The channel between an executor and the egress process (src/protocol/egress-channel.ts)
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
import { socketPair } from '../../src/front/children/egress-supervisor.js';
import {
  CHANNEL_PAUSE_BYTES,
  ChannelEnd,
  MAX_PROXY_NAME,
  channelMac,
  checkChannelHello,
  checkFromEgressChannel,
  checkFromExecutorChannel,
} from '../../src/protocol/egress-channel.js';
import { RemoteGuard } from '../../src/slot/egress-client/remote.js';
import { silentLogger } from '../../src/common/log.js';
import { until } from '../helpers/wait.js';

const dir = mkdtempSync(join(tmpdir(), 'pagescript-channel-test-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Until the event loop has polled for I/O (twice): a socket that reads would have read by then. */
async function polled(): Promise<void> {
  for (let i = 0; i < 2; i++) await new Promise((resolve) => setTimeout(resolve, 0));
}

test("the front reads neither end of a channel it makes: what one side writes waits for the other side's process", async () => {
  const [egressEnd, executorEnd] = await socketPair(dir);
  try {
    // Node keeps the front's copy of a sent socket until the child acknowledges it;
    // a copy that reads throws away what arrives meanwhile (the ~10 s lost question).
    await new Promise<void>((resolve, reject) =>
      executorEnd.write('{"op":"open","q":1}\n', (e) => (e ? reject(e) : resolve())),
    );
    await new Promise<void>((resolve, reject) =>
      egressEnd.write('{"op":"answer","q":1,"ok":true}\n', (e) => (e ? reject(e) : resolve())),
    );
    await polled();
    assert.equal(egressEnd.bytesRead, 0, 'the egress end was read in the front');
    assert.equal(executorEnd.bytesRead, 0, 'the executor end was read in the front');
    // Nothing is lost: whoever takes an end reads what was written to it.
    const first = (s: typeof egressEnd): Promise<string> =>
      new Promise((resolve) => {
        s.setEncoding('utf8');
        s.once('data', (chunk: string) => resolve(chunk));
        s.resume();
      });
    assert.equal(await first(egressEnd), '{"op":"open","q":1}\n');
    assert.equal(await first(executorEnd), '{"op":"answer","q":1,"ok":true}\n');
  } finally {
    egressEnd.destroy();
    executorEnd.destroy();
  }
});

test("a channel's hello is taken only with the front's mark: another key, another executor or uid, or no hello is refused", () => {
  const key = randomBytes(32);
  const hello = { op: 'hello', executor: 7, channel: 3, uid: 1001, mac: channelMac(key, 7, 3, 1001) };
  assert.deepEqual(checkChannelHello(hello, key), hello);
  const noUid = { op: 'hello', executor: 7, channel: 4, mac: channelMac(key, 7, 4, undefined) };
  assert.deepEqual(checkChannelHello(noUid, key), noUid);
  // What an executor that connected on its own could say: it holds no key.
  assert.throws(
    () => checkChannelHello({ ...hello, mac: channelMac(randomBytes(32), 7, 3, 1001) }, key),
    /not the front/,
  );
  assert.throws(() => checkChannelHello({ ...hello, executor: 8 }, key), /not the front/);
  assert.throws(() => checkChannelHello({ ...hello, uid: 1002 }, key), /not the front/);
  assert.throws(() => checkChannelHello({ ...hello, uid: undefined }, key), /not the front/);
  assert.throws(() => checkChannelHello({ ...hello, mac: 'ab' }, key), /did not begin with a hello/);
  assert.throws(() => checkChannelHello({ op: 'open', q: 1 }, key), /did not begin with a hello/);
});

test("an executor's bind names the request's proxy by a short name, and carries nothing else", () => {
  const bind = { op: 'bind', q: 1, s: 2, requestId: 'r-1' };
  assert.deepEqual(checkFromExecutorChannel(bind), bind);
  assert.deepEqual(checkFromExecutorChannel({ ...bind, proxy: 'de' }), { ...bind, proxy: 'de' });
  for (const proxy of [42, null, { url: 'http://u:p@h:1' }, 'x'.repeat(MAX_PROXY_NAME + 1)])
    assert.throws(() => checkFromExecutorChannel({ ...bind, proxy }), /cannot read \(bind\)/, JSON.stringify(proxy));
});

test("the egress process's counts reach the executor with the proxy failures it counted, and nothing it did not", () => {
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

test('a channel handed to an executor while its channel is up replaces it without a drained report', async () => {
  const said: string[] = [];
  const remote = new RemoteGuard({
    logger: silentLogger(),
    onLost: () => said.push('lost'),
    onDrained: () => said.push('drained'),
  });
  const [egressA, executorA] = await socketPair(dir);
  const [egressB, executorB] = await socketPair(dir);
  try {
    remote.attach(executorA);
    const closedA = once(egressA, 'close');
    egressA.resume();
    remote.attach(executorB);
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
    for (const s of [egressA, executorA, egressB, executorB]) s.destroy();
  }
});

test('a host refused for its key reaches the executor as a host and a port, bounded, and nothing else', () => {
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
  const [egressEnd, executorEnd] = await socketPair(dir);
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
    );
    const asked = 60_000;
    // Asked at once and not read: ~7 MiB of answers, more than the pause.
    executorEnd.write(Array.from({ length: asked }, (_, q) => `{"q":${q}}\n`).join(''));
    await until(() => egressEnd.isPaused(), 'the egress end to stop reading the questions');
    assert.ok(maxUnsent <= CHANNEL_PAUSE_BYTES + 2 ** 20, `unsent at most: ${maxUnsent}`);
    // The slot reads now: every question is answered, in order.
    let answered = 0;
    let buffered = '';
    executorEnd.setEncoding('utf8');
    await new Promise<void>((resolve) => {
      executorEnd.on('data', (chunk: string) => {
        buffered += chunk;
        const lines = buffered.split('\n');
        buffered = lines.pop() ?? '';
        for (const line of lines) assert.equal((JSON.parse(line) as { q: number }).q, answered++);
        if (answered === asked) resolve();
      });
      // socketPair's ends come paused.
      executorEnd.resume();
    });
    assert.equal(bad, 0);
    assert.ok(!end.closed);
  } finally {
    egressEnd.destroy();
    executorEnd.destroy();
  }
});

test('a slot that never reads what it is sent unasked is cut off past the bound', async () => {
  const [egressEnd, executorEnd] = await socketPair(dir);
  try {
    let bad: unknown;
    const end = new ChannelEnd(
      egressEnd,
      (m) => m,
      () => undefined,
      (e) => (bad = e),
    );
    // Events (stats, failures) its Chromium's traffic causes, 16 MiB of them, never read.
    for (let i = 0; i < 16 * 1024 && !end.closed; i++) end.send({ op: 'stats', pad: 'x'.repeat(1024) });
    assert.ok(end.closed, 'the channel is closed');
    assert.match(String(bad), /did not read \d+ bytes/);
  } finally {
    egressEnd.destroy();
    executorEnd.destroy();
  }
});
