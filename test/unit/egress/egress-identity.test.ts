// The guard knows whose request it carries: each browser context has a port of
// its own, bound to the request that leased it. Traffic on the browser-wide
// port, on a spare's port or on a released one belongs to no request and is
// refused before anything is dialled; what a request met is its own.
import assert from 'node:assert/strict';
import { createServer as createHttpServer, type Server } from 'node:http';
import { connect, createServer as createTcpServer, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { EgressChecker } from '../../../src/egress/checker.js';
import { EgressGuard, type Connector, type UpstreamTarget } from '../../../src/egress/guard.js';
import { capturingLogger } from '../../helpers/service.js';
import { until } from '../../helpers/wait.js';
import { MAX_REFUSALS_LOGGED_PER_REQUEST } from '../../../src/protocol/egress.js';

const attempts: UpstreamTarget[] = [];
const connector: Connector = async (t) => {
  attempts.push(t);
  if (t.address !== '127.0.0.1') throw Object.assign(new Error('test connector refuses'), { code: 'ECONNREFUSED' });
  return await new Promise<Socket>((resolve, reject) => {
    const s = connect({ host: t.address, port: t.port });
    s.once('connect', () => resolve(s));
    s.once('error', reject);
  });
};

let upstream: Server;
let upstreamPort = 0;
let closedPort = 0;
let guard: EgressGuard;
const log = capturingLogger();

before(async () => {
  upstream = createHttpServer((req, res) => res.end(`upstream saw ${req.url}`));
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  upstreamPort = (upstream.address() as { port: number }).port;
  const tmp = createTcpServer();
  await new Promise<void>((r) => tmp.listen(0, '127.0.0.1', r));
  closedPort = (tmp.address() as { port: number }).port;
  await new Promise<void>((r) => tmp.close(() => r()));
  guard = new EgressGuard({
    checker: new EgressChecker({
      allowlist: [
        { host: '127.0.0.1', port: upstreamPort },
        { host: '127.0.0.1', port: closedPort },
      ],
      protectedPorts: () => guard.ports(),
      resolve: async () => [{ address: '93.184.216.34', family: 4 }],
      localAddresses: () => [],
    }),
    connector,
    logger: log.logger,
  });
  await guard.listen();
});
after(async () => {
  await guard.close();
  await new Promise<void>((r) => upstream.close(() => r()));
});

/** Sends raw bytes to a port and collects the answer until the guard closes. */
async function exchange(port: number, data: string): Promise<string> {
  return await new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port });
    let out = '';
    s.on('data', (d) => (out += d.toString('latin1')));
    s.on('error', () => undefined);
    s.on('close', () => resolve(out));
    s.write(data);
  });
}

const CONNECT_UPSTREAM = (): string =>
  `CONNECT 127.0.0.1:${upstreamPort} HTTP/1.1\r\n\r\nGET /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`;

