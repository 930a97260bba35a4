// The guard against upstreams that answer what no server should: each case is a
// raw TCP server on loopback that writes its answer byte for byte. The guard
// must stay up (a throw in one of its event handlers would end the process and
// every tenant's request), give the page a network error or a clean answer, and
// free the upstream socket at once when the page goes away.
import assert from 'node:assert/strict';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { EgressChecker } from '../../../src/egress/checker.js';
import { EgressGuard } from '../../../src/egress/guard.js';
import type { EgressSession } from '../../../src/egress/session.js';
import { silentLogger } from '../../../src/common/log.js';

/** A raw upstream: answers each connection with `reply` once the request's headers are in. */
class RawUpstream {
  readonly server: Server;
  readonly sockets: Socket[] = [];
  port = 0;
  constructor(reply: (s: Socket) => void) {
    this.server = createServer((s) => {
      this.sockets.push(s);
      s.on('error', () => undefined);
      let got = '';
      s.on('data', (d) => {
        got += d.toString('latin1');
        if (got.includes('\r\n\r\n')) {
          got = '';
          reply(s);
        }
      });
    });
  }
  async start(): Promise<number> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as { port: number }).port;
    return this.port;
  }
  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

const CASES = {
  sane: new RawUpstream((s) => s.end('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok')),
  controlInReason: new RawUpstream((s) =>
    s.end('HTTP/1.1 200 O\x01K\x7f\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok'),
  ),
  controlInHeaderValue: new RawUpstream((s) =>
    s.end('HTTP/1.1 200 OK\r\nX-Bad: a\x01b\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok'),
  ),
  badHeaderName: new RawUpstream((s) =>
    s.end('HTTP/1.1 200 OK\r\nX Bad\x02: v\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok'),
  ),
  invalidUtf8: new RawUpstream((s) => {
    s.write('HTTP/1.1 200 \xff\xfe\r\n', 'latin1');
    s.write(Buffer.from([0x58, 0x2d, 0x55, 0x3a, 0x20, 0xc3, 0x28, 0xff, 0x0d, 0x0a])); // "X-U: \xc3(\xff"
    s.end('Content-Length: 3\r\nConnection: close\r\n\r\n\xc3\x28\xff', 'latin1');
  }),
  oversizedHeaders: new RawUpstream((s) =>
    s.end(`HTTP/1.1 200 OK\r\nX-Big: ${'a'.repeat(200_000)}\r\nContent-Length: 2\r\n\r\nok`),
  ),
  endsMidHeaders: new RawUpstream((s) => s.end('HTTP/1.1 200 OK\r\nContent-Type: text/ht')),
  endsMidStatus: new RawUpstream((s) => s.end('HTTP/1.1 2')),
  nulInReason: new RawUpstream((s) => s.end('HTTP/1.1 200 A\x00B\r\nContent-Length: 2\r\n\r\nok')),
  badStatus: new RawUpstream((s) => s.end('HTTP/1.1 000 Zero\r\nContent-Length: 2\r\n\r\nok')),
  // Each of the next answers is left open: only the guard's reaction ends the page's request.
  unaskedUpgrade: new RawUpstream((s) =>
    s.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n'),
  ),
  informationalFlood: new RawUpstream((s) => {
    const flood = (): void => {
      if (s.destroyed) return;
      s.write('HTTP/1.1 102 Processing\r\n\r\n'.repeat(64), () => setImmediate(flood));
    };
    flood();
  }),
  noStatusLine: new RawUpstream((s) => s.write('Content-Type: text/html\r\nContent-Length: 2\r\n\r\nok')),
  notHttp: new RawUpstream((s) => s.write('<html>hello</html>\r\n\r\n')),
  truncatedBody: new RawUpstream((s) => s.end('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b')),
  truncatedChunked: new RawUpstream((s) =>
    s.end('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\na\r\nonly ten b\r\n64\r\nand th'),
  ),
  endlessBody: new RawUpstream((s) => {
    s.write('HTTP/1.1 200 OK\r\nContent-Length: 100000000\r\n\r\n');
    s.write(Buffer.alloc(1024, 97));
  }),
};

let guard: EgressGuard;
let session: EgressSession;

before(async () => {
  for (const c of Object.values(CASES)) await c.start();
  guard = new EgressGuard({
    checker: new EgressChecker({
      allowlist: Object.values(CASES).map((c) => ({ host: '127.0.0.1', port: c.port })),
      protectedPorts: () => guard.ports(),
      resolve: async () => [],
      localAddresses: () => [],
    }),
    logger: silentLogger(),
    // Long enough that a test waiting on it would time out: the client-gone case must not need it.
    limits: { idleTimeoutMs: 600_000 },
  });
  await guard.listen();
  session = await guard.openSession();
  session.bind('hostile-upstream');
});
after(async () => {
  await guard.close();
  for (const c of Object.values(CASES)) await c.close();
});

