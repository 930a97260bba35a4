// The egress guard with an injected resolver and a recording connector that
// refuses everything but loopback: "the guard tried to reach 10.0.0.1" is a
// failing assertion here, never a packet.
import assert from 'node:assert/strict';
import { createServer as createHttpServer, type Server } from 'node:http';
import { connect, createServer as createTcpServer, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { EgressChecker, type ResolvedAddress } from '../../../src/egress/checker.js';
import { EgressGuard, type Connector, type UpstreamTarget } from '../../../src/egress/guard.js';
import type { EgressSession } from '../../../src/egress/session.js';
import { silentLogger } from '../../../src/common/log.js';

const attempts: UpstreamTarget[] = [];
/** Records each attempt; connects only to loopback, refuses the rest without touching the network. */
const recordingConnector: Connector = async (t, timeoutMs) => {
  attempts.push(t);
  if (t.address !== '127.0.0.1' && t.address !== '::1') {
    throw Object.assign(new Error(`test connector refuses ${t.address}`), { code: 'ECONNREFUSED' });
  }
  return await new Promise<Socket>((resolve, reject) => {
    const s = connect({ host: t.address, port: t.port });
    s.setTimeout(timeoutMs, () => s.destroy(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' })));
    s.once('connect', () => resolve(s));
    s.once('error', reject);
  });
};

const lookups: string[] = [];
let rebindTurn = 0;
async function resolver(host: string): Promise<ResolvedAddress[]> {
  lookups.push(host);
  switch (host) {
    case 'public.test':
      return [{ address: '93.184.216.34', family: 4 }];
    case 'internal.test':
      return [{ address: '10.0.0.1', family: 4 }];
    case 'rebind.test':
      // First answer public, then loopback: the classic rebinding attack.
      return rebindTurn++ % 2 === 0 ? [{ address: '93.184.216.34', family: 4 }] : [{ address: '127.0.0.1', family: 4 }];
    default:
      throw Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' });
  }
}

let upstream: Server;
let upstreamPort = 0;
let bulk: ReturnType<typeof createTcpServer>;
let bulkPort = 0;
let closedPort = 0;
let resetPort = 0;
let hangupPort = 0;
let resetter: ReturnType<typeof createTcpServer>;
let hanger: ReturnType<typeof createTcpServer>;
const seenHosts: string[] = [];
/** What the guard told of each refusal (the egress process sends it to the front as a security event). */
const refusals: { host: string; requestId: string | undefined; kind: string | undefined }[] = [];
let guard: EgressGuard;
/** The tests' requests go through the port of a session bound to a request, as a leased context's do. */
let session: EgressSession;

async function listen(s: {
  listen(port: number, host: string, cb: () => void): unknown;
  address(): unknown;
}): Promise<number> {
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return (s.address() as { port: number }).port;
}

before(async () => {
  upstream = createHttpServer((req, res) => {
    seenHosts.push(String(req.headers.host));
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(`upstream saw ${req.url}`);
  });
  upstreamPort = await listen(upstream);
  bulk = createTcpServer((s) => {
    s.on('error', () => undefined);
    s.write(Buffer.alloc(64 * 1024, 120));
  });
  bulkPort = await listen(bulk);
  // Answers a request with a TCP reset, or by closing without a word.
  resetter = createTcpServer((s) => s.once('data', () => s.resetAndDestroy()));
  resetPort = await listen(resetter);
  hanger = createTcpServer((s) => s.once('data', () => s.end()));
  hangupPort = await listen(hanger);
  const tmp = createTcpServer();
  closedPort = await listen(tmp);
  await new Promise<void>((r) => tmp.close(() => r()));
  guard = new EgressGuard({
    checker: new EgressChecker({
      allowlist: [
        { host: '127.0.0.1', port: upstreamPort },
        { host: '127.0.0.1', port: bulkPort },
        { host: '127.0.0.1', port: closedPort },
        { host: '127.0.0.1', port: resetPort },
        { host: '127.0.0.1', port: hangupPort },
      ],
      protectedPorts: () => [guard.port],
      resolve: resolver,
    }),
    connector: recordingConnector,
    logger: silentLogger(),
    limits: { maxBytesPerConnection: 1000, idleTimeoutMs: 300 },
    events: { onRefused: (host, _port, _reason, requestId, kind) => refusals.push({ host, requestId, kind }) },
  });
  await guard.listen();
  session = await guard.openSession();
  session.bind('unit-request');
});
after(async () => {
  await guard.close();
  await new Promise<void>((r) => upstream.close(() => r()));
  await new Promise<void>((r) => bulk.close(() => r()));
  await new Promise<void>((r) => resetter.close(() => r()));
  await new Promise<void>((r) => hanger.close(() => r()));
});

/**
 * Sends raw bytes to the guard and collects what comes back until it closes, or
 * goes quiet for quietMs after answering (the first byte may take longer on a busy machine).
 */
async function exchange(data: string, quietMs = 300): Promise<string> {
  return await new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port: session.port });
    let out = '';
    let timer = setTimeout(() => s.destroy(), Math.max(quietMs, 5000));
    s.on('data', (d) => {
      out += d.toString('latin1');
      clearTimeout(timer);
      timer = setTimeout(() => s.destroy(), quietMs);
    });
    s.on('error', () => undefined);
    s.on('close', () => {
      clearTimeout(timer);
      resolve(out);
    });
    s.write(data);
  });
}