describe('connections that belong to no live request', () => {
  test("the browser-wide port (Chromium's own requests) lets nothing out, and the refusal is logged without a request", async () => {
    attempts.length = 0;
    const before = guard.counts();
    const r = await exchange(guard.port, CONNECT_UPSTREAM());
    assert.match(r, /^HTTP\/1\.1 403 Forbidden\r\nx-pagescript-egress: NO_REQUEST/);
    const plain = await exchange(
      guard.port,
      `GET http://127.0.0.1:${upstreamPort}/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
    );
    assert.match(plain, /^HTTP\/1\.1 403/);
    assert.deepEqual(attempts, [], 'nothing was dialled');
    const now = guard.counts();
    assert.equal(now.unclaimed - before.unclaimed, 2);
    assert.equal(now.upstreamConnections, before.upstreamConnections);
    const line = log.lines.find((l) => l.msg === 'egress refused' && l.port === upstreamPort);
    assert.ok(line, 'the refusal is logged');
    assert.equal(line.requestId, undefined);
  });

  test('a spare context (not leased yet) carries nothing', async () => {
    const spare = await guard.openSession();
    try {
      attempts.length = 0;
      const r = await exchange(spare.port, CONNECT_UPSTREAM());
      assert.match(r, /^HTTP\/1\.1 403[^\r]*\r\nx-pagescript-egress: NO_REQUEST/);
      assert.deepEqual(attempts, []);
    } finally {
      await spare.close();
    }
  });

  test('a released context carries nothing: its open tunnel is cut and a new connection is closed unread', async () => {
    const s = await guard.openSession();
    s.bind('req-released');
    // A tunnel that stays open (no request sent through it yet).
    const tunnel = connect({ host: '127.0.0.1', port: s.port });
    const closed = new Promise<void>((r) => tunnel.once('close', () => r()));
    tunnel.on('error', () => undefined);
    const established = new Promise<void>((r) => tunnel.once('data', () => r()));
    tunnel.write(`CONNECT 127.0.0.1:${upstreamPort} HTTP/1.1\r\n\r\n`);
    await established;
    s.end();
    await closed;
    attempts.length = 0;
    const after = await exchange(s.port, CONNECT_UPSTREAM());
    assert.equal(after, '', 'closed without an answer');
    assert.deepEqual(attempts, []);
    await s.close();
  });

  test('a session can be bound to one request only', async () => {
    const s = await guard.openSession();
    s.bind('first');
    assert.throws(() => s.bind('second'), /bound once/);
    await s.close();
  });
});

describe("a live request's traffic", () => {
  test('is counted per request: connections, refusals and bytes', async () => {
    const a = await guard.openSession();
    const b = await guard.openSession();
    a.bind('req-a');
    b.bind('req-b');
    try {
      const r = await exchange(a.port, CONNECT_UPSTREAM());
      assert.match(r, /upstream saw \/x/);
      assert.match(await exchange(a.port, 'CONNECT 169.254.169.254:80 HTTP/1.1\r\n\r\n'), /^HTTP\/1\.1 403/);
      const stats = a.stats();
      assert.equal(stats.connections, 1);
      assert.equal(stats.refused, 1);
      assert.ok(stats.bytesSent > 0 && stats.bytesReceived > 0, JSON.stringify(stats));
      assert.deepEqual(b.stats(), { connections: 0, refused: 0, bytesSent: 0, bytesReceived: 0 });
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('a tunnel still open is counted as its bytes flow; ending the request cuts it and counts it once', async () => {
    const SENT = 2 ** 20;
    const held = new Set<Socket>();
    const streamer = createTcpServer((s) => {
      held.add(s);
      s.once('close', () => held.delete(s));
      s.on('error', () => undefined);
      s.write(Buffer.alloc(SENT, 0x61));
    });
    await new Promise<void>((r) => streamer.listen(0, '127.0.0.1', r));
    const port = (streamer.address() as { port: number }).port;
    const own: EgressGuard = new EgressGuard({
      checker: new EgressChecker({
        allowlist: [{ host: '127.0.0.1', port }],
        protectedPorts: () => own.ports(),
        resolve: async () => [],
        localAddresses: () => [],
      }),
      connector,
      logger: log.logger,
    });
    await own.listen();
    const a = await own.openSession();
    a.bind('req-kept-open');
    const client = connect({ host: '127.0.0.1', port: a.port });
    let got = 0;
    let closed = false;
    client.on('data', (d: Buffer) => (got += d.length));
    client.on('error', () => undefined);
    client.once('close', () => (closed = true));
    try {
      client.write(`CONNECT 127.0.0.1:${port} HTTP/1.1\r\n\r\n`);
      await until(() => got >= SENT, 'the streamed bytes through the tunnel');
      assert.ok(a.stats().bytesReceived >= SENT, `counted while open: ${JSON.stringify(a.stats())}`);
      a.end();
      const billed = a.stats();
      assert.ok(billed.bytesReceived >= SENT, JSON.stringify(billed));
      assert.equal(billed.connections, 1);
      await until(() => closed && held.size === 0, 'both ends of the tunnel to be cut');
      assert.deepEqual(a.stats(), billed, 'the cut connection is counted once');
    } finally {
      client.destroy();
      await own.close();
      await new Promise<void>((r) => streamer.close(() => r()));
    }
  });

  test("a page cannot borrow another live request's identity by asking the guard for that request's port, however spelt", async () => {
    // A guard of its own whose allow-list even names B's port: what refuses is that the port is the guard's.
    const allowlist: Array<{ host: string; port: number }> = [];
    const own: EgressGuard = new EgressGuard({
      checker: new EgressChecker({
        allowlist,
        protectedPorts: () => own.ports(),
        resolve: async () => [{ address: '93.184.216.34', family: 4 }],
        localAddresses: () => [],
      }),
      connector,
      logger: log.logger,
    });
    await own.listen();
    const a = await own.openSession();
    const b = await own.openSession();
    a.bind('req-borrower');
    b.bind('req-lender');
    allowlist.push({ host: '127.0.0.1', port: b.port }, { host: 'localhost', port: b.port });
    try {
      attempts.length = 0;
      for (const h of ['127.0.0.1', 'localhost', '[::ffff:127.0.0.1]', '127.1', '0x7f000001', 'b.localhost']) {
        assert.match(await exchange(a.port, `CONNECT ${h}:${b.port} HTTP/1.1\r\n\r\n`), /^HTTP\/1\.1 403/, h);
        assert.match(
          await exchange(a.port, `GET http://${h}:${b.port}/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`),
          /^HTTP\/1\.1 403/,
          h,
        );
      }
      assert.deepEqual(attempts, [], 'nothing was dialled');
      assert.equal(a.stats().connections, 0);
      assert.deepEqual(b.stats(), { connections: 0, refused: 0, bytesSent: 0, bytesReceived: 0 }, 'B carried nothing');
    } finally {
      await own.close();
    }
  });

  test("DNS: the guard keeps no answer: a name A's request had resolved is resolved again for B, which dials its own answer", async () => {
    const asked: string[] = [];
    const answers = ['93.184.216.34', '93.184.216.35'];
    const own: EgressGuard = new EgressGuard({
      checker: new EgressChecker({
        allowlist: [],
        protectedPorts: () => own.ports(),
        resolve: async (name) => {
          asked.push(name);
          return [{ address: answers[(asked.length - 1) % 2] as string, family: 4 }];
        },
        localAddresses: () => [],
      }),
      connector,
      logger: log.logger,
    });
    await own.listen();
    const a = await own.openSession();
    const b = await own.openSession();
    a.bind('req-dns-a');
    b.bind('req-dns-b');
    try {
      attempts.length = 0;
      await exchange(a.port, 'CONNECT token-5d1e.tenant.test:443 HTTP/1.1\r\n\r\n');
      await exchange(b.port, 'CONNECT token-5d1e.tenant.test:443 HTTP/1.1\r\n\r\n');
      assert.deepEqual(asked, ['token-5d1e.tenant.test', 'token-5d1e.tenant.test'], 'resolved once per connection');
      assert.deepEqual(
        attempts.map((t) => t.address),
        answers,
        'each dialled the answer of its own lookup',
      );
    } finally {
      await own.close();
    }
  });

  test("a refusal is logged with the request's id", async () => {
    const s = await guard.openSession();
    s.bind('req-logged-7');
    try {
      await exchange(
        s.port,
        'GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      );
      const line = log.lines.find((l) => l.msg === 'egress refused' && l.requestId === 'req-logged-7');
      assert.ok(line, 'a log line names the request');
      assert.equal(line.host, '169.254.169.254');
    } finally {
      await s.close();
    }
  });

  test('a page refused over and over floods no log: the first refusals are logged, the rest counted', async () => {
    const s = await guard.openSession();
    s.bind('req-flood-9');
    const refusals = MAX_REFUSALS_LOGGED_PER_REQUEST + 15;
    try {
      for (let i = 0; i < refusals; i++)
        assert.match(await exchange(s.port, `CONNECT 10.0.0.${i + 1}:80 HTTP/1.1\r\n\r\n`), /^HTTP\/1\.1 403/);
      const mine = log.lines.filter((l) => l.requestId === 'req-flood-9');
      assert.equal(mine.filter((l) => l.msg === 'egress refused').length, MAX_REFUSALS_LOGGED_PER_REQUEST);
      assert.equal(mine.filter((l) => /further refusals are counted/.test(String(l.msg))).length, 1);
      assert.equal(s.stats().refused, refusals, 'every refusal is counted');
    } finally {
      await s.close();
    }
  });

  test("one request's upstream failure is not visible to another request", async () => {
    const a = await guard.openSession();
    const b = await guard.openSession();
    a.bind('req-a2');
    b.bind('req-b2');
    try {
      assert.match(await exchange(a.port, `CONNECT 127.0.0.1:${closedPort} HTTP/1.1\r\n\r\n`), /^HTTP\/1\.1 502/);
      assert.equal(a.recentFailure('127.0.0.1', closedPort), 'net::ERR_CONNECTION_REFUSED');
      assert.equal(b.recentFailure('127.0.0.1', closedPort), undefined);
    } finally {
      await a.close();
      await b.close();
    }
  });

  test("a request's memory of failures is bounded", async () => {
    const s = await guard.openSession();
    s.bind('req-many');
    try {
      for (let i = 0; i < 300; i++) s.recordFailure(`h${i}.test`, 80, 'net::ERR_CONNECTION_REFUSED');
      assert.equal(s.recentFailure('h0.test', 80), undefined, 'the oldest went first');
      assert.equal(s.recentFailure('h299.test', 80), 'net::ERR_CONNECTION_REFUSED');
    } finally {
      await s.close();
    }
  });

  test('every port of the guard is refused to pages, the sessions included', async () => {
    const s = await guard.openSession();
    s.bind('req-ports');
    try {
      assert.ok(guard.ports().includes(s.port));
      const r = await exchange(s.port, `CONNECT 127.0.0.1:${s.port} HTTP/1.1\r\n\r\n`);
      assert.match(r, /^HTTP\/1\.1 403/);
    } finally {
      await s.close();
    }
    assert.ok(!guard.ports().includes(s.port), 'a closed session is forgotten');
  });
});