/** A plain proxied GET to one case; what came back, until the guard closed or answered in full. */
async function get(c: RawUpstream): Promise<string> {
  return await new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port: session.port });
    let out = '';
    s.on('data', (d) => (out += d.toString('latin1')));
    s.on('error', () => undefined);
    s.on('close', () => resolve(out));
    s.write(`GET http://127.0.0.1:${c.port}/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
  });
}

/** The guard still serves: a request to a sane upstream gets its answer. */
async function assertGuardAlive(): Promise<void> {
  const r = await get(CASES.sane);
  assert.match(r, /^HTTP\/1\.1 200 OK\r\n/);
}

/** The page's connection is closed with nothing relayed, and the request's failure is named. */
async function assertInvalidResponse(c: RawUpstream): Promise<void> {
  assert.equal(await get(c), '');
  assert.equal(session.recentFailure('127.0.0.1', c.port), 'net::ERR_INVALID_HTTP_RESPONSE');
  await assertGuardAlive();
}

describe('hostile upstreams', () => {
  test('a control character in the reason phrase is dropped; the status and body are relayed', async () => {
    const r = await get(CASES.controlInReason);
    assert.match(r, /^HTTP\/1\.1 200 OK\r\n/);
    assert.match(r, /\r\n\r\nok$/);
  });

  test('a NUL in the reason phrase does not stop the guard', async () => {
    await get(CASES.nulInReason);
    await assertGuardAlive();
  });

  test('a control character in a header value is a network error for the page', async () => {
    assert.equal(await get(CASES.controlInHeaderValue), '');
    await assertGuardAlive();
  });

  test('a header name that is not a token is a network error for the page', async () => {
    assert.equal(await get(CASES.badHeaderName), '');
    await assertGuardAlive();
  });

  test('invalid UTF-8 in the status line, a header and the body is relayed byte for byte', async () => {
    const r = await get(CASES.invalidUtf8);
    assert.match(r, /^HTTP\/1\.1 200 \xff\xfe\r\n/);
    assert.match(r, /\r\nX-U: \xc3\(\xff\r\n/);
    assert.match(r, /\r\n\r\n\xc3\(\xff$/);
  });

  test('oversized headers are a network error for the page', async () => {
    await assertInvalidResponse(CASES.oversizedHeaders);
  });

  test('a response that ends mid-headers is a network error for the page', async () => {
    assert.equal(await get(CASES.endsMidHeaders), '');
    assert.equal(await get(CASES.endsMidStatus), '');
    await assertGuardAlive();
  });

  test('a status code out of range is a network error for the page', async () => {
    assert.equal(await get(CASES.badStatus), '');
    await assertGuardAlive();
  });

  // Each ends the page's request with a network error now; before, the first two waited for a timeout.
  test('an upstream that answers 101 Switching Protocols to a plain request is a network error, not a hang', async () => {
    await assertInvalidResponse(CASES.unaskedUpgrade);
  });

  test('an upstream that floods 1xx answers and never a final one is a network error, not a hang', async () => {
    await assertInvalidResponse(CASES.informationalFlood);
  });

  test('an upstream that answers without a status line is a network error, not a hang', async () => {
    await assertInvalidResponse(CASES.noStatusLine);
    await assertInvalidResponse(CASES.notHttp);
  });

  test('a truncated body (Content-Length or chunked) ends the page connection short, not at a timeout', async () => {
    const r = await get(CASES.truncatedBody);
    assert.match(r, /^HTTP\/1\.1 200 OK\r\n/);
    assert.match(r, /content-length: 100\r\n/i);
    assert.match(r, /\r\n\r\nonly ten b$/, 'the page sees fewer bytes than announced, then the close');
    const chunked = await get(CASES.truncatedChunked);
    assert.match(chunked, /^HTTP\/1\.1 200 OK\r\n/);
    assert.doesNotMatch(chunked, /\r\n0\r\n\r\n$/, 'no last chunk: the page sees the body cut');
    await assertGuardAlive();
  });

  test('a client that goes away mid-body has its upstream socket destroyed at once, not at the idle timeout', async () => {
    const c = CASES.endlessBody;
    const client = connect({ host: '127.0.0.1', port: session.port });
    client.on('error', () => undefined);
    const firstBytes = new Promise<void>((r) => client.once('data', () => r()));
    client.write(`GET http://127.0.0.1:${c.port}/ HTTP/1.1\r\nHost: x\r\n\r\n`);
    await firstBytes;
    const up = c.sockets.at(-1) as Socket;
    const upstreamClosed = new Promise<void>((r) => (up.closed ? r() : up.once('close', () => r())));
    client.destroy();
    // With a 10-minute idle timeout, only the guard's reaction to the client can close it.
    await upstreamClosed;
    await assertGuardAlive();
  });
});