function reset(): void {
  attempts.length = 0;
  lookups.length = 0;
}

describe('CONNECT tunnels', () => {
  test('a name that resolves to 10.0.0.1 is refused and nothing is dialled', async () => {
    reset();
    const r = await exchange('CONNECT internal.test:443 HTTP/1.1\r\nHost: internal.test:443\r\n\r\n');
    assert.match(r, /^HTTP\/1\.1 403/);
    assert.deepEqual(attempts, []);
  });

  test('169.254.169.254 is refused and nothing is dialled', async () => {
    reset();
    const r = await exchange('CONNECT 169.254.169.254:80 HTTP/1.1\r\n\r\n');
    assert.match(r, /^HTTP\/1\.1 403/);
    assert.deepEqual(attempts, []);
  });

  test('a rebinding name is dialled only at the address that was checked, and refused when it turns private', async () => {
    reset();
    rebindTurn = 0;
    const first = await exchange('CONNECT rebind.test:443 HTTP/1.1\r\n\r\n');
    // The public answer was approved; the connector was asked for exactly that address (and refused it: no network in tests).
    assert.match(first, /^HTTP\/1\.1 502/);
    assert.deepEqual(
      attempts.map((a) => a.address),
      ['93.184.216.34'],
    );
    const second = await exchange('CONNECT rebind.test:443 HTTP/1.1\r\n\r\n');
    assert.match(second, /^HTTP\/1\.1 403/);
    assert.deepEqual(
      attempts.map((a) => a.address),
      ['93.184.216.34'],
      'the loopback answer was never dialled',
    );
    assert.deepEqual(lookups, ['rebind.test', 'rebind.test'], 'one lookup per connection, none after the check');
    // A name that answered public earlier in the request and loopback now is told as rebinding, for its request.
    assert.deepEqual(refusals.at(-1), { host: 'rebind.test', requestId: 'unit-request', kind: 'rebinding' });
  });

  test('each refusal is told with its request and the kind of address refused', async () => {
    refusals.length = 0;
    await exchange('CONNECT internal.test:443 HTTP/1.1\r\n\r\n');
    await exchange('GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\nHost: 169.254.169.254\r\n\r\n');
    await exchange('CONNECT 127.0.0.1:22 HTTP/1.1\r\n\r\n');
    assert.deepEqual(
      refusals.map((r) => [r.host, r.requestId, r.kind]),
      [
        ['internal.test', 'unit-request', 'private'],
        ['169.254.169.254', 'unit-request', 'link-local'],
        ['127.0.0.1', 'unit-request', 'loopback'],
      ],
    );
  });

  test('an allow-listed loopback upstream is tunnelled', async () => {
    reset();
    const r = await exchange(
      `CONNECT 127.0.0.1:${upstreamPort} HTTP/1.1\r\n\r\nGET /tunnelled HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
    );
    assert.match(r, /^HTTP\/1\.1 200 Connection Established/);
    assert.match(r, /upstream saw \/tunnelled/);
  });

  test('an upstream that refuses is 502 and remembered as net::ERR_CONNECTION_REFUSED', async () => {
    const r = await exchange(`CONNECT 127.0.0.1:${closedPort} HTTP/1.1\r\n\r\n`);
    assert.match(r, /^HTTP\/1\.1 502/);
    assert.equal(session.recentFailure('127.0.0.1', closedPort), 'net::ERR_CONNECTION_REFUSED');
  });

  test('a tunnel is closed past the byte cap', async () => {
    const r = await exchange(`CONNECT 127.0.0.1:${bulkPort} HTTP/1.1\r\n\r\n`);
    assert.match(r, /^HTTP\/1\.1 200/);
    assert.ok(r.length < 64 * 1024, `received ${r.length} bytes of 65536`);
  });

  test('an idle tunnel is closed after the idle timeout', async () => {
    const t0 = Date.now();
    await exchange(`CONNECT 127.0.0.1:${upstreamPort} HTTP/1.1\r\n\r\n`, 5000);
    assert.ok(Date.now() - t0 < 3000, 'closed by the guard, not by the test');
  });

  test("the guard's own port is refused", async () => {
    const r = await exchange(`CONNECT 127.0.0.1:${guard.port} HTTP/1.1\r\n\r\n`);
    assert.match(r, /^HTTP\/1\.1 403/);
  });
});

describe('plain HTTP requests', () => {
  test('routing follows the request target, not the Host header', async () => {
    reset();
    seenHosts.length = 0;
    const ok = await exchange(
      `GET http://127.0.0.1:${upstreamPort}/a HTTP/1.1\r\nHost: 10.0.0.1\r\nConnection: close\r\n\r\n`,
    );
    assert.match(ok, /^HTTP\/1\.1 200/);
    assert.match(ok, /upstream saw \/a/);
    assert.deepEqual(
      attempts.map((a) => a.address),
      ['127.0.0.1'],
    );
    assert.deepEqual(seenHosts, [`127.0.0.1:${upstreamPort}`], 'the upstream is told the real target');
    reset();
    const bad = await exchange(
      `GET http://10.0.0.1/ HTTP/1.1\r\nHost: 127.0.0.1:${upstreamPort}\r\nConnection: close\r\n\r\n`,
    );
    assert.match(bad, /^HTTP\/1\.1 403/);
    assert.match(bad, /address not allowed/);
    assert.deepEqual(attempts, []);
  });

  test('every request on a kept-alive connection is checked', async () => {
    reset();
    const r = await exchange(
      `GET http://127.0.0.1:${upstreamPort}/first HTTP/1.1\r\nHost: a\r\n\r\n` +
        'GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\nHost: a\r\n\r\n',
    );
    assert.match(r, /upstream saw \/first/);
    assert.match(r, /HTTP\/1\.1 403[\s\S]*address not allowed/);
    assert.deepEqual(
      attempts.map((a) => a.address),
      ['127.0.0.1'],
    );
  });

  test('an origin-form request (not a proxy request) is 400', async () => {
    const r = await exchange('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    assert.match(r, /^HTTP\/1\.1 400/);
  });

  test('an upstream that refuses closes the connection, as a network error would', async () => {
    const r = await exchange(`GET http://127.0.0.1:${closedPort}/ HTTP/1.1\r\nHost: a\r\n\r\n`);
    assert.equal(r, '');
    assert.equal(session.recentFailure('127.0.0.1', closedPort), 'net::ERR_CONNECTION_REFUSED');
  });

  test('an upstream reset is remembered as net::ERR_CONNECTION_RESET, a silent close as net::ERR_EMPTY_RESPONSE', async () => {
    assert.equal(await exchange(`GET http://127.0.0.1:${resetPort}/ HTTP/1.1\r\nHost: a\r\n\r\n`), '');
    assert.equal(session.recentFailure('127.0.0.1', resetPort), 'net::ERR_CONNECTION_RESET');
    assert.equal(await exchange(`GET http://127.0.0.1:${hangupPort}/ HTTP/1.1\r\nHost: a\r\n\r\n`), '');
    assert.equal(session.recentFailure('127.0.0.1', hangupPort), 'net::ERR_EMPTY_RESPONSE');
  });

  test('a name that does not resolve closes the connection and is remembered as ERR_NAME_NOT_RESOLVED', async () => {
    const r = await exchange('GET http://nowhere.test/ HTTP/1.1\r\nHost: a\r\n\r\n');
    assert.equal(r, '');
    assert.equal(session.recentFailure('nowhere.test', 80), 'net::ERR_NAME_NOT_RESOLVED');
  });
});