describe('CONNECT', () => {
  test('the port is the one asked for: CONNECT host:80 dials port 80, not 443', async () => {
    const s = await guard.openSession();
    s.bind('req-connect-80');
    try {
      attempts.length = 0;
      await exchange(s.port, 'CONNECT public.test:80 HTTP/1.1\r\n\r\n');
      await exchange(s.port, 'CONNECT public.test:443 HTTP/1.1\r\n\r\n');
      await exchange(s.port, 'CONNECT [2606:4700::1]:80 HTTP/1.1\r\n\r\n');
      assert.deepEqual(
        attempts.map((a) => a.port),
        [80, 443, 80],
      );
    } finally {
      await s.close();
    }
  });

  test('a CONNECT target without a port is 400 and nothing is dialled', async () => {
    const s = await guard.openSession();
    s.bind('req-connect-noport');
    try {
      attempts.length = 0;
      assert.match(await exchange(s.port, 'CONNECT public.test HTTP/1.1\r\n\r\n'), /^HTTP\/1\.1 400/);
      assert.deepEqual(attempts, []);
    } finally {
      await s.close();
    }
  });
});

describe("a context's port takes only its own slot's user (as root, a user per slot)", () => {
  test("a slot's context port refuses another slot's user, and a port with a uid that is none of the slots' takes no one", async () => {
    // Who owns each connecting socket, by its local port: the test says, as the kernel's tables would
    // (the guard may ask before the client has seen its own connect: it then waits for the answer).
    const owners = new Map<number, number>();
    const waiting = new Map<number, (uid: number) => void>();
    const owner = (port: number): Promise<number> =>
      owners.has(port)
        ? Promise.resolve(owners.get(port) as number)
        : new Promise((resolve) => waiting.set(port, resolve));
    const own: EgressGuard = new EgressGuard({
      checker: new EgressChecker({
        allowlist: [{ host: '127.0.0.1', port: upstreamPort }],
        protectedPorts: () => own.ports(),
        resolve: async () => [{ address: '127.0.0.1', family: 4 }],
        localAddresses: () => [],
      }),
      connector,
      logger: log.logger,
      clientUids: [59000, 59001],
      peerUid: (peer) => owner(peer.port),
    });
    await own.listen();
    /** The first line the port answers a CONNECT with, asked by a socket of `uid`. */
    const ask = async (port: number, uid: number): Promise<string> =>
      await new Promise((resolve) => {
        const s = connect({ host: '127.0.0.1', port });
        let got = '';
        s.on('connect', () => {
          owners.set(s.localPort ?? 0, uid);
          waiting.get(s.localPort ?? 0)?.(uid);
          s.write(`CONNECT 127.0.0.1:${upstreamPort} HTTP/1.1\r\n\r\n`);
        });
        s.setEncoding('utf8');
        s.on('data', (c: string) => {
          got += c;
          if (got.includes('\r\n')) s.destroy();
        });
        s.on('error', () => undefined);
        s.on('close', () => resolve(got === '' ? 'closed' : (got.split('\r\n')[0] ?? '')));
      });
    try {
      const slot1 = await own.openSession(59001);
      slot1.bind('req-slot-1');
      const any = await own.openSession();
      any.bind('req-any');
      const stranger = await own.openSession(4242);
      stranger.bind('req-stranger');
      const before = own.counts().otherUsers;
      assert.equal(await ask(slot1.port, 59000), 'closed', "slot 0's user on slot 1's port");
      assert.match(await ask(slot1.port, 59001), /^HTTP\/1\.1 200/, "slot 1's own user is served (control)");
      assert.match(await ask(any.port, 59000), /^HTTP\/1\.1 200/, 'a port of no slot takes any slot user');
      assert.equal(await ask(any.port, 4242), 'closed', 'and no other user');
      assert.equal(await ask(stranger.port, 4242), 'closed', 'a uid of no slot widens nothing');
      assert.equal(own.counts().otherUsers, before + 3);
    } finally {
      await own.close();
    }
  });
});
